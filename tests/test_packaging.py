"""`pip install .` ships every file the engine loads at run time: the weight files and data files under
usi_engine/ are all matched by pyproject.toml's package data (a moved or new folder would otherwise install an
engine that cannot find its default weights)."""

import tomllib
from fnmatch import fnmatch
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_every_engine_data_file_is_package_data():
    with open(ROOT / "pyproject.toml", "rb") as f:
        package_data = tomllib.load(f)["tool"]["setuptools"]["package-data"]
    files = sorted(p for pattern in ("*.npz", "*.txt") for p in (ROOT / "usi_engine").rglob(pattern))
    assert any(p.parent.name == "weights" for p in files)
    unshipped = []
    for path in files:
        package_dir = next(d for d in path.parents if (d / "__init__.py").is_file())
        package = ".".join(package_dir.relative_to(ROOT).parts)
        relative = path.relative_to(package_dir).as_posix()
        if not any(fnmatch(relative, pattern) for pattern in package_data.get(package, [])):
            unshipped.append(f"{path.relative_to(ROOT)} (package {package})")
    assert unshipped == []

"""The numba cache folder follows the engine's sources, so an edit in one file never reuses stale kernels; `measured`
counts the kernels a group compiled into it."""

import os
import re
import subprocess
import sys

import pytest

from usi_engine import numba_cache
from usi_engine.numba_cache import GroupReport, cache_entries, measured

pytestmark = pytest.mark.process

PRINT_CACHE_DIR = "import usi_engine, numba; print(numba.config.CACHE_DIR)"


def _cache_dir_in_fresh_process(env):
    out = subprocess.run([sys.executable, "-c", PRINT_CACHE_DIR], env=env, capture_output=True, text=True, check=True)
    return out.stdout.strip()


def test_default_folder_is_named_by_the_source_hash(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env["XDG_CACHE_HOME"] = str(tmp_path)
    expected = os.path.join(str(tmp_path), "mcss", "numba-" + numba_cache.source_hash())
    assert _cache_dir_in_fresh_process(env) == expected
    assert os.path.isdir(expected)


def test_user_choice_is_respected(tmp_path):
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "mine"))
    assert _cache_dir_in_fresh_process(env) == str(tmp_path / "mine")


def test_hash_changes_when_any_source_changes(tmp_path, monkeypatch):
    (tmp_path / "usi_engine" / "sub").mkdir(parents=True)
    (tmp_path / "usi_engine" / "a.py").write_text("x = 1\n")
    (tmp_path / "usi_engine" / "sub" / "b.py").write_text("y = 2\n")
    (tmp_path / "learn").mkdir()
    (tmp_path / "learn" / "movefit.py").write_text("z = 1\n")
    (tmp_path / "learn" / "other.py").write_text("u = 1\n")
    monkeypatch.setattr(numba_cache, "_project_root", lambda: str(tmp_path))
    before = numba_cache.source_hash()
    assert numba_cache.source_hash() == before
    (tmp_path / "learn" / "other.py").write_text("u = 2\n")  # not a hashed source
    assert numba_cache.source_hash() == before
    for path, text in (("usi_engine/sub/b.py", "y = 3\n"), ("learn/movefit.py", "z = 2\n")):
        (tmp_path / path).write_text(text)
        after = numba_cache.source_hash()
        assert after != before
        before = after


def _kernel_modules(folder):
    """{module name: source} of the .py files below folder (a package of the repository) that define kernels."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(numba_cache.__file__)))
    out = {}
    for dirpath, _dirs, files in os.walk(os.path.join(root, folder)):
        for name in files:
            path = os.path.join(dirpath, name)
            text = open(path, encoding="utf-8").read() if name.endswith(".py") else ""
            if "@njit" in text:
                out[os.path.relpath(path, root)[:-3].replace(os.sep, ".")] = (os.path.relpath(path, root), text)
    return out


def test_every_kernel_called_across_files_is_hashed():
    """numba's cache checks only a kernel's own file: a kernel of learn/ that imports another learn file's
    kernels would keep stale machine code after that file changes, unless that file is in SOURCE_PATHS."""
    kernels = _kernel_modules("learn")
    hashed = set(numba_cache.SOURCE_PATHS)
    for module, (path, text) in kernels.items():
        for other, (other_path, _) in kernels.items():
            if other != module and re.search(rf"^from {re.escape(other)} import", text, re.M):
                assert other_path in hashed, f"{path} calls kernels of {other_path}, which the cache hash leaves out"


def test_stale_sibling_folders_are_removed(tmp_path):
    old = tmp_path / "numba-old"
    fresh = tmp_path / "numba-fresh"
    keep = tmp_path / "numba-keep"
    for folder in (old, fresh, keep):
        folder.mkdir()
    ancient = 1_000_000_000
    os.utime(old, (ancient, ancient))
    os.utime(keep, (ancient, ancient))
    numba_cache._remove_stale_siblings(str(tmp_path), str(keep))
    assert not old.exists() and fresh.exists() and keep.exists()


def test_measured_counts_the_kernels_a_group_adds_to_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "old.nbc").write_bytes(b"")
    reports = []
    with measured("rules", reports.append):
        (tmp_path / "pkg" / "f.nbi").write_bytes(b"")  # an index: not a compiled kernel
        (tmp_path / "pkg" / "f.1.nbc").write_bytes(b"")
        (tmp_path / "pkg" / "f.2.nbc").write_bytes(b"")
    assert cache_entries() == 3
    assert [(r.group, r.compiled) for r in reports] == [("rules", 2)]
    assert GroupReport("mate", 1.25, 0).line() == "mate 1.2 s, loaded from the cache"

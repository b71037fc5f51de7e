"""MCSS engine: Monte-Carlo Softmax Search for shogi (USI) and Go (GTP)."""

from . import numba_cache

numba_cache.configure()  # before anything imports numba


def _version() -> str:
    """The project version, written once in pyproject.toml: read from it in a source checkout, else from the
    installed package's metadata."""
    import tomllib
    from importlib import metadata
    from pathlib import Path

    pyproject = Path(__file__).resolve().parent.parent / "pyproject.toml"
    try:
        with open(pyproject, "rb") as f:
            return str(tomllib.load(f)["project"]["version"])
    except (OSError, KeyError, tomllib.TOMLDecodeError):
        pass
    try:
        return metadata.version("mcss")
    except metadata.PackageNotFoundError:
        return "0+unknown"


__version__ = _version()

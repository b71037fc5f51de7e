"""Where numba keeps its compiled-kernel cache, keyed by the engine's own sources.

numba's on-disk cache checks only the source file of the function it caches. A cached kernel that calls a
jitted function defined in another file keeps stale machine code after that other file is edited. The
engine's kernels call across files everywhere (search core -> game -> quiescence -> movegen, evaluation), so
the whole cache is put in a folder named by a hash of every engine source: any edit selects a fresh folder.
The learning package's kernel library (learn/movefit.py, whose kernels learn/shogi_moves.py and
learn/go_moves.py call) is hashed with them; learn's other kernels are called only from Python or call only
the engine's, so numba's own per-file check covers them (tests/test_numba_cache.py checks this rule).

`configure()` must run before numba is imported; the package `__init__` calls it. A user's own
NUMBA_CACHE_DIR is respected unchanged.

`measured` times one group of kernels made ready (compiled, or loaded from the cache) and counts the kernels it
compiled: the data files (.nbc, one per compiled signature) it added to the cache folder. The engine's `isready`
reports its groups with it, and so does `usi-engine warmup` (usi_engine/warmup.py).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import sys
import time
from dataclasses import dataclass
from typing import Callable, Iterator

# the sources whose jitted kernels other files' kernels call: the engine's package, and learn's kernel library
# (learn/'s kernels call these, never the reverse); a folder is hashed with every .py file below it
SOURCE_PATHS = ("usi_engine", os.path.join("learn", "movefit.py"))
STALE_AFTER_SECONDS = 7 * 24 * 3600  # cache folders of older sources untouched this long are removed
FOLDER_PREFIX = "numba-"
CACHE_DATA_SUFFIX = ".nbc"  # numba's data file of one compiled signature (beside the function's .nbi index)


def _project_root() -> str:
    return os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _source_files(root: str):
    """The .py files of SOURCE_PATHS below root, in a fixed order (a missing path has none: an installed
    engine without the learning package)."""
    for entry in SOURCE_PATHS:
        path = os.path.join(root, entry)
        if os.path.isfile(path):
            yield path
        for dirpath, dirnames, filenames in os.walk(path):
            dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
            for name in sorted(filenames):
                if name.endswith(".py"):
                    yield os.path.join(dirpath, name)


def source_hash() -> str:
    """Short hex hash over the paths and contents of every source file in SOURCE_PATHS."""
    root = _project_root()
    h = hashlib.sha256()
    for path in _source_files(root):
        h.update(os.path.relpath(path, root).encode())
        with open(path, "rb") as fh:
            h.update(fh.read())
    return h.hexdigest()[:16]


def _cache_base() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    if os.name == "nt":
        base = os.environ.get("LOCALAPPDATA") or base
    return os.path.join(base, "mcss")


def _remove_stale_siblings(base: str, keep: str) -> None:
    now = time.time()
    try:
        names = os.listdir(base)
    except OSError:
        return
    for name in names:
        path = os.path.join(base, name)
        if name.startswith(FOLDER_PREFIX) and path != keep:
            try:
                if now - os.path.getmtime(path) > STALE_AFTER_SECONDS:
                    shutil.rmtree(path, ignore_errors=True)
            except OSError:
                pass


def configure() -> None:
    """Point NUMBA_CACHE_DIR at the folder for the current sources unless the user chose one."""
    if os.environ.get("NUMBA_CACHE_DIR"):
        return
    base = _cache_base()
    folder = os.path.join(base, FOLDER_PREFIX + source_hash())
    try:
        os.makedirs(folder, exist_ok=True)
        os.utime(folder)
    except OSError:
        return  # unwritable home: numba falls back to its own default locations
    os.environ["NUMBA_CACHE_DIR"] = folder
    if "numba" in sys.modules:  # imported first by someone else: its config has already read the environment
        sys.modules["numba"].config.CACHE_DIR = folder
    _remove_stale_siblings(base, folder)


@dataclass(frozen=True)
class GroupReport:
    """One kernel group made ready: how long it took and how many kernels it compiled (0: all cached)."""

    group: str
    seconds: float
    compiled: int

    def line(self) -> str:
        """`search 41.2 s, 57 kernels compiled` / `rules 0.3 s, loaded from the cache`."""
        done = f"{self.compiled} kernels compiled" if self.compiled else "loaded from the cache"
        return f"{self.group} {self.seconds:.1f} s, {done}"


Report = Callable[[GroupReport], None]


def cache_entries(folder: str | None = None) -> int:
    """Compiled kernels in numba's cache folder (NUMBA_CACHE_DIR by default): its .nbc data files; 0 without one."""
    folder = folder or os.environ.get("NUMBA_CACHE_DIR")
    if not folder:
        return 0
    return sum(name.endswith(CACHE_DATA_SUFFIX) for _, _, names in os.walk(folder) for name in names)


@contextlib.contextmanager
def measured(group: str, report: Report | None) -> Iterator[None]:
    """Time the body (one kernel group made ready) and pass its GroupReport to `report` (if any)."""
    if report is None:
        yield
        return
    before = cache_entries()
    start = time.perf_counter()
    yield
    report(GroupReport(group, time.perf_counter() - start, max(0, cache_entries() - before)))

"""Dispatch: how the game-agnostic core reaches the kernels of the game it is handed.

A game is a module exposing the kernel contract (CONTRACT, plus optional kernels; docs/search.md, "Game
kernel contract and adapter"). The core never names one: the game's adapter carries its module (`adapter.game`)
and `kernels(game)` builds the core's game-calling kernels for it once per process (samples.build_kernels);
numba caches them per game on disk. A game plugs in by implementing the contract in a module and handing an
adapter whose `game` is that module to the Searcher; if its kernels call code outside its own package, it
lists those packages in `CACHE_DEPENDENCIES` so that edits there refresh the cache (source_stamp).
"""

import hashlib
import importlib.util
import os
import threading
from types import ModuleType, SimpleNamespace

CONTRACT = ('gen_moves', 'do_move', 'undo_move', 'pos_key', 'expand', 'root_status')

_lock = threading.Lock()
_built: dict[str, SimpleNamespace] = {}


def _package_sources(module_name):
    """Python source files of the package that contains module `module_name`."""
    spec = importlib.util.find_spec(module_name)
    folder = os.path.dirname(spec.origin)
    return [os.path.join(folder, f) for f in sorted(os.listdir(folder)) if f.endswith('.py')]


def source_stamp(game: ModuleType) -> int:
    """63-bit hash of every source the game-calling core kernel depends on: the search package, the game's
    package and the packages the game lists in CACHE_DEPENDENCIES. It is captured by the kernel closure and
    so becomes part of numba's cache key (numba itself only tracks the closure's own file)."""
    packages = [__name__, game.__name__] + list(getattr(game, 'CACHE_DEPENDENCIES', ()))
    files = sorted({f for p in packages for f in _package_sources(p)})
    h = hashlib.sha256()
    for f in files:
        with open(f, 'rb') as fh:
            h.update(fh.read())
    return int.from_bytes(h.digest()[:8], 'little') >> 1


def check_game(game) -> None:
    """Raise TypeError unless `game` is a module that implements the kernel contract's required kernels."""
    if not isinstance(game, ModuleType):
        raise TypeError(f"a game is the module of its kernels (the adapter's `game`), not {game!r}")
    missing = [name for name in CONTRACT if not hasattr(game, name)]
    if missing:
        raise TypeError(f"module {game.__name__} is no game: it lacks {', '.join(missing)} of the kernel contract")


def kernels(game: ModuleType) -> SimpleNamespace:
    """`game` (the module), `run_samples` (the core kernel built for it: a samples.SampleKernel, one variant per
    feature set) and `run_helper` (the helper threads' kernel; None for a game without joint expansion) of the
    game module `game`, built once per process."""
    check_game(game)
    with _lock:
        if game.__name__ not in _built:
            from usi_engine.search.samples import build_kernels

            run_samples, run_helper = build_kernels(game, source_stamp(game))
            _built[game.__name__] = SimpleNamespace(
                game=game,
                run_samples=run_samples,
                run_helper=run_helper if hasattr(game, 'expand_children') else None,
            )
        return _built[game.__name__]

"""Game registry: how the game-agnostic core reaches a game's kernels.

A game is a module exposing the kernel contract (gen_moves, do_move, undo_move, pos_key, expand,
root_status; docs/search.md). `kernels(name)` imports it and builds the core's game-calling kernel for it
once per process (samples.build_kernels); numba caches that kernel per game on disk. Adding a game = one line
in GAMES (plus, if its kernels call code outside its own package, listing those packages in
`CACHE_DEPENDENCIES` inside the game module so edits there refresh the cache).
"""

import hashlib
import importlib
import os
import threading
from types import SimpleNamespace

GAMES = {
    'synthetic': 'usi_engine.search.synthetic',
    'shogi': 'usi_engine.shogi_search.game',
    'go': 'usi_engine.go.game',
}

_lock = threading.Lock()
_built: dict = {}


def _package_sources(module_name):
    """Python source files of the package that contains module `module_name`."""
    spec = importlib.util.find_spec(module_name)
    folder = os.path.dirname(spec.origin)
    return [os.path.join(folder, f) for f in sorted(os.listdir(folder)) if f.endswith('.py')]


def source_stamp(game_module) -> int:
    """63-bit hash of every source the game-calling core kernel depends on: the search package, the game's
    package and the packages the game lists in CACHE_DEPENDENCIES. It is captured by the kernel closure and
    so becomes part of numba's cache key (numba itself only tracks the closure's own file)."""
    packages = [__name__, game_module.__name__] + list(getattr(game_module, 'CACHE_DEPENDENCIES', ()))
    files = sorted({f for p in packages for f in _package_sources(p)})
    h = hashlib.sha256()
    for f in files:
        with open(f, 'rb') as fh:
            h.update(fh.read())
    return int.from_bytes(h.digest()[:8], 'little') >> 1


def kernels(name: str) -> SimpleNamespace:
    """`game` (the module), `run_samples` (the core kernel built for it) and `run_helper` (the helper threads'
    kernel; None for a game without joint expansion) of the game called `name`."""
    if name not in GAMES:
        raise ValueError(f"unknown game {name!r}; known: {', '.join(GAMES)}")
    with _lock:
        if name not in _built:
            from usi_engine.search.samples import build_kernels

            game = importlib.import_module(GAMES[name])
            run_samples, run_helper = build_kernels(game, source_stamp(game))
            _built[name] = SimpleNamespace(
                name=name,
                game=game,
                run_samples=run_samples,
                run_helper=run_helper if hasattr(game, 'expand_children') else None,
            )
        return _built[name]

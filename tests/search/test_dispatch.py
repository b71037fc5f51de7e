"""Game dispatch: the per-game core kernel is cached on disk and reloaded by a fresh process."""

import os
import subprocess
import sys

import pytest

from usi_engine.search import games

pytestmark = pytest.mark.process

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PROBE = """
from usi_engine.search import games, synthetic as syn
from usi_engine.search.searcher import Searcher, SearchOptions, Limits
Searcher(syn.SyntheticAdapter(), SearchOptions(hash_mb=1)).search(syn.make_pos(), Limits(samples=50))
k = games.kernels('synthetic').run_samples
print(sum(k.stats.cache_hits.values()), sum(k.stats.cache_misses.values()))
"""


def test_fresh_process_loads_core_kernel_from_cache():
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get('PYTHONPATH', ''))
    runs = [
        subprocess.run([sys.executable, '-c', PROBE], capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)
        for _ in range(2)
    ]
    for r in runs:
        assert r.returncode == 0, r.stderr
    hits, misses = map(int, runs[1].stdout.split())
    assert (hits, misses) == (1, 0)


def test_unknown_game_is_a_clear_error():
    with pytest.raises(ValueError, match='unknown game'):
        games.kernels('chess')


def test_stamp_follows_sources():
    game = games.kernels('synthetic').game
    assert games.source_stamp(game) == games.source_stamp(game) > 0

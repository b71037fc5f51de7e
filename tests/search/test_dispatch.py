"""Game dispatch: the adapter hands the core its game module; the per-game core kernel is cached on disk and
reloaded by a fresh process; a module without the kernel contract is refused with a clear error."""

import math
import os
import subprocess
import sys

import pytest

from usi_engine.search import dispatch
from usi_engine.search import synthetic as syn
from usi_engine.search.searcher import Searcher

pytestmark = pytest.mark.process

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PROBE = """
from usi_engine.search import dispatch, synthetic as syn
from usi_engine.search.searcher import Searcher
from usi_engine.search.settings import SearchOptions, Limits
Searcher(syn.SyntheticAdapter(), SearchOptions(hash_mb=1)).search(syn.make_pos(), Limits(samples=50))
k = dispatch.kernels(syn).run_samples.variant(False, False)  # softmax, no widening
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


def test_the_adapter_hands_the_core_its_game_module():
    searcher = Searcher(syn.SyntheticAdapter())
    assert searcher.kernels.game is syn
    assert searcher.kernels is dispatch.kernels(syn)  # built once per process


def test_a_module_without_the_contract_is_a_clear_error():
    with pytest.raises(TypeError, match=r'module math is no game: it lacks gen_moves, do_move, .*root_status'):
        dispatch.kernels(math)


def test_a_game_name_instead_of_its_module_is_a_clear_error():
    class NamedAdapter(syn.SyntheticAdapter):
        game = 'chess'

    with pytest.raises(TypeError, match="a game is the module of its kernels"):
        Searcher(NamedAdapter())


def test_stamp_follows_sources():
    assert dispatch.source_stamp(syn) == dispatch.source_stamp(syn) > 0

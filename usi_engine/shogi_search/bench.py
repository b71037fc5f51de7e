"""Benchmarks of the shogi search glue: ``usi-engine bench qsearch`` (quiescence nodes per second), the
shogi position set of ``usi-engine bench search`` (the MCSS core's runner, usi_engine/search/bench.py) and
``usi-engine bench signature``, the behaviour fingerprint of the whole shogi search (Stockfish's `bench`).
"""

import sys

from numba import njit

from eval.bench import timed
from eval.weightfile import load_weights
from usi_engine.search import bench as search_bench
from usi_engine.search.searcher import Limits, SearchOptions, Searcher
from usi_engine.shogi.bench import bench_positions

from .game import ShogiAdapter
from .quiescence import DEFAULT_MAX_DEPTH, QBuffers, qsearch_root

SEARCH_POSITIONS = 8  # the first positions of the set (middle games) for `bench search --game shogi`
SIGNATURE_SAMPLES = 20  # samples per position of `bench signature`
SIGNATURE_SEED = 1
SIGNATURE_HASH_MB = 64.0  # large enough never to fill: a full pool would stop the search at a clock poll


@njit(cache=True, nogil=True)
def _qsearch_loop(positions, w, max_depth, moves, keys, pv, frames, counts, nodes):
    total = 0.0
    for i in range(positions.shape[0]):
        total += qsearch_root(positions[i], w, max_depth, moves, keys, pv, frames, counts, nodes)
    return total


def bench_qsearch(weights_path=None, max_depth=DEFAULT_MAX_DEPTH, out=sys.stdout):
    """Quiescence nodes per second (one thread); returns the KEY=VALUE dict it printed."""
    w = load_weights(weights_path)
    positions = bench_positions()
    buf = QBuffers(max_depth)

    def run():
        before = buf.nodes[0]
        _qsearch_loop(positions, w, max_depth, *buf.args())
        return int(buf.nodes[0] - before)

    n, dt, cpu = timed(run)
    result = {
        "positions": positions.shape[0],
        "max_depth": max_depth,
        "nodes": n,
        "seconds": round(dt, 3),
        "cpu_seconds": round(cpu, 3),
        "nodes_per_s": round(n / dt),
        "nodes_per_cpu_s": round(n / cpu),
        "us_per_node": round(cpu / n * 1e6, 3),
    }
    print(
        f"qsearch: {n} nodes in {dt:.2f} s ({cpu:.2f} s CPU) = {n / dt:,.0f} nodes/s, {n / cpu:,.0f} nodes/CPU-s",
        file=out,
    )
    print(" ".join(f"{k}={v}" for k, v in result.items()), file=out)
    return result


def shogi_search_set():
    """(adapter, positions) of the shogi search benchmark."""
    return ShogiAdapter(), [p.copy() for p in bench_positions()[:SEARCH_POSITIONS]]


def search_main(argv=None):
    """`usi-engine bench search [--game shogi|synthetic] ...` (see usi_engine/search/bench.py)."""
    return search_bench.main(argv, extra_sets={"shogi": shogi_search_set}, default="shogi")


def bench_signature(samples=SIGNATURE_SAMPLES, out=sys.stdout):
    """Search every position of the committed set for a fixed number of samples (one thread, fixed seed,
    fresh tree, no clock) with the shipped weights and default search options; prints and returns
    `nodes=<total> samples=<total> positions=<count>`. The node total changes exactly when the search's or
    the evaluation's behaviour changes, so a test pins it and a commit that changes it says so."""
    adapter = ShogiAdapter()
    searcher = Searcher(adapter, SearchOptions(threads=1, hash_mb=SIGNATURE_HASH_MB, reuse=False, seed=SIGNATURE_SEED))
    positions = bench_positions()
    nodes = total_samples = 0
    for pos in positions:
        result = searcher.search(pos.copy(), Limits(samples=samples))
        nodes += result.nodes
        total_samples += result.samples
    result = {"nodes": nodes, "samples": total_samples, "positions": positions.shape[0]}
    print(" ".join(f"{k}={v}" for k, v in result.items()), file=out)
    return result

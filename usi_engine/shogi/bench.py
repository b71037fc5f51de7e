"""`usi-engine bench perft`: perft speed of the rules core (one thread)."""

import time

from .board import Board


def bench_perft(sfen=None, depth=5, bulk=False):
    """Run perft once to load/compile, then time it; returns (nodes, seconds)."""
    board = Board(sfen)
    board.perft(1)
    start = time.perf_counter()
    nodes = board.perft(depth, bulk=bulk)
    return nodes, time.perf_counter() - start


def run(sfen=None, depth=5, bulk=False):
    nodes, seconds = bench_perft(sfen, depth, bulk)
    print(f"bench=perft depth={depth} nodes={nodes} seconds={seconds:.3f} nps={nodes / seconds:.0f}"
          + (" bulk=1" if bulk else ""), flush=True)

#!/usr/bin/env python3
"""Perft speed of our rules core against cshogi and python-shogi, measured in the same run.

    python tools/bench_perft_compare.py [--depth 5] [--python-shogi-depth 3] [--compile]

Every engine makes and unmakes every move (cshogi driven from Python with push/pop); a second
row counts the last ply in bulk for both. `--compile` also measures the cold numba compile of the
rules core (fresh cache directory) and the warm-cache load, each in a fresh process. Needs the test
extra (`pip install -e '.[test]'`: cshogi, python-shogi).
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time

import cshogi
import shogi as python_shogi

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from usi_engine.shogi.bench import bench_perft  # noqa: E402


def cshogi_perft(board, depth, bulk):
    if bulk and depth == 1:
        return len(board.legal_moves)
    if depth == 0:
        return 1
    total = 0
    for move in board.legal_moves:
        board.push(move)
        total += cshogi_perft(board, depth - 1, bulk)
        board.pop()
    return total


def python_shogi_perft(board, depth):
    if depth == 0:
        return 1
    total = 0
    for move in list(board.legal_moves):
        board.push(move)
        total += python_shogi_perft(board, depth - 1)
        board.pop()
    return total


def timed(fn, *args):
    start = time.perf_counter()
    nodes = fn(*args)
    return nodes, time.perf_counter() - start


WARM_UP = "from usi_engine.shogi.board import warm_up; warm_up()"


def compile_times():
    root = os.path.join(os.path.dirname(__file__), "..")
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache)
        results = []
        for _ in range(2):  # cold (empty cache), then warm
            start = time.perf_counter()
            subprocess.run([sys.executable, "-c", WARM_UP], cwd=root, env=env, check=True)
            results.append(time.perf_counter() - start)
    return results


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--depth", type=int, default=5)
    parser.add_argument("--python-shogi-depth", type=int, default=3)
    parser.add_argument("--compile", action="store_true")
    args = parser.parse_args()
    for bulk in (False, True):
        ours_nodes, ours_s = bench_perft(None, args.depth, bulk)
        their_nodes, their_s = timed(cshogi_perft, cshogi.Board(), args.depth, bulk)
        assert ours_nodes == their_nodes, (ours_nodes, their_nodes)
        ours_nps, their_nps = ours_nodes / ours_s, their_nodes / their_s
        label = "bulk" if bulk else "make/unmake"
        print(
            f"perft({args.depth}) {label}: ours {ours_nps / 1e6:.2f}M/s ({ours_s:.2f} s), "
            f"cshogi {their_nps / 1e6:.2f}M/s ({their_s:.2f} s), ratio {ours_nps / their_nps:.2f}x"
        )
    d = args.python_shogi_depth
    ps_nodes, ps_s = timed(python_shogi_perft, python_shogi.Board(), d)
    ours_nodes, ours_s = bench_perft(None, d, False)
    print(
        f"perft({d}): python-shogi {ps_nodes / ps_s / 1e3:.1f}k/s, ours {ours_nodes / ours_s / 1e6:.2f}M/s, "
        f"ratio {ours_nodes / ours_s / (ps_nodes / ps_s):.0f}x"
    )
    if args.compile:
        cold, warm = compile_times()
        print(f"rules core compile: cold {cold:.1f} s, warm-cache load {warm:.2f} s (fresh processes)")


if __name__ == "__main__":
    main()

"""Playout benchmark: ``python -m usi_engine.go.bench [--size 9] [--seconds 3]``.

Runs playouts from the empty board on one thread (after a warm-up call that compiles or loads the
kernels) and prints ``playouts_per_sec=X moves_per_sec=Y`` as its last line.
"""

import argparse
import time

import numpy as np

from usi_engine.go.layout import new_pos
from usi_engine.go.playout import move_cap, new_workspace, run_playouts, seed_rng

BATCH = 500


def measure(size: int = 9, seconds: float = 3.0, seed: int = 1):
    """(playouts/s, moves/s, mean moves per playout, Black's winrate) over about `seconds`."""
    pos = new_pos(size, komi=7.0)
    ws, rng = new_workspace(), seed_rng(seed)
    none = np.empty(0, dtype=np.float64)
    cap = move_cap(size)
    run_playouts(pos, ws, rng, 10, cap, none, none)           # compile / load from cache
    n = moves = 0
    wins = 0.0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        w, m, _ = run_playouts(pos, ws, rng, BATCH, cap, none, none)
        n += BATCH
        moves += m
        wins += w
    elapsed = time.perf_counter() - start
    return n / elapsed, moves / elapsed, moves / n, wins / n


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=9)
    ap.add_argument("--seconds", type=float, default=3.0)
    args = ap.parse_args(argv)
    pps, mps, length, black = measure(args.size, args.seconds)
    print(f"size={args.size} mean_moves={length:.1f} black_winrate={black:.3f}")
    print(f"playouts_per_sec={pps:.0f} moves_per_sec={mps:.0f}")


if __name__ == "__main__":
    main()

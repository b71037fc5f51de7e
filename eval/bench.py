"""Benchmarks behind ``usi-engine bench eval`` and ``usi-engine bench qsearch``.

Both run on the fixed position set usi_engine/shogi/data/bench_positions.txt (100 SFENs from seeded
uniformly random games, generated once by ``python -m eval.bench make-positions`` and committed),
time a numba loop (so Python call overhead is excluded), print a human line and, last, one line of
``KEY=VALUE`` pairs. Pass a weight file to measure with learned weights (default: shipped weights).
"""

import random
import sys
import time
from pathlib import Path

import numpy as np
from numba import njit

from eval.shogi_features import eval_stack, evaluate, inc_init, inc_record, inc_value
from eval.weightfile import load_weights
from usi_engine.shogi.layout import MAX_MOVES
from usi_engine.shogi.movegen import gen_legal
from usi_engine.shogi.position import do_move, undo_move
from usi_engine.shogi.quiescence import DEFAULT_MAX_DEPTH, QBuffers, qsearch_root

BENCH_FILE = Path(__file__).resolve().parent.parent / "usi_engine" / "shogi" / "data" / "bench_positions.txt"
BENCH_SEED = 20240601
BENCH_COUNT = 100
MIN_PLY, MAX_PLY = 10, 100
MIN_SECONDS = 1.0


def random_game_sfens(count, seed, min_ply=MIN_PLY, max_ply=MAX_PLY):
    """SFENs reached by uniformly random legal moves (cshogi, a test/dev dependency), game not over."""
    import cshogi
    rng = random.Random(seed)
    out = []
    while len(out) < count:
        board = cshogi.Board()
        for _ in range(rng.randint(min_ply, max_ply)):
            moves = list(board.legal_moves)
            if not moves:
                break
            board.push(rng.choice(moves))
        if not board.is_game_over():
            out.append(board.sfen())
    return out


def bench_sfens():
    """The committed benchmark SFENs."""
    return [s for s in BENCH_FILE.read_text().splitlines() if s.strip()]


def bench_positions():
    """The benchmark positions as one 2-D int64 array (a row per position)."""
    from usi_engine.shogi import Board
    return np.stack([Board(s).pos for s in bench_sfens()])


@njit(cache=True, nogil=True)
def _eval_loop(positions, w, reps):
    total = 0.0
    for _ in range(reps):
        for i in range(positions.shape[0]):
            total += evaluate(positions[i], w)
    return total


@njit(cache=True, nogil=True)
def _child_eval_loop(positions, w, reps, moves, eacc, eidx, incremental):
    """Evaluate every legal child of every position (make, evaluate, unmake), `reps` times; with
    `incremental` from the parent's eval-stack row, else in full. Returns (children, sum of values)."""
    children = 0
    total = 0.0
    for i in range(positions.shape[0]):
        pos = positions[i]
        n = gen_legal(pos, moves)
        inc_init(pos, w, eacc, eidx, 0)
        for _ in range(reps):
            for j in range(n):
                if incremental:
                    inc_record(pos, moves[j], w, eacc, eidx, 0)
                    do_move(pos, moves[j])
                    total += inc_value(pos, w, eacc, eidx, 1)
                else:
                    do_move(pos, moves[j])
                    total += evaluate(pos, w)
                undo_move(pos)
        children += reps * n
    return children, total


@njit(cache=True, nogil=True)
def _qsearch_loop(positions, w, max_depth, moves, keys, pv, frames, counts, nodes):
    total = 0.0
    for i in range(positions.shape[0]):
        total += qsearch_root(positions[i], w, max_depth, moves, keys, pv, frames, counts, nodes)
    return total


def _timed(run):
    """Repeat run() (returning a work count) until MIN_SECONDS pass; (work, wall s, CPU s).

    CPU seconds of this process are reported too: on a shared machine they are the robust figure.
    """
    run()                                    # compile / warm up
    work, start, cpu = 0, time.perf_counter(), time.process_time()
    while True:
        work += run()
        elapsed = time.perf_counter() - start
        if elapsed >= MIN_SECONDS:
            return work, elapsed, time.process_time() - cpu


def bench_eval(weights_path=None, out=sys.stdout):
    """Full static evaluations per second, and the cost of a child's evaluation made in full and made
    incrementally from its parent (make/unmake included in both); returns the KEY=VALUE dict it printed."""
    w = load_weights(weights_path)
    positions = bench_positions()
    reps = 100
    n, dt, cpu = _timed(lambda: (_eval_loop(positions, w, reps), reps * positions.shape[0])[1])
    moves = np.zeros(MAX_MOVES, dtype=np.int32)
    eacc, eidx = eval_stack(2)
    child_cpu = {}
    for incremental in (False, True):
        kids, _, kcpu = _timed(lambda: _child_eval_loop(positions, w, 10, moves, eacc, eidx, incremental)[0])
        child_cpu[incremental] = kcpu / kids * 1e6
    result = {"positions": positions.shape[0], "evals": n, "seconds": round(dt, 3),
              "cpu_seconds": round(cpu, 3), "evals_per_s": round(n / dt),
              "evals_per_cpu_s": round(n / cpu), "us_per_eval": round(cpu / n * 1e6, 3),
              "us_per_child_full": round(child_cpu[False], 3), "us_per_child_inc": round(child_cpu[True], 3),
              "inc_speedup": round(child_cpu[False] / child_cpu[True], 2)}
    print(f"eval: {n} evaluations in {dt:.2f} s ({cpu:.2f} s CPU) = {n / dt:,.0f}/s, "
          f"{cpu / n * 1e6:.3f} us CPU each; a child (make + evaluate + unmake, all legal moves): "
          f"{child_cpu[False]:.3f} us in full, {child_cpu[True]:.3f} us incrementally", file=out)
    print(" ".join(f"{k}={v}" for k, v in result.items()), file=out)
    return result


def bench_qsearch(weights_path=None, max_depth=DEFAULT_MAX_DEPTH, out=sys.stdout):
    """Quiescence nodes per second (one thread); returns the KEY=VALUE dict it printed."""
    w = load_weights(weights_path)
    positions = bench_positions()
    buf = QBuffers(max_depth)

    def run():
        before = buf.nodes[0]
        _qsearch_loop(positions, w, max_depth, *buf.args())
        return int(buf.nodes[0] - before)

    n, dt, cpu = _timed(run)
    result = {"positions": positions.shape[0], "max_depth": max_depth, "nodes": n,
              "seconds": round(dt, 3), "cpu_seconds": round(cpu, 3), "nodes_per_s": round(n / dt),
              "nodes_per_cpu_s": round(n / cpu), "us_per_node": round(cpu / n * 1e6, 3)}
    print(f"qsearch: {n} nodes in {dt:.2f} s ({cpu:.2f} s CPU) = {n / dt:,.0f} nodes/s, "
          f"{n / cpu:,.0f} nodes/CPU-s", file=out)
    print(" ".join(f"{k}={v}" for k, v in result.items()), file=out)
    return result


def main(argv=None):
    """``python -m eval.bench eval|qsearch [weights.npz]`` or ``make-positions``."""
    argv = sys.argv[1:] if argv is None else argv
    what = argv[0] if argv else "eval"
    path = argv[1] if len(argv) > 1 else None
    if what == "eval":
        bench_eval(path)
    elif what == "qsearch":
        bench_qsearch(path)
    elif what == "make-positions":
        BENCH_FILE.parent.mkdir(parents=True, exist_ok=True)
        BENCH_FILE.write_text("\n".join(random_game_sfens(BENCH_COUNT, BENCH_SEED)) + "\n")
        print(f"wrote {BENCH_FILE}")
    else:
        raise SystemExit(f"unknown benchmark {what!r}: use eval, qsearch or make-positions")


if __name__ == "__main__":
    main()

"""Benchmark behind ``usi-engine bench eval``: static evaluations per second, and a child's evaluation made
in full and incrementally, on the fixed position set (usi_engine/shogi/bench.py).

Timed inside a numba loop (so Python call overhead is excluded); prints a human line and, last, one line of
``KEY=VALUE`` pairs. Pass a weight file to measure with learned weights (default: shipped weights).
"""

import sys
import time

import numpy as np
from numba import njit

from usi_engine.shogi.bench import bench_positions
from usi_engine.shogi.layout import MAX_MOVES
from usi_engine.shogi.movegen import gen_legal
from usi_engine.shogi.position import do_move, undo_move

from .evalfile import load_weights
from .incremental import eval_stack, inc_init, inc_record, inc_value, pp_block_zero
from .linear import evaluate

MIN_SECONDS = 1.0


@njit(cache=True, nogil=True)
def _eval_loop(positions, w, reps):
    total = 0.0
    for _ in range(reps):
        for i in range(positions.shape[0]):
            total += evaluate(positions[i], w)
    return total


@njit(cache=True, nogil=True)
def _child_eval_loop(positions, w, reps, moves, eacc, eidx, incremental, pp_zero):
    """Evaluate every legal child of every position (make, evaluate, unmake), `reps` times; with
    `incremental` from the parent's eval-stack row (pp_zero as inc_init's), else in full. Returns (children,
    sum of values)."""
    children = 0
    total = 0.0
    for i in range(positions.shape[0]):
        pos = positions[i]
        n = gen_legal(pos, moves)
        inc_init(pos, w, eacc, eidx, 0, pp_zero)
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


def timed(run):
    """Repeat run() (returning a work count) until MIN_SECONDS pass; (work, wall s, CPU s).

    CPU seconds of this process are reported too: on a shared machine they are the robust figure.
    """
    run()  # compile / warm up
    work, start, cpu = 0, time.perf_counter(), time.process_time()
    while True:
        work += run()
        elapsed = time.perf_counter() - start
        if elapsed >= MIN_SECONDS:
            return work, elapsed, time.process_time() - cpu


def rates(unit: str, n: int, dt: float, cpu: float) -> dict:
    """The figures of n units of work done in dt wall and cpu CPU seconds, keyed by the unit's name: units,
    seconds, cpu_seconds, units_per_s, units_per_cpu_s, us_per_unit (CPU)."""
    return {
        f"{unit}s": n,
        "seconds": round(dt, 3),
        "cpu_seconds": round(cpu, 3),
        f"{unit}s_per_s": round(n / dt),
        f"{unit}s_per_cpu_s": round(n / cpu),
        f"us_per_{unit}": round(cpu / n * 1e6, 3),
    }


def report(result: dict, out=sys.stdout, flush: bool = False) -> dict:
    """Prints a benchmark's KEY=VALUE line (what scripts and tests read) and returns result."""
    print(" ".join(f"{k}={v}" for k, v in result.items()), file=out, flush=flush)
    return result


def bench_eval(weights_path=None, out=sys.stdout):
    """Full static evaluations per second, and the cost of a child's evaluation made in full and made
    incrementally from its parent (make/unmake included in both), the latter as the search makes it (PP sums
    skipped when the PP block is all zero) and, for reference, with the PP sums; returns the KEY=VALUE dict
    it printed."""
    w = load_weights(weights_path)
    positions = bench_positions()
    reps = 100
    n, dt, cpu = timed(lambda: (_eval_loop(positions, w, reps), reps * positions.shape[0])[1])
    moves = np.zeros(MAX_MOVES, dtype=np.int32)
    eacc, eidx = eval_stack(2)
    child_cpu = {}
    pp_zero = pp_block_zero(w)
    for kind, incremental, skip in (("full", False, False), ("inc", True, pp_zero), ("inc_pp", True, False)):
        kids, _, kcpu = timed(
            lambda inc=incremental, z=skip: _child_eval_loop(positions, w, 10, moves, eacc, eidx, inc, z)[0]
        )
        child_cpu[kind] = kcpu / kids * 1e6
    result = {
        "positions": positions.shape[0],
        **rates("eval", n, dt, cpu),
        "us_per_child_full": round(child_cpu["full"], 3),
        "us_per_child_inc": round(child_cpu["inc"], 3),
        "us_per_child_inc_pp": round(child_cpu["inc_pp"], 3),
        "pp_zero": int(pp_zero),
        "inc_speedup": round(child_cpu["full"] / child_cpu["inc"], 2),
    }
    print(
        f"eval: {n} evaluations in {dt:.2f} s ({cpu:.2f} s CPU) = {n / dt:,.0f}/s, "
        f"{cpu / n * 1e6:.3f} us CPU each; a child (make + evaluate + unmake, all legal moves): "
        f"{child_cpu['full']:.3f} us in full, {child_cpu['inc']:.3f} us incrementally "
        f"({child_cpu['inc_pp']:.3f} us with the PP sums{'' if pp_zero else '; PP in use'})",
        file=out,
    )
    return report(result, out)


def main(argv=None):
    """``python -m usi_engine.shogi_eval.bench [weights.npz]``."""
    argv = sys.argv[1:] if argv is None else argv
    bench_eval(argv[0] if argv else None)


if __name__ == "__main__":
    main()

"""`usi-engine bench perft` (perft speed of the rules core, one thread) and the fixed benchmark position set.

The set is usi_engine/shogi/data/bench_positions.txt: 100 SFENs from seeded uniformly random games,
generated once by ``python -m usi_engine.shogi.bench make-positions`` and committed. The evaluation,
quiescence and search benchmarks all run on it.
"""

import random
import sys
import time
from pathlib import Path

import numpy as np

from .board import Board

BENCH_FILE = Path(__file__).resolve().parent / "data" / "bench_positions.txt"
BENCH_SEED = 20240601
BENCH_COUNT = 100
MIN_PLY, MAX_PLY = 10, 100


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
    return np.stack([Board(s).pos for s in bench_sfens()])


def bench_perft(sfen=None, depth=5, bulk=False):
    """Run perft once to load/compile, then time it; returns (nodes, seconds)."""
    board = Board(sfen)
    board.perft(1)
    start = time.perf_counter()
    nodes = board.perft(depth, bulk=bulk)
    return nodes, time.perf_counter() - start


def run(sfen=None, depth=5, bulk=False):
    nodes, seconds = bench_perft(sfen, depth, bulk)
    print(
        f"bench=perft depth={depth} nodes={nodes} seconds={seconds:.3f} nps={nodes / seconds:.0f}"
        + (" bulk=1" if bulk else ""),
        flush=True,
    )


def main(argv=None):
    """``python -m usi_engine.shogi.bench make-positions``: regenerate the committed position set."""
    argv = sys.argv[1:] if argv is None else argv
    if argv != ["make-positions"]:
        raise SystemExit("usage: python -m usi_engine.shogi.bench make-positions")
    BENCH_FILE.parent.mkdir(parents=True, exist_ok=True)
    BENCH_FILE.write_text("\n".join(random_game_sfens(BENCH_COUNT, BENCH_SEED)) + "\n")
    print(f"wrote {BENCH_FILE}")


if __name__ == "__main__":
    main()

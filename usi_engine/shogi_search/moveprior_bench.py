"""`usi-engine bench moveprior`: the speed of the shogi move prior (moveprior.py: moves and positions scored per
second, microseconds per move) and its accuracy on a fixed set of positions from games the shipped model was not
fitted on (data/moveprior_positions.txt, written by `python -m learn shogi-moves ... --write-test-positions`), beside
a uniform guess over the same search moves.
"""

import sys
from pathlib import Path

import numpy as np
from numba import njit

from usi_engine.shogi.board import Board
from usi_engine.shogi.layout import MAX_MOVES
from usi_engine.shogi.movegen import gen_search_moves
from usi_engine.shogi.sfen import usi_to_move
from usi_engine.shogi_eval.bench import report, timed

from .moveprior import load_model, move_scores, parse_labelled

FIXTURE = Path(__file__).resolve().parent / "data" / "moveprior_positions.txt"
REPS = 20  # passes over the fixture per timed run


def load_fixture(path=FIXTURE) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(positions, search moves [position, MAX_MOVES], their counts, the index of the labelled move) of a file
    of labelled positions (moveprior.parse_labelled); a position whose move is not a search move is left out."""
    rows, moves, counts, played = [], [], [], []
    for line in Path(path).read_text().splitlines():
        if not line.strip():
            continue
        start, history, label = parse_labelled(line)
        board = Board(start)
        for m in history:
            board.push_usi(m)
        out = np.zeros(MAX_MOVES, np.int32)
        n = gen_search_moves(board.pos, out)
        hit = np.flatnonzero(out[:n] == usi_to_move(label))
        if len(hit):
            rows.append(board.pos.copy())
            moves.append(out)
            counts.append(n)
            played.append(int(hit[0]))
    width = max(len(r) for r in rows)
    positions = np.stack([np.pad(r, (0, width - len(r))) for r in rows])
    return positions, np.stack(moves), np.array(counts, np.int64), np.array(played, np.int64)


@njit(cache=True, nogil=True)
def _score_all(positions, moves, counts, model, reps, scores, tactical):
    """move_scores of every fixture position, `reps` times; scores / tactical [position, MAX_MOVES] keep the last."""
    for _ in range(reps):
        for i in range(positions.shape[0]):
            move_scores(positions[i], model, moves[i], counts[i], scores[i], tactical[i])


def accuracy(scores: np.ndarray, counts: np.ndarray, played: np.ndarray) -> tuple[float, float, float]:
    """(mean -log P of the labelled move under the softmax of the scores, its expected top-1 and top-5 accuracy
    with ties broken at random)."""
    nll = top1 = top5 = 0.0
    for s, n, k in zip(scores, counts, played):
        s = s[:n]
        top = s.max()
        nll += top + np.log(np.exp(s - top).sum()) - s[k]
        above, tied = (s > s[k]).sum(), (s == s[k]).sum()
        top1 += min(1.0, max(0.0, (1 - above) / tied))
        top5 += min(1.0, max(0.0, (5 - above) / tied))
    return nll / len(counts), top1 / len(counts), top5 / len(counts)


def bench_moveprior(model_path=None, fixture=FIXTURE, out=None) -> dict:
    """Time move_scores over the fixture and measure the model's accuracy there beside the uniform guess; prints
    (to `out`, default the current sys.stdout) and returns the KEY=VALUE dict of the last line."""
    out = sys.stdout if out is None else out
    model = load_model(model_path)
    positions, moves, counts, played = load_fixture(fixture)
    scores = np.zeros(moves.shape)
    tactical = np.zeros(moves.shape, np.int8)

    def run() -> int:
        _score_all(positions, moves, counts, model, REPS, scores, tactical)
        return REPS

    reps, dt, cpu = timed(run)
    n_moves = reps * int(counts.sum())
    n_pos = reps * len(counts)
    nll, top1, top5 = accuracy(scores, counts, played)
    uniform = accuracy(np.zeros(moves.shape), counts, played)
    result = {
        "positions": len(counts),
        "moves_per_position": round(float(counts.mean()), 1),
        "moves_per_cpu_s": round(n_moves / cpu),
        "positions_per_cpu_s": round(n_pos / cpu),
        "us_per_move": round(cpu / n_moves * 1e6, 3),
        "tactical_share": round(float(sum(t[:n].sum() for t, n in zip(tactical, counts)) / counts.sum()), 3),
        "top1": round(top1, 4),
        "top5": round(top5, 4),
        "nll": round(nll, 3),
        "uniform_top1": round(uniform[1], 4),
        "uniform_top5": round(uniform[2], 4),
        "uniform_nll": round(uniform[0], 3),
    }
    print(
        f"moveprior: {len(counts)} positions, {counts.mean():.1f} search moves each: {n_moves / cpu:,.0f} moves/CPU-s,"
        f" {n_pos / cpu:,.0f} positions/CPU-s ({cpu / n_moves * 1e6:.3f} us a move; {dt:.2f} s wall, {cpu:.2f} s CPU)",
        file=out,
    )
    print(
        f"held-out moves: top-1 {top1:.1%}, top-5 {top5:.1%}, -log P {nll:.3f} (uniform: {uniform[1]:.1%},"
        f" {uniform[2]:.1%}, {uniform[0]:.3f})",
        file=out,
    )
    return report(result, out)

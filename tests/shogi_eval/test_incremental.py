"""Incremental evaluation (eval stack rows, lazy frames) equals the full evaluation.

Random games from the start position and from random middle-game positions; at every ply every legal
child is evaluated incrementally from the parent's row and compared with evaluate(); the chosen move
then extends the path, so rows deep in the stack are reached with frames computed lazily several
plies late. Weights are random in every block (material, KP, PP), so any missed term shows.
"""

import numpy as np
import pytest
from numba import njit

from usi_engine.shogi import Board
from usi_engine.shogi.bench import random_game_sfens
from usi_engine.shogi.layout import DROP_BASE, KING, MAX_MOVES, MOVE_FROM_SHIFT, MOVE_PROMO_BIT, MOVE_TO_MASK, PLY
from usi_engine.shogi.movegen import gen_legal
from usi_engine.shogi.position import do_move, undo_move
from usi_engine.shogi_eval import features as F
from usi_engine.shogi_eval.incremental import MIRROR, eval_stack, inc_init, inc_record, inc_value, pp_block_zero
from usi_engine.shogi_eval.king_terms import zone_blocks_used
from usi_engine.shogi_eval.linear import evaluate

# Move categories counted by the walk (each must occur often).
CAPTURE, PROMOTION, DROP, KING_MOVE, KING_CAPTURE = range(5)
PLIES = 120
LAZY_EVERY = 3  # the path's own value is read only every LAZY_EVERY plies


@njit(cache=True)
def walk(pos, w, eacc, eidx, seed, plies, moves, stats, pp_zero):
    """Random game from pos comparing every child; returns the largest |incremental - full|."""
    np.random.seed(seed)
    inc_init(pos, w, eacc, eidx, 0, pp_zero)
    worst = 0.0
    for ply in range(plies):
        n = gen_legal(pos, moves)
        if n == 0:
            break
        for i in range(n):
            m = moves[i]
            frm = (m >> MOVE_FROM_SHIFT) & 0x7F
            captured = frm <= DROP_BASE and pos[m & MOVE_TO_MASK] != 0
            king = frm <= DROP_BASE and (pos[frm] & 15) == KING
            stats[CAPTURE] += captured
            stats[PROMOTION] += (m & MOVE_PROMO_BIT) != 0
            stats[DROP] += frm > DROP_BASE
            stats[KING_MOVE] += king
            stats[KING_CAPTURE] += king and captured
            inc_record(pos, m, w, eacc, eidx, ply)
            do_move(pos, m)
            worst = max(worst, abs(inc_value(pos, w, eacc, eidx, ply + 1) - evaluate(pos, w)))
            undo_move(pos)
        m = moves[np.random.randint(n)]
        inc_record(pos, m, w, eacc, eidx, ply)
        do_move(pos, m)
        if ply % LAZY_EVERY == 0:
            worst = max(worst, abs(inc_value(pos, w, eacc, eidx, ply + 1) - evaluate(pos, w)))
    for _ in range(pos[PLY]):  # back to the start, so the caller's board is unchanged
        undo_move(pos)
    return worst


@pytest.fixture(scope="module")
def random_w():
    return np.random.default_rng(21).normal(0.0, 30.0, F.N_WEIGHTS)


def run_walks(sfens, w, seed, pp_zero=False):
    eacc, eidx = eval_stack(PLIES + 1)
    moves = np.zeros(MAX_MOVES, dtype=np.int32)
    stats = np.zeros(5, dtype=np.int64)
    worst = 0.0
    for i, s in enumerate(sfens):
        board = Board(s)
        worst = max(worst, walk(board.pos, w, eacc, eidx, seed + i, PLIES, moves, stats, pp_zero))
    return worst, stats


def test_incremental_equals_full_on_random_games(random_w):
    sfens = ["lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL b - 1"] * 6
    sfens += random_game_sfens(10, seed=3, min_ply=20, max_ply=120)
    worst, stats = run_walks(sfens, random_w, seed=100)
    assert worst < 1e-8
    assert stats.sum() > 0 and stats[CAPTURE] > 2000 and stats[PROMOTION] > 1000
    assert stats[DROP] > 10000 and stats[KING_MOVE] > 1000 and stats[KING_CAPTURE] > 20


def test_incremental_without_kings_and_with_full_hands(random_w):
    # tsume-style: no black king; and a position with many pieces in hand (hand objects come and go)
    sfens = ["4k4/9/4P4/9/9/9/9/9/9 b G2r 1", "l6nl/5+P1gk/2np1S3/p1p4Pp/3P2Sp1/1PPb2P1P/P5GS1/R8/LN4bKL w RGgsn5p 1"]
    worst, stats = run_walks(sfens, random_w, seed=200)
    assert worst < 1e-8 and stats[DROP] > 100


@pytest.mark.parametrize("zone", [False, True])
def test_incremental_equals_full_with_and_without_the_zone_blocks(random_w, zone):
    """The eval-stack flag that lets king_terms skip KZ and KPOS when both blocks are zero: the incremental value
    still equals the full one with the blocks zero (skipped on both paths) and with only them non-zero among the
    king terms."""
    w = random_w.copy()
    if zone:
        w[F.OFF_KS : F.OFF_KZ] = 0.0
    else:
        w[F.OFF_KZ :] = 0.0
    assert zone_blocks_used(w) == zone
    worst, _ = run_walks(random_game_sfens(4, seed=7, min_ply=20, max_ply=120), w, seed=300)
    assert worst < 1e-8


def test_pp_sums_skipped_only_where_the_pp_block_is_zero(random_w):
    """inc_init's pp_zero (what the search passes for weights whose PP block is all zero, as every shipped file's):
    with the block zero the incremental value still equals the full one; with it non-zero the flag would change
    the values, so the skip is real and the callers' check (pp_block_zero) is what keeps it exact."""
    sfens = random_game_sfens(4, seed=9, min_ply=20, max_ply=120)
    w = random_w.copy()
    assert not pp_block_zero(w)
    worst, _ = run_walks(sfens, w, seed=400, pp_zero=True)
    assert worst > 1.0
    w[F.OFF_PP : F.OFF_PP + F.N_PP] = 0.0
    assert pp_block_zero(w)
    worst, stats = run_walks(sfens, w, seed=400, pp_zero=True)
    assert worst < 1e-8 and stats[CAPTURE] > 100 and stats[KING_MOVE] > 100


def test_material_only_weights_are_exact():
    """With the shipped material weights the incremental value is exactly the full one (integers)."""
    from usi_engine.shogi_eval.evalfile import load_weights

    sfens = random_game_sfens(4, seed=5, min_ply=10, max_ply=80)
    eacc, eidx = eval_stack(PLIES + 1)
    moves = np.zeros(MAX_MOVES, dtype=np.int32)
    stats = np.zeros(5, dtype=np.int64)
    for i, s in enumerate(sfens):
        assert walk(Board(s).pos, load_weights(), eacc, eidx, i, PLIES, moves, stats, False) == 0.0


def test_mirror_maps_each_piece_to_its_rotated_colour_swapped_self():
    assert sorted(MIRROR.tolist()) == list(range(F.FE_END))
    assert np.array_equal(MIRROR[MIRROR], np.arange(F.FE_END))
    # black pawn on 7g (sq 60) <-> white pawn on 3c (sq 20); black's 3rd hand pawn <-> white's
    assert MIRROR[F.board_bp(0, 1, 60)] == F.board_bp(1, 1, 20)
    assert MIRROR[F.hand_bp(0, 1, 2)] == F.hand_bp(1, 1, 2)

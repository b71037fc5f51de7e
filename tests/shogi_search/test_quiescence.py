"""Quiescence search: hand-made tactics, mate scores, PV leaves, and equality with plain minimax."""

import numpy as np
import pytest
from numba import njit

from usi_engine.search.values import MATE
from usi_engine.shogi import Board, move_to_usi
from usi_engine.shogi.bench import random_game_sfens
from usi_engine.shogi.layout import (
    BISHOP,
    DROP_BASE,
    HIST,
    HIST_STRIDE,
    H_CHECK,
    H_KEY,
    LANCE,
    MAX_MOVES,
    MOVE_FROM_SHIFT,
    MOVE_PROMO_BIT,
    MOVE_TO_MASK,
    PAWN,
    ROOK,
)
from usi_engine.shogi.movegen import gen_legal
from usi_engine.shogi.position import do_move, undo_move
from usi_engine.shogi_eval import features as F
from usi_engine.shogi_eval.evalfile import load_weights
from usi_engine.shogi_eval.incremental import eval_stack, inc_init, inc_value, pp_block_zero
from usi_engine.shogi_eval.linear import evaluate, feature_buffers
from usi_engine.shogi_search import quiescence as Q

W = load_weights("material")  # the expected values below are material balances


def search(sfen, w=W, max_depth=Q.DEFAULT_MAX_DEPTH):
    board = Board(sfen)
    before = board.pos.copy()
    buf = Q.QBuffers(max_depth)
    value = Q.qsearch_root(board.pos, w, max_depth, *buf.args())
    kept = list(range(HIST)) + [HIST + H_KEY, HIST + H_CHECK]  # move slots of the history are scratch
    assert np.array_equal(board.pos[kept], before[kept]), "qsearch must restore the position"
    return value, [move_to_usi(m) for m in buf.pv_moves()], int(buf.nodes[0])


def test_hanging_piece_is_taken():
    # Black rook 5h, undefended white gold 5e: stand pat 1000 - 550, after Rx5e 1000 + 605.
    value, pv, _ = search("8k/9/9/9/4g4/9/9/4R4/K8 b - 1")
    assert pv == ["5h5e"]
    assert value == pytest.approx(1605)


def test_no_capture_into_a_defended_square():
    # The gold on 5d is defended by the pawn on 5c: Rx5d loses the rook, so stand pat (1000-550-100).
    value, pv, _ = search("4k4/9/4p4/4g4/9/9/9/4R4/K8 b - 1")
    assert pv == []
    assert value == pytest.approx(350)


def test_recapture_sequence_least_valuable_attacker_first():
    # White rook 5e defended by the silver 4d; Black attacks it with the gold 5f and the bishop 7g.
    # Gx5e Sx5e Bx5e nets rook + silver - gold; White prefers recapturing to standing pat.
    value, pv, _ = search("7k1/9/9/5s3/4r4/4G4/2B6/9/K8 b - 1")
    assert pv == ["5f5e", "4d5e", "7g5e"]
    stand = 800 + 550 - 1000 - 500
    assert value == pytest.approx(stand + (1000 + 1100) - (550 + 605) + (500 + 550))


def test_depth_cap_stops_the_sequence():
    value, pv, _ = search("7k1/9/9/5s3/4r4/4G4/2B6/9/K8 b - 1", max_depth=1)
    assert pv == ["5f5e"]
    assert value == pytest.approx(800 + 550 - 1000 - 500 + 2100)


def test_evasions_when_in_check_no_stand_pat():
    # Knight 4g forks king 5i and rook 3i: the king must step next to 3i to win the knight back.
    value, pv, _ = search("4k4/9/9/9/9/9/5n3/9/4K1R2 b - 1")
    assert pv[0] in ("5i4h", "5i4i") and pv[1] == "4g3i+" and pv[2] == pv[0][2:] + "3i"
    assert value == pytest.approx(650 - 1000 - 1100 - (580 - 350) + 580 + 385)


def test_mated_side_to_move_is_minus_mate():
    value, pv, nodes = search("4k4/9/9/9/9/9/4p4/4g4/4K4 b - 1")
    assert value == -MATE and pv == [] and nodes == 1


def test_capture_that_mates_scores_mate_minus_distance():
    value, pv, _ = search("8k/6S2/8g/9/9/9/9/9/K7R b - 1")
    assert pv == ["1i1c+"]
    assert value == MATE - 1


def test_captures_exclude_non_promoting_pawn_bishop_rook_captures():
    board = Board("4k4/9/4p4/9/9/9/9/4R4/K8 b - 1")
    moves = np.zeros(MAX_MOVES, dtype=np.int32)
    n = Q.gen_captures(board.pos, moves)
    assert sorted(move_to_usi(m) for m in moves[:n]) == ["5h5c+"]


def captures_from_legal_moves(board):
    """Reference capture list: gen_legal's captures without a non-promoting capture by a pawn, bishop or
    rook, or by a lance to its second rank, whose promoting twin exists, ordered by origin square (stable: per
    piece in generation order)."""
    legal = [int(m) for m in board.legal_move_codes()]
    present = set(legal)
    second_rank = "b" if board.turn == 0 else "h"
    out = []
    for m in legal:
        frm, to = (m >> MOVE_FROM_SHIFT) & 0x7F, m & MOVE_TO_MASK
        if frm > DROP_BASE or board.pos[to] == 0:
            continue
        if not m & MOVE_PROMO_BIT and (m | MOVE_PROMO_BIT) in present:
            ptype = board.pos[frm] & 15
            if ptype in (PAWN, BISHOP, ROOK) or (ptype == LANCE and move_to_usi(m)[3] == second_rank):
                continue
        out.append(m)
    return sorted(out, key=lambda m: (m >> MOVE_FROM_SHIFT) & 0x7F)


def test_gen_captures_equals_the_filtered_legal_captures():
    moves = np.zeros(MAX_MOVES, dtype=np.int32)
    tested = captures = 0
    for s in random_game_sfens(300, seed=17, min_ply=10, max_ply=160):
        board = Board(s)
        for child in [None] + [int(m) for m in board.legal_move_codes()[:12]]:
            b = board.copy()
            if child is not None:
                b.push_code(child)
            if b.is_check():
                continue
            n = Q.gen_captures(b.pos, moves)
            assert moves[:n].tolist() == captures_from_legal_moves(b), b.sfen()
            tested += 1
            captures += n
    assert tested > 2000 and captures > 5000


def test_gen_recaptures_equals_gen_captures_on_that_square():
    """For every square of every tested position: the captures on it, in gen_captures' order."""
    moves = np.zeros(MAX_MOVES, dtype=np.int32)
    only = np.zeros(MAX_MOVES, dtype=np.int32)
    tested = found = 0
    for s in random_game_sfens(150, seed=23, min_ply=10, max_ply=160):
        board = Board(s)
        for child in [None] + [int(m) for m in board.legal_move_codes()[:6]]:
            b = board.copy()
            if child is not None:
                b.push_code(child)
            if b.is_check():
                continue
            every = moves[: Q.gen_captures(b.pos, moves)].tolist()
            for target in range(81):
                n = Q.gen_recaptures(b.pos, target, only)
                assert only[:n].tolist() == [m for m in every if m & MOVE_TO_MASK == target], (b.sfen(), target)
                found += n
            tested += 1
    assert tested > 500 and found > 1000


# --- agreement with a plain capture-minimax ---------------------------------------------------


@njit  # not cached: numba's cache of this self-recursive function with several overloads crashed on reload
def minimax(pos, w, ply, max_depth, moves, counter, recapture_ply=0, last_to=-1):
    """Negamax over the same move set as qsearch, without alpha-beta (reference); from ply recapture_ply on
    (0 = never), not in check, only the captures on last_to (the square of the move that led here)."""
    counter[0] += 1
    if ply >= max_depth:
        return evaluate(pos, w)
    if Q.side_in_check(pos):
        n = gen_legal(pos, moves[ply])
        if n == 0:
            return -MATE + ply
        best = -np.inf
        only = -1
    else:
        best = evaluate(pos, w)
        n = Q.gen_captures(pos, moves[ply])
        only = last_to if 0 < recapture_ply <= ply else -1
    for i in range(n):
        to = moves[ply, i] & MOVE_TO_MASK
        if only >= 0 and to != only:
            continue
        do_move(pos, moves[ply, i])
        best = max(best, -minimax(pos, w, ply + 1, max_depth, moves, counter, recapture_ply, to))
        undo_move(pos)
    return best


@pytest.mark.parametrize("max_depth,count", [(4, 500), (5, 60)])
def test_alpha_beta_equals_minimax_and_pv_leaf_gives_the_value(max_depth, count):
    """Plain minimax grows as branching^depth (52 M nodes for 500 positions at depth 6), hence
    depth 4 on 500 random positions plus depth 5 on a subset."""
    rng = np.random.default_rng(5)
    w = W.copy()
    w[F.OFF_KP :] = rng.normal(0.0, 3.0, F.N_WEIGHTS - F.OFF_KP)  # break ties between lines
    buf = Q.QBuffers(max_depth)
    moves = np.zeros((max_depth + 1, MAX_MOVES), dtype=np.int32)
    counter = np.zeros(1, dtype=np.int64)
    sfens = random_game_sfens(500, seed=11, min_ply=10, max_ply=140)[:count]
    checks = 0
    for s in sfens:
        board = Board(s)
        checks += board.is_check()
        value = Q.qsearch_root(board.pos, w, max_depth, *buf.args())
        assert value == pytest.approx(minimax(board.pos, w, 0, max_depth, moves, counter), abs=1e-6), s
        pv = buf.pv_moves()
        for m in pv:
            board.push_code(m)
        if abs(value) >= MATE - 100:
            assert board.is_checkmate() and abs(value) == MATE - len(pv)
        else:
            sign = -1.0 if len(pv) % 2 else 1.0
            assert value == pytest.approx(sign * evaluate(board.pos, w), abs=1e-6)
    assert checks >= count // 100 and counter[0] > 10 * count
    assert buf.nodes[0] < counter[0]  # alpha-beta searched fewer nodes


@pytest.mark.parametrize("recapture_ply", [1, 2, 3])
def test_recapture_only_quiescence_equals_its_minimax(recapture_ply):
    """`recapture_ply` R: from quiescence ply R on, not in check, only captures on the square of the last move
    are searched (evasions stay complete). Equal to the plain negamax over that move set on random game
    positions; fewer nodes than the full quiescence search; R = 0 is the full search."""
    max_depth = 6
    rng = np.random.default_rng(7)
    w = W.copy()
    w[F.OFF_KP :] = rng.normal(0.0, 3.0, F.N_WEIGHTS - F.OFF_KP)
    buf, full = Q.QBuffers(max_depth), Q.QBuffers(max_depth)
    moves = np.zeros((max_depth + 1, MAX_MOVES), dtype=np.int32)
    counter = np.zeros(1, dtype=np.int64)
    differ = 0
    for s in random_game_sfens(500, seed=13, min_ply=10, max_ply=140)[:60]:
        board = Board(s)
        value = Q.qsearch(board.pos, w, -Q.INF, Q.INF, max_depth, *buf.args(), False, 0.0, recapture_ply)
        assert value == pytest.approx(minimax(board.pos, w, 0, max_depth, moves, counter, recapture_ply), abs=1e-6), s
        whole = Q.qsearch(board.pos, w, -Q.INF, Q.INF, max_depth, *full.args(), False, 0.0, 0)
        differ += abs(whole - value) > 1e-6
    assert buf.nodes[0] < full.nodes[0]
    assert differ > 0  # the restriction changes values somewhere, so the test sees it


def test_pv_leaf_gradient_equals_finite_differences_of_the_quiescence_value():
    """The quiescence value is piecewise linear in w; off ties its slope is the PV leaf's features."""
    rng = np.random.default_rng(9)
    w = W.copy()
    w[F.OFF_KP :] = rng.normal(0.0, 3.0, F.N_WEIGHTS - F.OFF_KP)
    buf = Q.QBuffers()
    idx, coef = feature_buffers()
    h = 1e-3
    tested = 0
    for s in random_game_sfens(40, seed=13, min_ply=10, max_ply=120):
        pos = Board(s).pos
        value = Q.qsearch_root(pos, w, buf.max_depth, *buf.args())
        n = Q.pv_leaf_gradient(pos, w, value, buf.pv, buf.counts, idx, coef)
        if abs(value) >= MATE - 1000:
            assert n == 0
            continue
        assert value == pytest.approx(float(np.dot(w[idx[:n]], coef[:n])), abs=1e-6)
        for k in rng.choice(n, size=min(5, n), replace=False):
            wp = w.copy()
            wp[idx[k]] += h
            up = Q.qsearch_root(pos, wp, buf.max_depth, *buf.args())
            wp[idx[k]] -= 2 * h
            down = Q.qsearch_root(pos, wp, buf.max_depth, *buf.args())
            assert (up - down) / (2 * h) == pytest.approx(coef[k], abs=1e-6)
        tested += 1
    assert tested > 30


# python-shogi piece type -> ours (gold, bishop and rook are numbered differently)
PY_TO_OURS = {1: 1, 2: 2, 3: 3, 4: 4, 5: 7, 6: 5, 7: 6, 8: 8, 9: 9, 10: 10, 11: 11, 12: 12, 13: 13, 14: 14}


def oracle_see(sfen, usi):
    """Static exchange value of a capture by recursion on python-shogi boards: each side recaptures with its
    least valuable attacker (MVV-LVA key, ties: every choice tried) or stops. Returns the (min, max) over
    the tie choices."""
    import shogi

    def swing(ptype):
        return W[F.OFF_MATERIAL + ptype] + W[F.OFF_MATERIAL + F.MAT_HAND + int(Q.DEMOTE[ptype])]

    def on_square(ptype):
        return Q.SEE_KING if ptype == 8 else swing(ptype)

    def exchange(board, sq, side, value_on_square):
        attackers = list(board.attackers(side, sq))
        if not attackers:
            return {0.0}
        key = {s: Q.ORDER_VALUE[PY_TO_OURS[board.piece_at(s).piece_type]] for s in attackers}
        least = min(key.values())
        out = set()
        for s in (s for s in attackers if key[s] == least):
            piece = board.piece_at(s)
            board.remove_piece_at(s)
            for rest in exchange(board, sq, not side, on_square(PY_TO_OURS[piece.piece_type])):
                out.add(max(0.0, value_on_square - rest))
            board.set_piece_at(s, piece)
        return out

    board = shogi.Board(sfen)
    move = shogi.Move.from_usi(usi)
    mover = PY_TO_OURS[board.piece_at(move.from_square).piece_type]
    gain = swing(PY_TO_OURS[board.piece_at(move.to_square).piece_type])
    if move.promotion:
        gain += W[F.OFF_MATERIAL + mover + 8] - W[F.OFF_MATERIAL + mover]
        mover += 8
    piece = board.piece_at(move.from_square)
    board.remove_piece_at(move.from_square)
    values = {gain - rest for rest in exchange(board, move.to_square, not board.turn, on_square(mover))}
    board.set_piece_at(move.from_square, piece)
    return min(values), max(values)


def test_see_equals_an_exchange_oracle_on_random_captures():
    checked = negative = 0
    for sfen in random_game_sfens(40, seed=13, min_ply=30, max_ply=160):
        board = Board(sfen)
        if board.pos[HIST + HIST_STRIDE * board.ply + H_CHECK]:
            continue
        moves = np.empty(MAX_MOVES, dtype=np.int32)
        for i in range(Q.gen_captures(board.pos, moves)):
            before = board.pos.copy()
            value = Q.see(board.pos, W, moves[i], np.empty(Q.SEE_STACK), np.empty(Q.SEE_STACK, dtype=np.int64))
            assert np.array_equal(board.pos, before), "see must restore the board"
            low, high = oracle_see(sfen, move_to_usi(moves[i]))
            assert low - 1e-6 <= value <= high + 1e-6, (sfen, move_to_usi(moves[i]))
            checked += 1
            negative += value < 0
    assert checked > 200 and negative > 10


def test_see_pruning_leaves_out_losing_captures_only():
    """With SEE pruning the quiescence never searches a capture that loses by exchange (here Rx5d, the gold
    being defended by a pawn) and keeps the winning ones; without it the value is the exact one."""
    sfen = "4k4/9/4p4/4g4/9/9/9/4R4/K8 b - 1"
    exact, _, exact_nodes = search(sfen)
    board = Board(sfen)
    buf = Q.QBuffers()
    pruned = Q.qsearch(board.pos, W, -Q.INF, Q.INF, Q.DEFAULT_MAX_DEPTH, *buf.args(), True)
    assert pruned == pytest.approx(exact) and int(buf.nodes[0]) == 1 < exact_nodes
    value, pv, _ = search("8k/9/9/9/4g4/9/9/4R4/K8 b - 1")
    board = Board("8k/9/9/9/4g4/9/9/4R4/K8 b - 1")
    buf = Q.QBuffers()
    assert Q.qsearch(board.pos, W, -Q.INF, Q.INF, Q.DEFAULT_MAX_DEPTH, *buf.args(), True) == pytest.approx(value)


def _delta_search(sfen, delta, w=W):
    board = Board(sfen)
    buf = Q.QBuffers()
    value = Q.qsearch(board.pos, w, -Q.INF, Q.INF, Q.DEFAULT_MAX_DEPTH, *buf.args(), True, delta)
    return value, int(buf.nodes[0])


def test_delta_pruning_skips_a_futile_capture_but_never_a_check():
    """After RxR has lifted alpha a rook above stand pat, S2dx1c (a pawn) cannot catch up (stand pat + a pawn
    + delta is below alpha) and is not searched: same value, fewer nodes. In the second position the pawn
    capture G5cx5b also checks, and mates: a checking capture is never delta-pruned, so the mate stays."""
    quiet = "4k4/9/8p/7S1/r8/9/9/9/R3K4 b - 1"
    value, nodes = _delta_search(quiet, 0.0)
    pruned, pruned_nodes = _delta_search(quiet, 300.0)
    assert pruned == pytest.approx(value) and pruned_nodes < nodes
    mating = "4k4/4p4/4GS3/9/r8/9/9/9/R3K4 b - 1"
    exact, _ = _delta_search(mating, 0.0)
    assert exact >= MATE - Q.DEFAULT_MAX_DEPTH  # G5cx5b mates
    assert _delta_search(mating, 300.0)[0] == exact


def test_delta_pruning_searches_fewer_nodes_and_stays_close_on_game_positions():
    """Over the children of random middle-game positions (shipped weights, SEE pruning as in the engine):
    delta pruning at 400 cp never searches more nodes, saves at least a fifth of them in all, and moves the
    values little on average (a value changes only where a non-checking capture is worth more than its
    material gain + 400 cp positionally)."""
    w = load_weights()
    total = total_pruned = 0
    diffs = []
    for sfen in random_game_sfens(12, seed=5):
        board = Board(sfen)
        for move in board.legal_moves():
            board.push_usi(move)
            child = board.sfen()
            board.pop()
            value, nodes = _delta_search(child, 0.0, w)
            pruned, pruned_nodes = _delta_search(child, 400.0, w)
            if abs(value) >= MATE - 100:
                assert pruned == value
            assert pruned_nodes <= nodes
            total += nodes
            total_pruned += pruned_nodes
            diffs.append(abs(pruned - value))
    assert len(diffs) > 300 and total_pruned < 0.8 * total
    assert np.mean(diffs) < 10.0


def test_a_given_root_stand_pat_replaces_the_evaluation_and_changes_nothing_else():
    """qsearch_inc's stand0 (the window expansion passes a child's first-round static value): given the root's own
    inc_value it returns the same value, PV and node count as evaluating it; a different stand0 really is the root's
    stand pat (a position without captures for the side to move returns it)."""
    w = load_weights()
    depth = Q.DEFAULT_MAX_DEPTH
    eacc, eidx = eval_stack(depth + 2)
    plain, given = Q.QBuffers(depth), Q.QBuffers(depth)
    caps = np.zeros(MAX_MOVES, dtype=np.int32)
    quiet = 0
    for s in random_game_sfens(60, seed=19, min_ply=20, max_ply=120):
        board = Board(s)
        if board.is_check():
            continue
        inc_init(board.pos, w, eacc, eidx, 0, pp_block_zero(w))
        static = inc_value(board.pos, w, eacc, eidx, 0)
        n0, n1 = plain.nodes[0], given.nodes[0]
        a = Q.qsearch_inc(board.pos, w, -Q.INF, Q.INF, depth, *plain.args(), eacc, eidx, 0, True, 0.0, 4)
        b = Q.qsearch_inc(board.pos, w, -Q.INF, Q.INF, depth, *given.args(), eacc, eidx, 0, True, 0.0, 4, static)
        assert a == b and plain.nodes[0] - n0 == given.nodes[0] - n1
        assert plain.pv_moves() == given.pv_moves()
        if Q.gen_captures(board.pos, caps) == 0:
            quiet += 1
            v = Q.qsearch_inc(board.pos, w, -Q.INF, Q.INF, depth, *given.args(), eacc, eidx, 0, True, 0.0, 4, 12345.0)
            assert v == 12345.0 and a == static
    assert quiet > 0

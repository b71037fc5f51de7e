"""The shogi game kernels of the search contract: expand's values and terminals, and the adapter."""

import numpy as np
import pytest

from usi_engine.search.searcher import Limits, SearchOptions, Searcher
from usi_engine.search.values import MATE
from usi_engine.shogi import Board, move_to_usi, usi_to_move
from usi_engine.shogi_search.game import ShogiAdapter, expand, make_params, root_status
from usi_engine.shogi.layout import H_CHECK, H_KEY, HIST, HIST_STRIDE, MAX_MOVES
from usi_engine.shogi_search.quiescence import quiesce

MATE_IN_ONE = "7nk/9/7G1/9/9/9/9/9/4K4 b GP 1"     # G*1b mates (P*1b would be pawn-drop mate)


@pytest.fixture(scope="module")
def adapter():
    return ShogiAdapter()


def run_expand(board, adapter, params=None):
    moves = np.zeros(MAX_MOVES, dtype=np.int32)
    values = np.zeros(MAX_MOVES, dtype=np.float64)
    flags = np.zeros(MAX_MOVES, dtype=np.int8)
    rng = np.ones(1, dtype=np.uint64)
    # the current entry's move/capture slots and everything after it are scratch
    live = np.r_[0:HIST + HIST_STRIDE * board.ply, HIST + HIST_STRIDE * board.ply + np.array([H_KEY, H_CHECK])]
    before = board.pos[live].copy()
    n, work = expand(board.pos, adapter.weights, adapter.params if params is None else params, rng,
                     moves, values, flags)
    assert np.array_equal(board.pos[live], before), "expand must leave pos unchanged"
    return {move_to_usi(m): (v, f) for m, v, f in zip(moves[:n], values[:n], flags[:n])}, work


def test_expand_values_are_quiescence_of_each_child(adapter):
    board = Board("lnsgkgsnl/1r5b1/pppppp1pp/6p2/9/2P6/PP1PPPPPP/1B5R1/LNSGKGSNL b - 3")
    children, work = run_expand(board, adapter)
    assert set(children) == set(board.legal_moves())
    assert work >= len(children)
    for move, (value, flag) in children.items():
        board.push_usi(move)
        expected, _ = quiesce(board.pos, adapter.weights)
        board.pop()
        assert flag == 0 and value == pytest.approx(expected), move


def test_expand_with_learned_style_weights_matches_quiescence_of_each_child():
    """Random KP/PP weights (the shipped ones are material only): expand's incremental evaluation from the
    expanded node must give each child exactly the value of a quiescence search started at the child."""
    from eval import shogi_features as F
    from usi_engine.shogi.bench import random_game_sfens
    w = ShogiAdapter().weights.copy()
    w[F.OFF_KP:] = np.random.default_rng(4).normal(0.0, 20.0, F.N_WEIGHTS - F.OFF_KP)
    adapter = ShogiAdapter(weights=w)
    checked = 0
    for sfen in random_game_sfens(6, seed=23, min_ply=20, max_ply=90):
        board = Board(sfen)
        children, _ = run_expand(board, adapter)
        for move, (value, flag) in children.items():
            if flag:
                continue
            board.push_usi(move)
            expected, _ = quiesce(board.pos, w)
            board.pop()
            assert value == pytest.approx(expected, abs=1e-6), (sfen, move)
            checked += 1
    assert checked > 150


def test_mating_child_is_a_proven_terminal(adapter):
    children, _ = run_expand(Board(MATE_IN_ONE), adapter)
    assert children["G*1b"] == (-MATE, 1)
    assert "P*1b" not in children
    assert children["5i5h"][1] == 0 and abs(children["5i5h"][0]) < 5000


def test_repetition_child_is_a_draw_with_the_draw_value(adapter):
    board = Board()
    for move in ["2h3h", "8b7b", "3h2h"]:
        board.push_usi(move)
    params = make_params(draw_for_black=-25.0)
    children, _ = run_expand(board, adapter, params)
    assert children["7b8b"] == (-25.0, 1)        # Black to move in the repeated start position
    assert children["7b6b"][1] == 0


def test_declaring_child_is_a_win_for_its_side(adapter):
    # White has entered Black's camp with 51 points: after any Black king move White may declare.
    sfen = "4K4/9/9/9/9/9/+p+p+p+p+p+p+p+p+p/9/+r+b+sgkg+s+n1 b rb2s2n4l9p2g 1"
    board = Board(sfen)
    children, _ = run_expand(board, adapter)
    assert all(v == MATE and f == 1 for v, f in children.values())   # White declares after any move
    terminal, value = root_status(Board(sfen.replace(" b ", " w ")).pos, adapter.params)
    assert terminal and value == MATE


def test_search_finds_and_proves_mate_in_one(adapter):
    searcher = Searcher(adapter, SearchOptions(threads=1, hash_mb=16, seed=1))
    result = searcher.search(Board(MATE_IN_ONE).pos, Limits(samples=200))
    assert result.best_move_str == "G*1b" and result.proven and result.value >= MATE - 1000


def test_path_since_follows_the_game(adapter):
    board = Board()
    old = board.pos.copy()
    board.push_usi("7g7f")
    board.push_usi("3c3d")
    assert [move_to_usi(m) for m in adapter.path_since(old, board.pos)] == ["7g7f", "3c3d"]
    other = Board()
    other.push_usi("2g2f")
    assert adapter.path_since(old, other.pos) == [usi_to_move("2g2f")]
    assert adapter.path_since(board.pos, other.pos) is None


def test_reuse_never_makes_a_repetition_terminal_the_root(adapter):
    """A position counted as a repetition draw inside the last search (its second occurrence) is not the end
    of the game when it is really reached: the next search starts afresh there and finds a move."""
    searcher = Searcher(adapter, SearchOptions(hash_mb=16, seed=1))
    board = Board()
    for move in ("5i5h", "5a5b", "5h5i"):
        board.push_usi(move)
    searcher.search(board.pos, Limits(samples=50))
    board.push_usi("5b5a")
    result = searcher.search(board.pos, Limits(samples=50))
    assert result.reused_nodes == 0
    assert result.best_move is not None and move_to_usi(result.best_move) in board.legal_moves()

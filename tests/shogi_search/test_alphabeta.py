"""The shallow alpha-beta of the deep leaf (usi_engine/shogi_search/alphabeta.py): equal to a brute-force
negamax over the same quiescence search, exact mate distances, and the search's deep leaves."""

import numpy as np
import pytest

from tests.shogi_search.tree_walk import unexpanded_nodes
from usi_engine.search import layout, pv
from usi_engine.search.searcher import Searcher
from usi_engine.search.settings import Limits, SearchOptions
from usi_engine.search.values import MATE
from usi_engine.shogi.bench import random_game_sfens
from usi_engine.shogi.board import Board
from usi_engine.shogi_search.alphabeta import ab_value
from usi_engine.shogi_search.game import ShogiAdapter, leaf_value
from usi_engine.shogi_search.params import make_params, quiescence_settings
from usi_engine.shogi_search.quiescence import INF, QBuffers, qsearch
from usi_engine.shogi_search.terminal import terminal_value

QDEPTH = 6


@pytest.fixture(scope="module")
def adapter():
    return ShogiAdapter(params=make_params(qsearch_depth=QDEPTH, qsearch_see=True, qsearch_recapture=3))


def brute_force(board, adapter, depth, buffers, scratch):
    """Negamax without pruning: every legal move to `depth`, terminals by the game's rule, quiescence below;
    a mate score moves one point towards zero per ply (MATE - ply)."""
    pos, w, params = board.pos, adapter.weights, adapter.params
    qdepth, see, delta, recapture = quiescence_settings(params)
    if depth == 0:
        return qsearch(pos, w, -INF, INF, qdepth, *buffers.args(), see, delta, recapture, adapter.pp_zero)
    moves = board.legal_move_codes()
    if len(moves) == 0:
        return -MATE
    best = -INF
    for m in moves:
        board.push_code(int(m))
        terminal, value = terminal_value(board.pos, params, scratch)
        if not terminal:
            value = brute_force(board, adapter, depth - 1, buffers, scratch)
        board.pop()
        if abs(value) >= MATE - 1000:
            value -= np.sign(value)
        best = max(best, -value)
    return best


@pytest.mark.parametrize("depth", [1, 2])
def test_alpha_beta_equals_brute_force_negamax(adapter, depth):
    """Full window, the fail-soft alpha-beta value is exactly the negamax value over the same leaves, on
    positions from random games (middlegames with captures, checks and drops)."""
    buffers, scratch = QBuffers(QDEPTH), np.zeros(1024, dtype=np.int32)
    qs = quiescence_settings(adapter.params)
    sfens = random_game_sfens(6 if depth == 1 else 3, seed=11, min_ply=30, max_ply=110)
    for sfen in sfens:
        board = Board(sfen)
        value, work = ab_value(board.pos, adapter.weights, adapter.params, depth, -INF, INF, qs, adapter.pp_zero)
        assert board.sfen() == Board(sfen).sfen()  # pos restored
        assert value == pytest.approx(brute_force(board, adapter, depth, buffers, scratch), abs=1e-6), sfen
        assert work > len(board.legal_move_codes())


def test_alpha_beta_bounds_hold_outside_the_window(adapter):
    """Fail-soft: a value at or above beta is a lower bound, at or below alpha an upper bound, inside exact."""
    qs = quiescence_settings(adapter.params)
    for sfen in random_game_sfens(4, seed=12, min_ply=30, max_ply=110):
        pos = Board(sfen).pos
        exact, _ = ab_value(pos, adapter.weights, adapter.params, 2, -INF, INF, qs, adapter.pp_zero)
        for alpha, beta in [(exact - 50, exact + 50), (exact + 10, exact + 60), (exact - 60, exact - 10)]:
            v, _ = ab_value(pos, adapter.weights, adapter.params, 2, alpha, beta, qs, adapter.pp_zero)
            if v <= alpha:
                assert exact <= v + 1e-6
            elif v >= beta:
                assert exact >= v - 1e-6
            else:
                assert v == pytest.approx(exact)


def test_mate_in_one_is_found_with_its_distance(adapter):
    """The side to move mates in one by a drop (G*5b, guarded by the pawn), which the captures-only quiescence
    search cannot see: depth 1 and depth 2 both score MATE - 1 (the mate one ply below)."""
    board = Board("4k4/9/4P4/9/9/9/9/9/4K4 b G 1")
    qs = quiescence_settings(adapter.params)
    quiet, _ = ab_value(board.pos, adapter.weights, adapter.params, 0, -INF, INF, qs, adapter.pp_zero)
    assert abs(quiet) < MATE - 1000
    for depth in (1, 2):
        value, _ = ab_value(board.pos, adapter.weights, adapter.params, depth, -INF, INF, qs, adapter.pp_zero)
        assert value == MATE - 1


def test_leaf_value_with_leaf_depth_is_the_alpha_beta_value(adapter):
    """leaf_value (the refinement of a lazy child) is the depth-d alpha-beta with LeafDepth d, the quiescence
    search with LeafDepth 0."""
    qs = quiescence_settings(adapter.params)
    for sfen in random_game_sfens(3, seed=13, min_ply=30, max_ply=110):
        pos = Board(sfen).pos
        for depth in (1, 2):
            params = make_params(qsearch_depth=QDEPTH, qsearch_see=True, qsearch_recapture=3, leaf_depth=depth)
            deep = ShogiAdapter(adapter.weights, params)
            expected, _ = ab_value(pos, adapter.weights, deep.params, depth, -INF, INF, qs, adapter.pp_zero)
            assert leaf_value(pos, adapter.weights, deep.params)[0] == pytest.approx(expected)
        plain, _ = ab_value(pos, adapter.weights, adapter.params, 0, -INF, INF, qs, adapter.pp_zero)
        assert leaf_value(pos, adapter.weights, adapter.params)[0] == pytest.approx(plain)
    with pytest.raises(ValueError, match="leaf depth"):
        make_params(leaf_depth=3)


@pytest.mark.parametrize("expansion", ["exact", "window"])
def test_deep_leaf_search_refines_every_leaf_before_expanding_it(adapter, expansion):
    """With LeafDepth 2 every expanded node was refined first, every refined unexpanded leaf holds exactly
    its depth-2 alpha-beta value, and the move played is a refined child."""
    params = make_params(qsearch_depth=QDEPTH, qsearch_see=True, qsearch_recapture=3, expansion=expansion, leaf_depth=2)
    deep = ShogiAdapter(adapter.weights, params)
    qs = quiescence_settings(deep.params)
    board = Board("ln1g3nl/1r1sk1g2/p1ppppspp/6p2/1p5P1/2P6/PPSPPPP1P/2G2S1R1/LN2KG1NL b Bb 21")
    searcher = Searcher(deep, SearchOptions(threads=1, hash_mb=8, graph=False, seed=5))
    result = searcher.search(board.pos.copy(), Limits(samples=120))
    t, ctl = searcher.pool.tree, searcher.pool.ctl
    assert ctl[layout.C_REFINED] > 0 and ctl[layout.C_EXPANSIONS] > 1
    checked = 0
    for node, depth in unexpanded_nodes(t, board):
        if depth > 0 and not t[layout.T_FLAGS][node] & (layout.FLAG_LAZY | layout.FLAG_TERMINAL) and checked < 12:
            expected, _ = ab_value(board.pos, deep.weights, deep.params, 2, -INF, INF, qs, deep.pp_zero)
            assert t[layout.T_VALUE][node] == pytest.approx(expected)
            checked += 1
    assert checked > 0
    best = pv.child_of(t, np.int64(0), np.int32(result.best_move))
    assert not t[layout.T_FLAGS][best] & layout.FLAG_LAZY

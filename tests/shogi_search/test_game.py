"""The shogi game kernels of the search contract: expand's values and terminals, and the adapter."""

import numpy as np
import pytest

from tests.shogi_search.tree_walk import unexpanded_nodes
from usi_engine.search.layout import FLAG_FORCING
from usi_engine.search.searcher import Searcher
from usi_engine.search.settings import Limits, SearchOptions
from usi_engine.search.values import MATE
from usi_engine.shogi import Board, move_to_usi, usi_to_move
from usi_engine.shogi.layout import HIST, HIST_STRIDE, H_CHECK, H_KEY, MAX_MOVES
from usi_engine.shogi_search.game import ShogiAdapter, expand, make_params, root_status
from usi_engine.shogi_search.quiescence import quiesce

MATE_IN_ONE = "7nk/9/7G1/9/9/9/9/9/4K4 b GP 1"  # G*1b mates (P*1b would be pawn-drop mate)


@pytest.fixture(scope="module")
def adapter():
    return ShogiAdapter()


def run_expand(board, adapter, params=None):
    moves = np.zeros(MAX_MOVES, dtype=np.int32)
    values = np.zeros(MAX_MOVES, dtype=np.float64)
    flags = np.zeros(MAX_MOVES, dtype=np.int8)
    rng = np.ones(1, dtype=np.uint64)
    # the current entry's move/capture slots and everything after it are scratch
    live = np.r_[0 : HIST + HIST_STRIDE * board.ply, HIST + HIST_STRIDE * board.ply + np.array([H_KEY, H_CHECK])]
    before = board.pos[live].copy()
    n, work = expand(
        board.pos, adapter.weights, adapter.params if params is None else params, rng, moves, values, flags
    )
    assert np.array_equal(board.pos[live], before), "expand must leave pos unchanged"
    return {move_to_usi(m): (v, f) for m, v, f in zip(moves[:n], values[:n], flags[:n])}, work


def test_expand_values_are_quiescence_of_each_child(adapter):
    board = Board("lnsgkgsnl/1r5b1/pppppp1pp/6p2/9/2P6/PP1PPPPPP/1B5R1/LNSGKGSNL b - 3")
    children, work = run_expand(board, adapter)
    # every legal move but the bishop's plain twins into the zone (movegen gen_search_moves)
    assert set(children) == set(board.legal_moves()) - {"8h2b", "8h3c"} and {"8h2b+", "8h3c+"} <= set(children)
    assert work >= len(children)
    for move, (value, flag) in children.items():
        board.push_usi(move)
        expected, _ = quiesce(board.pos, adapter.weights)
        in_check = bool(board.pos[HIST + HIST_STRIDE * board.ply + H_CHECK])
        board.pop()
        assert flag == (FLAG_FORCING if in_check else 0) and value == pytest.approx(expected), move


def test_expand_with_recaptures_only_values_each_child_by_that_quiescence(adapter):
    """QSearchRecapture (params P_QRECAPTURE): expand's child values are the recapture-restricted quiescence
    search of each child, with SEE pruning as the params say."""
    from usi_engine.shogi.bench import bench_positions
    from usi_engine.shogi_search.quiescence import INF, QBuffers, qsearch

    params = make_params(qsearch_see=True, qsearch_recapture=3)
    buf = QBuffers(8)
    changed = 0
    for pos in bench_positions()[:12]:
        board = Board.from_pos(pos)
        children, _ = run_expand(board, adapter, params)
        full, _ = run_expand(board, adapter, make_params(qsearch_see=True))
        for move, (value, _) in children.items():
            board.push_usi(move)
            expected = qsearch(board.pos, adapter.weights, -INF, INF, 8, *buf.args(), True, 0.0, 3)
            board.pop()
            assert value == pytest.approx(expected, abs=1e-6), move
            changed += abs(value - full[move][0]) > 1e-6
    assert changed > 0


def test_expand_with_learned_style_weights_matches_quiescence_of_each_child():
    """Random KP/PP weights (the shipped ones are material only): expand's incremental evaluation from the
    expanded node must give each child exactly the value of a quiescence search started at the child."""
    from usi_engine.shogi.bench import random_game_sfens
    from usi_engine.shogi_eval import features as F

    w = ShogiAdapter().weights.copy()
    w[F.OFF_KP :] = np.random.default_rng(4).normal(0.0, 20.0, F.N_WEIGHTS - F.OFF_KP)
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


def test_adapter_skips_the_pp_sums_exactly_when_its_weights_have_none():
    """params[P_PP_ZERO] follows the adapter's weights (set on construction, on new weights and on new params,
    which are copied in): on with the shipped weights, whose PP block is zero, off as soon as one PP entry is not;
    and with it on, expand gives every child bit for bit the value of the path that sums PP."""
    from usi_engine.shogi.bench import bench_positions
    from usi_engine.shogi_eval import features as F
    from usi_engine.shogi_search.params import P_PP_ZERO

    adapter = ShogiAdapter()
    assert adapter.params[P_PP_ZERO] == 1.0
    for pos in bench_positions()[:8]:
        board = Board.from_pos(pos)
        fast, _ = run_expand(board, adapter)
        summed, _ = run_expand(board, adapter, make_params())
        assert fast == summed
    shared = make_params(qsearch_see=True)
    w = adapter.weights.copy()
    w[F.OFF_PP + 12345] = 1.0
    other = ShogiAdapter(w, shared)
    assert other.params[P_PP_ZERO] == 0.0 and shared[P_PP_ZERO] == 0.0
    assert ShogiAdapter(adapter.weights, shared).params[P_PP_ZERO] == 1.0 and other.params[P_PP_ZERO] == 0.0
    adapter.weights = w
    assert adapter.params[P_PP_ZERO] == 0.0
    adapter.weights = other.weights * 0.0
    adapter.params = make_params()
    assert adapter.params[P_PP_ZERO] == 1.0


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
    assert children["7b8b"] == (-25.0, 1)  # Black to move in the repeated start position
    assert children["7b6b"][1] == 0


def test_declaring_child_is_a_win_for_its_side(adapter):
    # White has entered Black's camp with 51 points: after any Black king move White may declare.
    sfen = "4K4/9/9/9/9/9/+p+p+p+p+p+p+p+p+p/9/+r+b+sgkg+s+n1 b rb2s2n4l9p2g 1"
    board = Board(sfen)
    children, _ = run_expand(board, adapter)
    assert all(v == MATE and f == 1 for v, f in children.values())  # White declares after any move
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


def test_lazy_expand_values_quiet_children_statically_and_checks_exactly(adapter):
    """Lazy expansion: a child whose side is not in check has its static value plus the capture estimate,
    flagged lazy, the static value being at most its quiescence value (stand pat); a child in check has its
    exact quiescence value;
    leaf_value (the refinement) returns exactly the exact mode's value."""
    from usi_engine.search.layout import FLAG_LAZY
    from usi_engine.shogi_eval.linear import evaluate
    from usi_engine.shogi_search.game import capture_estimate, leaf_value

    board = Board("ln1g3nl/1r1sk1g2/p1ppppspp/6p2/1p5P1/2P6/PPSPPPP1P/2G2S1R1/LN2KG1NL b Bb 21")
    exact, _ = run_expand(board, adapter)
    lazy, _ = run_expand(board, adapter, make_params(expansion="lazy"))
    assert set(lazy) == set(exact)
    kinds = set()
    for move, (value, flag) in lazy.items():
        board.push_usi(move)
        in_check = bool(board.pos[HIST + HIST_STRIDE * board.ply + H_CHECK])
        refined, work = leaf_value(board.pos, adapter.weights, adapter.params)
        static = evaluate(board.pos, adapter.weights)
        guess = capture_estimate(board.pos, adapter.weights, usi_to_move(move))
        board.pop()
        assert refined == pytest.approx(exact[move][0]) and work >= 1, move
        if in_check:
            assert flag == FLAG_FORCING and value == pytest.approx(exact[move][0]), move
        else:
            assert flag == FLAG_LAZY and value == pytest.approx(static + guess) and static <= refined + 1e-9, move
        kinds.add(in_check)
    assert kinds == {False, True}  # the position has checks and quiet moves


@pytest.mark.parametrize("graph", [False, True])
def test_lazy_search_refines_a_child_before_expanding_it(adapter, graph):
    """In a lazy search every node that was expanded had been refined first (no expanded node is still
    lazy), every refined leaf holds exactly its quiescence value, and the best move is a refined child."""
    from usi_engine.search import layout, pv

    board = Board("ln1g3nl/1r1sk1g2/p1ppppspp/6p2/1p5P1/2P6/PPSPPPP1P/2G2S1R1/LN2KG1NL b Bb 21")
    lazy_adapter = ShogiAdapter(adapter.weights, make_params(expansion="lazy"))
    searcher = Searcher(lazy_adapter, SearchOptions(threads=1, hash_mb=8, graph=graph, seed=3))
    result = searcher.search(board.pos.copy(), Limits(samples=300))
    t, ctl = searcher.pool.tree, searcher.pool.ctl
    assert ctl[layout.C_REFINED] > 0
    refined_leaves = 0
    if not graph:
        for node, depth in unexpanded_nodes(t, board):
            flags = t[layout.T_FLAGS][node]
            if not flags & (layout.FLAG_LAZY | layout.FLAG_TERMINAL) and depth > 0 and refined_leaves < 40:
                expected, _ = quiesce(board.pos, adapter.weights)
                assert t[layout.T_VALUE][node] == pytest.approx(expected)
                refined_leaves += 1
        assert refined_leaves > 0
    best = pv.child_of(t, np.int64(0), np.int32(result.best_move))
    assert not t[layout.T_FLAGS][best] & layout.FLAG_LAZY


@pytest.mark.parametrize("window,see", [(0.0, False), (150.0, False), (400.0, False), (400.0, True)])
def test_window_expand_is_exact_inside_its_window(adapter, window, see):
    """Window expansion: every child whose exact value (parent's view) is within `window` of the best child
    has exactly its quiescence value; every other child is flagged lazy and truly is more than `window`
    below the best; a lazy child's stored value never makes it look worse than it is. The same holds with
    SEE pruning against the exact expansion with SEE pruning."""
    from usi_engine.search.layout import FLAG_LAZY
    from usi_engine.shogi.bench import random_game_sfens

    lazy_seen = 0
    for sfen in random_game_sfens(8, seed=31, min_ply=20, max_ply=90):
        board = Board(sfen)
        exact, _ = run_expand(board, adapter, make_params(qsearch_see=see))
        windowed, _ = run_expand(board, adapter, make_params(expansion="window", window=window, qsearch_see=see))
        best = max(-v for v, _ in exact.values())
        for move, (value, flag) in windowed.items():
            truth = exact[move][0]
            if -truth >= best - window:
                assert not flag & FLAG_LAZY and value == pytest.approx(truth), (sfen, move)
            if flag & FLAG_LAZY:
                lazy_seen += 1
                assert -truth < best - window and -value >= -truth - 1e-9, (sfen, move)
            elif not flag:
                assert value == pytest.approx(truth), (sfen, move)
    assert lazy_seen > 0

"""Progressive widening in shogi (game.order_children, game.child_value): which moves enter at expansion, the
same tree as the full expansion when every move enters, and widened children valued as expanded ones."""

import random

import numpy as np
import pytest

from usi_engine.search import layout
from usi_engine.search.searcher import Searcher
from usi_engine.search.settings import Limits, SearchOptions
from usi_engine.shogi import Board, move_to_usi
from usi_engine.shogi.bench import bench_positions
from usi_engine.shogi.layout import MAX_MOVES
from usi_engine.shogi.movegen import gen_search_moves
from usi_engine.shogi_search import moveprior
from usi_engine.shogi_search.game import ShogiAdapter, child_value, make_params, order_children
from usi_engine.shogi_search.params import N_PARAMS, P_WINDOW
from usi_engine.shogi_search.quiescence import side_in_check

from ..shogi.random_games import random_game

MIDDLEGAME = "ln1g3nl/1r1sk1g2/p1ppppspp/6p2/1p5P1/2P6/PPSPPPP1P/2G2S1R1/LN2KG1NL b Bb 21"


@pytest.fixture(scope="module")
def adapter():
    return ShogiAdapter(move_model=moveprior.load_model())


def game_positions(count, seed):
    """Positions along seeded random games (their full history), in check or not."""
    rng = random.Random(seed)
    out = []
    while len(out) < count:
        moves = random_game(rng, max_plies=rng.randint(10, 120))
        board = Board()
        for m in moves:
            board.push_usi(m)
        out.append(board.pos.copy())
    return out


def ordered(adapter, pos, k0, logp=None):
    moves = np.zeros(MAX_MOVES, np.int32)
    n = gen_search_moves(pos, moves)
    before = moves[:n].copy()
    logp = np.zeros(MAX_MOVES) if logp is None else logp
    k = order_children(pos, adapter.weights, adapter.params, moves, n, k0, logp)
    return before, moves[:n].copy(), k


def test_the_most_probable_and_the_tactical_moves_enter_first(adapter):
    checked = 0
    for pos in game_positions(40, seed=7) + list(bench_positions()[:20]):
        before, after, k = ordered(adapter, pos, 5)
        n = len(before)
        assert sorted(before) == sorted(after)  # a permutation of the moves
        if side_in_check(pos) or n <= 5:
            assert k == n and np.array_equal(before, after)  # every evasion enters, in generation order
            continue
        scores, tactical = np.zeros(n), np.zeros(n, np.int8)
        moveprior.move_scores(pos, adapter.params[N_PARAMS:], before, n, scores, tactical)
        score = dict(zip(before.tolist(), scores))
        top = set(before[np.argsort(-scores, kind="mergesort")[:5]].tolist())
        assert set(after[:k].tolist()) == top | set(before[tactical != 0].tolist())
        rest = [score[m] for m in after[k:].tolist()]
        assert rest == sorted(rest, reverse=True)  # the others wait in prior order
        checked += 1
    assert checked > 30


def test_every_move_enters_when_k0_covers_them_or_there_is_no_model(adapter):
    pos = bench_positions()[3]
    before, after, k = ordered(adapter, pos, MAX_MOVES)
    assert k == len(before) and np.array_equal(before, after)
    bare = ShogiAdapter(adapter.weights)  # no move model: no order to widen by
    before, after, k = ordered(bare, pos, 3)
    assert k == len(before) and np.array_equal(before, after)


def test_the_log_priors_are_the_move_probabilities(adapter):
    """order_children's logp[i] is log p of the move it put at i, p the prior's softmax over every legal move
    (moveprior.move_probabilities), whether the moves were reordered (k0 small), kept (k0 >= n) or are
    evasions; without a model every log prior is 0."""
    for pos in game_positions(12, seed=11) + list(bench_positions()[:4]):
        for k0 in (3, MAX_MOVES):
            logp = np.full(MAX_MOVES, np.nan)
            before, after, k = ordered(adapter, pos, k0, logp)
            n = len(before)
            p = np.zeros(n)
            moveprior.move_probabilities(pos, adapter.params[N_PARAMS:], before, n, p)
            prob = dict(zip(before.tolist(), p))
            assert np.allclose(np.exp(logp[:n]), [prob[m] for m in after.tolist()], rtol=1e-9, atol=1e-15)
            assert abs(np.exp(logp[:n]).sum() - 1.0) < 1e-9
    logp = np.full(MAX_MOVES, np.nan)
    before, _, _ = ordered(ShogiAdapter(adapter.weights), bench_positions()[3], 3, logp)
    assert not logp[: len(before)].any()


@pytest.mark.parametrize("expansion", ["exact", "window"])
def test_widened_edges_keep_their_moves_log_prior(adapter, expansion):
    """A widening search with the progressive bias: each edge of the root and of its expanded children holds
    the log prior of its move, also after the window expansion sorted the entered children by value."""
    board = Board(MIDDLEGAME)
    a = ShogiAdapter(adapter.weights, make_params(expansion=expansion), move_model=adapter.move_model)
    s = Searcher(a, SearchOptions(threads=1, hash_mb=32, seed=3, widen_k0=3, prior_beta=0.5))
    s.search(board.pos.copy(), Limits(samples=800))
    t = s.pool.tree
    checked = 0
    for depth_one in (False, True):
        roots = [(0, None)]
        if depth_one:
            f0 = t[layout.T_FIRST][0]
            roots = [
                (int(t[layout.T_ECHILD][e]), int(t[layout.T_EMOVE][e])) for e in range(f0, f0 + t[layout.T_COUNT][0])
            ]
        for node, move in roots:
            if (t[layout.T_STATE][node] & layout.PHASE_MASK) != layout.EXPANDED or t[layout.T_COUNT][node] == 0:
                continue
            if move is not None:
                board.push_usi(move_to_usi(move))
            moves = np.zeros(MAX_MOVES, np.int32)
            n = gen_search_moves(board.pos, moves)
            p = np.zeros(n)
            moveprior.move_probabilities(board.pos, a.params[N_PARAMS:], moves, n, p)
            prob = dict(zip(moves[:n].tolist(), p))
            f = t[layout.T_FIRST][node]
            assert t[layout.T_NMOVES][node] == n
            for e in range(f, f + n):
                assert np.isclose(np.exp(t[layout.T_EBIAS][e]), prob[int(t[layout.T_EMOVE][e])], rtol=1e-5)
                checked += 1
            if move is not None:
                board.pop()
    assert checked > 300


@pytest.mark.parametrize("expansion", ["exact", "window"])
def test_widening_with_every_move_entering_is_the_full_search(adapter, expansion):
    pos = bench_positions()[1]
    results = []
    for k0 in (0, MAX_MOVES):
        a = ShogiAdapter(adapter.weights, make_params(expansion=expansion), move_model=adapter.move_model)
        s = Searcher(a, SearchOptions(threads=1, hash_mb=32, seed=5, widen_k0=k0))
        r = s.search(pos.copy(), Limits(samples=400))
        results.append((r.value, r.pv, r.nodes, int(s.pool.ctl[layout.C_NODES])))
    assert results[0] == results[1]


def test_a_widened_child_is_valued_as_the_exact_expansion_values_it(adapter):
    """Tree mode, exact expansion, few children at first: every entered child of every node that widened
    holds the exact expansion's value of that child (child_value = value_child in mode exact) until expanded."""
    board = Board(MIDDLEGAME)
    a = ShogiAdapter(adapter.weights, make_params(expansion="exact"), move_model=adapter.move_model)
    s = Searcher(a, SearchOptions(threads=1, hash_mb=32, seed=3, graph=False, widen_k0=2, widen_a=1.0))
    s.search(board.pos.copy(), Limits(samples=600))
    t = s.pool.tree
    checked = widened = 0

    def walk(node, depth):
        nonlocal checked, widened
        if (t[layout.T_STATE][node] & layout.PHASE_MASK) != layout.EXPANDED or checked >= 60:
            return
        f, n = t[layout.T_FIRST][node], t[layout.T_COUNT][node]
        if depth > 0 and n > 2:
            widened += 1
        for e in range(f, f + n):
            c, move = int(t[layout.T_ECHILD][e]), int(t[layout.T_EMOVE][e])
            if (t[layout.T_STATE][c] & layout.PHASE_MASK) != layout.EXPANDED and depth > 0:
                value, flags, _ = child_value(board.pos, a.weights, a.params, move, -np.inf)
                assert t[layout.T_VALUE][c] == value, move_to_usi(move)
                checked += 1
            board.push_usi(move_to_usi(move))
            walk(c, depth + 1)
            board.pop()

    walk(0, 0)
    assert widened >= 5 and checked >= 50


def test_a_widened_child_is_valued_in_the_window_as_the_window_expansion_values_it(adapter):
    """Window expansion: a child entered against its parent's value `best` is exact (the exact expansion's
    value) when it is within the window of best, else a bound flagged FLAG_LAZY that is at least `window` below
    best for the parent and no worse than the exact value (an optimistic bound, refined when reached); with no
    best yet (-inf) every child is exact."""
    window = make_params(expansion="window")
    exact = make_params(expansion="exact")
    a = ShogiAdapter(adapter.weights, window, move_model=adapter.move_model)
    width = window[P_WINDOW]
    moves = np.empty(MAX_MOVES, np.int32)
    counts = {"exact": 0, "lazy": 0}
    for pos in game_positions(12, seed=11):
        n = gen_search_moves(pos, moves)
        values = [child_value(pos, a.weights, exact, moves[i], -np.inf) for i in range(n)]
        if not values:
            continue
        best = max(-v for v, _, _ in values)
        for offset in (-np.inf, 0.0, 100.0):
            bound = best - offset if offset != -np.inf else -np.inf
            for i in range(n):
                value, flags, _ = child_value(pos, a.weights, window, moves[i], bound)
                truth, truth_flags, _ = values[i]
                if flags & layout.FLAG_LAZY:
                    assert bound > -np.inf
                    assert -value <= bound - width + 1e-9 and -truth <= -value + 1e-9, move_to_usi(moves[i])
                    counts["lazy"] += 1
                else:
                    assert (value, flags) == (truth, truth_flags), move_to_usi(moves[i])
                    counts["exact"] += 1
    assert counts["lazy"] >= 50 and counts["exact"] >= 50

"""Progressive widening in the MCSS core (widening.widen_claim, order_children / child_value of the synthetic
game): the same tree as the full expansion when every move enters, the schedule, exact entered values,
no proof from a partial width, reuse, pruning and two threads."""

import numpy as np
import pytest
from search_helpers import P, W, backup_error, check_accounting

from usi_engine.search import layout, widening
from usi_engine.search import synthetic as syn
from usi_engine.search.searcher import Searcher
from usi_engine.search.settings import Limits, SearchOptions
from usi_engine.search.values import MATE, is_proven

ADAPTER = syn.SyntheticAdapter()


def searcher(**kw):
    kw.setdefault('hash_mb', 16)
    return Searcher(ADAPTER, SearchOptions(**kw))


def wide_game(seed=5, **kw):
    return syn.make_pos(mode=syn.MODE_TREE, seed=seed, bmin=10, bmax=30, term_depth=12, value_range=300, **kw)


def expanded_nodes(s):
    t = s.pool.tree
    used = int(s.pool.ctl[layout.C_NODES])
    return [v for v in range(used) if (t[layout.T_STATE][v] & layout.PHASE_MASK) == layout.EXPANDED]


def target(visits, opt):
    fp = np.zeros(layout.FP_SIZE)
    fp[[layout.FP_WIDEN_K0, layout.FP_WIDEN_A, layout.FP_WIDEN_B]] = opt.widen_k0, opt.widen_a, opt.widen_b
    return int(widening.widen_target(float(visits), fp))


@pytest.mark.parametrize('graph', [False, True])
def test_every_move_entering_builds_the_full_expansion_tree(graph):
    pos = wide_game()
    results = []
    for k0 in (0, 1000):
        s = searcher(graph=graph, seed=9, widen_k0=k0)
        r = s.search(pos, Limits(samples=3000))
        check_accounting(s)
        assert s.pool.widen == (k0 > 0)
        results.append((r.value, r.pv, r.nodes, int(s.pool.ctl[layout.C_NODES]), int(s.pool.ctl[layout.C_EDGES])))
    assert results[0] == results[1]


def test_nodes_hold_the_scheduled_number_of_children():
    """One thread, tree mode, no proven values: a node expanded with k0 children that N samples have passed
    since holds min(moves, max(k0, k(N - 1))) (k(N) = k0 + floor(log_b(1 + N/a)) grows by at most one per
    sample at these a, b); the root holds every move."""
    pos = syn.make_pos(seed=3, bmin=10, bmax=30, term_depth=40, value_range=300, mate_ends=False)
    s = searcher(graph=False, seed=2, widen_k0=3, widen_a=2.0, widen_b=1.5)
    s.search(pos, Limits(samples=5000))
    check_accounting(s)
    t, opt = s.pool.tree, s.options
    wide = 0
    for v in expanded_nodes(s):
        n, moves, visits = t[layout.T_COUNT][v], t[layout.T_NMOVES][v], t[layout.T_STATE][v] >> 2
        if v == 0:
            assert n == moves
            continue
        expected = min(moves, max(3, target(visits - 1, opt))) if visits else min(moves, 3)
        assert n == expected, (v, n, moves, visits)
        wide += n > 3
    assert wide > 20  # the schedule really added children somewhere
    assert backup_error(s)[0] == 0.0


@pytest.mark.parametrize('graph', [False, True])
def test_an_entered_child_holds_the_value_an_expansion_gives_it(graph):
    """Every child of every expanded node, entered at expansion or later, holds its game value (the leaf
    value while unexpanded); moves not yet entered have no child."""
    pos = wide_game(seed=8)
    s = searcher(graph=graph, seed=4, widen_k0=2, widen_a=1.0, widen_b=1.3)
    s.search(pos, Limits(samples=2000))
    t = s.pool.tree
    parent = {}  # no transpositions in this game: one parent edge per node
    for v in expanded_nodes(s):
        f = t[layout.T_FIRST][v]
        for e in range(f, f + t[layout.T_COUNT][v]):
            parent[int(t[layout.T_ECHILD][e])] = (v, int(t[layout.T_EMOVE][e]))
    checked = widened = 0
    for v in expanded_nodes(s):
        f, n = t[layout.T_FIRST][v], t[layout.T_COUNT][v]
        if v == 0 or n <= 2:
            continue
        widened += 1
        path, node = [], v
        while node != 0:
            node, move = parent[node]
            path.append(move)
        p = pos.copy()
        for m in reversed(path):
            syn.do_move(p, m)
        for e in range(f, f + n):
            c = t[layout.T_ECHILD][e]
            if (t[layout.T_STATE][c] & layout.PHASE_MASK) != layout.EXPANDED:
                value, _, _ = syn.child_value(p, W, P, t[layout.T_EMOVE][e], 0.0)
                assert t[layout.T_VALUE][c] == value
                checked += 1
    assert widened >= 10 and checked > 50


def test_a_partial_width_never_proves_a_loss():
    """A has two moves that lose at once and one that draws. Entered one at a time, A's first children may
    all lose: A is then not lost (a move not entered may save it), it widens at once, and the search finds
    the draw."""
    nodes = [
        (0, False, [1]),  # root -> A
        (0, False, [2, 3, 4]),  # A: opponent to move
        (MATE, True, []),  # the mover of A lost: its child's side to move has won
        (MATE, True, []),
        (0, True, []),  # a draw
    ]
    for seed in range(6):  # the hashed move order differs with the seed: the draw comes first, second or last
        s = searcher(graph=False, seed=seed, widen_k0=1)
        r = s.search(syn.explicit_pos(nodes, seed=seed), Limits(samples=200))
        assert not is_proven(r.value) and r.value == pytest.approx(0.0)
        assert r.best_move == 1


def test_all_moves_lost_is_proven_once_every_move_entered():
    nodes = [(0, False, [1]), (0, False, [2, 3, 4])] + [(MATE, True, [])] * 3
    s = searcher(graph=False, seed=1, widen_k0=1)
    r = s.search(syn.explicit_pos(nodes), Limits(samples=200))
    assert r.proven and r.value == MATE - 2


def check_priors(s, pos, depth=2):
    """Every edge of the expanded nodes within `depth` plies of the root (entered or waiting) holds the log
    prior the game's order_children gives its move in that node's position (T_EBIAS: reserved at
    expansion, kept by pruning and reuse). Returns the edges checked."""
    t = s.pool.tree
    moves = np.zeros(256, np.int32)
    logp = np.zeros(256)
    checked = 0

    def walk(node, d):
        nonlocal checked
        if (t[layout.T_STATE][node] & layout.PHASE_MASK) != layout.EXPANDED:
            return
        n = syn.gen_moves(pos, moves)
        syn.order_children(pos, W, P, moves, n, 1000, logp)
        expected = dict(zip(moves[:n].tolist(), logp[:n].tolist()))
        f = t[layout.T_FIRST][node]
        for e in range(f, f + t[layout.T_NMOVES][node]):
            move = int(t[layout.T_EMOVE][e])
            assert t[layout.T_EBIAS][e] == np.float32(expected[move])
            checked += 1
            c = int(t[layout.T_ECHILD][e])
            if c >= 0 and d < depth:
                syn.do_move(pos, move)
                walk(c, d + 1)
                syn.undo_move(pos)

    walk(0, 0)
    return checked


@pytest.mark.parametrize('graph', [False, True])
@pytest.mark.parametrize('threads,helpers', [(1, 0), (2, 0), (2, 1)])
def test_reuse_prune_and_threads_keep_the_pool_consistent(graph, threads, helpers):
    """A small pool (several prunes per search), four moves of tree reuse, one or two threads, a progressive
    bias: the accounting holds (every reserved edge counted, moves not entered have no child, no claim left
    open), every edge keeps its move's log prior and, in tree mode, every expanded node equals the recompute
    from its entered children."""
    pos = syn.make_pos(mode=syn.MODE_MULTISET, seed=5, bmin=10, bmax=30, term_depth=30, value_range=300, leaf_cost=20)
    s = searcher(hash_mb=2, graph=graph, seed=9, widen_k0=3, threads=threads, helpers=helpers, prior_beta=1.0)
    p = pos.copy()
    reused = 0
    for _ in range(4):
        r = s.search(p, Limits(samples=20000))
        check_accounting(s)
        assert check_priors(s, p.copy()) > 30
        if not graph:
            assert backup_error(s)[0] == 0.0
        assert s.prunes >= 1
        reused += r.reused_nodes
        syn.do_move(p, r.best_move)
    assert reused > 0


def test_widening_is_off_for_rave_and_games_without_a_move_order():
    s = searcher(policy='rave', widen_k0=3)
    s.search(wide_game(), Limits(samples=200))
    assert not s.pool.widen
    with pytest.raises(ValueError, match='widen'):
        searcher(widen_k0=3, widen_b=1.0)
    with pytest.raises(ValueError, match='bias'):
        searcher(widen_k0=3, prior_beta=-1.0)

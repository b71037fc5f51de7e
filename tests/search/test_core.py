"""MCSS core on the synthetic game: exact values, graph vs tree, proven mates, reuse, memory-full,
determinism and multi-threaded consistency."""

import numpy as np
import pytest
from search_helpers import backup_error, check_accounting, children, exact_value, tree_count

from usi_engine.search import backup, layout, pv, selection
from usi_engine.search import synthetic as syn
from usi_engine.search.searcher import Searcher
from usi_engine.search.settings import Limits, SearchOptions
from usi_engine.search.values import MATE

ADAPTER = syn.SyntheticAdapter()


def searcher(**kw):
    kw.setdefault('hash_mb', 4)
    return Searcher(ADAPTER, SearchOptions(**kw))


def small_full_game(mode=syn.MODE_TREE, seed=11, bmin=2, bmax=3, depth=4):
    return syn.make_pos(mode=mode, seed=seed, bmin=bmin, bmax=bmax, term_depth=depth, value_range=120, mate_ends=False)


@pytest.mark.parametrize('graph', [False, True])
@pytest.mark.parametrize('policy,t_back', [('softmax', 50.0), ('softmax', 92.0), ('uct', 0.0)])
def test_root_value_equals_exact_recursion(graph, policy, t_back):
    pos = small_full_game()
    expected, internal = exact_value(pos, t_back)
    s = searcher(t_sel=300.0, t_back=t_back, policy=policy, c_uct=2000.0, graph=graph, seed=3)
    r = s.search(pos, Limits(samples=4000))
    assert s.pool.ctl[layout.C_EXPANSIONS] == len(internal)  # the whole tree is expanded
    assert r.value == pytest.approx(expected, abs=1e-9)
    assert backup_error(s)[0] == 0.0


def test_graph_and_tree_agree_without_transpositions():
    pos = syn.make_pos(mode=syn.MODE_TREE, seed=5, bmin=2, bmax=5, term_depth=12, value_range=300)
    results = []
    for graph in (False, True):
        s = searcher(graph=graph, seed=9)
        r = s.search(pos, Limits(samples=3000))
        check_accounting(s)
        results.append((r.value, r.pv, r.nodes, int(s.pool.ctl[layout.C_NODES])))
    assert results[0] == results[1]


def test_graph_shares_transpositions():
    pos = small_full_game(mode=syn.MODE_MULTISET, bmin=3, bmax=3, depth=5)
    expected, internal = exact_value(pos, 92.0)
    used = {}
    for graph in (False, True):
        s = searcher(graph=graph, t_sel=300.0, seed=2)
        r = s.search(pos, Limits(samples=20000))
        assert r.value == pytest.approx(expected, abs=1e-9)
        check_accounting(s)
        used[graph] = int(s.pool.ctl[layout.C_NODES])
    assert s.pool.ctl[layout.C_EXPANSIONS] == len(internal)  # each position expanded once
    assert used == {False: 364, True: 80}  # 1 + 363 tree nodes; 35 shared positions + 45 private terminals


def mate_in_3_graph():
    """Root: A (static -300 for the opponent: looks great for us) or B (looks bad) which mates in 3."""
    return syn.explicit_pos(
        [
            (0, False, [1, 2]),  # 0 root
            (-300, False, [3]),  # 1 A
            (100, False, [4, 5]),  # 2 B: opponent to move
            (50, False, [6]),  # 3 A1
            (-80, False, [8, 9]),  # 4 B1: we mate with 8
            (-90, False, [10, 11]),  # 5 B2: we mate with 11
            (0, True, []),  # 6 draw
            (0, False, []),  # 7 unused
            (-MATE, True, []),  # 8 opponent mated
            (30, False, []),  # 9 no moves, not flagged: the core makes it terminal
            (40, False, []),  # 10
            (-MATE, True, []),  # 11 opponent mated
        ]
    )


@pytest.mark.parametrize('graph', [False, True])
def test_mate_in_3_found_and_proven(graph):
    s = searcher(graph=graph, seed=1)
    r = s.search(mate_in_3_graph(), Limits(samples=20000))
    assert r.proven and r.value == MATE - 3
    assert r.best_move == 2 and r.pv[:3] in ([2, 4, 8], [2, 5, 11])
    assert r.multipv[0][1] == MATE - 3
    assert r.samples < 20000  # stopped early: the root is proven


def test_mate_in_1_and_proven_loss():
    pos = syn.explicit_pos([(0, False, [1, 2, 3]), (50, False, []), (-MATE, True, []), (-200, False, [])])
    r = searcher().search(pos, Limits(samples=1000))
    assert (r.proven, r.value, r.best_move, r.pv) == (True, MATE - 1, 2, [2])
    lost = syn.explicit_pos(
        [(0, False, [1, 2]), (0, False, [3]), (0, False, [4]), (-MATE, True, []), (-MATE, True, [])]
    )
    # every move lets the opponent mate at once: lost in 2 plies
    r = searcher().search(lost, Limits(samples=1000))
    assert r.proven and r.value == -MATE + 2 and r.depth == 2


def test_game_over_root():
    pos = syn.explicit_pos([(-MATE, True, [])])
    r = searcher().search(pos, Limits(samples=10))
    assert r.best_move is None and r.value == -MATE and r.proven


@pytest.mark.parametrize('graph', [False, True])
@pytest.mark.parametrize('back_anneal', [0.0, 20.0])
def test_reuse_keeps_the_reached_subtree(graph, back_anneal):
    """The kept subtree keeps its values and, with an annealed backup, its sample counts: every kept node still
    equals the recompute from its children at its own count."""
    pos = syn.make_pos(seed=21, bmin=2, bmax=4, term_depth=30, value_range=300)
    s = searcher(graph=graph, seed=4, back_anneal_visits=back_anneal, t_back_min=5.0)
    first = s.search(pos, Limits(samples=3000))
    t = s.pool.tree
    node = 0
    for move in first.pv[:2]:
        node = pv.child_of(t, np.int64(node), np.int32(move))
    size, value = tree_count(s, node), float(t[layout.T_VALUE][node])
    after = pos.copy()
    for move in first.pv[:2]:
        syn.do_move(after, move)
    r = s.search(after, Limits(samples=0))  # no sample: only the re-rooting happens
    assert r.reused_nodes == size == int(s.pool.ctl[layout.C_NODES]) > 100
    assert r.value == value and r.pv == first.pv[2:]
    check_accounting(s)
    assert backup_error(s)[0] == 0.0
    r = s.search(after, Limits(samples=500))  # and the kept tree keeps growing
    assert s.pool.ctl[layout.C_NODES] > size and r.best_move is not None
    other = pos.copy()
    syn.do_move(other, 1 if first.pv[0] != 1 else 2)
    syn.do_move(other, 3)  # a move outside the tree: fresh start
    assert s.search(other, Limits(samples=0)).reused_nodes == 0


@pytest.mark.parametrize('graph', [False, True])
def test_memory_full_keeps_answering(graph):
    pos = syn.make_pos(seed=8, bmin=3, bmax=6, term_depth=40, value_range=500)
    s = searcher(graph=graph, hash_mb=0.02, threads=2, seed=6, prune=False)
    r = s.search(pos, Limits(nodes=10**9))  # a full pool ends a search that cannot progress
    assert s.pool.ctl[layout.C_MEMFULL] == 1 and r.hashfull >= 900
    assert r.best_move is not None and r.nodes < 10**9
    check_accounting(s)
    assert backup_error(s)[0] == 0.0
    r2 = s.search(pos, Limits(time_ms=100))  # full pool, reused: still answers
    # reuse compacts the pool, so a few expansions may still fit and move the PV: only the answer is asserted
    assert r2.best_move in [move for move, _, _ in children(pos)]
    other = pos.copy()
    syn.do_move(other, r.pv[0])
    r3 = s.search(other, Limits(samples=0))  # reuse frees the rest of the pool
    assert s.pool.ctl[layout.C_MEMFULL] == 0 and r3.reused_nodes == s.pool.ctl[layout.C_NODES]
    assert r3.reused_nodes < s.pool.node_capacity and r3.best_move is not None


@pytest.mark.parametrize('graph', [False, True])
@pytest.mark.parametrize('back_anneal', [0.0, 20.0])
def test_full_pool_prunes_improbable_subtrees_and_goes_on(graph, back_anneal):
    """With pruning (the default) a full pool frees its improbable part and the search runs to its limit;
    the kept tree is well formed and, in tree mode, every node still equals the recompute from its children
    (with an annealed backup: at the sample count it kept through the prunes)."""
    pos = syn.make_pos(seed=8, bmin=3, bmax=6, term_depth=40, value_range=500)
    s = searcher(graph=graph, hash_mb=0.05, threads=2, seed=6, back_anneal_visits=back_anneal, t_back_min=5.0)
    r = s.search(pos, Limits(samples=20000))
    assert r.samples == 20000 and s.prunes >= 2 and r.best_move is not None
    check_accounting(s)
    if not graph:
        assert backup_error(s)[0] == 0.0
    nodes_before = int(s.pool.ctl[layout.C_NODES])
    kept, eps = s.pool.prune(s.options.t_sel)
    assert kept <= nodes_before and 0.0 < eps
    assert s.pool.ctl[layout.C_EDGES] <= 0.5 * min(s.pool.node_capacity, s.pool.edge_capacity) + 64
    check_accounting(s)
    root_children = {move for move, _, _ in children(pos)}
    assert set(s.search(pos, Limits(samples=10)).pv[:1]) <= root_children


def test_seeded_single_thread_is_reproducible():
    pos = syn.make_pos(seed=13, bmin=2, bmax=6, term_depth=30, value_range=400)
    runs = []
    for seed in (7, 7, 8):
        s = searcher(seed=seed, t_sel=150.0)
        r = s.search(pos, Limits(samples=3000))
        n = int(s.pool.ctl[layout.C_NODES])
        runs.append((r.value, r.pv, r.nodes, n, s.pool.tree[layout.T_VALUE][:n].tobytes()))
    assert runs[0] == runs[1]
    assert runs[0] != runs[2]


@pytest.mark.parametrize('graph', [False, True])
@pytest.mark.parametrize('back_anneal,joint', [(0.0, True), (50.0, True), (0.0, False)])
def test_two_threads_leave_a_consistent_tree(graph, back_anneal, joint):
    # wide nodes and cheap leaves make concurrent backups of the same node frequent; with an annealed backup
    # temperature the last value stored must also be computed at the node's final visit count; with joint
    # expansions (the default) threads also evaluate each other's children
    mode = syn.MODE_MULTISET if graph else syn.MODE_TREE
    pos = syn.make_pos(mode=mode, seed=17, bmin=30, bmax=60, term_depth=60, value_range=300)
    s = searcher(
        graph=graph,
        threads=2,
        t_sel=30.0,
        t_sel_spread=1.5,
        seed=1,
        hash_mb=64,
        reuse=False,
        back_anneal_visits=back_anneal,
        t_back_min=5.0,
        joint=joint,
    )
    for _ in range(4):  # the race this guards against is rare: several fresh runs
        r = s.search(pos, Limits(samples=15000))
        assert r.samples == 15000 and r.best_move is not None and s.pool.ctl[layout.C_MEMFULL] == 0
        check_accounting(s)
        err, expanded = backup_error(s)
        assert expanded > 1000
        if not graph:
            assert err == 0.0  # graph mode may leave parents reached through other paths stale (docs)


@pytest.mark.parametrize('policy', ['softmax', 'uct'])
def test_repetitions_end_descents_in_graph_mode(policy):
    pos = syn.make_pos(mode=syn.MODE_RING, seed=4, bmin=1, bmax=3, ring=7, value_range=200, draw=-2)
    for graph in (False, True):
        s = searcher(graph=graph, seed=2, max_depth=40, policy=policy, c_uct=300.0)
        r = s.search(pos, Limits(samples=3000))
        check_accounting(s)
        t = s.pool.tree
        n = int(s.pool.ctl[layout.C_NODES])
        terminal = (t[layout.T_FLAGS][:n] & layout.FLAG_TERMINAL) != 0
        assert terminal.any() and np.all(t[layout.T_VALUE][:n][terminal] == -2.0)  # repetition draws
        assert len(set(r.pv)) >= 1 and r.depth <= 40
        if graph:
            assert n <= 2 * 7 + s.pool.ctl[layout.C_PRIVATE]  # at most 14 shared positions (ring x side)
            assert s.pool.ctl[layout.C_EXPANSIONS] >= 10  # cycles do not stall the search
            table = {int(k): int(v) for k, v in zip(t[layout.T_TKEY], t[layout.T_TNODE]) if v >= 0}
            for v in np.nonzero(terminal)[0]:  # repetition terminals are never shared
                assert table.get(int(t[layout.T_KEY][v])) != v


def test_children_reference_matches_expand_contract():
    pos = syn.make_pos(seed=3)
    before = pos.copy()
    kids = children(pos)
    live = syn.HIST + syn.STRIDE  # header and the start position's history entry
    assert np.array_equal(pos[: live - 1], before[: live - 1]) and 2 <= len(kids) <= 4
    moves = np.zeros(8, np.int32)
    assert syn.gen_moves(pos, moves) == len(kids)


def test_infinite_search_until_stop_with_info_and_time_limit():
    import threading
    import time

    pos = syn.make_pos(seed=31, bmin=3, bmax=8, term_depth=80, value_range=300, leaf_cost=10)
    s = searcher(threads=2, seed=3, hash_mb=64, reuse=False)
    infos, out = [], []
    worker = threading.Thread(
        target=lambda: out.append(
            s.search(pos, Limits(infinite=True, samples=10), on_info=infos.append, info_interval=0.05)
        )
    )
    worker.start()
    deadline = time.perf_counter() + 20.0  # infos every 0.05 s: three of them, however loaded the machine
    while len(infos) < 3 and time.perf_counter() < deadline:
        time.sleep(0.05)
    assert worker.is_alive()  # infinite ignores the sample limit
    s.stop()
    worker.join(5)
    assert not worker.is_alive() and out[0].samples > 10 and out[0].best_move is not None
    assert len(infos) >= 3 and infos[-1].samples <= out[0].samples
    t0 = time.perf_counter()
    r = s.search(pos, Limits(time_ms=200))
    assert 0.2 <= time.perf_counter() - t0 < 1.0 and r.best_move is not None
    r = s.search(pos, Limits(depth=3))
    assert r.depth >= 3
    r = s.search(pos, Limits(nodes=5000))
    assert 5000 <= r.nodes < 5000 + 2 * 8 * 2  # at most one expansion per thread past the limit


@pytest.mark.parametrize('bonus', [0.0, 50.0])
def test_selection_bonus_of_forcing_children(bonus):
    """select_softmax draws a child flagged FLAG_FORCING as if its value were `bonus` lower: with two
    children of equal value the forcing one is drawn with probability 1 / (1 + exp(-bonus / T_sel))."""
    tree = layout.new_tree(3, 2)
    tree[layout.T_FIRST][0] = 0
    tree[layout.T_COUNT][0] = 2
    tree[layout.T_ECHILD][:] = [1, 2]
    tree[layout.T_VALUE][1:] = 10.0
    tree[layout.T_FLAGS][2] = layout.FLAG_FORCING
    rng = np.array([np.uint64(7)], dtype=np.uint64)
    wbuf = np.empty(2)
    draws = 20000
    forcing = sum(selection.select_softmax(tree, 0, 40.0, bonus, rng, wbuf) == 1 for _ in range(draws))
    expected = 1.0 / (1.0 + np.exp(-bonus / 40.0))
    assert abs(forcing / draws - expected) < 0.015


@pytest.mark.parametrize('beta', [0.0, 0.5, 1.0])
def test_progressive_bias_draws_children_by_their_prior(beta):
    """Under widening (T_EBIAS) select_softmax weighs a child by p^beta exp(-E/T_sel): two children of
    equal value with priors 0.8 and 0.2 are drawn 0.8^beta : 0.2^beta; a pool without the per-edge priors
    ignores beta."""
    for widen in (True, False):
        tree = layout.new_tree(3, 2, widen=widen)
        tree[layout.T_FIRST][0] = 0
        tree[layout.T_COUNT][0] = 2
        tree[layout.T_ECHILD][:] = [1, 2]
        tree[layout.T_VALUE][1:] = 10.0
        if widen:
            tree[layout.T_EBIAS][:] = np.log([0.8, 0.2])
        rng = np.array([np.uint64(11)], dtype=np.uint64)
        wbuf = np.empty(2)
        draws = 20000
        first = sum(selection.select_softmax(tree, 0, 40.0, 0.0, rng, wbuf, True, beta) == 0 for _ in range(draws))
        expected = 0.8**beta / (0.8**beta + 0.2**beta) if widen else 0.5
        assert abs(first / draws - expected) < 0.015


def test_annealed_temperature_follows_the_node_visits():
    """annealed_temperature: T / sqrt(1 + N(v)/anneal_n) with N(v) = the samples backed up through v (its
    sequence count), floored at t_min; anneal_n 0 keeps T_sel. After a one-thread search of S samples the
    root has been passed S - 1 times (the first sample expanded it), so the root's temperature follows."""
    s = searcher(seed=3)
    r = s.search(small_full_game(depth=6, bmax=4), Limits(samples=400))
    assert r.samples == 400 and not r.proven
    tree = s.pool.tree
    visits = tree[layout.T_STATE][0] >> 2
    assert visits == 399
    assert backup.annealed_temperature(visits, 92.0, 0.0, 0.0) == 92.0
    assert backup.annealed_temperature(visits, 92.0, 100.0, 0.0) == pytest.approx(92.0 / np.sqrt(1.0 + 3.99))
    assert backup.annealed_temperature(visits, 92.0, 100.0, 50.0) == 50.0
    assert backup.annealed_temperature(visits, 92.0, 0.01, 3.0) == 3.0
    assert backup.annealed_temperature(visits, 0.0, 100.0, 3.0) == 0.0  # minimax backup stays minimax


def test_annealed_backup_moves_a_visited_node_towards_its_best_child():
    """backup_node at T_back annealed by the node's visits: E(v) = eq. 3 at T_back / sqrt(1 + N/n), which for
    N = 300, n = 100 halves T_back; the value lies between the plain softmax expectation and the best child's
    value (one child at 0 for the parent, three that lose 200 cp)."""
    tree = layout.new_tree(5, 4)
    tree[layout.T_FIRST][0] = 0
    tree[layout.T_COUNT][0] = 4
    tree[layout.T_ECHILD][:] = [1, 2, 3, 4]
    tree[layout.T_VALUE][1:] = [0.0, 200.0, 200.0, 200.0]
    tree[layout.T_STATE][0] = layout.EXPANDED + 300 * layout.SEQ_STEP
    plain = backup.backup_value(tree, 0, 92.0)
    backup.backup_node(tree, 0, 92.0, 0.0, 0.0, layout.POLICY_SOFTMAX, 1000.0)
    assert tree[layout.T_VALUE][0] == plain
    backup.backup_node(tree, 0, 92.0, 100.0, 0.0, layout.POLICY_SOFTMAX, 1000.0)
    annealed = tree[layout.T_VALUE][0]
    assert annealed == backup.backup_value(tree, 0, 46.0)
    z = 1.0 + 3.0 * np.exp(-200.0 / 46.0)
    assert annealed == pytest.approx(-3.0 * 200.0 * np.exp(-200.0 / 46.0) / z)
    assert plain < annealed < 0.0
    backup.backup_node(tree, 0, 92.0, 100.0, 60.0, layout.POLICY_SOFTMAX, 1000.0)  # the floor holds
    assert tree[layout.T_VALUE][0] == backup.backup_value(tree, 0, 60.0)


def test_selection_skips_children_another_thread_is_expanding():
    """select_softmax leaves out a child in state EXPANDING and renormalises over the rest (a thread does not
    follow another onto the node it is expanding); with every child busy it returns -1 (a collision)."""
    tree = layout.new_tree(4, 3)
    tree[layout.T_FIRST][0] = 0
    tree[layout.T_COUNT][0] = 3
    tree[layout.T_ECHILD][:] = [1, 2, 3]
    tree[layout.T_VALUE][1:] = [-300.0, 0.0, 40.0]  # child 1 nearly always drawn while it is free
    rng = np.array([np.uint64(9)], dtype=np.uint64)
    wbuf = np.empty(3)
    free = [selection.select_softmax(tree, 0, 92.0, 0.0, rng, wbuf) for _ in range(2000)]
    assert free.count(0) > 1800  # p = 1 / (1 + e^(-300/92) + e^(-340/92)) = 0.94
    tree[layout.T_STATE][1] = layout.EXPANDING
    busy = [selection.select_softmax(tree, 0, 92.0, 0.0, rng, wbuf) for _ in range(4000)]
    assert 0 not in busy
    expected = 1.0 / (1.0 + np.exp(-40.0 / 92.0))  # child 2 against child 3, renormalised
    assert abs(busy.count(1) / len(busy) - expected) < 0.03
    tree[layout.T_STATE][2:] = layout.EXPANDING
    assert selection.select_softmax(tree, 0, 92.0, 0.0, rng, wbuf) == -1
    # threads that join each other's expansions draw busy children like free ones
    joint = [selection.select_softmax(tree, 0, 92.0, 0.0, rng, wbuf, False) for _ in range(2000)]
    assert joint.count(0) > 1800


def test_annealing_sharpens_the_draws_of_a_visited_node():
    """With annealing, select_edge draws the better of two children with the softmax probability at the node's
    annealed temperature: 1 / (1 + exp(-gap / T(v))), T(v) = 40 / sqrt(1 + 300/100) = 20 here."""
    tree = layout.new_tree(3, 2)
    tree[layout.T_FIRST][0] = 0
    tree[layout.T_COUNT][0] = 2
    tree[layout.T_ECHILD][:] = [1, 2]
    tree[layout.T_VALUE][1:] = [0.0, 20.0]  # child 1 is better for the parent (lower E from its own side)
    tree[layout.T_STATE][0] = layout.EXPANDED + 300 * layout.SEQ_STEP
    fp = np.zeros(layout.FP_SIZE)
    fp[layout.FP_TSEL] = 40.0
    rng = np.array([np.uint64(5)], dtype=np.uint64)
    wbuf = np.empty(2)
    draws = 20000
    for anneal_n, t in [(0.0, 40.0), (100.0, 20.0)]:
        fp[layout.FP_ANNEAL_N] = anneal_n
        best = sum(
            selection.select_edge(tree, 0, layout.POLICY_SOFTMAX, fp, rng, wbuf, False) == 0 for _ in range(draws)
        )
        assert abs(best / draws - 1.0 / (1.0 + np.exp(-20.0 / t))) < 0.015


@pytest.mark.parametrize('graph', [False, True])
def test_a_sampler_with_helpers_builds_exactly_the_one_thread_tree(graph):
    """Helper threads only evaluate the children of the sampler's expansions (core run_helper): with one
    sampler the draws, the values and so the whole tree equal a one-thread search's with the same seed,
    whatever the timing; the helpers do evaluate children (C_JOINED)."""
    mode = syn.MODE_MULTISET if graph else syn.MODE_TREE
    pos = syn.make_pos(mode=mode, seed=21, bmin=20, bmax=40, term_depth=40, value_range=300, leaf_cost=20000)
    one = searcher(graph=graph, seed=5, t_sel=60.0)
    r1 = one.search(pos, Limits(samples=400))
    joined = 0
    for helpers in (1, 2):
        s = searcher(graph=graph, seed=5, t_sel=60.0, threads=1 + helpers, helpers=helpers)
        assert s.helper_count() == helpers
        r = s.search(pos, Limits(samples=400))
        assert (r.value, r.pv, r.nodes, r.samples) == (r1.value, r1.pv, r1.nodes, r1.samples)
        n = int(one.pool.ctl[layout.C_NODES])
        assert int(s.pool.ctl[layout.C_NODES]) == n
        for t in (layout.T_VALUE, layout.T_FIRST, layout.T_COUNT, layout.T_KEY):
            assert np.array_equal(s.pool.tree[t][:n], one.pool.tree[t][:n])
        joined += int(s.pool.ctl[layout.C_JOINED])
        check_accounting(s)
    assert joined > 0  # ~0.3 s of expansions: a helper thread that got the CPU at all took part


def test_helper_count_defaults_and_limits():
    """-1 = all threads but one, or none under progressive widening; at least one thread samples; none without a
    second thread or with RAVE; an explicit count holds under widening too."""
    assert searcher(threads=4, helpers=-1).helper_count() == 3
    assert searcher(threads=2, helpers=-1, widen_k0=4).helper_count() == 0
    assert searcher(threads=3, helpers=1, widen_k0=4).helper_count() == 1
    assert searcher(threads=3, helpers=5).helper_count() == 2
    assert searcher(threads=1, helpers=-1).helper_count() == 0
    assert searcher(threads=2, helpers=0).helper_count() == 0
    assert searcher(threads=2, helpers=1, policy='rave').helper_count() == 0

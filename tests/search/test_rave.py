"""MC-RAVE in the shared core: the eq. 47 schedule, AMAF/MC updates against a brute-force recount of
Algorithm 2, the RAVE policy on the synthetic game (no expand_amaf: plain-expand fallback) and the MC
count recursion of a real Go search on a tiny board."""

import math

import numpy as np
import pytest
from search_helpers import check_accounting

from usi_engine.search import layout, rave
from usi_engine.search import synthetic as syn
from usi_engine.search.pool import NodePool
from usi_engine.search.searcher import Searcher
from usi_engine.search.settings import Limits, SearchOptions, float_params
from usi_engine.search.values import MATE_THRESHOLD

VSCALE = 1000.0


def test_amaf_distance_weights_fall_by_thirds():
    """Pachi's distance_rave 3: the credits of the first third of the moves after a node weigh 3, then 2, then 1;
    distance 0 weighs every credit 1."""
    weights = [rave.amaf_weight(k, 9, 3.0) for k in range(9)]
    assert weights == [3.0, 3.0, 3.0, 2.0, 2.0, 2.0, 1.0, 1.0, 1.0]
    assert [rave.amaf_weight(k, 9, 0.0) for k in range(9)] == [1.0] * 9


def test_beta_minimum_mse_schedule():
    b = 0.1
    for n, na in [(1.0, 1.0), (10.0, 50.0), (100.0, 1000.0), (5000.0, 20000.0)]:
        expected = na / (n + na + 4.0 * n * na * b * b)  # seed 000 eq. 47
        assert rave.rave_beta(n, na, b) == pytest.approx(expected, rel=1e-12)
    assert rave.rave_beta(10.0, 0.0, b) == 0.0  # no AMAF data: pure MC
    assert rave.rave_beta(10.0, 30.0, 0.0) == pytest.approx(0.75)  # unbiased AMAF: counts weigh
    betas = [rave.rave_beta(n, 10.0 * n, 0.05) for n in (1, 10, 100, 1000, 10000)]
    assert all(x > y for x, y in zip(betas, betas[1:])) and betas[-1] < 0.01  # -> 0 (UCT limit)


def _pool_path(rng, edge_moves, choices=None):
    """A RAVE pool holding a path root -> n1 -> n2 whose nodes have the edges edge_moves[0..2]; the next
    path move is edge choices[depth] (random if None). Returns pool, path nodes, path edges."""
    pool = NodePool(1, graph=False, uct=False, rave=True)
    t = pool.tree
    pool.reset(0)
    path_nodes, path_edges = [0], []
    nxt_node, nxt_edge = 1, 0
    for depth, moves in enumerate(edge_moves):
        v = path_nodes[-1]
        branching = len(moves)
        t[layout.T_FIRST][v], t[layout.T_COUNT][v] = nxt_edge, branching
        t[layout.T_STATE][v] = layout.EXPANDED
        for i, m in enumerate(moves):
            t[layout.T_EMOVE][nxt_edge + i] = m
            t[layout.T_ECHILD][nxt_edge + i] = nxt_node + i
            t[layout.T_RN][nxt_edge + i] = t[layout.T_AN][nxt_edge + i] = 0.0
            t[layout.T_RW][nxt_edge + i] = t[layout.T_AW][nxt_edge + i] = 0.0
        if depth < len(edge_moves) - 1:
            j = int(rng.integers(branching)) if choices is None else choices[depth]
            path_edges.append(nxt_edge + j)
            path_nodes.append(nxt_node + j)
        nxt_node += branching
        nxt_edge += branching
    return pool, path_nodes, path_edges


def _recount(t, path_nodes, path_edges, tails, outcomes, top=None, distance=0.0):
    """Algorithm 2's Backup, literally: simulation i played the path's moves and then tails[i], and ended with
    outcomes[i] for the last path node's side to move; at each path node s_t (t = 0..top, default the last), credit
    (s_t, a_u) for u = t, t+2, ... when a_u was not played before at an earlier u' = t, t+2, ... (and is an edge of
    s_t), with Pachi's distance weight 1 + floor(distance * (L - k) / (L + 1)) for the k-th of the L moves after
    s_t."""
    d = len(path_edges)
    top = d if top is None else top
    an = {}
    aw = {}
    for tail, z_leaf in zip(tails, outcomes):
        seq = [int(t[layout.T_EMOVE][e]) for e in path_edges] + [int(m) for m in tail]
        for step in range(top + 1):
            v = path_nodes[step]
            f, n = int(t[layout.T_FIRST][v]), int(t[layout.T_COUNT][v])
            edge_of = {int(t[layout.T_EMOVE][e]): e for e in range(f, f + n)}
            z = z_leaf if (d - step) % 2 == 0 else 1.0 - z_leaf
            seen = []
            length = len(seq) - step
            for u in range(step, len(seq), 2):
                a = seq[u]
                w = 1 + math.floor(distance * (length - (u - step)) / (length + 1))
                if a != layout.NO_MOVE and a not in seen and a in edge_of:
                    an[edge_of[a]] = an.get(edge_of[a], 0) + w
                    aw[edge_of[a]] = aw.get(edge_of[a], 0.0) + w * z
                if a != layout.NO_MOVE:
                    seen.append(a)
    return an, aw


def _hscratch(edges):
    """RAVE's hash scratch for nodes of these edge lists (samples.new_scratch's)."""
    slots = 1 << int(np.ceil(np.log2(2 * max(len(e) for e in edges))))
    return tuple(np.zeros(slots, np.int64) for _ in range(4)) + (np.zeros(2, np.int64),)


def _random_case(rng):
    """Random edges (moves 1..12), values and traces with NO_MOVE entries; every child simulated."""
    edges = [rng.choice(np.arange(1, 13), size=6, replace=False) for _ in range(3)]
    n = len(edges[-1])
    values = rng.choice([-VSCALE, 0.0, VSCALE], size=n)
    traces = [
        list(rng.choice(np.r_[np.arange(1, 13), [layout.NO_MOVE]], size=int(rng.integers(0, 15)))) for _ in range(n)
    ]
    return edges, values, traces, np.zeros(n, np.int8)


def _go_case(rng):
    """A tiny 5x5 game: the real legal moves of a root, a child and a grandchild (expand_amaf), and the
    grandchild's real playouts, priors-chosen subset and traces."""
    from usi_engine.go.game import MAX_MOVES, default_params, expand_amaf
    from usi_engine.go.layout import new_pos
    from usi_engine.go.playout import seed_rng

    pos = new_pos(5, 0.5)
    cap = 3 * 25
    out = (
        np.zeros(MAX_MOVES, np.int32),
        np.zeros(MAX_MOVES),
        np.zeros(MAX_MOVES, np.int8),
        np.zeros(MAX_MOVES),
        np.zeros(MAX_MOVES * cap, np.int32),
        np.zeros(MAX_MOVES + 1, np.int64),
    )
    params = default_params(rave_playouts=6)
    from usi_engine.go.board import do_move

    edges, choices = [], []
    for depth in range(3):
        n, _ = expand_amaf(pos, np.zeros(1), params, seed_rng(int(rng.integers(1, 1000))), *out)
        edges.append(out[0][:n].copy())
        if depth < 2:
            choices.append(int(rng.integers(n - 1)))  # any stone move
            do_move(pos, out[0][choices[-1]])
    _, values, flags, _, trace, tstart = out
    traces = [list(trace[tstart[i] : tstart[i + 1]]) for i in range(n)]
    return edges, values[:n].copy(), traces, flags[:n].copy(), choices


@pytest.mark.parametrize("distance", [0.0, 3.0])
@pytest.mark.parametrize("case", ["random-1", "random-2", "random-3", "go-5x5-1", "go-5x5-2"])
def test_amaf_and_mc_updates_equal_a_brute_force_recount(case, distance):
    rng = np.random.default_rng(int(case[-1]))
    choices = None
    if case.startswith("go"):
        edges, values, traces, flags, choices = _go_case(rng)
    else:
        edges, values, traces, flags = _random_case(rng)
    pool, path_nodes, path_edges = _pool_path(rng, edges, choices)
    t = pool.tree
    leaf = path_nodes[-1]
    f, n = int(t[layout.T_FIRST][leaf]), int(t[layout.T_COUNT][leaf])
    moves = t[layout.T_EMOVE][f : f + n].copy()
    tstart = np.zeros(n + 1, np.int64)
    tstart[1:] = np.cumsum([len(x) for x in traces])
    trace = np.array([m for x in traces for m in x] or [0], np.int32)
    hscratch = _hscratch(edges)
    rave.rave_update(
        t,
        np.array(path_nodes, np.int64),
        np.array(path_edges, np.int64),
        len(path_edges),
        moves,
        values,
        flags,
        n,
        trace,
        tstart,
        VSCALE,
        distance,
        hscratch,
    )
    sim = (flags & layout.FLAG_NO_SIM) == 0
    tails = [[m, *x] for m, x, s in zip(moves, traces, sim) if s]
    outcomes = [0.5 * (1.0 - v / VSCALE) for v in values[sim]]
    an, aw = _recount(t, path_nodes, path_edges, tails, outcomes, distance=distance)
    for e in range(f + n):
        assert t[layout.T_AN][e] == an.get(e, 0), e
        assert t[layout.T_AW][e] == pytest.approx(aw.get(e, 0.0)), e
    z_leaf = sum(0.5 * (1.0 - v / VSCALE) for v in values[sim])
    for step, e in enumerate(path_edges):  # MC: every simulation through the path edge, eq. 13-15
        assert t[layout.T_RN][e] == sim.sum()
        same_mover = (len(path_edges) - step) % 2 == 0
        assert t[layout.T_RW][e] == pytest.approx(z_leaf if same_mover else sim.sum() - z_leaf)
    assert sum(an.values()) > 0


@pytest.mark.parametrize("distance", [0.0, 3.0])
@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("expanded", [False, True])
def test_a_leaf_playout_updates_equal_a_brute_force_recount(seed, expanded, distance):
    """rave_update_leaf: one playout from the last path node itself. MC: every path edge counts it, from its
    mover's side (eq. 13-15); AMAF: the path nodes up to `top` credit the path's and the playout's moves (the leaf's
    own edges only when the leaf is expanded, top = d)."""
    rng = np.random.default_rng(seed)
    edges, _, traces, _ = _random_case(rng)
    pool, path_nodes, path_edges = _pool_path(rng, edges)
    t = pool.tree
    d = len(path_edges)
    top = d if expanded else d - 1
    value = float(rng.choice([-VSCALE, 0.0, VSCALE]))
    trace = np.array(traces[0] or [0], np.int32)
    rave.rave_update_leaf(
        t,
        np.array(path_nodes, np.int64),
        np.array(path_edges, np.int64),
        d,
        top,
        value,
        trace,
        len(traces[0]),
        VSCALE,
        distance,
        _hscratch(edges),
    )
    z_leaf = 0.5 * (1.0 + value / VSCALE)  # the outcome for the leaf's side to move
    an, aw = _recount(t, path_nodes, path_edges, [traces[0]], [z_leaf], top, distance)
    leaf = path_nodes[-1]
    f, n = int(t[layout.T_FIRST][leaf]), int(t[layout.T_COUNT][leaf])
    for e in range(f + n):
        assert t[layout.T_AN][e] == an.get(e, 0), e
        assert t[layout.T_AW][e] == pytest.approx(aw.get(e, 0.0)), e
    if not expanded:
        assert not t[layout.T_AN][f : f + n].any()  # an unexpanded leaf's edges do not exist yet
    for step, e in enumerate(path_edges):
        assert t[layout.T_RN][e] == 1.0
        assert t[layout.T_RW][e] == pytest.approx(z_leaf if (d - step) % 2 == 0 else 1.0 - z_leaf)


def test_a_game_without_leaf_playouts_expands_at_the_first_visit():
    """expand_visits asks for playouts from unexpanded leaves; a game without leaf_playout (the synthetic game: the
    stand-in) expands at once instead, so the search is the one without the setting, statistic for statistic."""
    pos = syn.make_pos(mode=syn.MODE_TREE, seed=4, bmin=2, bmax=4, term_depth=8, value_range=300)
    trees = []
    for expand in (0, 8):
        s = Searcher(
            syn.SyntheticAdapter(),
            SearchOptions(policy='rave', hash_mb=4, seed=1, graph=False, expand_visits=expand),
        )
        s.search(pos, Limits(samples=300))
        check_accounting(s)
        used = int(s.pool.ctl[layout.C_EDGES])
        trees.append([s.pool.tree[k][:used].copy() for k in (layout.T_RN, layout.T_RW, layout.T_AN, layout.T_AW)])
    for a, b in zip(*trees):
        assert np.array_equal(a, b)


def test_leaf_playouts_expand_a_go_leaf_after_its_edge_has_e_visits():
    """Go, tree mode, expand_visits E with RAVE_NONE (the expansion simulates no child): each sample plays one
    playout, from an unexpanded leaf while its edge has fewer than E real MC visits, else from the node it expands.
    So an expanded child's edge counts E leaf playouts, the one of its expansion and every playout below it (plus
    samples that ended at it: a proven or terminal node); an unexpanded child's edge at most E."""
    from usi_engine.go.game import RAVE_NONE, GoAdapter, default_params
    from usi_engine.go.layout import new_pos

    prior, expand = 3.0, 4
    s = Searcher(
        GoAdapter(5, default_params(rave_children=RAVE_NONE)),
        SearchOptions(
            policy='rave', hash_mb=8, seed=2, graph=False, prior_visits=prior, prior_amaf=5.0, expand_visits=expand
        ),
    )
    r = s.search(new_pos(5, 0.5), Limits(samples=400))
    assert r.children == r.samples == 400  # one playout per sample
    t = s.pool.tree
    used = int(s.pool.ctl[layout.C_NODES])
    expanded = [v for v in range(used) if (t[layout.T_STATE][v] & layout.PHASE_MASK) == layout.EXPANDED]
    exact, grown, waiting = 0, 0, 0
    for v in expanded:
        f, n = int(t[layout.T_FIRST][v]), int(t[layout.T_COUNT][v])
        for e in range(f, f + n):
            c = int(t[layout.T_ECHILD][e])
            real = t[layout.T_RN][e] - prior
            if t[layout.T_FLAGS][c]:
                continue
            if (t[layout.T_STATE][c] & layout.PHASE_MASK) != layout.EXPANDED:
                assert 0 <= real <= expand
                waiting += real > 0
                continue
            cf, cn = int(t[layout.T_FIRST][c]), int(t[layout.T_COUNT][c])
            own = real - float(np.sum(t[layout.T_RN][cf : cf + cn] - prior))
            assert own >= expand + 1 - 1e-9
            exact += abs(own - (expand + 1)) < 1e-9
            grown += 1
    assert grown >= 10 and waiting >= 10 and exact >= 0.9 * grown


def test_rave_policy_on_a_game_without_amaf_falls_back_and_keeps_the_pool_sound():
    pos = syn.make_pos(mode=syn.MODE_TREE, seed=4, bmin=2, bmax=4, term_depth=8, value_range=300)
    s = Searcher(
        syn.SyntheticAdapter(),
        SearchOptions(policy='rave', hash_mb=4, seed=1, graph=False, prior_visits=0.0, prior_amaf=0.0),
    )
    r = s.search(pos, Limits(samples=500))
    check_accounting(s)
    t = s.pool.tree
    f, n = int(t[layout.T_FIRST][0]), int(t[layout.T_COUNT][0])
    # no playouts reported: AMAF credit comes from the tree moves alone, at most once per simulation
    assert 0.0 < t[layout.T_AN][f : f + n].sum() <= t[layout.T_RN][f : f + n].sum()
    visits = t[layout.T_RN][f : f + n]
    assert r.best_move == int(t[layout.T_EMOVE][f + int(np.argmax(visits))])  # most visited root move
    assert math.isfinite(r.value) and r.samples == 500


def test_rave_mc_counts_add_up_in_a_go_search_on_a_tiny_board():
    """Tree mode, 5x5: an edge's real MC count = its own playout (none for a NO_SIM child) + every playout
    evaluated below its child (+ samples that ended at a terminal there)."""
    from usi_engine.go.game import GoAdapter
    from usi_engine.go.layout import new_pos

    prior = 3.0
    s = Searcher(
        GoAdapter(5), SearchOptions(policy='rave', hash_mb=8, seed=2, graph=False, prior_visits=prior, prior_amaf=5.0)
    )
    s.search(new_pos(5, 0.5), Limits(samples=60))
    t = s.pool.tree
    used = int(s.pool.ctl[layout.C_NODES])
    expanded = [v for v in range(used) if (t[layout.T_STATE][v] & layout.PHASE_MASK) == layout.EXPANDED]
    checked = 0
    for v in expanded:
        f, n = int(t[layout.T_FIRST][v]), int(t[layout.T_COUNT][v])
        for e in range(f, f + n):
            c = int(t[layout.T_ECHILD][e])
            if (t[layout.T_STATE][c] & layout.PHASE_MASK) != layout.EXPANDED or t[layout.T_FLAGS][c]:
                continue
            cf, cn = int(t[layout.T_FIRST][c]), int(t[layout.T_COUNT][c])
            below = float(np.sum(t[layout.T_RN][cf : cf + cn] - prior))
            own = t[layout.T_RN][e] - prior - below  # its own playout (0 if NO_SIM) + end-samples
            assert -1e-9 <= own <= 1.0 + 60  # at most one end-sample per sample
            checked += 1
        assert np.all(t[layout.T_AN][f : f + n] >= 5.0) and np.all(
            t[layout.T_AW][f : f + n] <= t[layout.T_AN][f : f + n]
        )
    assert checked >= 10


def _root_with_edges(values, real, prior_n):
    """A RAVE pool whose root has one edge per entry of `values`: prior_n virtual visits at 1/2, then real[i] real
    MC visits of mean values[i] (outcomes for the root's mover), no AMAF data; the children are plain unexpanded
    nodes."""
    pool = NodePool(1, graph=False, uct=False, rave=True)
    t = pool.tree
    pool.reset(0)
    n = len(values)
    t[layout.T_FIRST][0], t[layout.T_COUNT][0] = 0, n
    t[layout.T_STATE][0] = layout.EXPANDED
    for i, (q, r) in enumerate(zip(values, real)):
        t[layout.T_EMOVE][i], t[layout.T_ECHILD][i] = i, 1 + i
        t[layout.T_VALUE][1 + i] = 0.0
        t[layout.T_RN][i] = prior_n + r
        t[layout.T_RW][i] = 0.5 * prior_n + q * r
        t[layout.T_AN][i] = t[layout.T_AW][i] = 0.0
    return pool


def test_progressive_widening_selects_among_the_first_k_children():
    """RAVE with widen_k0 > 0: only the first k(N) = k0 + floor(log_b(1 + N/a)) children take part, N the root's
    real visits (its edges' counts without the prior's virtual visits); the best child further on is reached once
    N lets it in, a child proven lost for its side is taken wherever it stands, and k0 = 0 selects among all."""
    values = [0.40, 0.45, 0.42, 0.41, 0.43, 0.44, 0.60]  # the best child is the last one
    for k0, a, b in ((1, 40.0, 1.4), (2, 10.0, 2.0)):
        fp = float_params(SearchOptions(policy='rave', widen_k0=k0, widen_a=a, widen_b=b), 0, 1, False, VSCALE)
        for total in (0, 30, 100, 400, 2000, 20000):
            real = [total // len(values)] * len(values)
            pool = _root_with_edges(values, real, 10.0)
            n_real = sum(real)
            width = min(len(values), k0 + math.floor(math.log(1.0 + n_real / a) / math.log(b)))
            want = max(range(width), key=lambda i: values[i] if real[i] else 0.5)
            assert rave.select_rave(pool.tree, 0, fp) == want, (k0, total, width)
        pool.tree[layout.T_VALUE][1 + 5] = -2.0 * MATE_THRESHOLD  # child 5 lost for its side: a won move
        assert rave.select_rave(pool.tree, 0, fp) == 5
    off = float_params(SearchOptions(policy='rave'), 0, 1, False, VSCALE)
    assert rave.select_rave(_root_with_edges(values, [1] * len(values), 10.0).tree, 0, off) == len(values) - 1

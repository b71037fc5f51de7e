"""Eligibilities on real shogi MCSS trees (exact == finite differences, sampled -> exact) and self-play games."""

import numpy as np
import pytest

from learn import pg
from learn.selfplay import AdvantageSum, GameOutcome, SelfPlayConfig, SelfPlayer, record_bytes
from usi_engine.search import layout, policy
from usi_engine.search.searcher import Searcher
from usi_engine.search.settings import Limits, SearchOptions
from usi_engine.shogi import Board
from usi_engine.shogi.position import RULE_TRY, do_move
from usi_engine.shogi_eval.evalfile import load_weights
from usi_engine.shogi_eval.features import N_MATERIAL, N_PE, N_PP, N_WEIGHTS, OFF_KZ, OFF_MATERIAL, OFF_PE, OFF_PP
from usi_engine.shogi_search.game import ShogiAdapter, make_params
from usi_engine.shogi_search.params import P_ENTERING_RULE, P_QSEE
from usi_engine.shogi_search.quiescence import INF, QBuffers, qsearch

T = 92.0
QDEPTH = 4
# a middlegame with captures available on both sides
MIDGAME = "ln1g3nl/1r3kg2/p2pppsp1/2ps2p1p/1p7/2P1P1P2/PPSP1P1PP/2G2S1R1/LN2KG1NL b Bb 1"


def qvalue(pos, w, see):
    """The quiescence value of pos, with or without SEE pruning (the search's params P_QSEE)."""
    return qsearch(pos, w, -INF, INF, QDEPTH, *QBuffers(QDEPTH).args(), see)


@pytest.fixture(
    scope="module",
    params=[("b", False), ("w", False), ("b", True), ("w", True)],
    ids=["black-root", "white-root", "black-root-see", "white-root-see"],
)
def searched(request):
    """(weights, board, tree, nodes, see): a 40-sample tree-mode search; see = SEE pruning in its quiescence."""
    side, see = request.param
    w = load_weights()
    rng = np.random.default_rng(3)
    w[24:OFF_KZ] = rng.normal(scale=5.0, size=OFF_KZ - 24)  # non-trivial KP/PP/king terms (the tree of the SEE test)
    board = Board(MIDGAME.replace(" b ", f" {side} "))
    searcher = Searcher(
        ShogiAdapter(w, make_params(qsearch_depth=QDEPTH, qsearch_see=see)),
        SearchOptions(threads=1, hash_mb=8, t_sel=T, t_back=T, graph=False, seed=5),
    )
    searcher.search(board.pos, Limits(samples=40))
    return w, board, searcher.pool.tree, int(searcher.pool.ctl[layout.C_NODES]), see


def leaf_values(tree, n, pos, w, see=False):
    """Re-evaluate every leaf of the tree with weights w and back the values up at T (BFS order)."""
    t = tuple(a.copy() for a in tree)
    pn, pe, queue = (np.zeros(n, np.int64) for _ in range(3))
    pg.parent_links(t, np.int64(0), pn, pe, queue)
    order = [0] + [v for v in range(1, n) if pe[v] >= 0]
    order.sort(key=lambda v: t[layout.T_DEPTH][v])
    path = np.zeros(pg.MAX_PATH, np.int32)
    for v in order:
        if pg.is_leaf(t, np.int64(v)):
            d = pg.path_to(t, pn, pe, np.int64(v), path)
            p = pos.copy()
            for m in path[:d]:
                do_move(p, np.int64(m))
            t[layout.T_VALUE][v] = qvalue(p, w, see)
    pg.backup_all(t, np.array(order, np.int64), np.int64(len(order)), T)
    return t


def direction(g, seed, see):
    """A random direction on the support of g for a finite-difference check. With SEE pruning none on the
    material block: a like-for-like capture with promotion (e.g. a bishop taking a bishop and promoting) has a
    static exchange of exactly 0 at these weights but +-2e-13 of float rounding under any change of the
    material weights, which alone decides whether it is pruned; the quiescence value jumps there (42 cp at a
    leaf of this tree), so central differences across it measure the jump, not the derivative. The pruning
    decisions depend on the material weights only, so off that block the value is smooth; the material
    coordinates are checked without SEE."""
    d = np.zeros(N_WEIGHTS)
    nz = np.flatnonzero(g)
    d[nz] = np.random.default_rng(seed).normal(size=nz.size)
    if see:
        d[OFF_MATERIAL : OFF_MATERIAL + N_MATERIAL] = 0.0
    return d


def log_pi(tree, played, t_learn):
    edges, p = policy.root_policy(tree, 0, t_learn)
    return float(np.log(p[list(edges).index(played)]))


def eligibility(tree, n, board, w, played, method, samples=1, seed=1, value_coef=0.0, see=False):
    grad = np.zeros(N_WEIGHTS)
    tg = pg.TreeGradient(n)
    _, mismatch = tg.shogi_eligibility(
        tree,
        0,
        board.pos,
        w,
        QDEPTH,
        played,
        method,
        T,
        T,
        "full",
        samples,
        1e9,
        np.array([seed], np.uint64),
        grad,
        value_coef=value_coef,
        see_prune=see,
    )
    assert mismatch < 1e-6  # every leaf recomputed to the value the search stored
    return grad


@pytest.mark.slow
def test_exact_eligibility_matches_finite_differences(searched):
    w, board, tree, n, see = searched
    played = int(tree[layout.T_FIRST][0]) + 2
    g = eligibility(tree, n, board, w, played, "exact", see=see)
    assert np.count_nonzero(g) > 100
    d = direction(g, 9, see)
    h = 1e-3
    plus = log_pi(leaf_values(tree, n, board.pos, w + h * d, see), played, T)
    minus = log_pi(leaf_values(tree, n, board.pos, w - h * d, see), played, T)
    fd = (plus - minus) / (2 * h)
    assert fd == pytest.approx(g @ d, rel=1e-3)


def test_value_term_matches_finite_differences_of_root_value(searched):
    """The critic term value_coef * dE(root)/dw: exact equals finite differences of the root value; the
    sampled estimate approaches it."""
    w, board, tree, n, see = searched
    played = int(tree[layout.T_FIRST][0]) + 1
    c = 0.37
    value = eligibility(tree, n, board, w, played, "exact", value_coef=c, see=see) - eligibility(
        tree, n, board, w, played, "exact", see=see
    )
    assert np.count_nonzero(value) > 100
    d = direction(value, 8, see)
    h = 1e-3
    fd = (
        leaf_values(tree, n, board.pos, w + h * d, see)[layout.T_VALUE][0]
        - leaf_values(tree, n, board.pos, w - h * d, see)[layout.T_VALUE][0]
    ) / (2 * h)
    assert c * fd == pytest.approx(value @ d, rel=1e-3)
    sampled = eligibility(tree, n, board, w, played, "sampled", 4000, 3, value_coef=c, see=see) - eligibility(
        tree, n, board, w, played, "sampled", 4000, 3, see=see
    )
    assert np.linalg.norm(sampled - value) < 0.2 * np.linalg.norm(value)


@pytest.mark.slow
def test_full_width_reference_matches_finite_differences():
    """The paper's reference: the exact recursion (eq. 16-23) over the full-width depth-2 tree."""
    from usi_engine.shogi_search import game

    w = load_weights()
    w[24:] = np.random.default_rng(4).normal(scale=5.0, size=N_WEIGHTS - 24)
    board = Board("4k4/9/4p4/9/9/9/4P4/4R4/4K4 b Gg 1")
    tree, n = pg.full_width_tree(game, board.pos, w, make_params(qsearch_depth=QDEPTH), 2, T)
    f, k = int(tree[layout.T_FIRST][0]), int(tree[layout.T_COUNT][0])
    assert n == 1 + k + sum(int(tree[layout.T_COUNT][c]) for c in tree[layout.T_ECHILD][f : f + k])
    played = f + 1
    g = eligibility(tree, n, board, w, played, "exact")
    d = np.zeros(N_WEIGHTS)
    d[np.flatnonzero(g)] = np.random.default_rng(2).normal(size=np.count_nonzero(g))
    h = 1e-3
    fd = (
        log_pi(leaf_values(tree, n, board.pos, w + h * d), played, T)
        - log_pi(leaf_values(tree, n, board.pos, w - h * d), played, T)
    ) / (2 * h)
    assert fd == pytest.approx(g @ d, rel=1e-3)


def test_sampled_eligibility_approaches_exact(searched):
    w, board, tree, n, see = searched
    played = int(tree[layout.T_FIRST][0])
    exact = eligibility(tree, n, board, w, played, "exact", see=see)
    errs = {}
    for samples in (50, 5000):
        errs[samples] = np.mean(
            [
                np.linalg.norm(eligibility(tree, n, board, w, played, "sampled", samples, s, see=see) - exact)
                for s in (1, 2, 3)
            ]
        )
    assert errs[5000] < 0.2 * errs[50]
    assert errs[5000] < 0.15 * np.linalg.norm(exact)


def test_one_pass_fills_weighted_rows(searched):
    """Two accumulator rows (e(t) and b_t * e(t), the reward baseline) from one pass equal separate sums."""
    w, board, tree, n, see = searched
    played = int(tree[layout.T_FIRST][0]) + 1
    single = eligibility(tree, n, board, w, played, "sampled", 64, 5, see=see)
    rows = np.zeros((2, N_WEIGHTS))
    pg.TreeGradient(n).shogi_eligibility(
        tree,
        0,
        board.pos,
        w,
        QDEPTH,
        played,
        "sampled",
        T,
        T,
        "full",
        64,
        1e9,
        np.array([5], np.uint64),
        rows,
        (1.0, -0.25),
        see_prune=see,
    )
    assert np.count_nonzero(single) > 100
    assert np.array_equal(rows[0], single)
    assert np.allclose(rows[1], -0.25 * single, rtol=1e-12, atol=0)
    with pytest.raises(ValueError, match="scales"):
        pg.TreeGradient(n).shogi_eligibility(
            tree, 0, board.pos, w, QDEPTH, played, "sampled", T, T, "full", 4, 1e9, np.array([5], np.uint64), rows, 1.0
        )


def test_pgleaf_eligibility_is_sparse_and_signed(searched):
    w, board, tree, n, see = searched
    played = int(tree[layout.T_FIRST][0])
    g = eligibility(tree, n, board, w, played, "pgleaf", see=see)
    exact = eligibility(tree, n, board, w, played, "exact", see=see)
    assert 0 < np.count_nonzero(g) < np.count_nonzero(exact)
    assert g @ exact > 0  # the PV-leaf baseline points roughly the same way


@pytest.mark.parametrize("see", [False, True], ids=["qsearch", "qsearch-see"])
def test_selfplay_game_is_deterministic_and_learns(tmp_path, see):
    cfg = SelfPlayConfig.from_dict(
        dict(
            samples=12,
            grad_samples=16,
            qdepth=QDEPTH,
            qsearch_see=see,
            opening_min=2,
            opening_max=4,
            max_moves=14,
            adjudicate_cp=1.0,
            baseline_scale=300.0,
            strap_weight=5.0,
        )
    )
    player = SelfPlayer(load_weights(), cfg, seed=1)
    assert player.adapter.params[P_QSEE] == (1.0 if see else 0.0)
    grads = {s: AdvantageSum(N_WEIGHTS, 1.0) for s in "bw"}
    a = player.play(7, grads)
    nz = {s: np.count_nonzero(g.rows[0]) for s, g in grads.items()}
    grads2 = {s: AdvantageSum(N_WEIGHTS, 1.0) for s in "bw"}
    b = player.play(7, grads2)
    assert a.moves == b.moves and a.winner == b.winner
    assert np.array_equal(grads["b"].rows, grads2["b"].rows)
    # the baseline row is sum_t b_t e(t) with |b_t| < 1 varying by move: not a multiple of row 0
    baselines = [bt for _, _, bt in a.log_pi]
    assert all(-1 < bt < 1 for bt in baselines) and len(set(baselines)) > 1
    side = "b"
    assert np.count_nonzero(grads[side].rows[1]) > 0
    assert abs(np.corrcoef(grads[side].rows[0], grads[side].rows[1])[0, 1]) < 1 - 1e-6
    assert 14 <= len(a.moves) <= 15 and a.reason in ("adjudication", "max-moves", "mate", "resign")
    assert a.learned_moves >= 10 and nz["b"] > 0 and nz["w"] > 0
    assert a.leaf_mismatch < 1e-6
    board = Board()
    for m in a.moves:
        board.push_usi(m)  # every move legal
    csa, kif = record_bytes(a)
    assert csa.startswith(b"V2") and len(kif) > 100


def test_bad_config_is_rejected():
    with pytest.raises(ValueError, match="unknown self-play"):
        SelfPlayConfig.from_dict({"sample": 3})
    with pytest.raises(ValueError, match="method"):
        SelfPlayConfig.from_dict({"method": "td"})
    with pytest.raises(ValueError, match="entering-king rule"):
        SelfPlayConfig.from_dict({"declaration_rule": "Bogus"})
    with pytest.raises(ValueError, match="qsearch_see"):
        SelfPlayConfig.from_dict({"qsearch_see": "yes"})
    with pytest.raises(ValueError, match="unknown self-play.*qsearch_seee"):
        SelfPlayConfig.from_dict({"qsearch_seee": True})


def test_games_and_searches_follow_the_configured_declaration_rule():
    player = SelfPlayer(load_weights(), SelfPlayConfig.from_dict({"declaration_rule": "TryRule"}))
    assert player.rules.declaration_rule == "TryRule" and player.rules.auto_declare
    assert player.adapter.params[P_ENTERING_RULE] == RULE_TRY


@pytest.mark.parametrize("lam", [1.0, 0.7, 0.0])
def test_advantage_sum_matches_the_definition(lam):
    """sum_t A_t e(t) with A_t = sum_{j>=t} lam^(j-t) (b_{j+1} - b_j), b_n = r, from the streaming trace."""
    rng = np.random.default_rng(int(lam * 10))
    n, dim = 7, 5
    e = rng.normal(size=(n, dim))
    b = np.tanh(rng.normal(size=n))
    acc = AdvantageSum(dim, lam)
    for t in range(n):
        scales = acc.scales_for_move(b[t])
        acc.rows += np.outer(scales, e[t])  # what the leaf kernel does with the two rows
    for r in (1.0, -1.0, 0.0):
        bb = np.append(b, r)
        adv = [sum(lam ** (j - t) * (bb[j + 1] - bb[j]) for j in range(t, n)) for t in range(n)]
        assert np.allclose(acc.total(r), np.array(adv) @ e, atol=1e-12)
        # the same advantages as the game record computes them (moves of both sides interleaved)
        out = GameOutcome([], "b" if r > 0 else ("w" if r < 0 else None), "", log_pi=[], lam=lam)
        for t in range(n):
            out.log_pi += [("b", 0.0, float(b[t])), ("w", 0.0, 0.0)]
        assert np.allclose(out.advantages()[0::2], adv)
    assert lam < 1 or np.allclose(acc.total(1.0), (1.0 - b) @ e)  # lam = 1: r - b_t, eq. 14 with a baseline


def test_lambda_needs_a_baseline():
    with pytest.raises(ValueError, match="lam"):
        SelfPlayConfig.from_dict({"lam": 0.5})
    with pytest.raises(ValueError, match="lam"):
        SelfPlayConfig.from_dict({"lam": 1.5, "baseline_scale": 600.0})
    with pytest.raises(ValueError, match="value_weight"):
        SelfPlayConfig.from_dict({"value_weight": 1.0})
    with pytest.raises(ValueError, match="value_weight"):
        SelfPlayConfig.from_dict({"value_weight": -1.0, "baseline_scale": 600.0})


SHORT_GAME = dict(
    samples=12,
    grad_samples=16,
    qdepth=QDEPTH,
    opening_min=2,
    opening_max=2,
    max_moves=10,
    baseline_scale=300.0,
    lam=0.7,
)


def _short_game(**overrides):
    """(moves, Black's advantage rows) of one short self-play game (game seed 3), SHORT_GAME with overrides."""
    player = SelfPlayer(load_weights(), SelfPlayConfig.from_dict(dict(SHORT_GAME, **overrides)), seed=1)
    grads = {s: AdvantageSum(N_WEIGHTS, 0.7) for s in "bw"}
    out = player.play(3, grads)
    return out.moves, grads["b"].rows.copy()


def test_critic_game_adds_the_value_gradient():
    """value_weight > 0: the same game (same moves) with each move's rows moved by value_weight * db_t/dw."""
    totals = {vw: _short_game(value_weight=vw) for vw in (0.0, 2.0)}
    assert totals[0.0][0] == totals[2.0][0]
    value_part = totals[2.0][1] - totals[0.0][1]
    # the PE block (one entry per board piece) is active in every position: the value term moves it in both rows
    pe = slice(OFF_PE, OFF_PE + N_PE)
    assert all(np.abs(value_part[r, pe]).sum() > 0.1 * np.abs(totals[0.0][1][r, pe]).sum() > 0 for r in range(2))


def test_search_bootstrapping_is_the_gradient_of_the_regression(searched):
    """shogi_strap: grad of -1/2 sum_v (p(E(v)) - p(q(v)))^2 over the inner nodes, E(v) held fixed, equals finite
    differences of that sum with q recomputed by the quiescence search."""
    w, board, tree, n, see = searched
    scale, weight = 300.0, 1.7
    g = np.zeros(N_WEIGHTS)
    used = pg.TreeGradient(n).shogi_strap(tree, 0, n, board.pos, w, QDEPTH, scale, weight, g, see_prune=see)
    pn, pe, queue = (np.zeros(n, np.int64) for _ in range(3))
    pg.parent_links(tree, np.int64(0), pn, pe, queue)
    inner = [v for v in range(n) if (v == 0 or pe[v] >= 0) and pg.is_inner(tree, np.int64(v))]
    assert used == len(inner) > 5
    path = np.zeros(pg.MAX_PATH, np.int32)
    positions = []
    for v in inner:
        p = board.pos.copy()
        for m in path[: pg.path_to(tree, pn, pe, np.int64(v), path)]:
            do_move(p, np.int64(m))
        positions.append(p)
    target = np.tanh(tree[layout.T_VALUE][inner] / (2 * scale))

    def regression(wt):
        q = np.array([qvalue(p, wt, see) for p in positions])
        return -0.5 * weight * np.sum((target - np.tanh(q / (2 * scale))) ** 2)

    d = direction(g, 6, see)
    h = 1e-3
    assert (regression(w + h * d) - regression(w - h * d)) / (2 * h) == pytest.approx(g @ d, rel=1e-3)


def test_pg_weight_scales_the_policy_term_and_zero_leaves_bootstrapping_only():
    """The same game (same seed, same moves) with pg_weight 1, 2 and 0: the advantage rows scale exactly with
    it; at 0 only the result-free bootstrapping row is left (the ablation's 'bootstrapping only')."""
    rows = {
        (pw, strap): _short_game(pg_weight=pw, strap_weight=strap)
        for pw, strap in ((1.0, 0.0), (2.0, 0.0), (0.0, 5.0), (1.0, 5.0))
    }
    assert len({tuple(m) for m, _ in rows.values()}) == 1
    assert np.abs(rows[1.0, 0.0][1]).sum() > 0
    np.testing.assert_allclose(rows[2.0, 0.0][1], 2.0 * rows[1.0, 0.0][1], rtol=1e-12, atol=1e-12)
    strap_only = rows[0.0, 5.0][1]
    assert not np.any(strap_only[0]) and np.any(strap_only[1])
    np.testing.assert_allclose(rows[1.0, 5.0][1], rows[1.0, 0.0][1] + strap_only, rtol=1e-9, atol=1e-9)
    with pytest.raises(ValueError, match="learns nothing"):
        SelfPlayConfig.from_dict(dict(SHORT_GAME, pg_weight=0.0))


def test_gradient_quiescence_must_match_the_search(searched):
    """SEE pruning changes some leaf values of this tree: the gradient kernels recompute the leaves with the
    search's setting (no mismatch); the other setting shows up in the mismatch they report."""
    w, board, tree, n, see = searched
    played = int(tree[layout.T_FIRST][0])
    worst = {}
    for flag in (see, not see):
        _, worst[flag] = pg.TreeGradient(n).shogi_eligibility(
            tree,
            0,
            board.pos,
            w,
            QDEPTH,
            played,
            "exact",
            T,
            T,
            "full",
            1,
            1e9,
            np.array([1], np.uint64),
            np.zeros(N_WEIGHTS),
            see_prune=flag,
        )
    assert worst[see] < 1e-6
    assert worst[not see] > 1.0


def test_gradients_skip_the_zero_pair_sums_without_changing_them():
    """With an all-zero PP block the gradient kernels may skip the pair sums (pp_zero, as the search does): the
    eligibility, its leaf check and the bootstrapping direction are the same both ways; with PP non-zero the
    forced flag changes the bootstrapping direction (the skip is real)."""
    w = load_weights()
    rng = np.random.default_rng(4)
    w[24:OFF_KZ] = rng.normal(scale=5.0, size=OFF_KZ - 24)
    w[OFF_PP : OFF_PP + N_PP] = 0.0
    board = Board(MIDGAME)
    adapter = ShogiAdapter(w, make_params(qsearch_depth=QDEPTH, qsearch_see=True))
    assert adapter.pp_zero
    searcher = Searcher(adapter, SearchOptions(threads=1, hash_mb=8, t_sel=T, t_back=T, graph=False, seed=5))
    searcher.search(board.pos, Limits(samples=40))
    tree, n = searcher.pool.tree, int(searcher.pool.ctl[layout.C_NODES])
    played = int(tree[layout.T_FIRST][0])

    def gradients(weights, flag):
        tg = pg.TreeGradient(n)
        elig, strap = np.zeros(N_WEIGHTS), np.zeros(N_WEIGHTS)
        args = ("exact", T, T, "full", 1, 1e9, np.array([1], np.uint64), elig)
        _, worst = tg.shogi_eligibility(
            tree, 0, board.pos, weights, QDEPTH, played, *args, see_prune=True, pp_zero=flag
        )
        tg.shogi_strap(tree, 0, n, board.pos, weights, QDEPTH, 300.0, 1.0, strap, see_prune=True, pp_zero=flag)
        return elig, strap, worst

    full, skipped = gradients(w, False), gradients(w, True)
    assert np.abs(full[0]).sum() > 0 and np.abs(full[1]).sum() > 0
    np.testing.assert_array_equal(skipped[0], full[0])
    np.testing.assert_array_equal(skipped[1], full[1])
    assert full[2] < 1e-6 and skipped[2] < 1e-6
    w_pp = w.copy()
    w_pp[OFF_PP : OFF_PP + N_PP] = rng.normal(scale=5.0, size=N_PP)
    assert not np.array_equal(gradients(w_pp, True)[1], gradients(w_pp, False)[1])

"""learn/pg.py on synthetic linear trees: exact recursion == finite differences, sampled -> exact as
samples grow (~1/sqrt(N)), and the update rule raising the expected reward of a small game."""

import numpy as np
import pytest

from learn import pg
from usi_engine.search import layout, policy

T = 70.0
F = 5  # features per leaf


def random_tree(rng, depth=3, bmin=2, bmax=4):
    """Full random tree in the pool layout; leaves carry feature vectors phi (value = w . phi)."""
    children, feats = [[]], {}
    frontier = [0]
    for _ in range(depth):
        nxt = []
        for v in frontier:
            for _ in range(rng.integers(bmin, bmax + 1)):
                children.append([])
                children[v].append(len(children) - 1)
                nxt.append(len(children) - 1)
        frontier = nxt
    for v in frontier:
        feats[v] = rng.normal(size=F)
    n = len(children)
    tree = pg.make_pool(n, n)
    e = 0
    for v, cs in enumerate(children):
        if cs:
            tree[layout.T_STATE][v] = layout.EXPANDED
            tree[layout.T_FIRST][v] = e
            tree[layout.T_COUNT][v] = len(cs)
            for c in cs:
                tree[layout.T_EMOVE][e] = c
                tree[layout.T_ECHILD][e] = c
                e += 1
    phi = np.zeros((n, F))
    for v, f in feats.items():
        phi[v] = f
    return tree, n, phi, np.array(sorted(feats))


def set_weights(tree, n, phi, leaves, w, t=T):
    tree[layout.T_VALUE][leaves] = phi[leaves] @ w
    pg.backup_all(tree, np.arange(n, dtype=np.int64), np.int64(n), t)


def root_children(tree):
    f, k = int(tree[layout.T_FIRST][0]), int(tree[layout.T_COUNT][0])
    return tree[layout.T_ECHILD][f : f + k]


def log_pi(tree, t_learn, played):
    x = -tree[layout.T_VALUE][root_children(tree)] / t_learn
    return x[played] - (np.log(np.sum(np.exp(x - x.max()))) + x.max())


def coefs_to_grad(gradient_obj, tree, played, method, phi, t_learn, mode='full', samples=1, seed=1):
    rng = np.array([seed], np.uint64)
    leaves, acc = gradient_obj.leaf_coefs(tree, 0, played, method, T, t_learn, mode, samples, 1e9, rng)
    g = acc[leaves] @ phi[leaves] / t_learn
    acc[leaves] = 0.0
    return g


def paper_values(tree, v, w_phi_fn, frozen, learner):
    """E(v) with the opponent's policies frozen at `frozen` (MODE_PAPER's function of w)."""
    if tree[layout.T_COUNT][v] == 0:
        return w_phi_fn(v)
    f, k = int(tree[layout.T_FIRST][v]), int(tree[layout.T_COUNT][v])
    cs = tree[layout.T_ECHILD][f : f + k]
    x = np.array([-paper_values(tree, c, w_phi_fn, frozen, not learner) for c in cs])
    if learner:
        p = np.exp((x - x.max()) / T)
        p /= p.sum()
    else:
        p = frozen[v]
    return float(p @ x)


@pytest.fixture(scope="module")
def setup():
    rng = np.random.default_rng(5)
    tree, n, phi, leaves = random_tree(rng)
    w = rng.normal(scale=60.0, size=F)
    set_weights(tree, n, phi, leaves, w)
    return tree, n, phi, leaves, w


@pytest.mark.parametrize("t_learn", [T, 40.0])
def test_exact_equals_finite_differences(setup, t_learn):
    tree, n, phi, leaves, w = setup
    grad = pg.TreeGradient(n)
    for played in range(int(tree[layout.T_COUNT][0])):
        g = coefs_to_grad(grad, tree, tree[layout.T_FIRST][0] + played, 'exact', phi, t_learn)
        fd = np.zeros(F)
        h = 1e-4
        for i in range(F):
            for s in (1, -1):
                wp = w.copy()
                wp[i] += s * h
                set_weights(tree, n, phi, leaves, wp)
                fd[i] += s * log_pi(tree, t_learn, played) / (2 * h)
        set_weights(tree, n, phi, leaves, w)
        assert np.allclose(g, fd, rtol=1e-5, atol=1e-9), (g, fd)


def test_paper_mode_holds_opponent_policy_fixed(setup):
    tree, n, phi, leaves, w = setup
    grad = pg.TreeGradient(n)
    frozen = {}
    for v in range(n):
        if tree[layout.T_COUNT][v]:
            k = int(tree[layout.T_COUNT][v])
            p = np.zeros(k)
            policy.child_policy(tree, np.int64(v), T, p)
            frozen[v] = p
    played = int(tree[layout.T_FIRST][0])
    g = coefs_to_grad(grad, tree, played, 'exact', phi, T, mode='paper')
    full = coefs_to_grad(grad, tree, played, 'exact', phi, T, mode='full')

    def lp(wv):
        xs = np.array([-paper_values(tree, c, lambda u: phi[u] @ wv, frozen, False) for c in root_children(tree)])
        x = xs / T
        return x[0] - np.log(np.sum(np.exp(x)))

    h = 1e-4
    fd = np.array([(lp(w + h * np.eye(F)[i]) - lp(w - h * np.eye(F)[i])) / (2 * h) for i in range(F)])
    assert np.allclose(g, fd, rtol=1e-5, atol=1e-9)
    assert not np.allclose(g, full, rtol=1e-3)


def test_sampled_converges_to_exact(setup):
    tree, n, phi, leaves, w = setup
    grad = pg.TreeGradient(n)
    played = int(tree[layout.T_FIRST][0]) + 1
    exact = coefs_to_grad(grad, tree, played, 'exact', phi, T)
    errors = {}
    for samples in (100, 10000):
        errs = [
            np.linalg.norm(coefs_to_grad(grad, tree, played, 'sampled', phi, T, samples=samples, seed=s) - exact)
            for s in range(1, 9)
        ]
        errors[samples] = float(np.sqrt(np.mean(np.square(errs))))
    rel = errors[10000] / np.linalg.norm(exact)
    assert rel < 0.03, errors
    # 100x the samples: error ~10x smaller (Monte-Carlo rate), allow a generous band
    assert 4.0 < errors[100] / errors[10000] < 25.0, errors


def test_pgleaf_uses_pv_leaves(setup):
    tree, n, phi, leaves, w = setup
    grad = pg.TreeGradient(n)
    played = int(tree[layout.T_FIRST][0])
    rng = np.array([1], np.uint64)
    got, acc = grad.leaf_coefs(tree, 0, played, 'pgleaf', T, T, 'full', 1, 1e9, rng)
    expect = {int(pg.pv_leaf(tree, np.int64(c))[0]) for c in root_children(tree)}
    assert set(int(x) for x in got) == expect
    acc[got] = 0.0


def test_update_raises_expected_reward():
    """A game of depth 2 (learner move, opponent reply); the reward of a final leaf is +1 with probability
    sigmoid(w_star . phi / 30). Starting from w = 0, REINFORCE with the sampled eligibility (eq. 14-15,
    learner's move drawn from pi_a) must raise J(w) = sum_a pi_a(a) E[r | a] well above its start."""
    rng = np.random.default_rng(11)
    tree, n, phi, leaves = random_tree(rng, depth=2, bmin=4, bmax=4)[:4]
    w_star = np.array([80.0, -50.0, 30.0, 0.0, 20.0])
    win_p = 1.0 / (1.0 + np.exp(-(phi @ w_star) / 30.0))
    kids = root_children(tree)

    def expected_reward(w):
        set_weights(tree, n, phi, leaves, w)
        x = -tree[layout.T_VALUE][kids] / T
        p = np.exp(x - x.max())
        p /= p.sum()
        # after move a the opponent replies by its softmax policy; r from the learner's view
        r = []
        for c in kids:
            f, k = int(tree[layout.T_FIRST][c]), int(tree[layout.T_COUNT][c])
            q = np.zeros(k)
            policy.child_policy(tree, np.int64(c), T, q)
            r.append(q @ (2 * win_p[tree[layout.T_ECHILD][f : f + k]] - 1))
        return float(p @ np.array(r))

    w = np.zeros(F)
    opt = pg.SparseAdaGrad(w, lr=8.0)
    grad = pg.TreeGradient(n)
    j0 = expected_reward(w)
    srng = np.array([3], np.uint64)
    for _ in range(300):
        set_weights(tree, n, phi, leaves, w)
        f = int(tree[layout.T_FIRST][0])
        edges, p = policy.root_policy(tree, 0, T)
        a = rng.choice(len(p), p=p)
        c = kids[a]
        fc, k = int(tree[layout.T_FIRST][c]), int(tree[layout.T_COUNT][c])
        q = np.zeros(k)
        policy.child_policy(tree, np.int64(c), T, q)
        leaf = tree[layout.T_ECHILD][fc + rng.choice(k, p=q)]
        r = 1.0 if rng.random() < win_p[leaf] else -1.0
        leaves_t, acc = grad.leaf_coefs(tree, 0, f + a, 'sampled', T, T, 'full', 64, 50.0, srng)
        e = acc[leaves_t] @ phi[leaves_t] / T
        acc[leaves_t] = 0.0
        opt.step(np.arange(F), r * e)
    j1 = expected_reward(w)
    best = max(expected_reward(w_star * s) for s in (1.0, 3.0))
    assert j1 > j0 + 0.5 * (best - j0), (j0, j1, best)

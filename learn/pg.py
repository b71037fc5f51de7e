"""PG-expectation learning over MCSS trees (seed 001 §5): eligibilities, leaf gradients, the update.

Notation (negamax, as in docs/learning.md). A search tree node v holds E(v), its value for the side to move.
With x_c = -E(c) the value of child c seen from v and the backup policy pi(c|v) = exp(x_c/T)/Z,

    E(v) = sum_c pi(c|v) x_c                                   (seed 001 eq. 3, eq. 16)
    dE(v)/dx_c = pi(c|v) [1 + (x_c - E(v))/T]                  (eq. 24-29 rearranged; footnote s)
    dE(v)/dw = sum_c pi(c|v) * (-[1 + (x_c - E(v))/T]) * dE(c)/dw          (eq. 19 + 21 = eq. 29)

so the gradient of any node is a weighted sum of LEAF gradients, sum_l k_l dE_s(l)/dw, where the leaf
coefficient k_l sums, over the paths to l, the product of pi * factor along the path. A leaf is an
unexpanded node (its value is the quiescence value of its position, so dE_s/dw is the active-feature
vector at the quiescence PV leaf, usi_engine.shogi_search.quiescence.pv_leaf_gradient); terminal and proven
nodes have exact values and contribute nothing.

- exact (eq. 16-23): `tree_leaf_coefs(..., exact=True)` walks every path of the tree (it IS the recursion,
  unrolled). Over a full-width depth-D tree that is the paper's reference computation; over the MCSS tree
  it is the exact gradient of the tree's backed-up values.
- sampled (eq. 24-29): draw paths by pi and multiply the factors (1/T)(x_c - E(v)) + 1 along them
  (footnote s); the sampling supplies pi, so the leaf coefficient estimate is the mean of the path
  products. Unbiased; the error falls as 1/sqrt(samples). Each distinct leaf's gradient is computed once.
- PGLeaf (Morioka & Igarashi GPW2012): dE*(a)/dw replaced by the PV-leaf gradient below each root move.

Who differentiates: in self-play both sides' policies depend on w, so MODE_FULL applies the bracket at
every ply (the exact derivative of the tree's value). MODE_PAPER follows eq. 16-23 literally: the
opponent's reply policy pi_b is held fixed (factor -1 at the opponent's plies, only the sign of negamax).

The eligibility of the move a_t played at the root u_t (eq. 15), with g(a) = dE*(a)/dw = -dE(c_a)/dw and
the learner's root policy pi_a(a) = exp(E*(a)/T_a)/Z (eq. 12-13):

    e(t) = (1/T_a) [g(a_t) - sum_a pi_a(a) g(a)]

and after the game Delta w = eps * r * sum_t e(t) (eq. 14), r = +1 / -1 / 0 for a win / loss / draw of
the side that moved at t. The optimiser is AdaGrad over the touched coordinates (sparse features: only
a small fraction of the 1.4 M weights is active in a game; AdaGrad's per-coordinate step sizes suit the
very different frequencies of material, KP and PP features), with an L2 pull toward the starting
weights on the touched coordinates and a per-coordinate step clip.
"""

import numpy as np
from numba import njit

from usi_engine.search import backup, layout
from usi_engine.search.policy import child_policy
from usi_engine.search.rng import next_unit
from usi_engine.search.values import is_proven
from usi_engine.shogi.layout import MAX_MOVES
from usi_engine.shogi.position import do_move, undo_move
from usi_engine.shogi_eval.features import MAX_FEATURES
from usi_engine.shogi_search.quiescence import INF, pv_leaf_gradient, qsearch, qsearch_scratch

MODE_FULL, MODE_PAPER = 0, 1
MODES = {'full': MODE_FULL, 'paper': MODE_PAPER}
METHODS = ('sampled', 'exact', 'pgleaf')
DEFAULT_CLIP = 50.0  # |path product| cap of the sampled estimator (variance control)
MAX_PATH = 1024  # longest root -> leaf path followed


# --- tree helpers ---------------------------------------------------------------------------------


@njit(cache=True, nogil=True)
def is_inner(tree, v):
    """v is expanded, has children and a heuristic (not proven) value: its value depends on children."""
    return (
        (tree[layout.T_STATE][v] & layout.PHASE_MASK) == layout.EXPANDED
        and tree[layout.T_COUNT][v] > 0
        and not is_proven(tree[layout.T_VALUE][v])
    )


@njit(cache=True, nogil=True)
def is_leaf(tree, v):
    """v is an unexpanded non-terminal node: its value is a static (quiescence) value."""
    return (
        (tree[layout.T_STATE][v] & layout.PHASE_MASK) != layout.EXPANDED
        and (tree[layout.T_FLAGS][v] & layout.FLAG_TERMINAL) == 0
        and not is_proven(tree[layout.T_VALUE][v])
    )


@njit(cache=True, nogil=True)
def step_factor(tree, v, c, t, differentiate):
    """Factor of one step v -> c: -[1 + (x_c - E(v))/T] (eq. 29, footnote s, negamax sign), or -1 when the
    mover's policy is held fixed (MODE_PAPER at the opponent's plies)."""
    if not differentiate:
        return -1.0
    x = -tree[layout.T_VALUE][c]
    return -(1.0 + (x - tree[layout.T_VALUE][v]) / t)


@njit(cache=True, nogil=True)
def add_leaf(acc, mark, touched, n_touched, leaf, k):
    """acc[leaf] += k, listing each leaf once in `touched` (mark[leaf] = 1 once listed; the caller clears
    mark for the listed leaves afterwards); returns the new touched count."""
    if mark[leaf] == 0:
        mark[leaf] = 1
        touched[n_touched] = leaf
        n_touched += 1
    acc[leaf] += k
    return n_touched


@njit(cache=True, nogil=True)
def exact_coefs(tree, start, k0, learner_moves, t, mode, acc, mark, touched, n_touched, stack_n, stack_k, stack_l):
    """Exact leaf coefficients of k0 * dE(start)/dw (eq. 16-23 unrolled: every path, pi * factor per step).
    learner_moves: the learner is to move at `start`. Explicit stack (no recursion in cached numba)."""
    p = np.empty(MAX_MOVES, np.float64)
    stack_n[0] = start
    stack_k[0] = k0
    stack_l[0] = 1 if learner_moves else 0
    top = 1
    while top > 0:
        top -= 1
        v = stack_n[top]
        k = stack_k[top]
        learner = stack_l[top] == 1
        if is_leaf(tree, v):
            n_touched = add_leaf(acc, mark, touched, n_touched, v, k)
            continue
        if not is_inner(tree, v):
            continue
        n = child_policy(tree, v, t, p)
        f = tree[layout.T_FIRST][v]
        diff = mode == MODE_FULL or learner
        for i in range(n):
            c = tree[layout.T_ECHILD][f + i]
            if top >= stack_n.shape[0]:
                raise ValueError("exact_coefs: stack too small")
            stack_n[top] = c
            stack_k[top] = k * p[i] * step_factor(tree, v, c, t, diff)
            stack_l[top] = 0 if learner else 1
            top += 1
    return n_touched


@njit(cache=True, nogil=True)
def draw_index(p, n, rng):
    """Index drawn from the distribution p[:n]."""
    u = next_unit(rng)
    i = 0
    acc_p = p[0]
    while u >= acc_p and i < n - 1:
        i += 1
        acc_p += p[i]
    return i


@njit(cache=True, nogil=True)
def sample_coefs(tree, start, k0, learner_moves, t, mode, n_samples, clip, rng, acc, mark, touched, n_touched):
    """Sampled leaf coefficients of k0 * dE(start)/dw (eq. 24-29): n_samples paths drawn by pi, each adding
    k0 * prod(factors) / n_samples to its leaf; |path product| is clipped to `clip`."""
    p = np.empty(MAX_MOVES, np.float64)
    inv = k0 / n_samples
    for _ in range(n_samples):
        v = start
        prod = 1.0
        learner = learner_moves
        for _d in range(MAX_PATH):
            if not is_inner(tree, v):
                break
            n = child_policy(tree, v, t, p)
            i = draw_index(p, n, rng)
            c = tree[layout.T_ECHILD][tree[layout.T_FIRST][v] + i]
            prod *= step_factor(tree, v, c, t, mode == MODE_FULL or learner)
            prod = min(clip, max(-clip, prod))
            v = c
            learner = not learner
        if is_leaf(tree, v):
            n_touched = add_leaf(acc, mark, touched, n_touched, v, inv * prod)
    return n_touched


@njit(cache=True, nogil=True)
def pv_leaf(tree, start):
    """(leaf node, plies) reached from `start` by the highest-probability children (the tree's PV)."""
    value = tree[layout.T_VALUE]
    echild = tree[layout.T_ECHILD]
    v = start
    plies = 0
    while (tree[layout.T_STATE][v] & layout.PHASE_MASK) == layout.EXPANDED and tree[layout.T_COUNT][v] > 0:
        f = tree[layout.T_FIRST][v]
        best = echild[f]
        for i in range(1, tree[layout.T_COUNT][v]):
            if value[echild[f + i]] < value[best]:
                best = echild[f + i]
        v = best
        plies += 1
    return v, plies


@njit(cache=True, nogil=True)
def eligibility_coefs(
    tree,
    root,
    played,
    method,
    t_back,
    t_learn,
    mode,
    n_samples,
    clip,
    rng,
    value_coef,
    acc,
    mark,
    touched,
    stack_n,
    stack_k,
    stack_l,
):
    """Leaf coefficients of T_a * e(t) = g(a_t) - sum_a pi_a(a) g(a) (eq. 15) for the root edge `played`,
    with g(a) = -dE(c_a)/dw, plus value_coef * dE(root)/dw (the critic term; 0 = none). method 0 sampled /
    1 exact / 2 PGLeaf. Returns the number of touched leaves (indices in touched[:n], coefficients in
    acc[touched])."""
    n_touched = 0
    if value_coef != 0.0:
        # dE(root)/dw is the exact derivative of the tree value: every ply differentiates (MODE_FULL)
        if method == 2:
            leaf, plies = pv_leaf(tree, root)
            if is_leaf(tree, leaf):
                n_touched = add_leaf(acc, mark, touched, n_touched, leaf, value_coef * (-1.0) ** plies)
        elif method == 1:
            n_touched = exact_coefs(
                tree,
                root,
                value_coef,
                True,
                t_back,
                MODE_FULL,
                acc,
                mark,
                touched,
                n_touched,
                stack_n,
                stack_k,
                stack_l,
            )
        else:
            n_touched = sample_coefs(
                tree, root, value_coef, True, t_back, MODE_FULL, n_samples, clip, rng, acc, mark, touched, n_touched
            )
    p = np.empty(MAX_MOVES, np.float64)
    n = child_policy(tree, root, t_learn, p)
    f = tree[layout.T_FIRST][root]
    for i in range(n):
        c = tree[layout.T_ECHILD][f + i]
        k = (1.0 if f + i == played else 0.0) - p[i]  # g(a_t) - sum pi_a g(a), each g = -dE(c)
        if method == 2:
            leaf, plies = pv_leaf(tree, c)
            if is_leaf(tree, leaf):
                n_touched = add_leaf(acc, mark, touched, n_touched, leaf, -k * (-1.0) ** plies)
        elif method == 1:
            n_touched = exact_coefs(
                tree, c, -k, False, t_back, mode, acc, mark, touched, n_touched, stack_n, stack_k, stack_l
            )
        elif f + i == played:
            n_touched = sample_coefs(
                tree, c, -1.0, False, t_back, mode, n_samples, clip, rng, acc, mark, touched, n_touched
            )
    if method == 0:
        # sum_a pi_a(a) g(a): draw root edges by pi_a (T_a), then paths below them
        for _ in range(n_samples):
            c = tree[layout.T_ECHILD][f + draw_index(p, n, rng)]
            n_touched = sample_coefs(
                tree, c, 1.0 / n_samples, False, t_back, mode, 1, clip, rng, acc, mark, touched, n_touched
            )
    return n_touched


@njit(cache=True, nogil=True)
def parent_links(tree, root, out_node, out_edge, queue):
    """out_node[v], out_edge[v] = a parent of v and the edge into v on a shortest path from root (breadth
    first; -1 for root and unreached nodes). On a graph every path to a node reaches the same position
    (the quiescence value ignores history), so any one will do."""
    out_node[:] = -1
    out_edge[:] = -1
    queue[0] = root
    head, tail = 0, 1
    while head < tail:
        v = queue[head]
        head += 1
        if (tree[layout.T_STATE][v] & layout.PHASE_MASK) != layout.EXPANDED:
            continue
        f = tree[layout.T_FIRST][v]
        for i in range(tree[layout.T_COUNT][v]):
            c = tree[layout.T_ECHILD][f + i]
            if out_edge[c] < 0 and c != root:
                out_node[c] = v
                out_edge[c] = f + i
                queue[tail] = c
                tail += 1


@njit(cache=True, nogil=True)
def path_to(tree, parent_node, parent_edge, v, out_moves):
    """Moves root -> v (through the parent links) into out_moves[:d]; returns d."""
    d = 0
    u = v
    while parent_edge[u] >= 0:
        out_moves[d] = tree[layout.T_EMOVE][parent_edge[u]]
        u = parent_node[u]
        d += 1
    for i in range(d // 2):
        m = out_moves[i]
        out_moves[i] = out_moves[d - 1 - i]
        out_moves[d - 1 - i] = m
    return d


def _quiescence_args(pos, weights, qdepth, see_prune, pp_zero, tree) -> tuple:
    """The leading arguments of the gradient kernels (node_quiescence_gradient's), in the kernels' types."""
    return pos, weights, np.int64(qdepth), bool(see_prune), bool(pp_zero), tree


@njit(cache=True, nogil=True)
def gradient_scratch(qdepth):
    """The scratch of node_quiescence_gradient: (qsearch_scratch(qdepth), path, idx, coef)."""
    return (
        qsearch_scratch(qdepth),
        np.empty(MAX_PATH, np.int32),
        np.empty(MAX_FEATURES, np.int64),
        np.empty(MAX_FEATURES, np.float64),
    )


@njit(cache=True, nogil=True)
def node_quiescence_gradient(pos, w, qdepth, see_prune, pp_zero, work, tree, parent_node, parent_edge, v):
    """(quiescence value q of node v's position, nf) with dq/dw = sum_i coef[i] e_idx[i] for i < nf (gradient at
    the quiescence PV leaf; idx and coef from work): v is reached by replaying its moves on pos, which is
    unchanged on return. work = gradient_scratch(qdepth); see_prune as in the search that built the tree (game
    params P_QSEE: captures with a negative static exchange left out), so q is the value the tree stored;
    pp_zero: the weights' PP block is all zero (P_PP_ZERO; the pair sums are skipped, the value is the same)."""
    scratch, path, idx, coef = work
    pv, counts = scratch[2], scratch[4]
    d = path_to(tree, parent_node, parent_edge, v, path)
    for i in range(d):
        do_move(pos, path[i])
    value = qsearch(pos, w, -INF, INF, qdepth, *scratch, see_prune, 0.0, 0, pp_zero)
    nf = pv_leaf_gradient(pos, w, value, pv, counts, idx, coef)
    for _ in range(d):
        undo_move(pos)
    return value, nf


@njit(cache=True, nogil=True)
def shogi_leaf_gradients(
    pos, w, qdepth, see_prune, pp_zero, tree, parent_node, parent_edge, touched, n_touched, acc, scales, grads
):
    """grads[j] += scales[j] * sum_l acc[l] * dE_s(l)/dw for every row j, over the touched leaves l (one
    pass over the leaves fills several weighted sums, e.g. e(t) and b_t * e(t)): each leaf position is reached
    by replaying its moves on pos, its quiescence value recomputed and differentiated at the quiescence
    PV leaf (pv_leaf_gradient). acc[l] is reset to 0. pos is unchanged on return. Returns the largest
    |recomputed - stored| leaf value (a consistency check: the weights must be the search's)."""
    work = gradient_scratch(qdepth)
    idx, coef = work[2], work[3]
    worst = 0.0
    for j in range(n_touched):
        leaf = touched[j]
        k = acc[leaf]
        acc[leaf] = 0.0
        value, nf = node_quiescence_gradient(
            pos, w, qdepth, see_prune, pp_zero, work, tree, parent_node, parent_edge, leaf
        )
        worst = max(worst, abs(value - tree[layout.T_VALUE][leaf]))
        for j in range(grads.shape[0]):
            kj = k * scales[j]
            row = grads[j]
            for i in range(nf):
                row[idx[i]] += kj * coef[i]
    return worst


@njit(cache=True, nogil=True)
def shogi_strap_gradients(
    pos, w, qdepth, see_prune, pp_zero, tree, root, n_nodes, parent_node, parent_edge, vscale, weight, grad
):
    """Search bootstrapping over the tree (the regression toward the searched value of MCSS_55Shogi's learner):
    grad += weight * sum_v (p(E(v)) - p(q(v))) p'(q(v)) dq(v)/dw over the expanded, unproven nodes v below root,
    with q(v) the quiescence value of v's position, E(v) its backed-up value and p(x) = tanh(x / (2 vscale)):
    a step along it moves each static value toward what the search found (the gradient of
    -1/2 sum_v (p(E(v)) - p(q(v)))^2). parent links from parent_links(tree, root, ...). Returns the nodes used."""
    work = gradient_scratch(qdepth)
    idx, coef = work[2], work[3]
    used = 0
    for v in range(n_nodes):
        if (v != root and parent_edge[v] < 0) or not is_inner(tree, v):
            continue
        q, nf = node_quiescence_gradient(pos, w, qdepth, see_prune, pp_zero, work, tree, parent_node, parent_edge, v)
        pq = np.tanh(q / (2.0 * vscale))
        k = weight * (np.tanh(tree[layout.T_VALUE][v] / (2.0 * vscale)) - pq) * (1.0 - pq * pq) / (2.0 * vscale)
        for i in range(nf):
            grad[idx[i]] += k * coef[i]
        used += 1
    return used


@njit(cache=True, nogil=True)
def backup_all(tree, order, n, t):
    """Recompute E(v) = sum pi (-E(c)) (eq. 3) for order[n-1] .. order[0] (children after parents in
    `order`, so this runs bottom-up): makes a tree's values consistent with temperature t."""
    for j in range(n - 1, -1, -1):
        v = order[j]
        if (tree[layout.T_STATE][v] & layout.PHASE_MASK) == layout.EXPANDED and tree[layout.T_COUNT][v] > 0:
            tree[layout.T_VALUE][v] = backup.backup_value(tree, v, t)


# --- Python side ------------------------------------------------------------------------------------


def make_pool(n_nodes, n_edges):
    """An empty tree tuple in the core's layout (layout.T_*), for trees built outside a search."""
    return layout.new_tree(n_nodes, n_edges)


def full_width_tree(game, pos, weights, params, depth, t):
    """The full-width depth-`depth` tree below pos (every node to that depth expanded with game.expand),
    values backed up at temperature t: the tree of the exact recursion (eq. 16-23). Returns
    (tree, n_nodes). For small depths only (the size is the branching factor to the power depth)."""
    moves = np.zeros(MAX_MOVES, np.int32)
    values = np.zeros(MAX_MOVES, np.float64)
    flags = np.zeros(MAX_MOVES, np.int8)
    rng = np.zeros(1, np.uint64)
    nodes = [(0.0, 0, 0, [])]  # (value, flags, depth, children edges [(move, node)])
    frontier = [(0, [])]
    for d in range(depth):
        nxt = []
        for v, path in frontier:
            for m in path:
                game.do_move(pos, m)
            n, _ = game.expand(pos, weights, params, rng, moves, values, flags)
            for _m in path:
                game.undo_move(pos)
            for i in range(n):
                nodes.append((float(values[i]), int(flags[i]), d + 1, []))
                nodes[v][3].append((int(moves[i]), len(nodes) - 1))
                if not flags[i] & layout.FLAG_TERMINAL:
                    nxt.append((len(nodes) - 1, path + [int(moves[i])]))
        frontier = nxt
    n_edges = sum(len(c) for _, _, _, c in nodes)
    tree = make_pool(len(nodes), max(1, n_edges))
    e = 0
    for v, (value, flag, depth_v, children) in enumerate(nodes):
        tree[layout.T_VALUE][v] = value
        tree[layout.T_FLAGS][v] = flag
        tree[layout.T_DEPTH][v] = depth_v
        if children:
            tree[layout.T_STATE][v] = layout.EXPANDED
            tree[layout.T_FIRST][v] = e
            tree[layout.T_COUNT][v] = len(children)
            for m, c in children:
                tree[layout.T_EMOVE][e] = m
                tree[layout.T_ECHILD][e] = c
                e += 1
    order = np.arange(len(nodes), dtype=np.int64)  # children always after their parent
    backup_all(tree, order, np.int64(len(nodes)), float(t))
    return tree, len(nodes)


class TreeGradient:
    """Scratch for eligibility computations over trees of up to `capacity` nodes (reused across moves)."""

    def __init__(self, capacity):
        self.capacity = capacity
        self.acc = np.zeros(capacity, np.float64)
        self.mark = np.zeros(capacity, np.int8)
        self.touched = np.zeros(capacity, np.int64)
        self.parent_node = np.zeros(capacity, np.int64)
        self.parent_edge = np.zeros(capacity, np.int64)
        self.queue = np.zeros(capacity, np.int64)
        self.stack_k = np.zeros(capacity, np.float64)
        self.stack_l = np.zeros(capacity, np.int8)

    def leaf_coefs(self, tree, root, played, method, t_back, t_learn, mode, samples, clip, rng, value_coef=0.0):
        """(leaf nodes, coefficients) of T_a * e(t) + value_coef * dE(root)/dw for the root edge `played`
        (see eligibility_coefs)."""
        n = eligibility_coefs(
            tree,
            np.int64(root),
            np.int64(played),
            np.int64(METHODS.index(method)),
            float(t_back),
            float(t_learn),
            np.int64(MODES[mode]),
            np.int64(samples),
            float(clip),
            rng,
            float(value_coef),
            self.acc,
            self.mark,
            self.touched,
            self.queue,
            self.stack_k,
            self.stack_l,
        )
        self.mark[self.touched[:n]] = 0
        return self.touched[:n], self.acc

    def shogi_eligibility(
        self,
        tree,
        root,
        pos,
        weights,
        qdepth,
        played,
        method,
        t_back,
        t_learn,
        mode,
        samples,
        clip,
        rng,
        grad,
        scale=1.0,
        value_coef=0.0,
        see_prune=False,
        pp_zero=False,
    ):
        """grad += scale * (e(t) + value_coef * dE(root)/dw) for the shogi search tree below pos (eq. 15;
        value_coef = 0: the eligibility alone); returns (touched leaves, largest leaf-value mismatch).
        grad may also be 2-D (rows, N_WEIGHTS) with one scale per row: row j += scale[j] * (...), all rows
        from one pass over the leaves. see_prune: the quiescence search of the tree's search (SEE pruning,
        make_params(qsearch_see=...)); a different setting shows up as a leaf-value mismatch. pp_zero: the weights'
        PP block is all zero (ShogiAdapter.pp_zero): the quiescence searches skip the pair sums."""
        grads = grad if grad.ndim == 2 else grad.reshape(1, -1)
        scales = np.asarray(scale, np.float64).reshape(-1) / t_learn
        if scales.shape[0] != grads.shape[0]:
            raise ValueError(f"{grads.shape[0]} gradient rows but {scales.shape[0]} scales")
        leaves, acc = self.leaf_coefs(
            tree, root, played, method, t_back, t_learn, mode, samples, clip, rng, value_coef * t_learn
        )
        n = leaves.shape[0]
        parent_links(tree, np.int64(root), self.parent_node, self.parent_edge, self.queue)
        worst = shogi_leaf_gradients(
            *_quiescence_args(pos, weights, qdepth, see_prune, pp_zero, tree),
            self.parent_node,
            self.parent_edge,
            self.touched,
            np.int64(n),
            acc,
            scales,
            grads,
        )
        return n, float(worst)

    def shogi_strap(
        self, tree, root, n_nodes, pos, weights, qdepth, vscale, weight, grad, see_prune=False, pp_zero=False
    ):
        """grad += the search-bootstrapping direction over the tree below pos (shogi_strap_gradients; see_prune
        and pp_zero as in shogi_eligibility); returns the number of nodes used."""
        parent_links(tree, np.int64(root), self.parent_node, self.parent_edge, self.queue)
        return int(
            shogi_strap_gradients(
                *_quiescence_args(pos, weights, qdepth, see_prune, pp_zero, tree),
                np.int64(root),
                np.int64(n_nodes),
                self.parent_node,
                self.parent_edge,
                float(vscale),
                float(weight),
                grad,
            )
        )


class SparseAdaGrad:
    """Delta w = eps * r * sum_t e(t) (eq. 14) applied with AdaGrad on the touched coordinates:
    h_i += g_i^2, w_i += lr * clip(g_i / (sqrt(h_i) + delta), +-max_step), after adding the L2 pull
    -l2 * (w_i - w0_i) toward the starting weights to g_i. Coordinates never touched keep their value."""

    def __init__(self, w, lr=1.0, l2=0.0, max_step=10.0, delta=1e-3, h=None, w0=None):
        self.w = w
        self.w0 = w.copy() if w0 is None else w0
        self.h = np.zeros_like(w) if h is None else h
        self.lr, self.l2, self.max_step, self.delta = lr, l2, max_step, delta

    def step(self, idx, g, anchor=None, scale=None, h0=None):
        """Ascend along the sparse direction g at indices idx (unique); returns the update's L2 norm.
        The L2 pull is toward `anchor` (values at idx; default the start weights w0[idx]); `scale` (values at
        idx; default 1) multiplies both lr and max_step per coordinate; `h0` (values at idx; default 0) is the
        accumulator a coordinate starts from at its first step (h still 0), so that first step is
        lr * g / sqrt(h0 + g^2) rather than +-lr whatever the size of g."""
        g = g - self.l2 * (self.w[idx] - (self.w0[idx] if anchor is None else anchor))
        if h0 is not None:
            self.h[idx] = np.where(self.h[idx] == 0.0, h0, self.h[idx])
        self.h[idx] += g * g
        lr, cap = (self.lr, self.max_step) if scale is None else (self.lr * scale, self.max_step * scale)
        d = np.clip(lr * g / (np.sqrt(self.h[idx]) + self.delta), -cap, cap)
        self.w[idx] += d
        return float(np.sqrt(np.dot(d, d)))

    def state(self):
        return {'h': self.h, 'w0': self.w0}

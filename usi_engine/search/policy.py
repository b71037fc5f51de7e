"""The softmax policy over a node's children (seed 001 eq. 1-2): pi(c|v) = exp(x_c/T)/Z with x_c = -E(c).

Shared by the learner (its root policy, eq. 12-13, and the eligibility kernels of learn/pg.py) and the
arena's players that draw their move from it.
"""

import numpy as np

from usi_engine.jit import bare_kernel
from usi_engine.search import layout


@bare_kernel
def child_policy(tree, v, t, out_p):
    """pi(c|v) = exp(x_c/T)/Z with x_c = -E(c) (eq. 1-2 / 12-13), max-shifted, into out_p[:n]; returns n."""
    value = tree[layout.T_VALUE]
    echild = tree[layout.T_ECHILD]
    f = tree[layout.T_FIRST][v]
    n = tree[layout.T_COUNT][v]
    min_e = np.inf
    for i in range(n):
        min_e = min(min_e, value[echild[f + i]])
    z = 0.0
    for i in range(n):
        p = np.exp(-(value[echild[f + i]] - min_e) / t)
        out_p[i] = p
        z += p
    for i in range(n):
        out_p[i] /= z
    return n


def root_policy(tree, root, t):
    """(edges, pi_a over them at temperature t): the learner's root policy (eq. 12-13)."""
    f, n = int(tree[layout.T_FIRST][root]), int(tree[layout.T_COUNT][root])
    p = np.zeros(max(n, 1), np.float64)
    child_policy(tree, np.int64(root), float(t), p)
    return np.arange(f, f + n), p[:n]

"""Backup: a node's value recomputed from its children (proven results, the softmax expectation of eq. 3 or
minimax, the RAVE policy's mean outcome), stored consistently under concurrent threads (backup_node) along
a sample's path (backup_path); the visit-annealed temperature that backup and selection share; and the
consistency check of a pool (max_backup_error)."""

import numpy as np

from usi_engine.jit import bare_kernel
from usi_engine.search.atomics import atomic_add, atomic_load
from usi_engine.search.layout import (
    EXPANDED,
    FLAG_TERMINAL,
    FP_BACK_ANNEAL_N,
    FP_TBACK,
    FP_TBACK_MIN,
    FP_VSCALE,
    PHASE_MASK,
    POLICY_RAVE,
    SEQ_STEP,
    T_COUNT,
    T_ECHILD,
    T_FIRST,
    T_FLAGS,
    T_RN,
    T_RW,
    T_STATE,
    T_VALUE,
)
from usi_engine.search.values import MATE_THRESHOLD
from usi_engine.search.widening import full_width

_INF = np.inf


@bare_kernel
def proven_value(tree, v):
    """(proven, E(v), min child E) from v's children's proven results alone: a child that is a proven loss
    for its side to move wins v (MATE - distance: one point per ply, quickest mate); if every child is a
    proven win for its side, v is lost (longest resistance)."""
    value = tree[T_VALUE]
    echild = tree[T_ECHILD]
    f = tree[T_FIRST][v]
    n = tree[T_COUNT][v]
    min_e = _INF
    all_won = True
    for i in range(n):
        e = value[echild[f + i]]
        if e < min_e:
            min_e = e
        if e < MATE_THRESHOLD:
            all_won = False
    if min_e <= -MATE_THRESHOLD:
        return True, -min_e - 1.0, min_e
    if all_won and full_width(tree, v):
        return True, -min_e + 1.0, min_e
    return False, 0.0, min_e


@bare_kernel
def clamp_heuristic(r):
    """A heuristic value clamped below MATE_THRESHOLD so it never masquerades as proven."""
    limit = MATE_THRESHOLD - 1.0
    if r > limit:
        return limit
    if r < -limit:
        return -limit
    return r


@bare_kernel
def backup_value(tree, v, t_back):
    """E(v) recomputed from v's children (seed 001 eq. 3, negamax): E(v) = sum_c pi_b(c|v) * (-E(c)),
    pi_b(c|v) = exp(-E(c)/T_back)/Z, max-shifted. T_back <= 0 gives minimax (UCTMAX_H backup).
    Proven results first (proven_value); a heuristic result is clamped (clamp_heuristic)."""
    proven, r, min_e = proven_value(tree, v)
    if proven:
        return r
    if t_back <= 0.0:
        return clamp_heuristic(-min_e)
    value = tree[T_VALUE]
    echild = tree[T_ECHILD]
    f = tree[T_FIRST][v]
    z = 0.0
    s = 0.0
    for i in range(tree[T_COUNT][v]):
        e = value[echild[f + i]]
        w = np.exp(-(e - min_e) / t_back)
        z += w
        s -= w * e
    return clamp_heuristic(s / z)


@bare_kernel
def rave_value(tree, v, vscale):
    """E(v) under the RAVE policy: proven results as in backup_value, else the mean simulation outcome q
    over v's edges (MC counts, priors included) on the value scale, vscale * (2q - 1)."""
    proven, r, _ = proven_value(tree, v)
    if proven:
        return r
    f = tree[T_FIRST][v]
    wins = 0.0
    count = 0.0
    for e in range(f, f + tree[T_COUNT][v]):
        wins += tree[T_RW][e]
        count += tree[T_RN][e]
    if count <= 0.0:
        return tree[T_VALUE][v]
    return clamp_heuristic(vscale * (2.0 * wins / count - 1.0))


@bare_kernel
def node_value(tree, v, policy, t_back, vscale):
    """E(v) recomputed from its children under the policy's backup rule."""
    if policy == POLICY_RAVE:
        return rave_value(tree, v, vscale)
    return backup_value(tree, v, t_back)


@bare_kernel
def backup_node(tree, v, t_back, anneal_n, t_min, policy, vscale):
    """Store E(v) = node_value at the backup temperature annealed by v's visits (annealed_temperature),
    retrying until no child changed meanwhile.

    Writers of a child bump the parent's sequence (state += SEQ_STEP) after the child's value store; a
    backup that saw the sequence change recomputes. So the last value stored for v is always computed
    from the final child values of its path-mates (and at the temperature of its final visit count): the
    tree stays consistent under concurrent threads."""
    state = tree[T_STATE]
    while True:
        s0 = atomic_load(state, v)
        t = annealed_temperature(s0 >> 2, t_back, anneal_n, t_min)
        tree[T_VALUE][v] = node_value(tree, v, policy, t, vscale)
        if atomic_add(state, v, 0) == s0:  # seq_cst read-modify-write: also orders the store above
            return


@bare_kernel
def annealed_temperature(visits, t, anneal_n, t_min):
    """A temperature annealed by a node's visits: t, or with anneal_n > 0 t / sqrt(1 + N/anneal_n), not below
    t_min, where N = the samples backed up through the node since its expansion (its sequence count,
    state >> 2). Selection: a node the search keeps returning to samples its best children more sharply, so
    samples turn into depth along the lines that decide the value; a rarely visited node keeps the paper's
    breadth. Backup: the softmax expectation of a well-explored node moves from the mean of its plausible
    children towards their best (eq. 3 at a lower T), so its value converges to the minimax value as the
    samples grow instead of keeping a bias of the order of T times the log of the number of near-equal
    children; a rarely visited node keeps the paper's averaging of noisy estimates. t <= 0 stays 0
    (minimax backup)."""
    if anneal_n <= 0.0 or t <= 0.0:
        return t
    a = t / np.sqrt(1.0 + visits / anneal_n)
    return a if a > t_min else t_min


@bare_kernel
def backup_path(tree, path_nodes, d, fp, policy):
    """Back up path_nodes[d-1] .. path_nodes[0] (all expanded), bumping each sequence first."""
    state = tree[T_STATE]
    for i in range(d - 1, -1, -1):
        v = path_nodes[i]
        atomic_add(state, v, SEQ_STEP)
        backup_node(tree, v, fp[FP_TBACK], fp[FP_BACK_ANNEAL_N], fp[FP_TBACK_MIN], policy, fp[FP_VSCALE])


@bare_kernel
def max_backup_error(tree, n_nodes, t_back, anneal_n=0.0, t_min=0.0):
    """Largest |E(v) - recompute(v)| over expanded nodes below n_nodes (the backup temperature annealed by
    anneal_n, t_min as in the search), and how many were expanded. Nodes
    flagged terminal after their expansion (a value proven from outside, e.g. the root_verifier's) keep
    their proven value and are left out."""
    worst = 0.0
    expanded = 0
    for v in range(n_nodes):
        if (
            (tree[T_STATE][v] & PHASE_MASK) == EXPANDED
            and tree[T_COUNT][v] > 0
            and not tree[T_FLAGS][v] & FLAG_TERMINAL
        ):
            expanded += 1
            t = annealed_temperature(tree[T_STATE][v] >> 2, t_back, anneal_n, t_min)
            err = abs(tree[T_VALUE][v] - backup_value(tree, v, t))
            if err > worst:
                worst = err
    return worst, expanded

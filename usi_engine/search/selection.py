"""Selection: the edge a sample follows out of an expanded node under the tree policy (select_edge): the
softmax of MCSS (select_softmax), UCB1 (select_uct) or UCT-RAVE (rave.select_rave); and the share of a
node's samples an edge takes under each policy (selection_weight)."""

import numpy as np

from usi_engine.jit import bare_kernel
from usi_engine.search.backup import annealed_temperature
from usi_engine.search.layout import (
    EXPANDING,
    FLAG_FORCING,
    FP_ANNEAL_N,
    FP_CUCT,
    FP_FORCING,
    FP_PRIOR_BETA,
    FP_TSEL,
    FP_TSEL_MIN,
    PHASE_MASK,
    POLICY_RAVE,
    POLICY_UCT,
    T_COUNT,
    T_EBIAS,
    T_ECHILD,
    T_EVISITS,
    T_FIRST,
    T_FLAGS,
    T_RN,
    T_STATE,
    T_VALUE,
)
from usi_engine.search.rave import prior_visits_of, select_rave
from usi_engine.search.rng import next_unit

_INF = np.inf


@bare_kernel
def select_softmax(tree, v, t_sel, bonus, rng, wbuf, skip_busy=True, beta=0.0):
    """Sample an edge of v by pi(c|v) = exp(-E(c)/T_sel)/Z (seed 001 eq. 1-2), max-shifted. A child flagged
    FLAG_FORCING is selected as if E(c) were `bonus` lower (a prior on forcing moves; 0 = the paper's
    policy). Progressive bias (beta > 0, a pool with T_EBIAS): the logits are -E(c)/T_sel + beta log p(c),
    p the game's move prior (pi ~ p^beta exp(-E/T_sel); Chaslot et al. 2008 add their prior to the
    selection value in the same spirit). Backups and the best move use the plain values.

    skip_busy (threads that cannot join each other's expansions): children that another thread is expanding
    right now are left out and the rest renormalised: a thread
    that would follow another onto the node it is expanding samples a sibling instead of restarting from
    the root again and again (a spin that, on a line the softmax nearly always picks, burnt a whole core:
    tens of millions of restarts in a 3,000-sample search, the second thread adding nothing). The sibling
    may be improbable; its sample still refines a value the backup weighs, where a restart refines
    nothing. -1 (a collision: the sample restarts) only when no other child has any weight. One thread
    never meets a busy child, so its draws are unchanged. With joint expansions (run_samples) a busy child is
    drawn like any other: the thread joins its expansion, as a single thread would have waited for it."""
    value = tree[T_VALUE]
    flags = tree[T_FLAGS]
    state = tree[T_STATE]
    echild = tree[T_ECHILD]
    f = tree[T_FIRST][v]
    n = tree[T_COUNT][v]
    ebias = tree[T_EBIAS]
    lift = t_sel * beta if ebias.shape[0] > 1 else 0.0  # log p in cp at T_sel
    min_e = _INF
    for i in range(n):
        c = echild[f + i]
        e = value[c] - bonus if flags[c] & FLAG_FORCING else value[c]
        if lift != 0.0:
            e -= lift * ebias[f + i]
        wbuf[i] = e
        if e < min_e:
            min_e = e
    z = 0.0
    busy = 0.0
    for i in range(n):
        w = np.exp(-(wbuf[i] - min_e) / t_sel)
        z += w
        if skip_busy and (state[echild[f + i]] & PHASE_MASK) == EXPANDING:
            busy += w
            w = 0.0
        wbuf[i] = w
    z -= busy
    if busy > 0.0 and z <= 0.0:
        return -1
    u = next_unit(rng) * z
    acc = 0.0
    for i in range(n):
        acc += wbuf[i]
        if u < acc:
            return f + i
    for i in range(n - 1, -1, -1):  # rounding: the last child with weight
        if wbuf[i] > 0.0:
            return f + i
    return f + n - 1


@bare_kernel
def select_uct(tree, v, c_uct):
    """UCB1 on edge visit counts (UCT_H of Ramanujan & Selman, seed 001 §2.2): argmax -E(c) +
    c_uct*sqrt(ln N(v) / N(c)); unvisited edges first, best static value first. Edge counts (not node
    counts) keep it sound on a graph (seed 002)."""
    value = tree[T_VALUE]
    echild = tree[T_ECHILD]
    visits = tree[T_EVISITS]
    f = tree[T_FIRST][v]
    n = tree[T_COUNT][v]
    total = 0
    best_new = -1
    best_new_q = -_INF
    for i in range(n):
        nv = visits[f + i]
        total += nv
        q = -value[echild[f + i]]
        if nv == 0 and q > best_new_q:
            best_new_q = q
            best_new = f + i
    if best_new >= 0:
        return best_new
    log_total = np.log(total + 1.0)
    best = f
    best_score = -_INF
    for i in range(n):
        score = -value[echild[f + i]] + c_uct * np.sqrt(log_total / visits[f + i])
        if score > best_score:
            best_score = score
            best = f + i
    return best


@bare_kernel
def select_edge(tree, v, policy, fp, rng, wbuf, joint):
    if policy == POLICY_UCT:
        return select_uct(tree, v, fp[FP_CUCT])
    if policy == POLICY_RAVE:
        return select_rave(tree, v, fp)
    t_sel = annealed_temperature(tree[T_STATE][v] >> 2, fp[FP_TSEL], fp[FP_ANNEAL_N], fp[FP_TSEL_MIN])
    return select_softmax(tree, v, t_sel, fp[FP_FORCING], rng, wbuf, not joint, fp[FP_PRIOR_BETA])


@bare_kernel
def selection_weight(tree, e, policy, t_sel, prior_n, min_e):
    """Unnormalised share of its parent's samples that edge e takes under the tree policy: the softmax weight
    exp(-(E(c) - min_e)/t_sel) (eq. 1-2; min_e the smallest child value), the edge's visits (UCT), or its real
    MC simulations, the prior's virtual visits removed (RAVE: prior_n, or the edge's own, rave.prior_visits_of)."""
    if policy == POLICY_UCT:
        return float(tree[T_EVISITS][e])
    if policy == POLICY_RAVE:
        return max(tree[T_RN][e] - prior_visits_of(tree, e, prior_n), 0.0)
    return np.exp(-(tree[T_VALUE][tree[T_ECHILD][e]] - min_e) / t_sel)

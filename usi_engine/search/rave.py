"""MC-RAVE (seed 000 §4-5, Algorithm 2): the per-edge MC and AMAF statistics of the RAVE policy, their
initialisation from the game's prior (rave_init_edges), their updates after a sample (rave_update,
rave_update_end) and UCT-RAVE selection (select_rave). The policy's backup rule is backup.rave_value."""

import numpy as np

from usi_engine.jit import bare_kernel
from usi_engine.search.layout import (
    FLAG_NO_SIM,
    FP_CUCT,
    FP_PRIOR_AMAF,
    FP_PRIOR_N,
    FP_RAVE_BIAS,
    FP_VSCALE,
    FP_WIDEN_K0,
    NO_MOVE,
    T_AN,
    T_AW,
    T_COUNT,
    T_ECHILD,
    T_EMOVE,
    T_FIRST,
    T_RC,
    T_RN,
    T_RW,
    T_VALUE,
)
from usi_engine.search.table import table_slot
from usi_engine.search.values import MATE_THRESHOLD
from usi_engine.search.widening import widen_target

_INF = np.inf


@bare_kernel
def rave_beta(n, n_amaf, bias):
    """Weight of the AMAF value by the minimum-MSE schedule (seed 000 eq. 47):
    beta = n~ / (n + n~ + 4 n n~ b^2), with n = N(s,a), n~ = N~(s,a) and b the RAVE bias."""
    if n_amaf <= 0.0:
        return 0.0
    return n_amaf / (n + n_amaf + 4.0 * n * n_amaf * bias * bias)


@bare_kernel
def select_rave(tree, v, fp):
    """UCT-RAVE (seed 000 eq. 12 and 18): argmax (1 - beta) Q(s,a) + beta Q~(s,a) + c sqrt(ln N(s) / N(s,a)),
    beta by eq. 47. A child proven lost for its side to move is taken at once; children proven won for
    their side are avoided while any other edge exists. Progressive widening (FP_WIDEN_K0 > 0): only v's first
    k(N) children in the game's order take part, k(N) = widening.widen_target of N, v's real MC visits (its
    edges' counts without their prior's virtual visits)."""
    value = tree[T_VALUE]
    echild = tree[T_ECHILD]
    rn, rw, an, aw = tree[T_RN], tree[T_RW], tree[T_AN], tree[T_AW]
    f = tree[T_FIRST][v]
    n = tree[T_COUNT][v]
    bias = fp[FP_RAVE_BIAS]
    c = fp[FP_CUCT]
    widen = fp[FP_WIDEN_K0] > 0.0
    total = 0.0
    virtual = 0.0
    for e in range(f, f + n):
        total += rn[e]
        if widen:
            virtual += prior_visits_of(tree, e, fp[FP_PRIOR_N])
        if value[echild[e]] <= -MATE_THRESHOLD:
            return e
    log_total = np.log(total + 1.0)
    width = min(n, max(1, widen_target(total - virtual, fp))) if widen else n
    best = f
    best_score = -_INF
    for e in range(f, f + width):
        ev = value[echild[e]]
        if ev >= MATE_THRESHOLD:
            score = -1.0
        else:
            nmc = max(rn[e], 1e-9)
            beta = rave_beta(nmc, an[e], bias)
            score = (1.0 - beta) * rw[e] / nmc + c * np.sqrt(log_total / nmc)
            if beta > 0.0:
                score += beta * aw[e] / an[e]
        if score > best_score:
            best_score = score
            best = e
    return best


@bare_kernel
def rave_outcome(child_value, vscale):
    """Outcome in [0, 1] for the mover of a child whose value (child's side) is child_value."""
    x = child_value / vscale
    if x > 1.0:
        x = 1.0
    elif x < -1.0:
        x = -1.0
    return 0.5 * (1.0 - x)


@bare_kernel
def rave_init_edges(tree, v, n, values, cflags, prior, counts, fp):
    """Statistics of v's fresh edges: the game's prior H(s,a) = prior[i] as virtual experience (seed 000 eq.
    48-51: N(s,a) = C(s,a) MC visits and N~(s,a) = C~(s,a) AMAF visits, both of value H), plus the child's own
    playout, unless flagged FLAG_NO_SIM, as one real MC simulation. C and C~ are one pair for every edge,
    FP_PRIOR_N and FP_PRIOR_AMAF, unless the pool keeps per-child counts (T_RC): then edge i takes
    C = counts[0, i] and C~ = counts[1, i] (the game's, else the shared pair the core filled in) and T_RC
    remembers its C."""
    f = tree[T_FIRST][v]
    rc = tree[T_RC]
    own = rc.shape[0] > 1
    pn, pa = fp[FP_PRIOR_N], fp[FP_PRIOR_AMAF]
    for i in range(n):
        e = f + i
        if own:
            pn, pa = counts[0, i], counts[1, i]
            rc[e] = pn
        tree[T_RN][e] = pn
        tree[T_RW][e] = pn * prior[i]
        if (cflags[i] & FLAG_NO_SIM) == 0:
            tree[T_RN][e] += 1.0
            tree[T_RW][e] += rave_outcome(values[i], fp[FP_VSCALE])
        tree[T_AN][e] = pa
        tree[T_AW][e] = pa * prior[i]


@bare_kernel
def prior_visits_of(tree, e, prior_n):
    """C(s,a) of RAVE edge e: its own virtual MC visits when the pool keeps per-child counts (T_RC), else the
    shared prior_n."""
    rc = tree[T_RC]
    if rc.shape[0] > 1:
        return rc[e]
    return prior_n


@bare_kernel
def edge_map(tree, v, hkey, hval, hbuild, build):
    """Index v's edges by move in the open-addressing table hkey/hval (slots valid when hbuild == build)."""
    mask = hkey.shape[0] - 1
    f = tree[T_FIRST][v]
    for e in range(f, f + tree[T_COUNT][v]):
        m = tree[T_EMOVE][e]
        s = table_slot(m, mask)
        while hbuild[s] == build:
            s = (s + 1) & mask
        hbuild[s] = build
        hkey[s] = m
        hval[s] = e


@bare_kernel
def edge_slot(move, hkey, hbuild, build):
    """Slot of `move` in the current edge map, -1 if the node has no such edge."""
    mask = hkey.shape[0] - 1
    s = table_slot(move, mask)
    while hbuild[s] == build:
        if hkey[s] == move:
            return s
        s = (s + 1) & mask
    return -1


@bare_kernel
def amaf_credit(tree, move, z, w, hkey, hval, hbuild, hseen, build, stamp):
    """One AMAF update (seed 000 eq. 16-17) of the current node's edge `move` with outcome z and weight w,
    unless the move is not an edge there or this simulation already credited it (first occurrence only)."""
    s = edge_slot(move, hkey, hbuild, build)
    if s >= 0 and hseen[s] != stamp:
        hseen[s] = stamp
        e = hval[s]
        tree[T_AN][e] += w
        tree[T_AW][e] += w * z


@bare_kernel
def amaf_weight(k, length, distance):
    """Weight of the AMAF credit of the k-th move (from 0) of the `length` moves played after a node:
    1 + floor(distance * (length - k) / (length + 1)), from 1 + distance near the node down to 1 at the end
    (Pachi's distance_rave: with distance 3 the weights are 3, 2 and 1 by thirds); distance 0: always 1."""
    if distance <= 0.0:
        return 1.0
    return 1.0 + np.floor(distance * (length - k) / (length + 1.0))


@bare_kernel
def amaf_sequence(tree, path_edges, t, d, child, trace, j0, j1, z, distance, hkey, hval, hbuild, hseen, build, stamp):
    """AMAF credits (eq. 16-17) at path node s_t of one simulation whose moves after s_t are the path's edges t..d-1,
    then `child` (NO_MOVE: none), then trace[j0:j1]: the moves of s_t's side to move (every second one), each with
    outcome z (s_t's side) and weight amaf_weight(k, length, distance), first occurrence only; trace entries
    NO_MOVE keep the parity."""
    emove = tree[T_EMOVE]
    length = (d - t) + (1 if child != NO_MOVE else 0) + (j1 - j0)
    k = 0
    for u in range(t, d):
        if k % 2 == 0:
            w = amaf_weight(k, length, distance)
            amaf_credit(tree, emove[path_edges[u]], z, w, hkey, hval, hbuild, hseen, build, stamp)
        k += 1
    if child != NO_MOVE:
        if k % 2 == 0:
            w = amaf_weight(k, length, distance)
            amaf_credit(tree, child, z, w, hkey, hval, hbuild, hseen, build, stamp)
        k += 1
    for j in range(j0, j1):
        if k % 2 == 0 and trace[j] != NO_MOVE:
            w = amaf_weight(k, length, distance)
            amaf_credit(tree, trace[j], z, w, hkey, hval, hbuild, hseen, build, stamp)
        k += 1


@bare_kernel
def rave_update(tree, path_nodes, path_edges, d, moves, values, cflags, n, trace, tstart, vscale, distance, hscratch):
    """Statistics after the expansion of path_nodes[d], whose n children each ran one playout (child i:
    move moves[i], value values[i] from its side, playout moves trace[tstart[i]:tstart[i+1]]), except
    those flagged FLAG_NO_SIM (no simulation: skipped).

    MC (eq. 13-15): every path edge counts the n simulations and their outcomes from its mover's side.
    AMAF (eq. 16-17, Algorithm 2): at every path node s_t (t = 0..d) each simulation credits the edges of
    the moves played after s_t by s_t's side to move (every second move of path, child move and playout),
    the first occurrence of each move only, weighted by amaf_weight with `distance`; moves that are no edge of
    s_t (illegal there) are skipped."""
    hkey, hval, hbuild, hseen, ids = hscratch
    rn, rw = tree[T_RN], tree[T_RW]
    zsum = 0.0
    sims = 0
    for i in range(n):
        if (cflags[i] & FLAG_NO_SIM) == 0:
            zsum += rave_outcome(values[i], vscale)
            sims += 1
    if sims == 0:  # no child ran a playout (RAVE_NONE): nothing to count or credit
        return
    for t in range(d):
        e = path_edges[t]
        rn[e] += sims
        rw[e] += zsum if (d - t) % 2 == 0 else sims - zsum
    for t in range(d + 1):
        ids[0] += 1
        build = ids[0]
        edge_map(tree, path_nodes[t], hkey, hval, hbuild, build)
        for i in range(n):
            if cflags[i] & FLAG_NO_SIM:
                continue
            ids[1] += 1
            z = rave_outcome(values[i], vscale)
            if (d - t) % 2 == 1:
                z = 1.0 - z
            amaf_sequence(
                tree,
                path_edges,
                t,
                d,
                moves[i],
                trace,
                tstart[i],
                tstart[i + 1],
                z,
                distance,
                hkey,
                hval,
                hbuild,
                hseen,
                build,
                ids[1],
            )


@bare_kernel
def rave_update_end(tree, path_edges, d, end_value, vscale):
    """MC statistics of a sample that ended at path_nodes[d] without a playout (terminal, proven, cycle,
    depth cap): one simulation whose outcome is that node's value (its side to move)."""
    z = 1.0 - rave_outcome(end_value, vscale)
    for t in range(d):
        e = path_edges[t]
        tree[T_RN][e] += 1.0
        tree[T_RW][e] += z if (d - t) % 2 == 0 else 1.0 - z


@bare_kernel
def rave_update_leaf(tree, path_nodes, path_edges, d, top, value, trace, tlen, vscale, distance, hscratch):
    """Statistics of one playout from path_nodes[d] itself (the leaf playout of MoGo's and Pachi's trees; value
    from the leaf's side to move, moves trace[:tlen]): MC (eq. 13-15) as rave_update_end, one simulation for
    every path edge; AMAF (eq. 16-17) at the path nodes s_t, t = 0..top (top = d when the leaf is expanded, so
    its own edges learn from the playout, else d - 1), over the path's moves after s_t and then the playout's,
    weighted by amaf_weight with `distance`."""
    rave_update_end(tree, path_edges, d, value, vscale)
    hkey, hval, hbuild, hseen, ids = hscratch
    z_leaf = 1.0 - rave_outcome(value, vscale)  # the outcome for the leaf's side to move
    for t in range(top + 1):
        ids[0] += 1
        build = ids[0]
        edge_map(tree, path_nodes[t], hkey, hval, hbuild, build)
        ids[1] += 1
        z = z_leaf if (d - t) % 2 == 0 else 1.0 - z_leaf
        amaf_sequence(
            tree, path_edges, t, d, NO_MOVE, trace, 0, tlen, z, distance, hkey, hval, hbuild, hseen, build, ids[1]
        )

"""Progressive widening: how many children a node should hold (widen_target), one thread at a time entering
the next waiting move as a child (widen_claim, widen_publish), the log priors of a node's moves in edge
order (align_prior), and the node's reserved edges and full width (reserved_edges, full_width), which hold
for every pool (a pool without widening is always full width)."""

import numpy as np

from usi_engine.jit import bare_kernel
from usi_engine.search.atomics import atomic_add, atomic_cas, atomic_load, atomic_store
from usi_engine.search.layout import (
    C_MEMFULL,
    FP_WIDEN_A,
    FP_WIDEN_B,
    FP_WIDEN_K0,
    T_COUNT,
    T_ECHILD,
    T_FIRST,
    T_NMOVES,
    T_STATE,
    T_VALUE,
    T_WIDE,
)
from usi_engine.search.values import MATE_THRESHOLD


@bare_kernel
def reserved_edges(tree, v):
    """The edges v reserved at its expansion: all its moves under progressive widening, else its children."""
    nm = tree[T_NMOVES]
    return nm[v] if nm.shape[0] > 1 else tree[T_COUNT][v]


@bare_kernel
def full_width(tree, v):
    """True when every move of v has entered as a child (always, without progressive widening)."""
    nm = tree[T_NMOVES]
    return nm.shape[0] <= 1 or tree[T_COUNT][v] >= nm[v]


@bare_kernel
def align_prior(moves, n, n_moves, ordered, logp, out):
    """out[0:n_moves] = the log priors of moves[0:n_moves], given logp[i] of ordered[i] (the order the
    game's order_children left, before finish_open may have sorted the n entered moves among themselves;
    the waiting moves n..n_moves keep their places)."""
    for i in range(n):
        out[i] = 0.0
        for j in range(n):
            if ordered[j] == moves[i]:
                out[i] = logp[j]
                break
    for i in range(n, n_moves):
        out[i] = logp[i]


@bare_kernel
def widen_target(visits, fp):
    """Progressive widening: the children a node with `visits` samples backed up through it should hold,
    k(N) = k0 + floor(log_b(1 + N/a)) (Chaslot et al. 2008's logarithmic schedule; k0 = FP_WIDEN_K0,
    a = FP_WIDEN_A, b = FP_WIDEN_B)."""
    return np.int64(fp[FP_WIDEN_K0] + np.floor(np.log(1.0 + visits / fp[FP_WIDEN_A]) / np.log(fp[FP_WIDEN_B])))


@bare_kernel
def widen_claim(tree, v, is_root, fp):
    """The index of the move of v that this thread now enters (claimed), or -1: v has moves not yet entered
    and wants more children - the root always (every root move is searched), all entered children proven
    won for their side (backup clamps v's value to the lowest heuristic value; another move may save v),
    or its visits call for more (widen_target) - and no other thread is entering one (T_WIDE == count)."""
    nm = tree[T_NMOVES]
    if nm.shape[0] <= 1:
        return -1
    cnt = tree[T_COUNT][v]
    if cnt >= nm[v]:
        return -1
    if not is_root and tree[T_VALUE][v] > 1.0 - MATE_THRESHOLD:
        if widen_target(tree[T_STATE][v] >> 2, fp) <= cnt:
            return -1
    wide = tree[T_WIDE]
    if atomic_load(wide, v) != cnt or atomic_cas(wide, v, cnt, cnt + 1) != cnt:
        return -1
    return cnt


@bare_kernel
def widen_publish(tree, ctl, v, i, child):
    """Enter `child` as v's child i (claimed by widen_claim): its edge is written before the count grows, so
    a thread that sees the new count sees the child (the read-modify-write is a full barrier); child < 0
    (the pool is full) gives the claim back and flags the pool full instead."""
    if child < 0:
        atomic_store(tree[T_WIDE], v, i)
        atomic_store(ctl, C_MEMFULL, 1)
        return False
    tree[T_ECHILD][tree[T_FIRST][v] + i] = child
    atomic_add(tree[T_STATE], v, 0)
    tree[T_COUNT][v] = i + 1
    return True

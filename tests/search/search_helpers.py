"""Shared helpers for the search-core tests: plain-Python reference values and pool invariants."""

import math

import numpy as np

from usi_engine.search import layout
from usi_engine.search import synthetic as syn
from usi_engine.search.backup import max_backup_error
from usi_engine.search.values import MATE_THRESHOLD

W = np.zeros(1)
P = np.zeros(1)


def children(pos):
    """[(move, value, terminal)] of pos through the game's own expand."""
    moves = np.zeros(64, np.int32)
    values = np.zeros(64)
    flags = np.zeros(64, np.int8)
    n, _ = syn.expand(pos, W, P, np.zeros(1, np.uint64), moves, values, flags)
    return [(int(moves[i]), float(values[i]), bool(flags[i] & syn.TERMINAL)) for i in range(n)]


def backup(child_values, t_back):
    """Plain-Python softmax backup (seed 001 eq. 3) with the proven-value rules of the core."""
    lo = min(child_values)
    if lo <= -MATE_THRESHOLD:
        return -lo - 1.0
    if all(v >= MATE_THRESHOLD for v in child_values):
        return -lo + 1.0
    if t_back <= 0:
        return -lo
    w = [math.exp(-(v - lo) / t_back) for v in child_values]
    return sum(wi * -v for wi, v in zip(w, child_values)) / sum(w)


def exact_value(pos, t_back):
    """E(pos) of the fully expanded tree below pos, by recursion; also the number of internal positions
    (distinct keys, for graph mode) visited."""
    internal = set()

    def rec(p):
        internal.add(int(syn.pos_key(p)))
        vals = []
        for move, value, terminal in children(p):
            syn.do_move(p, move)
            if terminal or not children(p):
                vals.append(value)
            else:
                vals.append(rec(p))
            syn.undo_move(p)
        return backup(vals, t_back)

    p = pos.copy()
    return rec(p), internal


def tree_count(searcher, node=0):
    """Nodes reachable from `node` (each counted once) in the searcher's pool."""
    t = searcher.pool.tree
    seen = {node}
    stack = [node]
    while stack:
        v = stack.pop()
        if (t[layout.T_STATE][v] & layout.PHASE_MASK) == layout.EXPANDED:
            f = t[layout.T_FIRST][v]
            for c in t[layout.T_ECHILD][f : f + t[layout.T_COUNT][v]]:
                if int(c) not in seen:
                    seen.add(int(c))
                    stack.append(int(c))
    return len(seen)


def check_accounting(searcher):
    """Pool counters add up and never pass the capacity; every edge points at an allocated node."""
    pool = searcher.pool
    t, ctl = pool.tree, pool.ctl
    used, edges = int(ctl[layout.C_NODES]), int(ctl[layout.C_EDGES])
    assert 0 < used <= pool.node_capacity and 0 <= edges <= pool.edge_capacity
    expanded = (t[layout.T_STATE][:used] & layout.PHASE_MASK) == layout.EXPANDED
    assert not np.any((t[layout.T_STATE][:used] & layout.PHASE_MASK) == layout.EXPANDING)
    linked = int(t[layout.T_COUNT][:used][expanded].sum())
    # progressive widening reserves an edge for every move; the ones not entered yet have no child
    reserved = int(t[layout.T_NMOVES][:used][expanded].sum()) if pool.widen else linked
    assert edges == reserved + ctl[layout.C_WASTED_EDGES]
    if pool.graph:
        assert used == ctl[layout.C_TABLE] + ctl[layout.C_PRIVATE]
    else:
        assert used == 1 + linked
    for v in np.nonzero(expanded)[0]:
        f, n = t[layout.T_FIRST][v], t[layout.T_COUNT][v]
        m = t[layout.T_NMOVES][v] if pool.widen else n
        assert 0 <= f and n <= m and f + m <= edges
        assert np.all((t[layout.T_ECHILD][f : f + n] >= 0) & (t[layout.T_ECHILD][f : f + n] < used))
        assert np.all(t[layout.T_ECHILD][f + n : f + m] == -1)
        if pool.widen:
            assert t[layout.T_WIDE][v] == n  # no entry left claimed


def backup_error(searcher):
    pool = searcher.pool
    opt = searcher.options
    return max_backup_error(
        pool.tree, np.int64(pool.ctl[layout.C_NODES]), float(opt.t_back), opt.back_anneal_visits, opt.t_back_min
    )

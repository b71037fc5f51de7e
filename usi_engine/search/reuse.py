"""The walk behind tree reuse and pruning (collect_probable): the part of the pool to keep, numbered
breadth-first from the new root, with each node's reach, the share of the samples that pass through it.
The Searcher's NodePool moves that part to the front of the pool (docs/search.md, "Memory full and
pruning", "Tree reuse")."""

import numpy as np

from usi_engine.jit import bare_kernel
from usi_engine.search.layout import EXPANDED, PHASE_MASK, T_COUNT, T_ECHILD, T_FIRST, T_STATE, T_VALUE
from usi_engine.search.selection import selection_weight
from usi_engine.search.widening import reserved_edges

_INF = np.inf


@bare_kernel
def collect_probable(tree, new_root, policy, t_sel, prior_n, allow, nmap, order, eorder, reach, keep):
    """Breadth-first numbering of the nodes reachable from new_root, keeping the children of an expanded node
    v only when allow[v] != 0 (all ones: tree reuse keeps everything): order[j] = old index of new node j,
    nmap[old] = j, eorder = old edge indices in the new edge order (kept children of order[0], order[1], ...),
    keep[j] = 1 when node j keeps its children, reach[j] its *reach*, the share of the samples that pass through
    it: reach(root) = 1, reach(c) = sum of reach(v) * p(c|v) over its parents v, p(c|v) the share of v's
    samples that go to c under the tree policy (selection_weight: the softmax pi(c|v) at temperature t_sel, or
    the visit shares of UCT and RAVE; uniform while v's edges have no visits). In graph mode the sum takes the
    parents the walk meets before it numbers c's children (all of them when the transpositions are at equal
    depth; an approximation otherwise). A kept node keeps the edges of the moves progressive widening has not
    entered yet too (after its children, child -1). Returns (nodes kept, edges kept)."""
    value = tree[T_VALUE]
    echild = tree[T_ECHILD]
    nmap[:] = -1
    order[0] = new_root
    nmap[new_root] = 0
    reach[0] = 1.0
    head = 0
    tail = 1
    n_edges = 0
    while head < tail:
        j = head
        v = order[head]
        head += 1
        keep[j] = 0
        if (tree[T_STATE][v] & PHASE_MASK) != EXPANDED or allow[v] == 0:
            continue
        keep[j] = 1
        f = tree[T_FIRST][v]
        n = tree[T_COUNT][v]
        min_e = _INF
        for i in range(n):
            min_e = min(min_e, value[echild[f + i]])
        z = 0.0
        for i in range(n):
            z += selection_weight(tree, f + i, policy, t_sel, prior_n, min_e)
        for i in range(n):
            eorder[n_edges] = f + i
            n_edges += 1
        for i in range(n, reserved_edges(tree, v)):  # moves progressive widening has not entered yet
            eorder[n_edges] = f + i
            n_edges += 1
        for i in range(n):
            c = echild[f + i]
            if z > 0.0:
                share = reach[j] * selection_weight(tree, f + i, policy, t_sel, prior_n, min_e) / z
            else:
                share = reach[j] / n
            if nmap[c] < 0:
                nmap[c] = tail
                order[tail] = c
                reach[tail] = share
                tail += 1
            elif nmap[c] >= head:  # met again before its own children are numbered
                reach[nmap[c]] += share
    return tail, n_edges

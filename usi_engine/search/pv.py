"""Reading the search's answer off the tree: the preferred edge of a node (edge_rank, best_edge), the
principal variation (principal_variation) and the child a move leads to (child_of)."""

import numpy as np

from usi_engine.jit import bare_kernel
from usi_engine.search.atomics import atomic_load
from usi_engine.search.layout import (
    EXPANDED,
    FLAG_LAZY,
    PHASE_MASK,
    T_COUNT,
    T_ECHILD,
    T_EMOVE,
    T_FIRST,
    T_FLAGS,
    T_RN,
    T_STATE,
    T_VALUE,
)
from usi_engine.search.rave import prior_visits_of
from usi_engine.search.values import MATE_THRESHOLD

LAZY_RANK_OFFSET = 1.0e6  # edge_rank: lazy estimates rank below every refined value
_INF = np.inf


@bare_kernel
def edge_rank(tree, e, by_visits):
    """Preference of edge e for the best move: -E(child) (highest probability), or under RAVE its real MC count
    (the robust choice; per-child virtual visits of the prior left out, rave.prior_visits_of), with proven wins
    first and proven losses last. A child whose value is still a lazy estimate ranks below every refined child
    (LAZY_RANK_OFFSET): the move played has an exact leaf value."""
    c = tree[T_ECHILD][e]
    ev = tree[T_VALUE][c]
    if not by_visits:
        return -ev - LAZY_RANK_OFFSET if tree[T_FLAGS][c] & FLAG_LAZY else -ev
    if ev <= -MATE_THRESHOLD:
        return _INF
    if ev >= MATE_THRESHOLD:
        return -ev
    return tree[T_RN][e] - prior_visits_of(tree, e, 0.0)


@bare_kernel
def best_edge(tree, v, by_visits):
    """Edge of v with the highest edge_rank; -1 if v has no published children."""
    if (atomic_load(tree[T_STATE], v) & PHASE_MASK) != EXPANDED or tree[T_COUNT][v] == 0:
        return -1
    f = tree[T_FIRST][v]
    best = f
    best_rank = edge_rank(tree, f, by_visits)
    for e in range(f + 1, f + tree[T_COUNT][v]):
        r = edge_rank(tree, e, by_visits)
        if r > best_rank:
            best = e
            best_rank = r
    return best


@bare_kernel
def principal_variation(tree, start, out_moves, seen, by_visits):
    """Moves from node `start` following best_edge; stops at an unexpanded node, at a repeated node (graph
    cycles) or when out_moves is full. Returns the length."""
    n = 0
    node = start
    seen[0] = start
    while n < out_moves.shape[0]:
        e = best_edge(tree, node, by_visits)
        if e < 0:
            break
        out_moves[n] = tree[T_EMOVE][e]
        node = tree[T_ECHILD][e]
        n += 1
        for i in range(n):
            if seen[i] == node:
                return n
        seen[n] = node
    return n


@bare_kernel
def child_of(tree, v, move):
    """Child node of v reached by `move`, -1 if v is not expanded or has no such edge."""
    if (tree[T_STATE][v] & PHASE_MASK) != EXPANDED:
        return -1
    f = tree[T_FIRST][v]
    for i in range(tree[T_COUNT][v]):
        if tree[T_EMOVE][f + i] == move:
            return tree[T_ECHILD][f + i]
    return -1

"""Nodes entering the pool: the root of an empty pool (init_root), a fresh child (new_child: shared through
the table in graph mode, private if terminal) and an expansion's children with their edges
(attach_children)."""

from usi_engine.jit import bare_kernel
from usi_engine.search.alloc import alloc, init_node
from usi_engine.search.atomics import atomic_add
from usi_engine.search.layout import (
    CTL_SIZE,
    C_EDGES,
    C_NODES,
    C_NODE_LIMIT,
    C_PRIVATE,
    C_ROOT,
    C_SAMPLE_LIMIT,
    C_WASTED_EDGES,
    FLAG_FORCING,
    FLAG_LAZY,
    FLAG_TERMINAL,
    TABLE_EMPTY,
    T_COUNT,
    T_EBIAS,
    T_ECHILD,
    T_EMOVE,
    T_FIRST,
    T_NMOVES,
    T_TNODE,
    T_VALUE,
    T_WIDE,
)
from usi_engine.search.table import find_or_insert


@bare_kernel
def init_root(tree, ctl, key, graph):
    """Start an empty pool with the root (unexpanded, value 0) at node 0; in graph mode it is in the table."""
    tree[T_TNODE][:] = TABLE_EMPTY
    for i in range(CTL_SIZE):
        if i != C_NODE_LIMIT and i != C_SAMPLE_LIMIT:
            ctl[i] = 0
    if graph:
        find_or_insert(tree, ctl, key, 0.0, 0, 0)
    else:
        ctl[C_NODES] = 1
        init_node(tree, 0, 0.0, 0, key, 0)
    ctl[C_ROOT] = 0


@bare_kernel
def new_child(tree, ctl, key, value, cflags, graph, depth):
    """The node of a fresh child (unexpanded, `value`), -1 when the pool is full. Graph mode shares a
    non-terminal child through the table (find_or_insert); a terminal child is a private node, because
    terminals such as repetitions depend on the path (docs/search.md); tree mode always makes a new node."""
    if graph and not cflags & FLAG_TERMINAL:
        return find_or_insert(tree, ctl, key, value, depth, cflags & (FLAG_LAZY | FLAG_FORCING))
    c = alloc(ctl, C_NODES, 1, tree[T_VALUE].shape[0])
    if c >= 0:
        if graph:
            init_node(tree, c, value, FLAG_TERMINAL, key, depth)
        else:
            init_node(tree, c, value, cflags & (FLAG_TERMINAL | FLAG_LAZY | FLAG_FORCING), 0, depth)
        if graph:
            atomic_add(ctl, C_PRIVATE, 1)
    return c


@bare_kernel
def attach_children(tree, ctl, v, n, n_moves, moves, values, cflags, keys, graph, child_depth, logp):
    """Allocate and write v's n entered children and reserve the edges of all its n_moves moves (not yet
    published: the caller stores v's state); moves[n:n_moves] are the moves progressive widening may enter
    later, in that order (their edges have child -1; n_moves = n without widening); under widening each
    edge keeps its move's log prior logp[i] (T_EBIAS, select_softmax's progressive bias). Tree mode: n fresh
    nodes. Graph mode: non-terminal children are shared through the table; terminal children are private
    nodes (new_child). Returns False when the pool is full; the edges reserved by the failed attempt are
    counted in C_WASTED_EDGES (tree mode reserves the edges and all n nodes up front, so no node is wasted;
    graph-mode nodes created before the failure stay valid, reachable through the table)."""
    emove = tree[T_EMOVE]
    echild = tree[T_ECHILD]
    capacity = tree[T_VALUE].shape[0]
    ebase = alloc(ctl, C_EDGES, n_moves, emove.shape[0])
    if ebase < 0:
        return False
    if not graph:
        nbase = alloc(ctl, C_NODES, n, capacity)
        if nbase < 0:
            atomic_add(ctl, C_WASTED_EDGES, n_moves)
            return False
        for i in range(n):
            init_node(
                tree, nbase + i, values[i], cflags[i] & (FLAG_TERMINAL | FLAG_LAZY | FLAG_FORCING), 0, child_depth
            )
            emove[ebase + i] = moves[i]
            echild[ebase + i] = nbase + i
    else:
        for i in range(n):
            c = new_child(tree, ctl, keys[i], values[i], cflags[i], True, child_depth)
            if c < 0:
                atomic_add(ctl, C_WASTED_EDGES, n_moves)
                return False
            emove[ebase + i] = moves[i]
            echild[ebase + i] = c
    for i in range(n, n_moves):
        emove[ebase + i] = moves[i]
        echild[ebase + i] = -1
    tree[T_FIRST][v] = ebase
    tree[T_COUNT][v] = n
    if tree[T_NMOVES].shape[0] > 1:
        tree[T_NMOVES][v] = n_moves
        tree[T_WIDE][v] = n
        ebias = tree[T_EBIAS]
        for i in range(n_moves):
            ebias[ebase + i] = logp[i]
    return True

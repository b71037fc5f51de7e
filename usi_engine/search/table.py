"""The graph mode's key table (seed 002): position key -> node, open addressing, lock-free inserts
(find_or_insert), rebuilt after a reuse or prune moved the nodes (rebuild_table); table_slot, its hash,
also indexes RAVE's edge maps."""

import numpy as np

from usi_engine.jit import bare_kernel
from usi_engine.search.alloc import alloc, init_node
from usi_engine.search.atomics import atomic_add, atomic_cas, atomic_load, atomic_store
from usi_engine.search.layout import (
    C_NODES,
    C_PRIVATE,
    C_TABLE,
    FLAG_TERMINAL,
    TABLE_BUSY,
    TABLE_EMPTY,
    T_FLAGS,
    T_KEY,
    T_TKEY,
    T_TNODE,
    T_VALUE,
)
from usi_engine.search.rng import mix64


@bare_kernel
def table_slot(key, mask):
    return np.int64(mix64(np.uint64(key)) & np.uint64(mask))


@bare_kernel
def find_or_insert(tree, ctl, key, value, depth, flags):
    """Node of position `key` in the graph table, created (unexpanded, `value`, `flags`) if absent; -1 when
    the pool is full. Lock-free: a slot is claimed by CAS (EMPTY -> BUSY), the node is written, the key is
    stored and the node index is published with a release store; readers spin on BUSY slots."""
    tkey = tree[T_TKEY]
    tnode = tree[T_TNODE]
    mask = tnode.shape[0] - 1
    s = table_slot(key, mask)
    while True:
        nd = atomic_load(tnode, s)
        if nd == TABLE_EMPTY:
            if atomic_cas(tnode, s, TABLE_EMPTY, TABLE_BUSY) != TABLE_EMPTY:
                continue
            c = alloc(ctl, C_NODES, 1, tree[T_VALUE].shape[0])
            if c < 0:
                atomic_store(tnode, s, TABLE_EMPTY)
                return -1
            init_node(tree, c, value, flags, key, depth)
            tkey[s] = key
            atomic_store(tnode, s, c)
            atomic_add(ctl, C_TABLE, 1)
            return c
        if nd == TABLE_BUSY:
            continue
        if tkey[s] == key:
            return nd
        s = (s + 1) & mask


@bare_kernel
def rebuild_table(tree, ctl, n_nodes):
    """Clear the graph table and re-insert every non-terminal node below n_nodes; count private nodes."""
    tnode = tree[T_TNODE]
    tkey = tree[T_TKEY]
    tnode[:] = TABLE_EMPTY
    mask = tnode.shape[0] - 1
    ctl[C_TABLE] = 0
    ctl[C_PRIVATE] = 0
    for c in range(n_nodes):
        if tree[T_FLAGS][c] & FLAG_TERMINAL:
            ctl[C_PRIVATE] += 1
            continue
        s = table_slot(tree[T_KEY][c], mask)
        while tnode[s] != TABLE_EMPTY:
            s = (s + 1) & mask
        tkey[s] = tree[T_KEY][c]
        tnode[s] = c
        ctl[C_TABLE] += 1

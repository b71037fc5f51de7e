"""Pool allocation: reserving consecutive node or edge slots against a ctl counter (alloc), and writing a
fresh node into a slot (init_node)."""

from usi_engine.jit import bare_kernel
from usi_engine.search.atomics import atomic_cas, atomic_load
from usi_engine.search.layout import T_COUNT, T_DEPTH, T_FIRST, T_FLAGS, T_KEY, T_STATE, T_VALUE, UNEXPANDED


@bare_kernel
def alloc(ctl, counter, k, capacity):
    """Reserve k consecutive slots of a pool whose use is counted in ctl[counter]; -1 when it would not fit
    (the counter never passes the capacity, so pool accounting stays exact)."""
    while True:
        old = atomic_load(ctl, counter)
        if old + k > capacity:
            return -1
        if atomic_cas(ctl, counter, old, old + k) == old:
            return old


@bare_kernel
def init_node(tree, c, value, flags, key, depth):
    """Write a fresh, unexpanded node into slot c (published later by the writer)."""
    tree[T_VALUE][c] = value
    tree[T_FIRST][c] = -1
    tree[T_COUNT][c] = 0
    tree[T_KEY][c] = key
    tree[T_FLAGS][c] = flags
    tree[T_DEPTH][c] = depth
    tree[T_STATE][c] = UNEXPANDED

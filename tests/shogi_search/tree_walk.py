"""Walking a searched shogi tree with a Board that follows it (the lazy and deep-leaf expansion tests)."""

from usi_engine.search import layout
from usi_engine.shogi.sfen import move_to_usi


def unexpanded_nodes(t, board, node=0, depth=0):
    """Yields (node, depth) of every unexpanded node below node (tree t; a tree, not a graph) with board at that
    node's position meanwhile; board is back at node's position when the walk ends. Asserts on the way that no
    expanded node is still lazy (every expanded node was refined first)."""
    expanded = (t[layout.T_STATE][node] & layout.PHASE_MASK) == layout.EXPANDED
    assert not (expanded and t[layout.T_FLAGS][node] & layout.FLAG_LAZY)
    if not expanded:
        yield node, depth
        return
    f = t[layout.T_FIRST][node]
    for e in range(f, f + t[layout.T_COUNT][node]):
        board.push_usi(move_to_usi(int(t[layout.T_EMOVE][e])))
        yield from unexpanded_nodes(t, board, int(t[layout.T_ECHILD][e]), depth + 1)
        board.pop()

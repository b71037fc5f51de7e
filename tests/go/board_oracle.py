"""A plain flood-fill reading of a Go board for the tests' independent oracles (no kernel code)."""

from usi_engine.go import layout as L


def block(board, w: int, p: int) -> tuple[set, set]:
    """(stones, liberties) of the block at point p of a padded board (stride w)."""
    c = board[p]
    stones, libs, todo = {p}, set(), [p]
    while todo:
        q = todo.pop()
        for r in (q + 1, q - 1, q + w, q - w):
            if board[r] == L.EMPTY:
                libs.add(r)
            elif board[r] == c and r not in stones:
                stones.add(r)
                todo.append(r)
    return stones, libs

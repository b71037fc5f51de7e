"""Ladder reading for the RAVE prior (numba): does an atari escape run into a working ladder?

A block in atari that extends to exactly two liberties can often be chased by successive ataris (a ladder)
until it is captured at the edge; random playouts almost never play such a chase out, so the tree sees the
extension as a rescue while a strong opponent captures the stones. Pachi prunes such escapes from its tree
("prune_ladders" in its prior); here the reader lowers their prior (playout.PRIOR_LADDERED).

The reader works on a plain copy of the board (EMPTY/BLACK/WHITE/BORDER per point, the padded layout of
layout.py) and finds blocks and their liberties with the rules' flood fill (board.flood_block). The attacker
tries both liberties of the two-liberty block: its stone must not be capturable at once, the defender must not
be able to capture an attacking block in atari (a neighbour of its block, or one whose last liberty is the
extension point); then the defender extends: no liberty left or one = captured, three or more = escaped, two =
the chase goes on. Captures the chase itself would make are not played out: every approximation errs towards
"escaped", the prior without ladder reading.
"""

import numpy as np
from numba import njit

from usi_engine.go.board import flood_block
from usi_engine.go.layout import BOARD_CAP, EMPTY
from usi_engine.jit import bare_kernel, counted_kernel

MAX_LADDER_PLIES = 120  # a chase longer than this counts as escaped (a 19x19 ladder is < 2 * 19 * 2 plies)
# scratch rows: marks and flood stack of the liberty count, marks and stones of the defender's block, liberties
S_MARK, S_STACK, S_BMARK, S_BLOCK, S_LIBS = range(5)
S_ROWS = 5


@bare_kernel
def liberties(board, w, s, sc, stamp, cap):
    """Distinct liberties of the block of stone s, counting stops after cap + 1; found ones in sc[S_LIBS], in the
    order of the block's stones (board.flood_block) and their neighbours."""
    mark, stones, out = sc[S_MARK], sc[S_STACK], sc[S_LIBS]
    stamp[0] += 1
    t = stamp[0]
    n, _, _ = flood_block(board, w, s, mark, t, stones, -1)
    k = 0
    for j in range(n):
        for d in (1, -1, w, -w):
            r = stones[j] + d
            if board[r] == EMPTY and mark[r] != t:
                mark[r] = t
                out[k] = r
                k += 1
                if k > cap:
                    return k
    return k


@bare_kernel
def _can_capture_next_to(board, w, s, ext, sc, stamp):
    """The defender (block of s, extending at ext) can capture an attacking block in atari: one next to its
    block, or one whose last liberty is ext."""
    o = 3 - board[s]
    for d in (1, -1, w, -w):
        if board[ext + d] == o and liberties(board, w, ext + d, sc, stamp, 1) <= 1:
            return True
    block = sc[S_BLOCK]
    stamp[1] += 1
    n, _, _ = flood_block(board, w, s, sc[S_BMARK], stamp[1], block, -1)
    for j in range(n):
        for d in (1, -1, w, -w):
            r = block[j] + d
            if board[r] == o and liberties(board, w, r, sc, stamp, 1) <= 1:
                return True
    return False


@njit(cache=True, nogil=True)
def _chase(board, w, s, sc, stamp):
    """The block of s has exactly two liberties and its opponent moves: True when successive ataris capture
    it. Depth-first over the attacker's two choices per step with an explicit stack (numba cannot load a
    self-recursive function from its cache); board is scratch, left as it is on success."""
    c = board[s]
    o = 3 - c
    frames = np.zeros((MAX_LADDER_PLIES // 2 + 2, 3), np.int64)  # per chase step: liberty 1, liberty 2, branch
    liberties(board, w, s, sc, stamp, 2)
    frames[0, 0], frames[0, 1], frames[0, 2] = sc[S_LIBS, 0], sc[S_LIBS, 1], 0
    depth = 0
    while depth >= 0:
        k = frames[depth, 2]
        if k >= 2:  # both ataris of this step fail: take back the parent's branch and try its next one
            depth -= 1
            if depth >= 0:
                j = frames[depth, 2]
                board[frames[depth, j]] = EMPTY
                board[frames[depth, 1 - j]] = EMPTY
                frames[depth, 2] = j + 1
            continue
        a, b = frames[depth, k], frames[depth, 1 - k]
        board[a] = o
        if liberties(board, w, a, sc, stamp, 1) >= 2 and not _can_capture_next_to(board, w, s, b, sc, stamp):
            board[b] = c
            n = liberties(board, w, s, sc, stamp, 2)
            if n <= 1:
                return True
            if n == 2 and 2 * (depth + 1) <= MAX_LADDER_PLIES:
                depth += 1
                frames[depth, 0], frames[depth, 1], frames[depth, 2] = sc[S_LIBS, 0], sc[S_LIBS, 1], 0
                continue
            board[b] = EMPTY
        board[a] = EMPTY
        frames[depth, 2] = k + 1
    return False


@counted_kernel
def escape_is_laddered(board, w, p, c):
    """c extends at the empty point p (next to its block in atari, giving it exactly two liberties): can the
    opponent capture the extended block in a ladder? board is left unchanged."""
    o = 3 - c
    b = board.copy()
    sc = np.zeros((S_ROWS, BOARD_CAP), np.int64)
    stamp = np.zeros(2, np.int64)
    for d in (1, -1, w, -w):  # a capture is no escape into a ladder (and the count below ignores captures)
        if b[p + d] == o and liberties(b, w, p + d, sc, stamp, 1) <= 1:
            return False
    b[p] = c
    if liberties(b, w, p, sc, stamp, 2) != 2:
        return False
    return _chase(b, w, p, sc, stamp)

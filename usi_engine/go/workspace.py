"""The playout board (numba): a Go board with incremental block structures that playouts play on.

A workspace (``new_workspace()``: int64 ``[WS_ROWS, BOARD_CAP]``, one per thread) holds, after ``_setup`` copied
the board of a ``pos`` into it:
- blocks as circular linked lists (``next``) with a ``head`` per stone; per head the stone count
  and *pseudo-liberties*: the count, sum and sum of squares of liberty points, one entry per
  (stone, empty neighbour) adjacency. A block is in atari iff all its pseudo-liberties are the same
  point, i.e. ``count * sum_sq == sum**2`` (Cauchy-Schwarz equality), and that point is
  ``sum / count``: O(1) atari tests without liberty sets.
- the empty points in an array with its inverse index, for O(1) random sampling and removal.
- the row ``R_STACK``: _setup's flood stack, free while a playout plays (the tactics of tactics.py keep their
  candidates and regions there; run_playout marks blocks in seki there at the end).
- the rows of the softmax playouts (usi_engine/go/softplayout.py, only kept up when its policy bit is on; _setup
  leaves them alone): ``R_CODE`` the 3x3 code of every point, ``R_GAMMA_B`` / ``R_GAMMA_W`` the gamma of each empty
  point for Black / White to move, and their sums in ``ws[R_META, 1]`` / ``ws[R_META, 2]``.

The kernels here place stones (captures, merges, the simple-ko point) and answer the questions every playout rule
asks: is a block in atari, how many liberties would a move leave, is a point an own eye, may the random rule
play a point. The policy that chooses the moves is usi_engine/go/playout.py's.
"""

import numpy as np

from usi_engine.go.layout import BLACK, BOARD, BOARD_CAP, BORDER, EMPTY, SIZE, STRIDE, WHITE
from usi_engine.jit import bare_kernel, counted_kernel

R_BOARD, R_HEAD, R_NEXT, R_LIBS, R_LSUM, R_LSUM2, R_GSIZE, R_EMPTY, R_EIDX, R_STACK, R_OWNER = range(11)
R_META = 11  # [0] = number of empty points; [1], [2] the softmax playouts' gamma totals for Black, White to move
R_CODE, R_GAMMA_B, R_GAMMA_W = 12, 13, 14
WS_ROWS = 15


def new_workspace() -> np.ndarray:
    """Scratch space for one thread's playouts."""
    return np.zeros((WS_ROWS, BOARD_CAP), dtype=np.int64)


@bare_kernel
def _pseudo_libs(board, w, s):
    """Count, sum and sum of squares of the empty neighbours of s (its pseudo-liberties)."""
    nl = 0
    sl = 0
    sl2 = 0
    for d in (1, -1, w, -w):
        q = s + d
        if board[q] == EMPTY:
            nl += 1
            sl += q
            sl2 += q * q
    return nl, sl, sl2


@counted_kernel
def _setup(pos, ws):
    """Copy pos's board into ws and build blocks, pseudo-liberties and the empty-point list."""
    size = pos[SIZE]
    w = pos[STRIDE]
    board, head, nxt = ws[R_BOARD], ws[R_HEAD], ws[R_NEXT]
    libs, lsum, lsum2, gsize = ws[R_LIBS], ws[R_LSUM], ws[R_LSUM2], ws[R_GSIZE]
    empties, eidx, stack = ws[R_EMPTY], ws[R_EIDX], ws[R_STACK]
    board[:] = pos[BOARD : BOARD + BOARD_CAP]
    head[:] = 0
    n_empty = 0
    for y in range(size):
        for x in range(size):
            p = (y + 1) * w + x
            c = board[p]
            if c == EMPTY:
                empties[n_empty] = p
                eidx[p] = n_empty
                n_empty += 1
            elif head[p] == 0:
                head[p] = p
                stack[0] = p
                n = 1
                i = 0
                nl = 0
                sl = 0
                sl2 = 0
                prev = p
                while i < n:
                    s = stack[i]
                    i += 1
                    nxt[prev] = s
                    prev = s
                    a, b, b2 = _pseudo_libs(board, w, s)
                    nl += a
                    sl += b
                    sl2 += b2
                    for d in (1, -1, w, -w):
                        q = s + d
                        if board[q] == c and head[q] == 0:
                            head[q] = p
                            stack[n] = q
                            n += 1
                nxt[prev] = p
                libs[p], lsum[p], lsum2[p], gsize[p] = nl, sl, sl2, n
    ws[R_META, 0] = n_empty


@bare_kernel
def _in_atari(ws, g):
    n = ws[R_LIBS, g]
    s = ws[R_LSUM, g]
    return n > 0 and n * ws[R_LSUM2, g] == s * s


@bare_kernel
def _is_own_eye(board, w, p, c):
    """p is an eye-like point of colour c: own/border neighbours and at most one opponent diagonal
    (none on the edge)."""
    return _eyelike(board, w, p, c) and not _falsified(board, w, p, c)


@bare_kernel
def _eyelike(board, w, p, c):
    """Every neighbour of the empty point p is c's stone or the edge (Pachi's board_is_eyelike)."""
    for d in (1, -1, w, -w):
        v = board[p + d]
        if v != c and v != BORDER:
            return False
    return True


@bare_kernel
def _falsified(board, w, p, c):
    """An eye of colour c at p would be false by its diagonals: two of them hold opponent stones, or one does and
    another is off the board (Pachi's board_is_false_eyelike)."""
    bad = 0
    edge = False
    o = 3 - c
    for d in (w + 1, w - 1, -w + 1, -w - 1):
        v = board[p + d]
        if v == o:
            bad += 1
        elif v == BORDER:
            edge = True
    return bad + (1 if edge else 0) >= 2


@bare_kernel
def _libs_after(ws, w, p, c):
    """Distinct liberties, capped at 2, of c's block after c plays the empty point p; 2 when the
    move captures. Walks the joined own blocks only when p itself has fewer than two liberties."""
    board, head, nxt = ws[R_BOARD], ws[R_HEAD], ws[R_NEXT]
    o = 3 - c
    found = 0
    joins = False
    for d in (1, -1, w, -w):
        q = p + d
        v = board[q]
        if v == EMPTY:
            if found == 0:
                found = q
            elif q != found:
                return 2
        elif v == c:
            joins = True
        elif v == o and _in_atari(ws, head[q]):
            return 2
    if joins:
        for d in (1, -1, w, -w):
            q = p + d
            if board[q] == c:
                h = head[q]
                s = h
                while True:
                    for d2 in (1, -1, w, -w):
                        r = s + d2
                        if board[r] == EMPTY and r != p and r != found:
                            if found != 0:
                                return 2
                            found = r
                    s = nxt[s]
                    if s == h:
                        break
    return 1 if found != 0 else 0


@bare_kernel
def _random_ok(ws, w, p, c, ko):
    """Stone at empty point p is a move the random policy may play: legal under playout rules (no
    suicide, simple ko) and not a self-atari of a block of two or more stones. Single-stone
    self-ataris (throw-ins, nakade) stay allowed; seki liberties stay unfilled."""
    if p == ko:
        return False
    n = _libs_after(ws, w, p, c)
    if n != 1:
        return n == 2
    board = ws[R_BOARD]
    for d in (1, -1, w, -w):
        if board[p + d] == c:
            return False
    return True


@bare_kernel
def _remove_block(ws, w, g):
    """Capture block g: empty its stones and give their points back as liberties to neighbours."""
    board, head, nxt = ws[R_BOARD], ws[R_HEAD], ws[R_NEXT]
    empties, eidx = ws[R_EMPTY], ws[R_EIDX]
    n_empty = ws[R_META, 0]
    s = g
    n = 0
    while True:
        board[s] = EMPTY
        empties[n_empty] = s
        eidx[s] = n_empty
        n_empty += 1
        n += 1
        s = nxt[s]
        if s == g:
            break
    ws[R_META, 0] = n_empty
    while True:
        for d in (1, -1, w, -w):
            q = s + d
            v = board[q]
            if v == BLACK or v == WHITE:
                h = head[q]
                ws[R_LIBS, h] += 1
                ws[R_LSUM, h] += s
                ws[R_LSUM2, h] += s * s
        s = nxt[s]
        if s == g:
            break
    return n


@bare_kernel
def _merge(ws, a, b):
    """Join blocks with heads a and b (the smaller one is relabelled); returns the new head."""
    head, nxt, gsize = ws[R_HEAD], ws[R_NEXT], ws[R_GSIZE]
    if gsize[a] < gsize[b]:
        a, b = b, a
    s = b
    while True:
        head[s] = a
        s = nxt[s]
        if s == b:
            break
    na = nxt[a]
    nxt[a] = nxt[b]
    nxt[b] = na
    gsize[a] += gsize[b]
    ws[R_LIBS, a] += ws[R_LIBS, b]
    ws[R_LSUM, a] += ws[R_LSUM, b]
    ws[R_LSUM2, a] += ws[R_LSUM2, b]
    return a


@bare_kernel
def _play(ws, w, p, c):
    """Place a legal stone of c at p, merge and capture; returns the new simple-ko point (0 none)."""
    board, head, nxt = ws[R_BOARD], ws[R_HEAD], ws[R_NEXT]
    empties, eidx = ws[R_EMPTY], ws[R_EIDX]
    n_empty = ws[R_META, 0] - 1
    i = eidx[p]
    last = empties[n_empty]
    empties[i] = last
    eidx[last] = i
    ws[R_META, 0] = n_empty
    board[p] = c
    head[p] = p
    nxt[p] = p
    ws[R_GSIZE, p] = 1
    nl, sl, sl2 = _pseudo_libs(board, w, p)
    for d in (1, -1, w, -w):
        q = p + d
        v = board[q]
        if v == BLACK or v == WHITE:
            h = head[q]
            ws[R_LIBS, h] -= 1
            ws[R_LSUM, h] -= p
            ws[R_LSUM2, h] -= p * p
    ws[R_LIBS, p], ws[R_LSUM, p], ws[R_LSUM2, p] = nl, sl, sl2
    g = p
    for d in (1, -1, w, -w):
        q = p + d
        if board[q] == c and head[q] != g:
            g = _merge(ws, g, head[q])
    o = 3 - c
    captured = 0
    cap_at = 0
    for d in (1, -1, w, -w):
        q = p + d
        if board[q] == o and ws[R_LIBS, head[q]] == 0:
            captured += _remove_block(ws, w, head[q])
            cap_at = q
    if captured == 1 and ws[R_GSIZE, g] == 1 and ws[R_LIBS, g] == 1:
        return cap_at
    return 0


@bare_kernel
def _capture_next_to(ws, w, g, ko):
    """Liberty of an opponent block in atari touching block g (a capture that saves g), or 0."""
    board, head, nxt = ws[R_BOARD], ws[R_HEAD], ws[R_NEXT]
    o = 3 - board[g]
    s = g
    while True:
        for d in (1, -1, w, -w):
            q = s + d
            if board[q] == o:
                h = head[q]
                if _in_atari(ws, h):
                    lib = ws[R_LSUM, h] // ws[R_LIBS, h]
                    if lib != ko:
                        return lib
        s = nxt[s]
        if s == g:
            return 0

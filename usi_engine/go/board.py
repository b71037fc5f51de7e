"""Go rules on the ``pos`` array (layout in usi_engine/go/layout.py): legality, do/undo, keys, scoring.

Rules: captures, suicide forbidden unless ``pos[SUICIDE_OK]`` (then multi-stone suicide removes the
own group, Tromp-Taylor style; single-stone suicide never changes the board and stays illegal),
superko per ``pos[KO_RULE]`` (positional by default), pass, area scoring with komi.

Superko: ``pos`` keeps the board Zobrist key of every earlier position in its history. A candidate
move's resulting key is computed without touching the board (captures found by flood fill) and
compared with the history. A board can only recur if stones were removed since its earlier
occurrence (otherwise the stone count only grew), so a non-capturing move is compared only with
positions up to the last capture; a capturing move with all of them.

Undo restores exactly from ``pos`` alone (no replay): the history entry holds the header of the
earlier position and the capture stack holds every removed stone. This is O(stones changed) and
needs no snapshot of the whole board per ply.

These kernels are for the tree and the Python API; playouts use their own incremental group
structures (usi_engine/go/playout.py).
"""

import numpy as np
from numba import njit

from usi_engine.go.layout import (
    BLACK,
    BOARD,
    BOARD_CAP,
    BORDER,
    CAPTURE_COLOUR_SHIFT,
    CAPTURE_POINT_MASK,
    CAP_TOP,
    EMPTY,
    HIST,
    HIST_CAP,
    HIST_STRIDE,
    H_CAPTOP,
    H_KEY,
    H_KO,
    H_MOVE,
    H_PASSES,
    H_SIDE,
    KEY,
    KO,
    KOMI_MILLI,
    KO_RULE,
    KO_SIMPLE,
    KO_SITUATIONAL,
    PASS,
    PASSES,
    PASS_KEY,
    PLY,
    SCRATCH_LEN,
    SIDE,
    SIDE_KEY,
    SIZE,
    STRIDE,
    SUICIDE_OK,
    WHITE,
    ZOBRIST,
)
from usi_engine.jit import bare_kernel

# _eval_move status codes
LEGAL, OCCUPIED, SUICIDE, KO_BAN, SUPERKO = 0, 1, 2, 3, 4
STATUS_TEXT = ("legal", "occupied", "suicide", "ko", "superko")


@bare_kernel
def flood_block(board, w, start, mark, stamp, stack, except_pt):
    """Mark the block containing `start` with `stamp`, its stones in stack[:n] in flood order (breadth first,
    neighbours in the order 1, -1, w, -w). board is a padded board (this module's or a plain copy of one).

    Returns (n, has_liberty, key_xor): has_liberty ignores the point `except_pt` (the point about
    to be played; -1: none), key_xor is the XOR of the block's Zobrist keys. The ladder reader
    (ladder.py) floods its blocks with it too."""
    colour = board[start]
    mark[start] = stamp
    stack[0] = start
    n = 1
    i = 0
    has_lib = False
    key_xor = np.int64(0)
    while i < n:
        s = stack[i]
        i += 1
        key_xor ^= ZOBRIST[colour, s]
        for d in (1, -1, w, -w):
            q = s + d
            v = board[q]
            if v == EMPTY:
                if q != except_pt:
                    has_lib = True
            elif v == colour and mark[q] != stamp:
                mark[q] = stamp
                stack[n] = q
                n += 1
    return n, has_lib, key_xor


@bare_kernel
def _last_capture_ply(pos):
    """Largest ply i < PLY whose move removed stones, -1 if none did."""
    top = pos[CAP_TOP]
    for i in range(pos[PLY] - 1, -1, -1):
        before = pos[HIST + HIST_STRIDE * i + H_CAPTOP]
        if before < top:
            return i
        top = before
    return -1


@bare_kernel
def _repeats(pos, key, side_after, last_j):
    """Does board key `key` (with `side_after` to move) repeat a position 0..last_j under the ko rule?"""
    rule = pos[KO_RULE]
    if rule == KO_SIMPLE:
        return False
    for j in range(last_j + 1):
        e = HIST + HIST_STRIDE * j
        if pos[e + H_KEY] == key and (rule != KO_SITUATIONAL or pos[e + H_SIDE] == side_after):
            return True
    return False


@bare_kernel
def _eval_move(pos, p, mark, stack, stamp, last_cap):
    """Legality of a stone at p for the side to move, without changing the board.

    `last_cap` is _last_capture_ply(pos) (passed in so gen_moves computes it once).
    Returns (status, stamp): status is LEGAL/OCCUPIED/SUICIDE/KO_BAN/SUPERKO; stamp is the next
    free mark stamp."""
    board = pos[BOARD : BOARD + BOARD_CAP]
    if board[p] != EMPTY:
        return OCCUPIED, stamp
    if p == pos[KO]:
        return KO_BAN, stamp
    w = pos[STRIDE]
    c = pos[SIDE]
    o = 3 - c
    base = stamp
    key = pos[KEY] ^ ZOBRIST[c, p]
    own_xor = np.int64(0)
    liberty = False
    captured = False
    has_own = False
    for d in (1, -1, w, -w):
        q = p + d
        v = board[q]
        if v == EMPTY:
            liberty = True
        elif (v == c or v == o) and mark[q] <= base:
            stamp += 1
            n, has_lib, kx = flood_block(board, w, q, mark, stamp, stack, p)
            if v == o:
                if not has_lib:
                    key ^= kx
                    captured = True
            else:
                has_own = True
                own_xor ^= kx
                if has_lib:
                    liberty = True
    if not (liberty or captured):
        if pos[SUICIDE_OK] == 0 or not has_own:
            return SUICIDE, stamp + 1
        key = pos[KEY] ^ own_xor  # the new stone and its neighbours all come off
        captured = True
    last_j = pos[PLY] - 1 if captured else last_cap
    if _repeats(pos, key, o, last_j):
        return SUPERKO, stamp + 1
    return LEGAL, stamp + 1


@bare_kernel
def move_status(pos, move):
    """LEGAL or the reason a move is illegal for the side to move (PASS is always legal)."""
    if move == PASS:
        return LEGAL
    if move <= 0 or move >= BOARD_CAP:
        return OCCUPIED
    s0 = pos.shape[0] - SCRATCH_LEN  # the flood scratch (layout.py): stamp, mark, stack
    mark, stack = pos[s0 + 1 : s0 + 1 + BOARD_CAP], pos[s0 + 1 + BOARD_CAP : s0 + SCRATCH_LEN]
    status, stamp = _eval_move(pos, move, mark, stack, pos[s0], _last_capture_ply(pos))
    pos[s0] = stamp
    return status


@bare_kernel
def gen_moves(pos, out_moves):
    """Legal moves of the side to move (stone moves in point order, then PASS); returns the count."""
    n_side = pos[SIZE]
    w = pos[STRIDE]
    s0 = pos.shape[0] - SCRATCH_LEN  # the flood scratch (layout.py): stamp, mark, stack
    mark, stack = pos[s0 + 1 : s0 + 1 + BOARD_CAP], pos[s0 + 1 + BOARD_CAP : s0 + SCRATCH_LEN]
    last_cap = _last_capture_ply(pos)
    stamp = pos[s0]
    n = 0
    for y in range(n_side):
        row = (y + 1) * w
        for x in range(n_side):
            p = row + x
            if pos[BOARD + p] != EMPTY:
                continue
            status, stamp = _eval_move(pos, p, mark, stack, stamp, last_cap)
            if status == LEGAL:
                out_moves[n] = p
                n += 1
    pos[s0] = stamp
    out_moves[n] = PASS
    return n + 1


@bare_kernel
def _remove_block(pos, board, stones, n, colour):
    """Lift stones[:n] of `colour`, pushing them on the capture stack; returns their key XOR."""
    top = pos[CAP_TOP]
    kx = np.int64(0)
    for i in range(n):
        s = stones[i]
        board[s] = EMPTY
        kx ^= ZOBRIST[colour, s]
        pos[top] = s | (colour << CAPTURE_COLOUR_SHIFT)
        top += 1
    pos[CAP_TOP] = top
    return kx


@bare_kernel
def do_move(pos, move):
    """Play `move` (assumed legal, see move_status) for the side to move and record it for undo."""
    ply = pos[PLY]
    e = HIST + HIST_STRIDE * ply
    pos[e + H_KEY] = pos[KEY]
    pos[e + H_MOVE] = move
    pos[e + H_KO] = pos[KO]
    pos[e + H_PASSES] = pos[PASSES]
    pos[e + H_SIDE] = pos[SIDE]
    pos[e + H_CAPTOP] = pos[CAP_TOP]
    c = pos[SIDE]
    if move == PASS:
        pos[PASSES] += 1
        pos[KO] = 0
    else:
        board = pos[BOARD : BOARD + BOARD_CAP]
        w = pos[STRIDE]
        o = 3 - c
        s0 = pos.shape[0] - SCRATCH_LEN  # the flood scratch (layout.py): stamp, mark, stack
        mark, stack = pos[s0 + 1 : s0 + 1 + BOARD_CAP], pos[s0 + 1 + BOARD_CAP : s0 + SCRATCH_LEN]
        board[move] = c
        key = pos[KEY] ^ ZOBRIST[c, move]
        n_captured = 0
        captured_at = 0
        base = pos[s0]  # marks above it are this move's
        stamp = base
        for d in (1, -1, w, -w):
            q = move + d
            if board[q] == o and mark[q] <= base:
                stamp += 1
                n, has_lib, _ = flood_block(board, w, q, mark, stamp, stack, -1)
                if not has_lib:
                    key ^= _remove_block(pos, board, stack, n, o)
                    n_captured += n
                    captured_at = q
        stamp += 1
        pos[s0] = stamp
        n, has_lib, _ = flood_block(board, w, move, mark, stamp, stack, -1)
        if not has_lib:  # suicide (only reached when SUICIDE_OK)
            key ^= _remove_block(pos, board, stack, n, c)
        ko = 0
        if n_captured == 1 and n == 1:
            empties = 0
            for d in (1, -1, w, -w):
                if board[move + d] == EMPTY:
                    empties += 1
            if empties == 1:
                ko = captured_at
        pos[KEY] = key
        pos[KO] = ko
        pos[PASSES] = 0
    pos[SIDE] = 3 - c
    pos[PLY] = ply + 1


@bare_kernel
def undo_move(pos):
    """Revert the last do_move exactly (board, key, ko, passes, side, capture stack)."""
    ply = pos[PLY] - 1
    e = HIST + HIST_STRIDE * ply
    move = pos[e + H_MOVE]
    before = pos[e + H_CAPTOP]
    if move != PASS:
        for i in range(before, pos[CAP_TOP]):
            entry = pos[i]
            pos[BOARD + (entry & CAPTURE_POINT_MASK)] = entry >> CAPTURE_COLOUR_SHIFT
        pos[BOARD + move] = EMPTY
    pos[CAP_TOP] = before
    pos[KEY] = pos[e + H_KEY]
    pos[KO] = pos[e + H_KO]
    pos[PASSES] = pos[e + H_PASSES]
    pos[SIDE] = pos[e + H_SIDE]
    pos[PLY] = ply


@bare_kernel
def pos_key(pos):
    """Transposition key: board colouring, side to move, simple-ko point, and a pending pass."""
    k = pos[KEY] ^ ZOBRIST[EMPTY, pos[KO]]
    if pos[SIDE] == WHITE:
        k ^= SIDE_KEY
    if pos[PASSES] > 0:
        k ^= PASS_KEY
    return k


@njit(cache=True, nogil=True)
def area_owner(board, size, owner):
    """Tromp-Taylor area ownership of a padded board: owner[p] = BLACK/WHITE for stones and for
    empty regions reaching only that colour, EMPTY for neutral points. Returns (black, white)."""
    w = size + 1
    stack = np.empty(BOARD_CAP, np.int64)
    owner[:] = BORDER
    black = 0
    white = 0
    for y in range(size):
        for x in range(size):
            p = (y + 1) * w + x
            v = board[p]
            if v != EMPTY:
                owner[p] = v
            elif owner[p] == BORDER:  # unvisited empty point: flood its region
                owner[p] = EMPTY
                stack[0] = p
                n = 1
                i = 0
                reach = 0
                while i < n:
                    s = stack[i]
                    i += 1
                    for d in (1, -1, w, -w):
                        q = s + d
                        u = board[q]
                        if u == EMPTY:
                            if owner[q] == BORDER:
                                owner[q] = EMPTY
                                stack[n] = q
                                n += 1
                        elif u != BORDER:
                            reach |= u
                if reach == BLACK or reach == WHITE:
                    for i in range(n):
                        owner[stack[i]] = reach
            if owner[p] == BLACK:
                black += 1
            elif owner[p] == WHITE:
                white += 1
    return black, white


@njit(cache=True, nogil=True)
def area_score(pos):
    """Black's area score minus White's minus komi, all stones counted alive (Tromp-Taylor)."""
    owner = np.empty(BOARD_CAP, np.int64)
    black, white = area_owner(pos[BOARD : BOARD + BOARD_CAP], pos[SIZE], owner)
    return black - white - pos[KOMI_MILLI] / 1000.0


@bare_kernel
def game_over(pos):
    """Two consecutive passes, or the history is (nearly) full: the game is scored as it stands."""
    return pos[PASSES] >= 2 or pos[PLY] >= pos[HIST_CAP] - 1

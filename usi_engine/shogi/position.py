"""Numba kernels over the shogi ``pos`` array: attacks, make/unmake, check, repetition, declaration.

See layout.py for the array layout and move packing. All kernels are ``nogil`` and cached; a thread
owns its ``pos`` (kernels may modify it temporarily and restore it before returning).
"""

import numpy as np

from usi_engine.jit import bare_kernel

from .layout import (
    BOARD,
    DEMOTE,
    DROP_BASE,
    HAND,
    HIST,
    HIST_STRIDE,
    H_CAPTURED,
    H_CHECK,
    H_KEY,
    H_MOVE,
    KEY,
    KING,
    KING_SQ,
    KNIGHT,
    MOVE_FROM_SHIFT,
    MOVE_NUMBER,
    MOVE_PROMO_BIT,
    MOVE_TO_MASK,
    PLY,
    PROMOTE,
    SIDE,
    WHITE_BIT,
)
from .tables import (
    ADJACENT_ATTACK,
    DECLARATION_POINTS,
    KNIGHT_TARGETS,
    LINE_DIR,
    NEIGHBOUR,
    OPPOSITE,
    RELATIVE_RANK,
    SLIDE,
    Z_HAND,
    Z_PIECE,
    Z_SIDE,
)

# Repetition results, from the side to move's point of view.
REP_NONE, REP_DRAW, REP_WIN, REP_LOSS = 0, 1, 2, 3
# Entering-king rules (EnteringKingRule option) and declaration results.
RULE_NONE, RULE_CSA27, RULE_CSA24, RULE_TRY = 0, 1, 2, 3
DECL_NONE, DECL_WIN, DECL_DRAW = 0, 1, 2
TRY_SQUARE = np.array([4 * 9 + 0, 4 * 9 + 8], dtype=np.int64)  # 5a for Black, 5i for White


@bare_kernel
def first_piece(pos, sq, d):
    """The first occupied square from sq (exclusive) along direction d, or -1."""
    t = NEIGHBOUR[sq, d]
    while t >= 0 and pos[BOARD + t] == 0:
        t = NEIGHBOUR[t, d]
    return t


@bare_kernel
def attacks_along(piece, from_sq, to_sq, d_from_target):
    """Whether `piece` on from_sq attacks to_sq, which lies in direction OPPOSITE[d] from it."""
    back = OPPOSITE[d_from_target]
    if NEIGHBOUR[to_sq, d_from_target] == from_sq:
        return ADJACENT_ATTACK[piece, back] == 1
    return SLIDE[piece, back] == 1


@bare_kernel
def attackers(pos, sq, by, limit):
    """Count pieces of colour `by` attacking sq, stopping at `limit`; returns (count, last square)."""
    count = 0
    last = -1
    for d in range(8):
        s = first_piece(pos, sq, d)
        if s < 0:
            continue
        p = pos[BOARD + s]
        if (p >> 4) == by and attacks_along(p, s, sq, d):
            count += 1
            last = s
            if count >= limit:
                return count, last
    knight = KNIGHT + WHITE_BIT * by
    for k in range(2):
        s = KNIGHT_TARGETS[1 - by, sq, k]
        if s >= 0 and pos[BOARD + s] == knight:
            count += 1
            last = s
            if count >= limit:
                return count, last
    return count, last


@bare_kernel
def is_attacked(pos, sq, by):
    """Whether any piece of colour `by` attacks sq."""
    return attackers(pos, sq, by, 1)[0] > 0


@bare_kernel
def in_check(pos):
    """Whether the side to move's king is attacked (False when it has no king)."""
    us = pos[SIDE]
    ksq = pos[KING_SQ + us]
    return ksq >= 0 and is_attacked(pos, ksq, 1 - us)


@bare_kernel
def pin_direction(pos, ksq, sq, us):
    """Direction from our king to sq if our piece on sq is pinned to it, else -1."""
    if ksq < 0:
        return -1
    d = LINE_DIR[ksq, sq]
    if d < 0 or first_piece(pos, ksq, d) != sq:  # not on a line from the king, or shielded
        return -1
    s = first_piece(pos, sq, d)
    if s < 0:
        return -1
    p = pos[BOARD + s]
    if (p >> 4) != us and SLIDE[p, OPPOSITE[d]] == 1:
        return d
    return -1


@bare_kernel
def history_capacity(pos):
    return (pos.shape[0] - HIST) // HIST_STRIDE


@bare_kernel
def hand_key_delta(colour, ptype, old_count, new_count):
    return Z_HAND[colour, ptype, old_count] ^ Z_HAND[colour, ptype, new_count]


@bare_kernel
def do_move(pos, move):
    """Play a legal move: update board, hands, kings, key, side, and append to the history."""
    ply = pos[PLY]
    if HIST + HIST_STRIDE * (ply + 2) > pos.shape[0]:
        raise IndexError("shogi position history is full")
    us = pos[SIDE]
    key = pos[KEY]
    to = move & MOVE_TO_MASK
    frm = (move >> MOVE_FROM_SHIFT) & 0x7F
    captured = 0
    if frm > DROP_BASE:
        ptype = frm - DROP_BASE
        piece = ptype + WHITE_BIT * us
        h = HAND + 8 * us + ptype
        count = pos[h]
        pos[h] = count - 1
        key ^= hand_key_delta(us, ptype, count, count - 1)
        pos[BOARD + to] = piece
        key ^= Z_PIECE[piece, to]
    else:
        piece = pos[BOARD + frm]
        captured = pos[BOARD + to]
        if captured != 0:
            ptype = DEMOTE[captured & 15]
            h = HAND + 8 * us + ptype
            count = pos[h]
            pos[h] = count + 1
            key ^= Z_PIECE[captured, to] ^ hand_key_delta(us, ptype, count, count + 1)
            if (captured & 15) == KING:
                pos[KING_SQ + (1 - us)] = -1
        moved = piece | PROMOTE if move & MOVE_PROMO_BIT else piece
        pos[BOARD + frm] = 0
        pos[BOARD + to] = moved
        key ^= Z_PIECE[piece, frm] ^ Z_PIECE[moved, to]
        if (piece & 15) == KING:
            pos[KING_SQ + us] = to
    entry = HIST + HIST_STRIDE * ply
    pos[entry + H_MOVE] = move
    pos[entry + H_CAPTURED] = captured
    key ^= Z_SIDE
    them = 1 - us
    pos[SIDE] = them
    pos[KEY] = key
    pos[PLY] = ply + 1
    entry += HIST_STRIDE
    pos[entry + H_KEY] = key
    ksq = pos[KING_SQ + them]
    pos[entry + H_CHECK] = 1 if ksq >= 0 and is_attacked(pos, ksq, us) else 0


@bare_kernel
def undo_move(pos):
    """Take back the last move of the history."""
    ply = pos[PLY] - 1
    entry = HIST + HIST_STRIDE * ply
    move = pos[entry + H_MOVE]
    captured = pos[entry + H_CAPTURED]
    us = 1 - pos[SIDE]
    to = move & MOVE_TO_MASK
    frm = (move >> MOVE_FROM_SHIFT) & 0x7F
    if frm > DROP_BASE:
        pos[HAND + 8 * us + frm - DROP_BASE] += 1
        pos[BOARD + to] = 0
    else:
        moved = pos[BOARD + to]
        piece = moved & ~PROMOTE if move & MOVE_PROMO_BIT else moved
        pos[BOARD + frm] = piece
        pos[BOARD + to] = captured
        if captured != 0:
            pos[HAND + 8 * us + DEMOTE[captured & 15]] -= 1
            if (captured & 15) == KING:
                pos[KING_SQ + (1 - us)] = to
        if (piece & 15) == KING:
            pos[KING_SQ + us] = frm
    pos[SIDE] = us
    pos[PLY] = ply
    pos[KEY] = pos[entry + H_KEY]


@bare_kernel
def compute_key(pos):
    """Zobrist key from scratch (board, hands, side); do_move keeps it incrementally."""
    key = 0
    for sq in range(81):
        key ^= Z_PIECE[pos[BOARD + sq], sq]
    for colour in range(2):
        for ptype in range(1, 8):
            key ^= Z_HAND[colour, ptype, pos[HAND + 8 * colour + ptype]]
    if pos[SIDE] == 1:
        key ^= Z_SIDE
    return key


@bare_kernel
def repetition(pos, occurrences):
    """Repetition state of the current position for the side to move.

    The position is a repetition when it is the `occurrences`-th time it stands in the history
    (4 for the game rule, 2 for a search that treats the first repeat as final). If over that
    span the opponent gave check with every move, the side to move wins (perpetual check loses
    for the checker); if the side to move did, it loses; otherwise it is a draw.
    """
    ply = pos[PLY]
    key = pos[KEY]
    found = 1
    start = -1
    i = ply - 2
    while i >= 0:
        if pos[HIST + HIST_STRIDE * i + H_KEY] == key:
            found += 1
            if found == occurrences:
                start = i
                break
        i -= 2
    if start < 0:
        return REP_NONE
    opponent_checked_all = True  # positions start+2, start+4, ..., ply: we were in check
    i = start + 2
    while i <= ply:
        if pos[HIST + HIST_STRIDE * i + H_CHECK] == 0:
            opponent_checked_all = False
            break
        i += 2
    if opponent_checked_all:
        return REP_WIN
    i = start + 1  # positions start+1, ..., ply-1: the opponent was in check
    while i < ply:
        if pos[HIST + HIST_STRIDE * i + H_CHECK] == 0:
            return REP_DRAW
        i += 2
    return REP_LOSS


@bare_kernel
def declaration_count(pos, colour):
    """(points, pieces) of colour for the entering-king declaration: pieces other than the king
    inside the enemy camp, and points of those plus the hand (rook/bishop family 5, others 1)."""
    points = 0
    pieces = 0
    for sq in range(81):
        p = pos[BOARD + sq]
        if p != 0 and (p >> 4) == colour and (p & 15) != KING and RELATIVE_RANK[colour, sq] < 3:
            pieces += 1
            points += DECLARATION_POINTS[p & 15]
    for ptype in range(1, 8):
        points += DECLARATION_POINTS[ptype] * pos[HAND + 8 * colour + ptype]
    return points, pieces


@bare_kernel
def try_rule_move(pos):
    """The king move of the side to move onto the opponent's king start square, or 0 if none is legal."""
    us = pos[SIDE]
    ksq = pos[KING_SQ + us]
    target = TRY_SQUARE[us]
    if ksq < 0 or ksq == target:
        return 0
    adjacent = False
    for d in range(8):
        if NEIGHBOUR[ksq, d] == target:
            adjacent = True
    occupant = pos[BOARD + target]
    if not adjacent or (occupant != 0 and (occupant >> 4) == us):
        return 0
    king = pos[BOARD + ksq]
    pos[BOARD + ksq] = 0
    safe = not is_attacked(pos, target, 1 - us)
    pos[BOARD + ksq] = king
    return target | (ksq << MOVE_FROM_SHIFT) if safe else 0


@bare_kernel
def try_reached(pos):
    """Whether the side that just moved has its king on the opponent king's start square (the try rule's win)."""
    mover = 1 - pos[SIDE]
    return pos[KING_SQ + mover] == TRY_SQUARE[mover]


@bare_kernel
def game_length(pos):
    """Plies of the game so far, counted from its start: the SFEN move number of ply 0 plus the plies played."""
    return pos[MOVE_NUMBER] + pos[PLY] - 1


@bare_kernel
def declaration(pos, rule):
    """Result of an entering-king declaration by the side to move under `rule` (RULE_*):
    DECL_WIN, DECL_DRAW (24-point rule, 24-30 points) or DECL_NONE (declaring would lose)."""
    us = pos[SIDE]
    if rule == RULE_TRY:
        return DECL_WIN if try_rule_move(pos) != 0 else DECL_NONE
    if rule != RULE_CSA27 and rule != RULE_CSA24:
        return DECL_NONE
    ksq = pos[KING_SQ + us]
    if ksq < 0 or RELATIVE_RANK[us, ksq] >= 3 or in_check(pos):
        return DECL_NONE
    points, pieces = declaration_count(pos, us)
    if pieces < 10:
        return DECL_NONE
    if rule == RULE_CSA27:
        return DECL_WIN if points >= 28 - us else DECL_NONE
    if points >= 31:
        return DECL_WIN
    return DECL_DRAW if points >= 24 else DECL_NONE

"""Strictly legal shogi move generation and perft, as numba kernels over the ``pos`` array.

Legality is decided during generation, never by make-and-test: the king never steps onto an
attacked square (tested with the king lifted off the board, so sliders see through it); a pinned
piece moves only along its pin line; in single check every non-king move must capture the checker
or interpose, in double check only the king moves; drops respect nifu and dead-piece ranks, and a
pawn drop that checkmates (uchifuzume) is refused, also when the only capturer is pinned.
"""

import numpy as np

from usi_engine.jit import bare_kernel

from .layout import (
    BISHOP,
    BOARD,
    DROP_BASE,
    HAND,
    KING,
    KING_SQ,
    KNIGHT,
    LANCE,
    MAX_MOVES,
    MOVE_FROM_SHIFT,
    MOVE_PROMO_BIT,
    MOVE_TO_MASK,
    PAWN,
    PROMOTABLE,
    ROOK,
    SIDE,
    WHITE_BIT,
)
from .position import attackers, attacks_along, do_move, first_piece, in_check, is_attacked, pin_direction, undo_move
from .tables import DISTANCE, FILE_OF, KNIGHT_TARGETS, LINE_DIR, NEIGHBOUR, RELATIVE_RANK, SLIDE, STEP, N, S


@bare_kernel
def resolves_check(ksq, checker, to):
    """Whether a non-king move to `to` answers a single check: capture or interposition."""
    if checker < 0 or to == checker:
        return True
    d = LINE_DIR[ksq, checker]
    return d >= 0 and LINE_DIR[ksq, to] == d and DISTANCE[ksq, to] < DISTANCE[ksq, checker]


@bare_kernel
def add_board_move(frm, to, piece, us, pin, ksq, checker, out, n):
    """Append the move(s) of `piece` from frm to to that are legal, with promotion choices."""
    if pin >= 0 and LINE_DIR[ksq, to] != pin:
        return n
    if not resolves_check(ksq, checker, to):
        return n
    ptype = piece & 15
    move = to | (frm << MOVE_FROM_SHIFT)
    if PROMOTABLE[ptype] == 1 and (RELATIVE_RANK[us, frm] < 3 or RELATIVE_RANK[us, to] < 3):
        out[n] = move | MOVE_PROMO_BIT
        n += 1
        rank = RELATIVE_RANK[us, to]
        if (ptype == PAWN or ptype == LANCE) and rank == 0:
            return n
        if ptype == KNIGHT and rank < 2:
            return n
    out[n] = move
    return n + 1


@bare_kernel
def gen_piece_moves(pos, sq, piece, us, ksq, checker, out, n):
    """Legal moves of our non-king piece on sq."""
    pin = pin_direction(pos, ksq, sq, us)
    for d in range(8):
        if STEP[piece, d] == 1:
            t = NEIGHBOUR[sq, d]
            if t >= 0:
                q = pos[BOARD + t]
                if q == 0 or (q >> 4) != us:
                    n = add_board_move(sq, t, piece, us, pin, ksq, checker, out, n)
        elif SLIDE[piece, d] == 1:
            t = NEIGHBOUR[sq, d]
            while t >= 0:
                q = pos[BOARD + t]
                if q != 0 and (q >> 4) == us:
                    break
                n = add_board_move(sq, t, piece, us, pin, ksq, checker, out, n)
                if q != 0:
                    break
                t = NEIGHBOUR[t, d]
    if (piece & 15) == KNIGHT:
        for k in range(2):
            t = KNIGHT_TARGETS[us, sq, k]
            if t >= 0:
                q = pos[BOARD + t]
                if q == 0 or (q >> 4) != us:
                    n = add_board_move(sq, t, piece, us, pin, ksq, checker, out, n)
    return n


@bare_kernel
def gen_king_moves(pos, ksq, us, out, n):
    """King steps to squares not attacked once the king has left ksq."""
    king = pos[BOARD + ksq]
    pos[BOARD + ksq] = 0
    for d in range(8):
        t = NEIGHBOUR[ksq, d]
        if t < 0:
            continue
        q = pos[BOARD + t]
        if q != 0 and (q >> 4) == us:
            continue
        if not is_attacked(pos, t, 1 - us):
            out[n] = t | (ksq << MOVE_FROM_SHIFT)
            n += 1
    pos[BOARD + ksq] = king
    return n


@bare_kernel
def can_capture_dropped_pawn(pos, t, them, ek):
    """Whether a piece of `them` other than the king can legally capture on t (pins respected)."""
    for d in range(8):
        s = first_piece(pos, t, d)
        if s < 0 or s == ek:
            continue
        p = pos[BOARD + s]
        if (p >> 4) != them:
            continue
        if attacks_along(p, s, t, d):
            pin = pin_direction(pos, ek, s, them)
            if pin < 0 or LINE_DIR[ek, t] == pin:
                return True
    knight = KNIGHT + WHITE_BIT * them
    for k in range(2):
        s = KNIGHT_TARGETS[1 - them, t, k]
        if s >= 0 and pos[BOARD + s] == knight:
            pin = pin_direction(pos, ek, s, them)
            if pin < 0:
                return True
    return False


@bare_kernel
def is_pawn_drop_mate(pos, us, t):
    """Whether dropping our pawn on t checkmates the enemy king (uchifuzume: then it is illegal)."""
    them = 1 - us
    ek = pos[KING_SQ + them]
    if ek < 0 or NEIGHBOUR[t, N if us == 0 else S] != ek:
        return False
    pos[BOARD + t] = PAWN + WHITE_BIT * us
    mate = True
    king = pos[BOARD + ek]
    pos[BOARD + ek] = 0
    for d in range(8):  # king escapes, including taking the pawn
        s = NEIGHBOUR[ek, d]
        if s < 0:
            continue
        q = pos[BOARD + s]
        if q != 0 and (q >> 4) == them:
            continue
        if not is_attacked(pos, s, us):
            mate = False
            break
    pos[BOARD + ek] = king
    if mate:
        mate = not can_capture_dropped_pawn(pos, t, them, ek)
    pos[BOARD + t] = 0
    return mate


@bare_kernel
def gen_drops_to(pos, us, t, hand_types, n_types, pawn_files, out, n):
    """Legal drops onto the empty square t; hand_types packs the held types, 4 bits each."""
    rank = RELATIVE_RANK[us, t]
    for i in range(n_types):
        ptype = (hand_types >> (4 * i)) & 15
        if ptype == PAWN:
            if rank == 0 or (pawn_files >> FILE_OF[t]) & 1:
                continue
            if is_pawn_drop_mate(pos, us, t):
                continue
        elif ptype == LANCE:
            if rank == 0:
                continue
        elif ptype == KNIGHT:
            if rank < 2:
                continue
        out[n] = t | ((DROP_BASE + ptype) << MOVE_FROM_SHIFT)
        n += 1
    return n


@bare_kernel
def gen_drops(pos, us, ksq, checker, pawn_files, out, n):
    """Drops: anywhere empty, or only onto the interposition squares when in single check."""
    hand_types = 0
    n_types = 0
    for ptype in range(1, 8):
        if pos[HAND + 8 * us + ptype] > 0:
            hand_types |= ptype << (4 * n_types)
            n_types += 1
    if n_types == 0:
        return n
    if checker >= 0:
        d = LINE_DIR[ksq, checker]
        if d < 0:
            return n
        t = NEIGHBOUR[ksq, d]
        while t != checker:
            n = gen_drops_to(pos, us, t, hand_types, n_types, pawn_files, out, n)
            t = NEIGHBOUR[t, d]
        return n
    for t in range(81):
        if pos[BOARD + t] == 0:
            n = gen_drops_to(pos, us, t, hand_types, n_types, pawn_files, out, n)
    return n


@bare_kernel
def gen_legal(pos, out):
    """All legal moves of the side to move into `out` (int32, length >= MAX_MOVES); returns the count."""
    us = pos[SIDE]
    ksq = pos[KING_SQ + us]
    n_checks = 0
    checker = -1
    n = 0
    if ksq >= 0:
        n_checks, checker = attackers(pos, ksq, 1 - us, 2)
        n = gen_king_moves(pos, ksq, us, out, n)
        if n_checks >= 2:
            return n
    pawn_files = 0
    for sq in range(81):
        p = pos[BOARD + sq]
        if p == 0 or (p >> 4) != us:
            continue
        ptype = p & 15
        if ptype == PAWN:
            pawn_files |= 1 << FILE_OF[sq]
        elif ptype == KING:
            continue
        n = gen_piece_moves(pos, sq, p, us, ksq, checker, out, n)
    return gen_drops(pos, us, ksq, checker, pawn_files, out, n)


@bare_kernel
def dominated(ptype, us, to):
    """Whether the plain twin of a promotable board move of `ptype` to `to` is never better than its promotion,
    so that a search leaves it out: a pawn, bishop or rook (the promoted piece keeps every move and gains
    some), or a lance to the second rank (from there it can only step to the last rank, promoting)."""
    return ptype == PAWN or ptype == BISHOP or ptype == ROOK or (ptype == LANCE and RELATIVE_RANK[us, to] == 1)


@bare_kernel
def gen_search_moves(pos, out):
    """gen_legal's moves without the dominated plain twins (`dominated`): the moves a search considers. The
    twins stay legal (a game record may contain them); every removed move's promotion remains."""
    n = gen_legal(pos, out)
    us = pos[SIDE]
    k = 0
    for i in range(n):
        m = out[i]
        frm = (m >> MOVE_FROM_SHIFT) & 0x7F
        if m & MOVE_PROMO_BIT == 0 and frm < DROP_BASE:
            to = m & MOVE_TO_MASK
            ptype = pos[BOARD + frm] & 15
            zone = RELATIVE_RANK[us, frm] < 3 or RELATIVE_RANK[us, to] < 3
            if zone and PROMOTABLE[ptype] == 1 and dominated(ptype, us, to):
                continue
        out[k] = m
        k += 1
    return k


@bare_kernel
def is_checkmate(pos, scratch):
    """In check with no legal move (scratch: int32 buffer of MAX_MOVES)."""
    return in_check(pos) and gen_legal(pos, scratch) == 0


@bare_kernel
def perft(pos, depth, buffers, bulk):
    """Leaf count of the legal-move tree of `depth` plies, making and unmaking every move.
    With `bulk`, the last ply is counted from the generator without making the moves."""
    if depth == 0:
        return 1
    moves = buffers[depth]
    n = gen_legal(pos, moves)
    if bulk and depth == 1:
        return n
    total = 0
    for i in range(n):
        do_move(pos, moves[i])
        total += perft(pos, depth - 1, buffers, bulk)
        undo_move(pos)
    return total


def perft_buffers(depth):
    """Per-ply move buffers for perft."""
    return np.zeros((depth + 1, MAX_MOVES), dtype=np.int32)

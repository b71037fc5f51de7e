"""The search's differential shogi evaluation: a child's value from its parent's and the move.

The search evaluates differentially (inc_init / inc_record / inc_value): a child's value is its parent's plus
the change of the one or two piece objects the move touched, about 4x cheaper than the full evaluation, which
stays the reference (linear.py: evaluate, eval_features). The KS and EF terms are read from the position itself
(king_terms.py: one pass over the pieces' effects), not differenced, and skipped when the weights' KS, EF, EM,
PE, KZ and KPOS blocks are all zero (flag set by inc_init, so a stack assumes fixed weights). The PP pair sums
are skipped when the caller vouches that the PP block is all zero (inc_init's pp_zero, from pp_block_zero: a
scan too long for every call), as in every shipped file.

A search path keeps one row per ply in two arrays: eacc (float64 [rows, N_EACC]) and eidx (int64
[rows, N_EIDX]). The value is kept for BOTH frames (the stm frame flips every ply) as parts:
  frame 0 (Black to move): material + PP_0 + KP(Black king, "ours") + KP(White king, "theirs")
  frame 1 (White to move): -material + PP_1 + KP(White king, "ours") + KP(Black king, "theirs")
where material is Black's weighted balance (its sign flips with the frame) and frame 1 sees every
piece index through MIRROR (rotate the square, swap the colour). A move changes one piece object
(a move or a drop) or two (a capture: the victim becomes a hand object of the mover); a king move
changes no object but its king's square. The new row stores the piece list after the move, which
objects changed (list slot, old index, new index, in frame 0) and the king squares; the frames are
computed lazily from the row below (inc_frame), so a leaf pays only its own frame and a base row
(inc_init) sums a frame in full only when some row above needs it:
  PP_f(child) = PP_f(parent) + sum over unchanged q of [pp(new, q) - pp(old, q)] (+ the pair of the
  two changed objects for a capture), KP alike with single table reads; a moved king's KP is summed
  afresh. About 4 x 38 table reads for a capture instead of 703 + 76 for a full evaluation.
The value equals evaluate() up to float rounding (summation order); tests compare the two.
"""

import numpy as np

from usi_engine.jit import bare_kernel, counted_kernel
from usi_engine.shogi.layout import (
    DEMOTE,
    DROP_BASE,
    HAND,
    KING,
    KING_SQ,
    MOVE_FROM_SHIFT,
    MOVE_PROMO_BIT,
    MOVE_TO_MASK,
    PROMOTE,
    SIDE,
    WHITE_BIT,
)

from .features import (
    FE_END,
    HAND_END,
    HAND_PER_SIDE,
    MAT_HAND,
    MAX_PIECES,
    N_KINDS,
    N_MATERIAL,
    N_PP,
    N_SQ,
    N_WEIGHTS,
    OFF_KP,
    OFF_KS,
    OFF_MATERIAL,
    OFF_PP,
    board_bp,
    collect,
    hand_bp,
    pp_index,
)
from .king_terms import king_terms, zone_blocks_used

EA_MAT = 0  # material from Black's side (frame 0 sign)
EA_PP = 1  # + f: PP sum in frame f
EA_KP = 3  # + 2 * f + c: KP sum of colour c's king in frame f
N_EACC = 7
EI_N = MAX_PIECES  # eidx[row, :n] = piece indices in frame 0; eidx[row, EI_N] = n
EI_KSQ = EI_N + 1  # + c: colour c's king square (-1 none)
EI_VALID = EI_KSQ + 2  # bit f set: frame f of this row is computed
EI_NCH = EI_VALID + 1  # changed objects of the move into this row (0, 1 or 2); BASE_ROW: none
BASE_ROW = -1
EI_CH = EI_NCH + 1  # + 3 * j: (list slot, old index, new index) of changed object j
EI_KS = EI_CH + 6  # 1 when a block from KS on (king_terms) is not all zero (else inc_value skips king_terms), 3 when
# KZ or KPOS is too (else king_terms skips them)
EI_PP = EI_KS + 1  # 1 unless the caller of inc_init vouched that the PP block is all zero (then the PP sums are 0)
EI_COUNT = EI_PP + 1  # + sq: king_terms' scratch for the effect counts on square sq while this row is evaluated
N_EIDX = EI_COUNT + N_SQ


def _mirror_table():
    """Frame-0 piece index -> the same piece's index in frame 1 (square rotated, colour swapped)."""
    m = np.empty(FE_END, dtype=np.int64)
    for rel in range(2):
        for k in range(HAND_PER_SIDE):
            m[rel * HAND_PER_SIDE + k] = (1 - rel) * HAND_PER_SIDE + k
    for kind in range(N_KINDS):
        for rel in range(2):
            for sq in range(N_SQ):
                m[HAND_END + (kind * 2 + rel) * N_SQ + sq] = HAND_END + (kind * 2 + 1 - rel) * N_SQ + N_SQ - 1 - sq
    return m


MIRROR = _mirror_table()


def eval_stack(rows):
    """Fresh (eacc, eidx) arrays for an incremental evaluation path of `rows` plies."""
    return np.zeros((rows, N_EACC), dtype=np.float64), np.zeros((rows, N_EIDX), dtype=np.int64)


@bare_kernel
def kp_base(ksq, colour, frame):
    """Offset of the KP row of colour's king on ksq (board square) in the given frame."""
    if frame == 1:
        ksq = N_SQ - 1 - ksq
    table = 0 if colour == frame else 1
    return OFF_KP + (table * N_SQ + ksq) * FE_END


@bare_kernel
def kp_sum(w, eidx, row, colour, frame):
    """KP sum of colour's king over the piece list of row, in frame (0 when the king is missing)."""
    ksq = eidx[row, EI_KSQ + colour]
    if ksq < 0:
        return 0.0
    base = kp_base(ksq, colour, frame)
    s = 0.0
    for i in range(eidx[row, EI_N]):
        q = eidx[row, i]
        s += w[base + (MIRROR[q] if frame == 1 else q)]
    return s


def pp_block_zero(w) -> bool:
    """True when the PP block of w is all zero (every shipped weight file so far): the incremental
    evaluation may then skip its pair sums (inc_init's pp_zero). A scan of 9.4 MB: once per weights, not
    per search call."""
    return not np.any(w[OFF_PP : OFF_PP + N_PP])


@counted_kernel
def inc_init(pos, w, eacc, eidx, row, pp_zero):
    """Set up `row` as a base row for pos (piece list, kings, material); its frames are summed in
    full when first needed (inc_frame). pp_zero: the caller knows that w's PP block is all zero
    (pp_block_zero); the rows from this one then skip the PP sums, ~40 % of a quiescence node's time."""
    scratch = np.empty(MAX_PIECES + N_MATERIAL, dtype=np.int64)
    mat = scratch[MAX_PIECES:]
    n, _, _ = collect(pos, 0, eidx[row, :MAX_PIECES], mat)
    eidx[row, EI_N] = n
    for c in range(2):
        eidx[row, EI_KSQ + c] = pos[KING_SQ + c]
    m = 0.0
    for t in range(N_MATERIAL):
        m += mat[t] * w[OFF_MATERIAL + t]
    eacc[row, EA_MAT] = m
    eidx[row, EI_NCH] = BASE_ROW
    eidx[row, EI_VALID] = 0
    kings = 0
    for k in range(OFF_KS, N_WEIGHTS):  # the blocks of king_terms
        if w[k] != 0.0:
            kings = 1
            break
    eidx[row, EI_KS] = kings + (2 if kings and zone_blocks_used(w) else 0)
    eidx[row, EI_PP] = 0 if pp_zero else 1


@counted_kernel
def eval_stack_for(pos, w, rows, pp_zero):
    """(eacc, eidx): an eval stack of `rows` rows whose row 0 is pos (inc_init, pp_zero as there); the rows
    above it are written by inc_record as a search goes down. The search's stacks (quiescence, alpha-beta, the
    expansion's children) all come from here."""
    eacc = np.empty((rows, N_EACC), dtype=np.float64)
    eidx = np.empty((rows, N_EIDX), dtype=np.int64)
    inc_init(pos, w, eacc, eidx, 0, pp_zero)
    return eacc, eidx


@bare_kernel
def _frame_full(w, eacc, eidx, row, f):
    """Frame f of row summed over its piece list (all pairs, both kings)."""
    n = eidx[row, EI_N]
    pp = 0.0
    if eidx[row, EI_PP]:
        for i in range(1, n):
            p = eidx[row, i]
            if f == 1:
                p = MIRROR[p]
            for j in range(i):
                q = eidx[row, j]
                pp += w[pp_index(p, MIRROR[q] if f == 1 else q)]
    eacc[row, EA_PP + f] = pp
    for c in range(2):
        eacc[row, EA_KP + 2 * f + c] = kp_sum(w, eidx, row, c, f)
    eidx[row, EI_VALID] |= 1 << f


@bare_kernel
def _change(eidx, row, k, old, new):
    """Record in `row` (whose list is a copy of the row below) that object `old` became `new`."""
    slot = 0
    n = eidx[row, EI_N]
    while slot < n and eidx[row, slot] != old:
        slot += 1
    if slot == n:
        raise ValueError("incremental evaluation: a moved piece is not in the piece list")
    eidx[row, slot] = new
    j = EI_CH + 3 * k
    eidx[row, j] = slot
    eidx[row, j + 1] = old
    eidx[row, j + 2] = new


@bare_kernel
def inc_record(pos, move, w, eacc, eidx, row):
    """Before do_move(pos, move): fill row + 1 (the child) from row; frames are left to inc_frame."""
    nxt = row + 1
    n = eidx[row, EI_N]
    for i in range(n):  # (a slice copy within one array may go through a temporary)
        eidx[nxt, i] = eidx[row, i]
    eidx[nxt, EI_N] = n
    eidx[nxt, EI_KSQ] = eidx[row, EI_KSQ]
    eidx[nxt, EI_KSQ + 1] = eidx[row, EI_KSQ + 1]
    eidx[nxt, EI_KS] = eidx[row, EI_KS]
    eidx[nxt, EI_PP] = eidx[row, EI_PP]
    us = pos[SIDE]
    sign = 1.0 - 2.0 * us
    to = move & MOVE_TO_MASK
    frm = (move >> MOVE_FROM_SHIFT) & 0x7F
    mat = eacc[row, EA_MAT]
    nch = 0
    if frm > DROP_BASE:  # drop
        pt = frm - DROP_BASE
        cnt = pos[HAND + 8 * us + pt]
        _change(eidx, nxt, 0, hand_bp(us, pt, cnt - 1), board_bp(us, pt, to))
        nch = 1
        mat += sign * (w[OFF_MATERIAL + pt] - w[OFF_MATERIAL + MAT_HAND + pt])
    else:
        pt = pos[frm] & (WHITE_BIT - 1)
        victim = pos[to]
        if victim != 0:
            vt = victim & (WHITE_BIT - 1)
            ht = DEMOTE[vt]  # the type it becomes in hand
            cnt = pos[HAND + 8 * us + ht]
            _change(eidx, nxt, 0, board_bp(1 - us, vt, to), hand_bp(us, ht, cnt))
            nch = 1
            mat += sign * (w[OFF_MATERIAL + vt] + w[OFF_MATERIAL + MAT_HAND + ht])
        if pt == KING:
            eidx[nxt, EI_KSQ + us] = to
        else:
            nt = pt | PROMOTE if move & MOVE_PROMO_BIT else pt
            _change(eidx, nxt, nch, board_bp(us, pt, frm), board_bp(us, nt, to))
            nch += 1
            mat += sign * (w[OFF_MATERIAL + nt] - w[OFF_MATERIAL + pt])
    eidx[nxt, EI_NCH] = nch
    eidx[nxt, EI_VALID] = 0
    eacc[nxt, EA_MAT] = mat


@bare_kernel
def _apply(w, eacc, eidx, row, f):
    """Frame f of row from frame f of row - 1 and the changes recorded in row."""
    prev = row - 1
    nch = eidx[row, EI_NCH]
    s1 = s2 = -1
    o1 = n1 = o2 = n2 = 0
    if nch >= 1:
        s1 = eidx[row, EI_CH]
        o1 = eidx[row, EI_CH + 1]
        n1 = eidx[row, EI_CH + 2]
        if f == 1:
            o1 = MIRROR[o1]
            n1 = MIRROR[n1]
    if nch == 2:
        s2 = eidx[row, EI_CH + 3]
        o2 = eidx[row, EI_CH + 4]
        n2 = eidx[row, EI_CH + 5]
        if f == 1:
            o2 = MIRROR[o2]
            n2 = MIRROR[n2]
    pp = eacc[prev, EA_PP + f]
    if nch >= 1 and eidx[row, EI_PP]:
        for i in range(eidx[row, EI_N]):
            if i == s1 or i == s2:
                continue
            q = eidx[row, i]
            if f == 1:
                q = MIRROR[q]
            pp += w[pp_index(n1, q)] - w[pp_index(o1, q)]
            if nch == 2:
                pp += w[pp_index(n2, q)] - w[pp_index(o2, q)]
        if nch == 2:
            pp += w[pp_index(n1, n2)] - w[pp_index(o1, o2)]
    eacc[row, EA_PP + f] = pp
    for c in range(2):
        ksq = eidx[row, EI_KSQ + c]
        a = EA_KP + 2 * f + c
        if ksq != eidx[prev, EI_KSQ + c]:
            eacc[row, a] = kp_sum(w, eidx, row, c, f)
        elif ksq < 0:
            eacc[row, a] = 0.0
        else:
            base = kp_base(ksq, c, f)
            kp = eacc[prev, a]
            if nch >= 1:
                kp += w[base + n1] - w[base + o1]
            if nch == 2:
                kp += w[base + n2] - w[base + o2]
            eacc[row, a] = kp
    eidx[row, EI_VALID] |= 1 << f


@bare_kernel
def inc_frame(w, eacc, eidx, row, f):
    """Make frame f of row valid, applying the recorded changes upwards from the last valid row (a
    base row without it is summed in full)."""
    bit = 1 << f
    low = row
    while (eidx[low, EI_VALID] & bit) == 0:
        if eidx[low, EI_NCH] == BASE_ROW:
            _frame_full(w, eacc, eidx, low, f)
            break
        low -= 1
    for r in range(low + 1, row + 1):
        _apply(w, eacc, eidx, r, f)


@bare_kernel
def inc_value(pos, w, eacc, eidx, row):
    """Static value of pos (whose state is `row`) from the side to move; equals evaluate(pos, w)."""
    f = pos[SIDE]
    inc_frame(w, eacc, eidx, row, f)
    v = eacc[row, EA_PP + f] + eacc[row, EA_KP + 2 * f] + eacc[row, EA_KP + 2 * f + 1]
    if eidx[row, EI_KS]:
        count = eidx[row, EI_COUNT : EI_COUNT + N_SQ]
        v += king_terms(pos, w, pos[:0], w[:0], 0, False, eidx[row, EI_KS] >= 2, count, w[:0])[0]
    return v + eacc[row, EA_MAT] if f == 0 else v - eacc[row, EA_MAT]

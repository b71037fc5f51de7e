"""The king and effect terms of the shogi evaluation (the KS, EF, EM, PE, KZ and KPOS blocks of features.py):
one pass over the effects of the board pieces, read from the position itself (not differenced) by both the full
and the incremental evaluation.
"""

import numpy as np

from usi_engine.jit import bare_kernel
from usi_engine.shogi.layout import BOARD, KING, KING_SQ, KNIGHT, SIDE, WHITE_BIT
from usi_engine.shogi.tables import DISTANCE, KNIGHT_TARGETS, NEIGHBOUR, SLIDE, STEP

from .features import (
    EF_DIST,
    EM_RANK,
    KS_CAP,
    KS_ZONE,
    KZ_OCC,
    N_EF,
    N_EFFECT_TERMS,
    N_EM,
    N_SQ,
    N_WEIGHTS,
    OFF_EF,
    OFF_EM,
    OFF_KPOS,
    OFF_KS,
    OFF_KZ,
    OFF_PE,
    PE_CAP,
    PE_TYPE,
    PE_TYPES,
)


def _zone_shift_table():
    """ZONE_SHIFT[t, k]: 4 * (zone square index of t around a king on k, Black's frame: (df + 1) * 3 + dr + 1),
    or -1 when t is not in k's 3x3 zone; the bit offset of t's attacker count in a packed zone word."""
    table = np.full((N_SQ, N_SQ), -1, dtype=np.int64)
    for t in range(N_SQ):
        for k in range(N_SQ):
            df, dr = t // 9 - k // 9, t % 9 - k % 9
            if abs(df) <= 1 and abs(dr) <= 1:
                table[t, k] = 4 * ((df + 1) * 3 + dr + 1)
    return table


ZONE_SHIFT = _zone_shift_table()
# KDIST[t, k]: Chebyshev distance of squares t and k; column N_SQ (no king) is -1.
KDIST = np.concatenate([DISTANCE, np.full((N_SQ, 1), -1, dtype=np.int64)], axis=1)


@bare_kernel
def _emit_unit(out_idx, out_coef, nf, k, emit):
    """With emit, write feature k with coefficient 1 at out_idx[nf]; the new feature count."""
    if not emit:
        return nf
    out_idx[nf] = k
    out_coef[nf] = 1.0
    return nf + 1


@bare_kernel
def zone_blocks_used(w):
    """True when the KZ or KPOS block of w is not all zero (else king_terms may skip them)."""
    for k in range(OFF_KZ, N_WEIGHTS):
        if w[k] != 0.0:
            return True
    return False


@bare_kernel
def king_terms(pos, w, out_idx, out_coef, nf, emit, zone, count, acc):
    """KS, EF, EM, PE, KPOS and KZ terms of pos from the side to move: (value, nf after writing their features
    from out_idx[nf] on). count (int64, N_SQ) is the caller's scratch for the effect counts, acc (float64,
    N_EFFECT_TERMS) its scratch for the EF, EM and PE coefficients, read only with emit (an empty view
    otherwise): this kernel allocates nothing.

    One pass over the board pieces other than kings walks every effect (step targets, slider lines up to and
    including the first piece, knight jumps; pins ignored): the "kiki" of YaneuraOu's hand-made evaluation.
    - EF: an effect on square t of a piece whose own king is on k and the other king on k' adds
      w[EF, 0, dist(t, k)] + w[EF, 1, dist(t, k')] (Chebyshev distances; a missing king adds nothing), with
      sign + for the side to move's pieces and - for the other side's (antisymmetric, like material). The
      coefficient of a weight is that signed count.
    - EM: the j-th effect (j >= 2) of one side on square t adds, on top of its EF weights,
      w[EM, 0, dist(t, k), r] + w[EM, 1, dist(t, k'), r] with r = 0 for j = 2 and r = 1 for j >= 3 (same
      signs): a square's value need not grow linearly in its effects (YaneuraOu's MATERIAL_LEVEL 4 idea).
      The walk counts each side's effects per square (8 bits each in one word per square); EM is summed from
      those counts afterwards, on the squares where a side has two effects or more.
    - KS: the effect counts on the 3x3 zone squares of both kings (kept 4 bits per square in four packed
      words: king colour x attacker colour, Black's frame); then per zone square z (the king's square and its
      on-board neighbours, placed relative to the king in the frame of the side to move) the entry
      (t, z, our count, their count), counts capped at 2, t 0 for the side to move's king, 1 for the other's.
    - PE: every board piece other than a king adds w[PE, t, type, own count, enemy count] (t 0 for the side
      to move's pieces, 1 for the other side's; counts of the effects on its square, the kings' own steps
      included this time, capped at 2): defended and attacked pieces (MATERIAL_LEVEL 7's idea).
    - KPOS: each king adds w[KPOS, t, its square in the frame of the side to move] (MATERIAL_LEVEL 8's king
      placement).
    - KZ: each of a king's on-board neighbours (not its own square) adds w[KZ, t, z, occupant, count]: occupant
      0 empty, 1 a piece of the king's side, 2 of the other side; count the king side's effects on it (kings
      left out, capped at 2): MATERIAL_LEVEL 8's guarded and unguarded neighbours.
    zone False skips KZ and KPOS (callers pass it when both blocks are zero and no features are emitted)."""
    stm = pos[SIDE]
    k0 = pos[KING_SQ]
    k1 = pos[KING_SQ + 1]
    count[:] = 0  # effects on each square: Black's in bits 0..7, White's in 8..15
    if emit:
        acc[:] = 0.0  # EF, EM, PE coefficients, from OFF_EF on
    value = 0.0
    zb0 = 0  # Black's king zone, Black's effects
    zb1 = 0  # Black's king zone, White's effects
    zw0 = 0
    zw1 = 0
    for sq in range(N_SQ):
        p = pos[BOARD + sq]
        if p == 0 or (p & (WHITE_BIT - 1)) == KING:
            continue
        c = 1 if p & WHITE_BIT else 0
        own = k0 if c == 0 else k1
        other = k1 if c == 0 else k0
        own = own if own >= 0 else N_SQ  # a missing king (mate problems): KDIST column N_SQ, -1
        other = other if other >= 0 else N_SQ
        sign = 1.0 if c == stm else -1.0
        shift = 8 * c
        zo = 0  # effects on the own king's zone, packed
        zx = 0  # on the other king's zone
        knight = (p & (WHITE_BIT - 1)) == KNIGHT
        for d in range(2 if knight else 8):  # a knight's two jumps, else the 8 directions
            slide = 0 if knight else SLIDE[p, d]
            if knight:
                t = KNIGHT_TARGETS[c, sq, d]
            elif slide or STEP[p, d]:
                t = NEIGHBOUR[sq, d]
            else:
                continue
            while t >= 0:
                count[t] += 1 << shift
                do = KDIST[t, own]
                dx = KDIST[t, other]
                if do >= 0:
                    value += sign * w[OFF_EF + do]
                    if do <= 1:
                        zo += 1 << ZONE_SHIFT[t, own]
                    if emit:
                        acc[do] += sign
                if dx >= 0:
                    value += sign * w[OFF_EF + EF_DIST + dx]
                    if dx <= 1:
                        zx += 1 << ZONE_SHIFT[t, other]
                    if emit:
                        acc[EF_DIST + dx] += sign
                if not slide or pos[BOARD + t] != 0:
                    break
                t = NEIGHBOUR[t, d]
        if c == 0:
            zb0 += zo
            zw0 += zx
        else:
            zw1 += zo
            zb1 += zx
    for sq in range(N_SQ):  # EM: the second and later effects of each side on each square
        both = count[sq]
        if (both & 0xFEFE) == 0:
            continue
        for c in range(2):
            n = (both >> (8 * c)) & 255
            if n < 2:
                continue
            sign = 1.0 if c == stm else -1.0
            do = KDIST[sq, k0 if c == 0 else k1]
            dx = KDIST[sq, k1 if c == 0 else k0]
            if do >= 0:
                value += sign * (w[OFF_EM + do * EM_RANK] + (n - 2) * w[OFF_EM + do * EM_RANK + 1])
                if emit:
                    acc[N_EF + do * EM_RANK] += sign
                    acc[N_EF + do * EM_RANK + 1] += sign * (n - 2)
            if dx >= 0:
                k = (EF_DIST + dx) * EM_RANK
                value += sign * (w[OFF_EM + k] + (n - 2) * w[OFF_EM + k + 1])
                if emit:
                    acc[N_EF + k] += sign
                    acc[N_EF + k + 1] += sign * (n - 2)
    for c in range(2):  # the kings' steps count for PE only
        ksq = k0 if c == 0 else k1
        if ksq >= 0:
            for d in range(8):
                t = NEIGHBOUR[ksq, d]
                if t >= 0:
                    count[t] += 1 << (8 * c)
    for sq in range(N_SQ):
        p = pos[BOARD + sq]
        if p == 0:
            continue
        pt = p & (WHITE_BIT - 1)
        if pt == KING:
            continue
        c = 1 if p & WHITE_BIT else 0
        ours = min((count[sq] >> (8 * c)) & 255, PE_CAP - 1)
        theirs = min((count[sq] >> (8 - 8 * c)) & 255, PE_CAP - 1)
        k = (((0 if c == stm else 1) * PE_TYPES + PE_TYPE[pt]) * PE_CAP + ours) * PE_CAP + theirs
        value += w[OFF_PE + k]
        if emit:
            acc[N_EF + N_EM + k] += 1.0
    if emit:
        for k in range(N_EFFECT_TERMS):
            if acc[k] != 0.0:
                out_idx[nf] = OFF_EF + k
                out_coef[nf] = acc[k]
                nf += 1
    for t in range(2):  # t 0: the side to move's king, 1: the other king
        colour = stm ^ t
        ksq = k0 if colour == 0 else k1
        if ksq < 0:
            continue
        ours_word, theirs_word = (zb0, zb1) if colour == 0 else (zw0, zw1)
        if stm == 1:
            ours_word, theirs_word = theirs_word, ours_word
        if zone:
            k = OFF_KPOS + t * N_SQ + (ksq if stm == 0 else N_SQ - 1 - ksq)
            value += w[k]
            nf = _emit_unit(out_idx, out_coef, nf, k, emit)
        own_word = ours_word if t == 0 else theirs_word  # effects of the king's side
        kf = ksq // 9
        kr = ksq % 9
        for df in range(-1, 2):
            f = kf + df
            if f < 0 or f > 8:
                continue
            for dr in range(-1, 2):
                r = kr + dr
                if r < 0 or r > 8:
                    continue
                shift = 4 * ((df + 1) * 3 + dr + 1)
                ours = min((ours_word >> shift) & 15, KS_CAP - 1)
                theirs = min((theirs_word >> shift) & 15, KS_CAP - 1)
                z = (df + 1) * 3 + dr + 1 if stm == 0 else (1 - df) * 3 + 1 - dr
                k = OFF_KS + ((t * KS_ZONE + z) * KS_CAP + ours) * KS_CAP + theirs
                value += w[k]
                nf = _emit_unit(out_idx, out_coef, nf, k, emit)
                if not zone or (df == 0 and dr == 0):
                    continue
                p = pos[BOARD + f * 9 + r]
                occ = 0 if p == 0 else 1 if (1 if p & WHITE_BIT else 0) == colour else 2
                guards = min((own_word >> shift) & 15, KS_CAP - 1)
                k = OFF_KZ + ((t * KS_ZONE + z) * KZ_OCC + occ) * KS_CAP + guards
                value += w[k]
                nf = _emit_unit(out_idx, out_coef, nf, k, emit)
    return value, nf

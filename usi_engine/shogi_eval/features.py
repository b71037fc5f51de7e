"""Shogi evaluation: a linear function of sparse features, seen from the side to move.

Value (centipawns, negamax: from the side to move) = w . phi(pos), where phi counts

- MATERIAL: for each board piece type (index = ptype) and each hand piece type (index 16 + ptype),
  (our count - their count);
- KP: the pair (our king's square, piece p) and, in a second table, (their king's square, piece p)
  for every non-king piece p, coefficient 1;
- PP: every unordered pair of distinct non-king pieces {p, q}, coefficient 1;
- KS (king safety, feature-set version 2): for each king (ours, theirs) and each square of its 3x3 zone
  (the king's square and its on-board neighbours, placed relative to the king in the frame of the side to
  move), the state (our attackers, their attackers) of that square, each count capped at 2: one active
  entry per zone square, coefficient 1. Attackers are the pieces other than kings that could move to the
  square now (first piece along each line, knights; pins ignored), the "kiki" of YaneuraOu's hand-made
  evaluation, here with learned values per (king, zone square, counts).
- EF (effects, feature-set version 3): every effect of a non-king piece (the same effects as KS) on a square
  at Chebyshev distance d from the piece's own king and d' from the other king counts for the weights
  (own king, d) and (other king, d'), + for the side to move's pieces, - for the other side's.
- EM (multiple effects, version 4): the second, and the third or later, effect of one side on one square
  counts again for (own king, d, rank) and (other king, d', rank), same signs as EF: a correction that lets a
  square's value grow less (or more) than linearly in its effects.
- PE (piece effects, version 4): every board piece other than a king counts for (whose piece: the side to
  move's or the other's, its type, the effects of its own side on its square, the other side's), counts
  capped at 2 and including the kings' steps: pieces that are defended, attacked, hanging.
- KZ (king zone occupancy, version 5): each of a king's on-board neighbours counts for (king ours/theirs, zone
  square, occupant: empty / the king's side / the other side, the king side's effects on it capped at 2):
  guarded and unguarded neighbours (MATERIAL_LEVEL 8).
- KPOS (king placement, version 5): each king counts for (king ours/theirs, its square seen from the side to
  move).

A "piece" p here is a BonaPiece-style index (YaneuraOu numbering idea, our own layout) in
0 .. FE_END-1:

- hand objects: the i-th (i = 1..count) piece of type pt in a hand is its own object
  ``rel * HAND_PER_SIDE + HAND_OFFSET[pt] + i - 1`` (rel 0 = ours, 1 = theirs), so a hand count of
  3 pawns is three objects and the hand takes part in KP/PP like board pieces;
- board pieces: ``HAND_END + (KIND[pt] * 2 + rel) * 81 + sq'``; promoted pawn/lance/knight/silver
  share the gold block (they move like gold), so 9 kinds x 2 colours x 81 squares.

Symmetry by construction: the position is read in the frame of the side to move. For White to move
every square is rotated (``sq' = 80 - sq``) and colours are swapped (``rel = colour ^ side``), so the
position rotated 180 degrees with colours, hands and side to move swapped maps to the identical
feature vector, and one table serves both sides. The turn is implicit (the KP/PP tables are not
antisymmetric), which lets the weights learn a tempo bonus.

Sizes: FE_END = 76 + 18 * 81 = 1534; KP = 2 * 81 * 1534 = 248,508; PP = 1534 * 1533 / 2 = 1,175,811
(triangular: index ``a * (a - 1) / 2 + b`` with a > b); KS = 2 * 9 * 3 * 3 = 162; EF = 2 * 9 = 18;
EM = 2 * 9 * 2 = 36; PE = 2 * 13 * 3 * 3 = 234; KZ = 2 * 9 * 3 * 3 = 162 (the king's own square never active);
KPOS = 2 * 81 = 162; N_WEIGHTS = 1,425,117 (11.4 MB float64).
PP was chosen over KPP (194 M entries) because it fits in memory, can be learned by sparse SGD in
numpy-sized buffers and costs 703 table reads for 38 pieces (KPP as int16[2]: 740 MiB).

The kernel that computes the value can also write the active features (index, coefficient): that
list IS the exact gradient dValue/dw of the linear evaluation, which learn/ needs at quiescence
leaves. Indices in one list are unique.

The search evaluates differentially (inc_init / inc_record / inc_value, section "incremental" below):
a child's value is its parent's plus the change of the one or two piece objects the move touched,
about 4x cheaper than the full evaluation, which stays the reference (evaluate, eval_features). The KS and
EF terms are read from the position itself (king_terms: one pass over the pieces' effects), not differenced,
and skipped when the weights' KS, EF, EM, PE, KZ and KPOS blocks are all zero (flag set by inc_init, so a
stack assumes fixed weights). The PP pair sums are skipped when the caller vouches that the PP block is all
zero (inc_init's pp_zero, from pp_block_zero: a scan too long for every call), as in every shipped file.
"""

import numpy as np
from numba import njit

from usi_engine.shogi.layout import (
    BOARD,
    DEMOTE,
    DROP_BASE,
    GOLD,
    HAND,
    KING,
    KING_SQ,
    KNIGHT,
    MOVE_FROM_SHIFT,
    MOVE_PROMO_BIT,
    MOVE_TO_MASK,
    PROMOTE,
    SIDE,
    WHITE_BIT,
)
from usi_engine.shogi.tables import DISTANCE, KNIGHT_TARGETS, NEIGHBOUR, SLIDE, STEP

FEATURE_SET = "shogi-material-kp-pp"
FEATURE_VERSION = 5  # 2: + KS, 3: + EF, 4: + EM and PE, 5: + KZ and KPOS (older files load with the newer blocks 0)

N_SQ = 81
# Hand capacity per type 1..7 (PAWN LANCE KNIGHT SILVER BISHOP ROOK GOLD); index 0 unused.
HAND_MAX = np.array([0, 18, 4, 4, 4, 2, 2, 4], dtype=np.int64)
HAND_OFFSET = np.array([0, 0, 18, 22, 26, 30, 32, 34], dtype=np.int64)
HAND_PER_SIDE = 38
HAND_END = 2 * HAND_PER_SIDE  # 76
# ptype -> board kind (P L N S B R G H D); -1 for empty and king; promoted minors move like gold.
KIND = np.array([-1, 0, 1, 2, 3, 4, 5, 6, -1, 6, 6, 6, 6, 7, 8], dtype=np.int64)
N_KINDS = 9
FE_END = HAND_END + 2 * N_KINDS * N_SQ  # 1534

N_MATERIAL = 24  # board ptype 0..15, hand 16 + ptype (1..7)
MAT_HAND = 16
OFF_MATERIAL = 0
OFF_KP = N_MATERIAL
N_KP = 2 * N_SQ * FE_END
OFF_PP = OFF_KP + N_KP
N_PP = FE_END * (FE_END - 1) // 2
OFF_KS = OFF_PP + N_PP
KS_CAP = 3  # attacker counts 0, 1, 2+ per side
KS_ZONE = 9  # 3x3 squares around a king
N_KS = 2 * KS_ZONE * KS_CAP * KS_CAP  # (king ours/theirs, zone square, our count, their count)
OFF_EF = OFF_KS + N_KS
EF_DIST = 9  # king distances 0..8
N_EF = 2 * EF_DIST  # (own king / other king, distance of the attacked square)
OFF_EM = OFF_EF + N_EF
EM_RANK = 2  # the second, and the third or later, effect of one side on one square
N_EM = 2 * EF_DIST * EM_RANK  # (own king / other king, distance, rank of the effect)
OFF_PE = OFF_EM + N_EM
PE_TYPES = 13  # board piece types but the king
PE_CAP = 3  # effect counts 0, 1, 2+ per side
N_PE = 2 * PE_TYPES * PE_CAP * PE_CAP  # (piece of the side to move / other side, type, own count, enemy count)
OFF_KZ = OFF_PE + N_PE
KZ_OCC = 3  # a king's neighbour square is empty, holds a piece of the king's side, or of the other side
N_KZ = 2 * KS_ZONE * KZ_OCC * KS_CAP  # (king ours/theirs, zone square, occupant, count of the king side's effects)
OFF_KPOS = OFF_KZ + N_KZ
N_KPOS = 2 * N_SQ  # (king ours/theirs, its square in the frame of the side to move)
N_WEIGHTS = OFF_KPOS + N_KPOS
# the blocks summed by king_terms: name -> (offset, size), as weight files and learning name them
KING_BLOCKS = {
    "ks": (OFF_KS, N_KS),
    "ef": (OFF_EF, N_EF),
    "em": (OFF_EM, N_EM),
    "pe": (OFF_PE, N_PE),
    "kz": (OFF_KZ, N_KZ),
    "kpos": (OFF_KPOS, N_KPOS),
}
# ptype -> PE type 0..12 (king: -1)
PE_TYPE = np.array([-1, 0, 1, 2, 3, 4, 5, 6, -1, 7, 8, 9, 10, 11, 12], dtype=np.int64)

MAX_PIECES = 40  # non-king pieces (38 in a full set), with slack
N_EFFECT_TERMS = N_EF + N_EM + N_PE  # the blocks after KS that king_terms sums per effect, contiguous
MAX_FEATURES = (
    N_MATERIAL + 2 * MAX_PIECES + MAX_PIECES * (MAX_PIECES - 1) // 2 + 2 * KS_ZONE + N_EFFECT_TERMS + 2 * KS_ZONE + 2
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


@njit(cache=True, nogil=True)
def hand_bp(rel, pt, i):
    """Index of the i-th (0-based) hand piece of type pt held by side rel (0 us, 1 them)."""
    return rel * HAND_PER_SIDE + HAND_OFFSET[pt] + i


@njit(cache=True, nogil=True)
def board_bp(rel, pt, sq_rel):
    """Index of a board piece of type pt of side rel on square sq_rel (already in the stm frame)."""
    return HAND_END + (KIND[pt] * 2 + rel) * N_SQ + sq_rel


@njit(cache=True, nogil=True)
def pp_index(p, q):
    """Weight index of the unordered pair {p, q}, p != q."""
    if p < q:
        p, q = q, p
    return OFF_PP + p * (p - 1) // 2 + q


@njit(cache=True, nogil=True)
def collect(pos, stm, bps, mat):
    """Fill bps with the piece indices and mat with the material counts, in the frame of side stm.

    Returns (n_pieces, our king square', their king square') with -1 for a missing king.
    """
    for t in range(N_MATERIAL):
        mat[t] = 0
    n = 0
    for sq in range(N_SQ):
        pc = pos[sq]
        if pc == 0:
            continue
        pt = pc & (WHITE_BIT - 1)
        if pt == KING:
            continue
        rel = (pc >> 4) ^ stm
        mat[pt] += 1 - 2 * rel
        if n < MAX_PIECES:
            s = sq if stm == 0 else N_SQ - 1 - sq
            bps[n] = board_bp(rel, pt, s)
            n += 1
    for c in range(2):
        rel = c ^ stm
        for pt in range(1, GOLD + 1):
            cnt = pos[HAND + 8 * c + pt]
            mat[MAT_HAND + pt] += (1 - 2 * rel) * cnt
            top = min(cnt, HAND_MAX[pt])
            for i in range(top):
                if n < MAX_PIECES:
                    bps[n] = hand_bp(rel, pt, i)
                    n += 1
    ku = pos[KING_SQ + stm]
    kt = pos[KING_SQ + 1 - stm]
    if stm == 1:
        if ku >= 0:
            ku = N_SQ - 1 - ku
        if kt >= 0:
            kt = N_SQ - 1 - kt
    return n, ku, kt


@njit(cache=True, nogil=True)
def _emit_unit(out_idx, out_coef, nf, k, emit):
    """With emit, write feature k with coefficient 1 at out_idx[nf]; the new feature count."""
    if not emit:
        return nf
    out_idx[nf] = k
    out_coef[nf] = 1.0
    return nf + 1


@njit(cache=True, nogil=True)
def zone_blocks_used(w):
    """True when the KZ or KPOS block of w is not all zero (else king_terms may skip them)."""
    for k in range(OFF_KZ, N_WEIGHTS):
        if w[k] != 0.0:
            return True
    return False


@njit(cache=True, nogil=True)
def king_terms(pos, w, out_idx, out_coef, nf, emit, zone=True):
    """KS, EF, EM, PE, KPOS and KZ terms of pos from the side to move: (value, nf after writing their features
    from out_idx[nf] on).

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
    acc = np.zeros(N_EFFECT_TERMS) if emit else w[:0]  # EF, EM, PE coefficients, from OFF_EF on
    count = np.zeros(N_SQ, dtype=np.int64)  # effects on each square: Black's in bits 0..7, White's in 8..15
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


@njit(cache=True, nogil=True)
def eval_core(pos, w, out_idx, out_coef, emit):
    """Static value of pos from the side to move; if emit, also write the active features.

    Returns (value, n_features). With emit, out_idx[:n] / out_coef[:n] (length >= MAX_FEATURES)
    hold unique weight indices and their coefficients, so value == sum(w[idx] * coef) and the
    coefficients are the gradient of the value with respect to w.
    """
    scratch = np.empty(MAX_PIECES + N_MATERIAL, dtype=np.int64)
    bps = scratch[:MAX_PIECES]
    mat = scratch[MAX_PIECES:]
    n, ku, kt = collect(pos, pos[SIDE], bps, mat)
    value = 0.0
    nf = 0
    for t in range(N_MATERIAL):
        c = mat[t]
        if c != 0:
            value += c * w[OFF_MATERIAL + t]
            if emit:
                out_idx[nf] = OFF_MATERIAL + t
                out_coef[nf] = c
                nf += 1
    for king_row in (ku, N_SQ + kt if kt >= 0 else -1):  # the side to move's king, then the other's
        if king_row < 0:
            continue
        base = OFF_KP + king_row * FE_END
        for i in range(n):
            value += w[base + bps[i]]
            if emit:
                out_idx[nf] = base + bps[i]
                out_coef[nf] = 1.0
                nf += 1
    for i in range(1, n):
        p = bps[i]
        for j in range(i):
            k = pp_index(p, bps[j])
            value += w[k]
            if emit:
                out_idx[nf] = k
                out_coef[nf] = 1.0
                nf += 1
    kings, nf = king_terms(pos, w, out_idx, out_coef, nf, emit, emit or zone_blocks_used(w))
    return value + kings, nf


@njit(cache=True, nogil=True)
def evaluate(pos, w):
    """Static value of pos in centipawns from the side to move."""
    # Zero-length views stand in for the unused output buffers (no allocation, writable type).
    value, _ = eval_core(pos, w, pos[:0], w[:0], False)
    return value


@njit(cache=True, nogil=True)
def eval_features(pos, w, out_idx, out_coef):
    """Value and active features (the exact gradient) of pos; see eval_core."""
    return eval_core(pos, w, out_idx, out_coef, True)


def feature_buffers():
    """Fresh (out_idx, out_coef) buffers large enough for eval_features."""
    return np.zeros(MAX_FEATURES, dtype=np.int64), np.zeros(MAX_FEATURES, dtype=np.float64)


def gradient(pos, w):
    """(value, indices int64[:], coefficients float64[:]): the value and its sparse gradient."""
    idx, coef = feature_buffers()
    value, n = eval_features(pos, w, idx, coef)
    return value, idx[:n].copy(), coef[:n].copy()


# --- incremental (differential) evaluation ------------------------------------------------------
#
# A search path keeps one row per ply in two arrays: eacc (float64 [rows, N_EACC]) and eidx (int64
# [rows, N_EIDX]). The value is kept for BOTH frames (the stm frame flips every ply) as parts:
#   frame 0 (Black to move): material + PP_0 + KP(Black king, "ours") + KP(White king, "theirs")
#   frame 1 (White to move): -material + PP_1 + KP(White king, "ours") + KP(Black king, "theirs")
# where material is Black's weighted balance (its sign flips with the frame) and frame 1 sees every
# piece index through MIRROR (rotate the square, swap the colour). A move changes one piece object
# (a move or a drop) or two (a capture: the victim becomes a hand object of the mover); a king move
# changes no object but its king's square. The new row stores the piece list after the move, which
# objects changed (list slot, old index, new index, in frame 0) and the king squares; the frames are
# computed lazily from the row below (inc_frame), so a leaf pays only its own frame and a base row
# (inc_init) sums a frame in full only when some row above needs it:
#   PP_f(child) = PP_f(parent) + sum over unchanged q of [pp(new, q) - pp(old, q)] (+ the pair of the
#   two changed objects for a capture), KP alike with single table reads; a moved king's KP is summed
#   afresh. About 4 x 38 table reads for a capture instead of 703 + 76 for a full evaluation.
# The value equals evaluate() up to float rounding (summation order); tests compare the two.

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
N_EIDX = EI_PP + 1


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


@njit(cache=True, nogil=True)
def kp_base(ksq, colour, frame):
    """Offset of the KP row of colour's king on ksq (board square) in the given frame."""
    if frame == 1:
        ksq = N_SQ - 1 - ksq
    table = 0 if colour == frame else 1
    return OFF_KP + (table * N_SQ + ksq) * FE_END


@njit(cache=True, nogil=True)
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


@njit(cache=True, nogil=True)
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


@njit(cache=True, nogil=True)
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


@njit(cache=True, nogil=True)
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


@njit(cache=True, nogil=True)
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


@njit(cache=True, nogil=True)
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


@njit(cache=True, nogil=True)
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


@njit(cache=True, nogil=True)
def inc_value(pos, w, eacc, eidx, row):
    """Static value of pos (whose state is `row`) from the side to move; equals evaluate(pos, w)."""
    f = pos[SIDE]
    inc_frame(w, eacc, eidx, row, f)
    v = eacc[row, EA_PP + f] + eacc[row, EA_KP + 2 * f] + eacc[row, EA_KP + 2 * f + 1]
    if eidx[row, EI_KS]:
        v += king_terms(pos, w, pos[:0], w[:0], 0, False, eidx[row, EI_KS] >= 2)[0]
    return v + eacc[row, EA_MAT] if f == 0 else v - eacc[row, EA_MAT]

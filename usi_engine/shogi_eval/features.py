"""The shogi evaluation's feature set: a linear function of sparse features, seen from the side to move;
this module holds the layout of the weight vector and the piece objects the other modules index by.

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

Where the rest lives (usi_engine/shogi_eval/): king_terms.py (the KS, EF, EM, PE, KZ and KPOS terms, one pass
over the effects), linear.py (the full evaluation and its exact gradient: the reference), incremental.py (the
search's differential evaluation), evalfile.py (weight files and the shipped weights).
"""

import numpy as np

from usi_engine.jit import bare_kernel
from usi_engine.shogi.layout import GOLD, HAND, KING, KING_SQ, WHITE_BIT

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


@bare_kernel
def hand_bp(rel, pt, i):
    """Index of the i-th (0-based) hand piece of type pt held by side rel (0 us, 1 them)."""
    return rel * HAND_PER_SIDE + HAND_OFFSET[pt] + i


@bare_kernel
def board_bp(rel, pt, sq_rel):
    """Index of a board piece of type pt of side rel on square sq_rel (already in the stm frame)."""
    return HAND_END + (KIND[pt] * 2 + rel) * N_SQ + sq_rel


@bare_kernel
def pp_index(p, q):
    """Weight index of the unordered pair {p, q}, p != q."""
    if p < q:
        p, q = q, p
    return OFF_PP + p * (p - 1) // 2 + q


@bare_kernel
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

"""Shogi evaluation: a linear function of sparse features, seen from the side to move.

Value (centipawns, negamax: from the side to move) = w . phi(pos), where phi counts

- MATERIAL: for each board piece type (index = ptype) and each hand piece type (index 16 + ptype),
  (our count - their count);
- KP: the pair (our king's square, piece p) and, in a second table, (their king's square, piece p)
  for every non-king piece p, coefficient 1;
- PP: every unordered pair of distinct non-king pieces {p, q}, coefficient 1.

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
(triangular: index ``a * (a - 1) / 2 + b`` with a > b); N_WEIGHTS = 1,424,343 (11.4 MB float64).
PP was chosen over KPP (194 M entries) because it fits in memory, can be learned by sparse SGD in
numpy-sized buffers and costs 703 table reads for 38 pieces (learning.md section 4).

The kernel that computes the value can also write the active features (index, coefficient): that
list IS the exact gradient dValue/dw of the linear evaluation, which learn/ needs at quiescence
leaves. Indices in one list are unique.
"""

import numpy as np
from numba import njit

from usi_engine.shogi.layout import GOLD, HAND, KING, KING_SQ, SIDE, WHITE_BIT

FEATURE_SET = "shogi-material-kp-pp"
FEATURE_VERSION = 1

N_SQ = 81
# Hand capacity per type 1..7 (PAWN LANCE KNIGHT SILVER BISHOP ROOK GOLD); index 0 unused.
HAND_MAX = np.array([0, 18, 4, 4, 4, 2, 2, 4], dtype=np.int64)
HAND_OFFSET = np.array([0, 0, 18, 22, 26, 30, 32, 34], dtype=np.int64)
HAND_PER_SIDE = 38
HAND_END = 2 * HAND_PER_SIDE                      # 76
# ptype -> board kind (P L N S B R G H D); -1 for empty and king; promoted minors move like gold.
KIND = np.array([-1, 0, 1, 2, 3, 4, 5, 6, -1, 6, 6, 6, 6, 7, 8], dtype=np.int64)
N_KINDS = 9
FE_END = HAND_END + 2 * N_KINDS * N_SQ             # 1534

N_MATERIAL = 24                                  # board ptype 0..15, hand 16 + ptype (1..7)
MAT_HAND = 16
OFF_MATERIAL = 0
OFF_KP = N_MATERIAL
N_KP = 2 * N_SQ * FE_END
OFF_PP = OFF_KP + N_KP
N_PP = FE_END * (FE_END - 1) // 2
N_WEIGHTS = OFF_PP + N_PP

MAX_PIECES = 40                                  # non-king pieces (38 in a full set), with slack
MAX_FEATURES = N_MATERIAL + 2 * MAX_PIECES + MAX_PIECES * (MAX_PIECES - 1) // 2


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
def collect(pos, bps, mat):
    """Fill bps with the piece indices and mat with the material counts, in the stm frame.

    Returns (n_pieces, our king square', their king square') with -1 for a missing king.
    """
    stm = pos[SIDE]
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
def eval_core(pos, w, out_idx, out_coef, emit):
    """Static value of pos from the side to move; if emit, also write the active features.

    Returns (value, n_features). With emit, out_idx[:n] / out_coef[:n] (length >= MAX_FEATURES)
    hold unique weight indices and their coefficients, so value == sum(w[idx] * coef) and the
    coefficients are the gradient of the value with respect to w.
    """
    scratch = np.empty(MAX_PIECES + N_MATERIAL, dtype=np.int64)
    bps = scratch[:MAX_PIECES]
    mat = scratch[MAX_PIECES:]
    n, ku, kt = collect(pos, bps, mat)
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
    if ku >= 0:
        base = OFF_KP + ku * FE_END
        for i in range(n):
            value += w[base + bps[i]]
            if emit:
                out_idx[nf] = base + bps[i]
                out_coef[nf] = 1.0
                nf += 1
    if kt >= 0:
        base = OFF_KP + (N_SQ + kt) * FE_END
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
    return value, nf


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

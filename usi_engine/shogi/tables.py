"""Precomputed geometry and Zobrist tables for the shogi kernels.

Everything here is built once at import with numpy and read by the numba kernels as global
(compile-time constant) arrays. Directions are in (file delta, rank delta); Black's forward is
rank - 1. A White piece moves like a Black piece rotated 180 degrees, i.e. in the opposite direction.
"""

import numpy as np

from .layout import (
    BISHOP,
    DRAGON,
    GOLD,
    HORSE,
    KING,
    LANCE,
    N_PIECES,
    PAWN,
    PRO_KNIGHT,
    PRO_LANCE,
    PRO_PAWN,
    PRO_SILVER,
    ROOK,
    SILVER,
    WHITE_BIT,
)

# direction index -> (file delta, rank delta)
DIRECTIONS = ((0, -1), (0, 1), (-1, 0), (1, 0), (-1, -1), (1, -1), (-1, 1), (1, 1))
N, S, W, E, NW, NE, SW, SE = range(8)
OPPOSITE = np.array([S, N, E, W, SE, SW, NE, NW], dtype=np.int64)
ORTHOGONAL = (N, S, W, E)
DIAGONAL = (NW, NE, SW, SE)
GOLD_DIRS = (N, S, W, E, NW, NE)
SILVER_DIRS = (N, NW, NE, SW, SE)

# Black-frame step and slide directions per piece type.
_STEPS = {
    PAWN: (N,),
    SILVER: SILVER_DIRS,
    GOLD: GOLD_DIRS,
    KING: tuple(range(8)),
    PRO_PAWN: GOLD_DIRS,
    PRO_LANCE: GOLD_DIRS,
    PRO_KNIGHT: GOLD_DIRS,
    PRO_SILVER: GOLD_DIRS,
    HORSE: ORTHOGONAL,
    DRAGON: DIAGONAL,
}
_SLIDES = {LANCE: (N,), BISHOP: DIAGONAL, ROOK: ORTHOGONAL, HORSE: DIAGONAL, DRAGON: ORTHOGONAL}


def _file_rank(sq):
    return sq // 9, sq % 9


def _build_neighbours():
    """NEIGHBOUR[sq, d]: the adjacent square in direction d, or -1 off the board."""
    table = np.full((81, 8), -1, dtype=np.int64)
    for sq in range(81):
        f, r = _file_rank(sq)
        for d, (df, dr) in enumerate(DIRECTIONS):
            if 0 <= f + df < 9 and 0 <= r + dr < 9:
                table[sq, d] = (f + df) * 9 + (r + dr)
    return table


def _build_knight_targets():
    """KNIGHT_TARGETS[colour, sq, k]: the two knight jumps of colour from sq, or -1."""
    table = np.full((2, 81, 2), -1, dtype=np.int64)
    for colour, forward in ((0, -1), (1, 1)):
        for sq in range(81):
            f, r = _file_rank(sq)
            for k, df in enumerate((-1, 1)):
                if 0 <= f + df < 9 and 0 <= r + 2 * forward < 9:
                    table[colour, sq, k] = (f + df) * 9 + (r + 2 * forward)
    return table


def _build_piece_directions():
    """STEP[piece, d], SLIDE[piece, d]: 1 if the piece attacks one step / any distance along d."""
    step = np.zeros((N_PIECES, 8), dtype=np.int64)
    slide = np.zeros((N_PIECES, 8), dtype=np.int64)
    for ptype in range(1, 15):
        for colour in (0, 1):
            piece = ptype + WHITE_BIT * colour
            for d in _STEPS.get(ptype, ()):
                step[piece, d if colour == 0 else OPPOSITE[d]] = 1
            for d in _SLIDES.get(ptype, ()):
                slide[piece, d if colour == 0 else OPPOSITE[d]] = 1
    return step, slide


def _build_lines():
    """LINE_DIR[a, b]: direction from a to b when they share a rank, file or diagonal, else -1.
    DISTANCE[a, b]: king distance (Chebyshev) between the squares."""
    line = np.full((81, 81), -1, dtype=np.int64)
    dist = np.zeros((81, 81), dtype=np.int64)
    for a in range(81):
        fa, ra = _file_rank(a)
        for b in range(81):
            fb, rb = _file_rank(b)
            df, dr = fb - fa, rb - ra
            dist[a, b] = max(abs(df), abs(dr))
            if a != b and (df == 0 or dr == 0 or abs(df) == abs(dr)):
                line[a, b] = DIRECTIONS.index((int(np.sign(df)), int(np.sign(dr))))
    return line, dist


def _build_zobrist(seed=0x5EED_5A0C):
    """Random 64-bit keys: one per (piece, square), one per (colour, hand type, count), one for side."""
    rng = np.random.default_rng(seed)

    def draw(*shape):
        return rng.integers(np.iinfo(np.int64).min, np.iinfo(np.int64).max, size=shape, dtype=np.int64)

    piece = draw(N_PIECES, 81)
    piece[0, :] = 0
    hand = draw(2, 8, 19)
    hand[:, :, 0] = 0
    hand[:, 0, :] = 0
    side = draw(1)
    return piece, hand, side


NEIGHBOUR = _build_neighbours()
KNIGHT_TARGETS = _build_knight_targets()
STEP, SLIDE = _build_piece_directions()
ADJACENT_ATTACK = np.maximum(STEP, SLIDE)  # attacks the neighbouring square along d
LINE_DIR, DISTANCE = _build_lines()
FILE_OF = np.array([sq // 9 for sq in range(81)], dtype=np.int64)
# Rank index relative to the colour: 0 = the colour's last (promotion-side) rank.
RELATIVE_RANK = np.array([[sq % 9 for sq in range(81)], [8 - sq % 9 for sq in range(81)]], dtype=np.int64)
Z_PIECE, Z_HAND, Z_SIDE_ARRAY = _build_zobrist()
Z_SIDE = int(Z_SIDE_ARRAY[0])
# Declaration points per hand/board piece type (king excluded): big pieces 5, others 1.
DECLARATION_POINTS = np.array([0, 1, 1, 1, 1, 5, 5, 1, 0, 1, 1, 1, 1, 5, 5], dtype=np.int64)

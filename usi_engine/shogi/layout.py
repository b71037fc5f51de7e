"""Shogi position layout: piece codes, squares, move packing and the `pos` array.

A position is ONE 1-D ``int64`` numpy array (``pos``) so that numba kernels take a single
argument, threads can copy it cheaply, and it pickles for worker processes.

Squares: ``sq = (file - 1) * 9 + (rank - 1)`` with file 1..9 and rank 1..9 (USI letters a..i).
So ``7g`` is file 7, rank 7 -> sq 60. Black (sente, colour 0) moves towards rank 1.

Pieces: ``piece = ptype + 16 * colour``; 0 is an empty square.
Piece types 1..14: PAWN LANCE KNIGHT SILVER BISHOP ROOK GOLD KING, then the promoted forms
PRO_PAWN .. DRAGON = base + 8 (so ``ptype | PROMOTE`` promotes, ``ptype & 7`` does not demote
GOLD/KING — use DEMOTE[] for the hand type of a captured piece).

Moves are packed in an int32: ``to | from << 7 | promote << 14``. A drop has
``from = DROP_BASE + ptype`` (82..88). ``NO_MOVE = 0`` (from == to == 0 is never a move).

Layout of ``pos`` (indices are constants below):
- ``pos[0:81]``           board, piece code per square
- ``pos[HAND + 8*c + pt]`` pieces of type pt (1..7) in colour c's hand
- ``pos[SIDE]``          colour to move (0 black, 1 white)
- ``pos[KING_SQ + c]``   square of colour c's king, -1 when it has none (tsume problems)
- ``pos[PLY]``           moves made since the SFEN the array was set up from
- ``pos[KEY]``           64-bit Zobrist key of the current position (hands and side included)
- ``pos[MOVE_NUMBER]``   the SFEN's move counter at ply 0
- history, entry i (position i, i = 0..PLY) at ``HIST + HIST_STRIDE * i``:
  ``+H_KEY`` key of position i, ``+H_MOVE`` move made from position i, ``+H_CAPTURED`` piece it
  captured (0 none), ``+H_CHECK`` 1 if the side to move at position i is in check.
The history capacity is ``(len(pos) - HIST) // HIST_STRIDE`` positions.
"""

import numpy as np

# --- colours and piece types --------------------------------------------------------------
BLACK, WHITE = 0, 1
EMPTY = 0
PAWN, LANCE, KNIGHT, SILVER, BISHOP, ROOK, GOLD, KING = 1, 2, 3, 4, 5, 6, 7, 8
PRO_PAWN, PRO_LANCE, PRO_KNIGHT, PRO_SILVER, HORSE, DRAGON = 9, 10, 11, 12, 13, 14
PROMOTE = 8
WHITE_BIT = 16
N_PIECES = 31  # piece codes 0..30

# ptype -> ptype it returns to in hand (for captures); 0 for KING / empty.
DEMOTE = np.array([0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3, 4, 5, 6], dtype=np.int64)
# ptype -> 1 if it may promote.
PROMOTABLE = np.array([0, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0], dtype=np.int64)

PIECE_LETTERS = " PLNSBRGK"  # SFEN letters of ptypes 1..8 (index = ptype)
HAND_ORDER_SFEN = (ROOK, BISHOP, GOLD, SILVER, KNIGHT, LANCE, PAWN)

# --- move packing ---------------------------------------------------------------------------
NO_MOVE = 0
MOVE_TO_MASK = 0x7F
MOVE_FROM_SHIFT = 7
MOVE_PROMO_BIT = 1 << 14
DROP_BASE = 81  # from = DROP_BASE + ptype for a drop (82..88)
MAX_MOVES = 600  # upper bound on legal moves in any shogi position (known max is 593)

# --- pos array layout -------------------------------------------------------------------------
BOARD = 0
HAND = 81  # 16 slots: HAND + 8*colour + ptype (ptype 1..7 used)
SIDE = 97
KING_SQ = 98  # KING_SQ + colour
PLY = 100
KEY = 101
MOVE_NUMBER = 102
HIST = 104
HIST_STRIDE = 4
H_KEY, H_MOVE, H_CAPTURED, H_CHECK = 0, 1, 2, 3
DEFAULT_HISTORY = 1024  # positions; the Python Board grows the array when a game is longer


def pos_size(history_capacity: int = DEFAULT_HISTORY) -> int:
    """Length of a ``pos`` array that can hold ``history_capacity`` positions of history."""
    return HIST + HIST_STRIDE * history_capacity


def square(file: int, rank: int) -> int:
    """Square index of (file 1..9, rank 1..9)."""
    return (file - 1) * 9 + (rank - 1)

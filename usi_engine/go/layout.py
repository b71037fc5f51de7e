"""Go position layout: point indices, move encoding, Zobrist keys and the `pos` array.

A position is ONE 1-D ``int64`` numpy array (``pos``), per the game-kernel contract: numba kernels
take a single argument, threads copy it cheaply, it pickles for worker processes.

Points (one padded layout for every size 2..19): with ``N`` the board size and stride ``W = N + 1``,
the vertex in column ``x`` (0 = A, GTP letters skip I) and row ``y`` (0 = row 1, the bottom) is
``p = (y + 1) * W + x``. Row -1 (indices ``0..W-1``), row N, and column N of every row are BORDER
points; column N doubles as the left border of the next row, so the four neighbours of any point
are ``p +- 1`` and ``p +- W`` with no bounds checks. The largest board (19x19) needs
``(N + 2) * W = 420`` = ``BOARD_CAP`` slots.

Point contents: EMPTY 0, BLACK 1, WHITE 2, BORDER 3; ``opponent(c) = 3 - c``.

Moves are int32: a stone move is its point index (always > 0, since index 0 is a border point);
``PASS = BOARD_CAP`` (420), a fixed code that is never a point index.

Layout of ``pos`` (indices are constants below):
- ``pos[SIZE]``, ``pos[STRIDE]``  N and W
- ``pos[SIDE]``                 colour to move (BLACK 1 / WHITE 2)
- ``pos[PLY]``                  moves made so far = number of history entries
- ``pos[KEY]``                  Zobrist key of the board colouring only (used for superko)
- ``pos[KO]``                   simple-ko point the side to move may not play (0 = none)
- ``pos[PASSES]``               consecutive passes that led to this position (2 = game over)
- ``pos[KOMI_MILLI]``           komi in thousandths of a point (7.0 -> 7000)
- ``pos[KO_RULE]``              KO_POSITIONAL 0 (default), KO_SIMPLE 1, KO_SITUATIONAL 2
- ``pos[SUICIDE_OK]``           1: multi-stone suicide legal (Tromp-Taylor), 0: forbidden (default)
- ``pos[HIST_CAP]``             history capacity H (positions)
- ``pos[CAPS]``                 offset of the capture stack, ``CAP_TOP`` its current end
- ``pos[BOARD:BOARD+BOARD_CAP]`` point contents
- history entry i (position i, before move i, i < PLY) at ``HIST + HIST_STRIDE * i``:
  ``+H_KEY`` board key, ``+H_MOVE`` move played, ``+H_KO``, ``+H_PASSES``, ``+H_SIDE`` header values
  of position i, ``+H_CAPTOP`` capture-stack end before the move.
- capture stack at ``pos[CAPS:]``: one entry per removed stone, ``point | colour << 16``; move i
  removed the entries between its H_CAPTOP and the next entry's (or CAP_TOP).

- scratch, the last ``SCRATCH_LEN`` slots (from ``len(pos) - SCRATCH_LEN``): a stamp, then a mark array and a stack of
  BOARD_CAP slots each, the working memory of board.py's block floods (so that a move allocates nothing).
  A flood marks with stamps above the stamp it found and stores the last one it used; the scratch is no
  part of the position (``live_state`` leaves it out) and a copy may carry it or zero it.

Undo therefore restores exactly from pos alone: lift the stone, put back the removed stones, reload
the header from the history entry. Every removed stone was placed by an earlier move, so the stack
never needs more than H + BOARD_CAP entries.
"""

import numpy as np

from usi_engine.search.rng import splitmix64_outputs

MIN_SIZE, MAX_SIZE = 2, 19
LARGE_BOARD = 15  # from this size on a board is "large": Pachi's threshold for its 19x19 prior and constants
EMPTY, BLACK, WHITE, BORDER = 0, 1, 2, 3
BOARD_CAP = (MAX_SIZE + 2) * (MAX_SIZE + 1)
PASS = BOARD_CAP
CAPTURE_COLOUR_SHIFT = 16
CAPTURE_POINT_MASK = (1 << CAPTURE_COLOUR_SHIFT) - 1

KO_POSITIONAL, KO_SIMPLE, KO_SITUATIONAL = 0, 1, 2

# --- pos header -----------------------------------------------------------------------------
SIZE = 0
STRIDE = 1
SIDE = 2
PLY = 3
KEY = 4
KO = 5
PASSES = 6
KOMI_MILLI = 7
KO_RULE = 8
SUICIDE_OK = 9
HIST_CAP = 10
CAPS = 11
CAP_TOP = 12
BOARD = 16
HIST = BOARD + BOARD_CAP
HIST_STRIDE = 6
SCRATCH_LEN = 2 * BOARD_CAP + 1  # the flood scratch at the end of pos: stamp, mark[BOARD_CAP], stack[BOARD_CAP]
H_KEY, H_MOVE, H_KO, H_PASSES, H_SIDE, H_CAPTOP = 0, 1, 2, 3, 4, 5
DEFAULT_HISTORY = 1024


_KEYS = splitmix64_outputs(0x60D0BA5E, 3 * BOARD_CAP + 2).view(np.int64)
# ZOBRIST[colour, point]: BLACK/WHITE stone keys; row EMPTY holds the ko-point keys for pos_key.
ZOBRIST = _KEYS[: 3 * BOARD_CAP].reshape(3, BOARD_CAP).copy()
ZOBRIST[EMPTY, 0] = 0  # "no ko point" adds nothing
SIDE_KEY = int(_KEYS[3 * BOARD_CAP])  # white to move
PASS_KEY = int(_KEYS[3 * BOARD_CAP + 1])  # the previous move was a pass


def pos_size(history_capacity: int = DEFAULT_HISTORY) -> int:
    """Length of a ``pos`` array holding ``history_capacity`` positions of history."""
    return HIST + HIST_STRIDE * history_capacity + history_capacity + BOARD_CAP + SCRATCH_LEN


def point(size: int, x: int, y: int) -> int:
    """Point index of column x, row y (both 0-based, row 0 at the bottom) on a size x size board."""
    return (y + 1) * (size + 1) + x


def new_pos(
    size: int = 9,
    komi: float = 7.0,
    history_capacity: int = DEFAULT_HISTORY,
    ko_rule: int = KO_POSITIONAL,
    suicide_ok: bool = False,
) -> np.ndarray:
    """An empty board of the given size, Black to move."""
    if not MIN_SIZE <= size <= MAX_SIZE:
        raise ValueError(f"board size {size} outside {MIN_SIZE}..{MAX_SIZE}")
    pos = np.zeros(pos_size(history_capacity), dtype=np.int64)
    w = size + 1
    pos[SIZE], pos[STRIDE], pos[SIDE] = size, w, BLACK
    pos[KOMI_MILLI] = int(round(komi * 1000))
    pos[KO_RULE], pos[SUICIDE_OK] = ko_rule, int(bool(suicide_ok))
    pos[HIST_CAP] = history_capacity
    pos[CAPS] = pos[CAP_TOP] = HIST + HIST_STRIDE * history_capacity
    board = pos[BOARD : BOARD + BOARD_CAP]
    board[:] = BORDER
    for y in range(size):
        for x in range(size):
            board[point(size, x, y)] = EMPTY
    return pos


def live_state(pos: np.ndarray) -> np.ndarray:
    """The meaningful part of pos: header, board, history up to PLY and the capture stack up to its
    top. Slots beyond are stale after an undo and never read, so "pos unchanged" means this is."""
    hist_end = HIST + HIST_STRIDE * int(pos[PLY])
    return np.concatenate([pos[:hist_end], pos[int(pos[CAPS]) : int(pos[CAP_TOP])]])


def grow_history(pos: np.ndarray, history_capacity: int) -> np.ndarray:
    """A copy of pos with a larger history capacity (the capture stack moves to its new offset)."""
    new = np.zeros(pos_size(history_capacity), dtype=np.int64)
    old_caps, top = int(pos[CAPS]), int(pos[CAP_TOP])
    new[:old_caps] = pos[:old_caps]
    new_caps = HIST + HIST_STRIDE * history_capacity
    new[new_caps : new_caps + top - old_caps] = pos[old_caps:top]
    new[HIST_CAP], new[CAPS], new[CAP_TOP] = history_capacity, new_caps, new_caps + top - old_caps
    ply = int(pos[PLY])
    for i in range(ply):  # capture-stack marks in the history are absolute offsets
        new[HIST + HIST_STRIDE * i + H_CAPTOP] += new_caps - old_caps
    return new

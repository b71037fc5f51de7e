"""Pachi's moggy 3x3 playout patterns with their gammas, as one lookup table (Pachi 12.90, playout/moggy.c and
pattern3.c; its source credits MoGo's set, to which it adds a diagonal attachment, a peeped cut, a keima cut and
edge patterns, and stone-in-atari conditions).

Read from Pachi's description of its patterns; the diagrams here are ours, in the notation of patterns.py (top row
first, centre = the empty candidate point, colours of the side to move), with Pachi's meaning of the wildcards and
two more symbols:

    X  a stone of the side to move          Y  a stone of the side to move that is not in atari
    O  an opponent stone                    Q  an opponent stone that is not in atari
    .  empty                                #  off board
    x  not X (empty, O or off board)        o  not O (empty, X or off board)
    ?  anything, off board included

Atari is seen on the four orthogonal neighbours only (on a diagonal, Y is X and Q is O, as in Pachi's hash). Each
diagram matches in its 8 rotations / reflections, with the colours swapped too unless it holds for the side to move
only. Unlike MoGo's set in patterns.py, ``?``, ``x`` and ``o`` match off board, so the centre diagrams also apply on
the first line.

Each pattern has a gamma, the weight of its draw (Pachi's defaults, CLOP-tuned on 15x15): the playout picks one of
the matching candidates around the last two moves with probability gamma / sum of gammas. Where two diagrams match
the same neighbourhood, the later one in the list holds, as in Pachi's table.

The table (``MOGGY_TABLE``, built at import) is indexed by ``moggy_index``: the contents of the 4 diagonal
neighbours in base 4 (EMPTY 0 / BLACK 1 / WHITE 2 / BORDER 3), plus 256 times the states of the 4 orthogonal
neighbours in base 6 (the content, plus 3 for a stone in atari). Its entry holds in the low 4 bits the pattern
number + 1 that matches for Black to move, in the high 4 bits the one for White (0: none); ``MOGGY_GAMMAS`` maps that
number to the gamma in hundredths, an integer so that draws use integer totals.
"""

from dataclasses import dataclass

import numpy as np

from usi_engine.go.layout import BLACK, BORDER, EMPTY, WHITE
from usi_engine.go.patterns import NEIGHBOUR_CELLS, diagram_cells
from usi_engine.go.shapes import square_maps
from usi_engine.go.workspace import R_BOARD, R_HEAD, _in_atari
from usi_engine.jit import bare_kernel

DIAGONAL_CELLS = (0, 2, 6, 8)  # cell = row * 3 + column, row 0 at the bottom (patterns.NEIGHBOUR_CELLS)
ORTHOGONAL_CELLS = (1, 3, 5, 7)
ATARI = 3  # an orthogonal neighbour's state: its content, + ATARI for a stone in atari
N_INDEX = 4**4 * 6**4
SYMBOLS = "XOYQ.#xo?"


@dataclass(frozen=True)
class MoggyPattern:
    """One of Pachi's moggy patterns: a 3x3 diagram (top row first), its gamma in hundredths, and whether it holds
    for X to move only."""

    name: str
    diagram: str
    gamma: int
    mover_only: bool = False


MOGGY_PATTERNS = (
    MoggyPattern("hane: enclosing", "X O X / . . . / ? ? ?", 52),
    MoggyPattern("hane: non-cutting", "Y O . / . . . / ? . ?", 53),
    MoggyPattern("hane: magari", "X O ? / X . . / x . ?", 32),
    MoggyPattern("hane: thin (X to move only)", "X O O / . . . / ? . ?", 22, mover_only=True),
    MoggyPattern("diagonal attachment", ". Q . / Y . . / . . .", 37),
    MoggyPattern("cut1: unprotected cut", "X O ? / O . o / ? o ?", 28),
    MoggyPattern("cut1: peeped cut", "X O ? / O . X / ? ? ?", 21),
    MoggyPattern("cut2", "? X ? / O . O / o o o", 19),
    MoggyPattern("keima cut", "O X ? / ? . O / ? o ?", 82),
    MoggyPattern("edge: chase", "X . ? / O . ? / # # ?", 12),
    MoggyPattern("edge: block the side cut", "O X ? / X . O / # # #", 20),
    MoggyPattern("edge: block the side connection", "? X ? / x . O / # # #", 11),
    MoggyPattern("edge: sagari", "? X Q / x . x / # # #", 16),
    MoggyPattern("edge: cut", "? O Y / Y . O / # # #", 57),
    MoggyPattern("edge: make an eye", "? X . / Q . X / # # #", 44),
)


def _states(symbol: str, own: int, orthogonal: bool) -> tuple[int, ...]:
    """The neighbour states a symbol matches (contents; on an orthogonal cell + ATARI for a stone in atari)."""
    opp = 3 - own
    stone = {
        "X": (own, own + ATARI),
        "O": (opp, opp + ATARI),
        "Y": (own,),
        "Q": (opp,),
    }
    anything = (EMPTY, BLACK, WHITE, BORDER) + ((BLACK + ATARI, WHITE + ATARI) if orthogonal else ())
    if symbol in stone:
        return stone[symbol] if orthogonal else stone[symbol][:1]
    if symbol == ".":
        return (EMPTY,)
    if symbol == "#":
        return (BORDER,)
    excluded = {"x": own, "o": opp, "?": None}
    if symbol in excluded:
        return tuple(s for s in anything if s % ATARI != excluded[symbol])
    raise ValueError(f"unknown moggy pattern symbol {symbol!r}")


def moggy_indices(diagram: str, g: int, own: int) -> np.ndarray:
    """Table indices that symmetry g of the diagram matches with X = colour own (each once)."""
    cells = diagram_cells(diagram, SYMBOLS)
    placed = [""] * 9
    for cell, image in enumerate(square_maps(3)[g]):
        placed[image] = cells[cell]
    if placed[4] != ".":
        raise ValueError(f"a pattern's centre is the empty point of the move: {diagram!r}")
    # index = sum over the diagonals of state * 4**k + 256 * sum over the orthogonals of state * 6**k: the outer
    # sum of each cell's weighted states enumerates every matching neighbourhood exactly once
    terms = [
        np.array(_states(placed[cell], own, False), dtype=np.int64) * 4**k for k, cell in enumerate(DIAGONAL_CELLS)
    ]
    terms += [
        np.array(_states(placed[cell], own, True), dtype=np.int64) * (256 * 6**k)
        for k, cell in enumerate(ORTHOGONAL_CELLS)
    ]
    out = np.zeros(1, dtype=np.int64)
    for term in terms:
        out = np.add.outer(out, term).ravel()
    return out


def build_moggy_table() -> np.ndarray:
    """table[index]: pattern number + 1 matching for Black to move (low 4 bits) and for White (high 4 bits)."""
    table = np.zeros(N_INDEX, dtype=np.uint8)
    for number, pattern in enumerate(MOGGY_PATTERNS):
        for mover, shift in ((BLACK, 0), (WHITE, 4)):
            owners = (mover,) if pattern.mover_only else (BLACK, WHITE)
            idx = np.concatenate([moggy_indices(pattern.diagram, g, own) for own in owners for g in range(8)])
            table[idx] = (table[idx] & (0xF0 >> shift)) | ((number + 1) << shift)
    table.setflags(write=False)
    return table


MOGGY_TABLE = build_moggy_table()
MOGGY_GAMMAS = np.array([0] + [p.gamma for p in MOGGY_PATTERNS], dtype=np.int64)
MOGGY_GAMMAS.setflags(write=False)
assert len(NEIGHBOUR_CELLS) == len(DIAGONAL_CELLS) + len(ORTHOGONAL_CELLS)


@bare_kernel
def moggy_index(ws, w, p):
    """MOGGY_TABLE's index of the empty point p (module docstring) on the workspace's board (stride w)."""
    board, head = ws[R_BOARD], ws[R_HEAD]
    index = board[p - w - 1] + 4 * board[p - w + 1] + 16 * board[p + w - 1] + 64 * board[p + w + 1]
    scale = 256
    for q in (p - w, p - 1, p + 1, p + w):
        s = board[q]
        if (s == BLACK or s == WHITE) and _in_atari(ws, head[q]):
            s += ATARI
        index += scale * s
        scale *= 6
    return index


@bare_kernel
def moggy_gamma(ws, w, p, c):
    """The gamma (hundredths) of the moggy pattern that the empty point p matches for colour c to move; 0: none."""
    entry = np.int64(MOGGY_TABLE[moggy_index(ws, w, p)])
    return MOGGY_GAMMAS[(entry >> 4) if c == WHITE else (entry & 15)]

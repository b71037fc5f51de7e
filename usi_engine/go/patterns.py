"""MoGo's 3x3 playout patterns as one lookup table (Gelly, Wang, Munos & Teytaud 2006, RR-6062: the figures of
its hane, cut1, cut2 and board-side patterns; the same set Fuego's GoUctPatterns and Pachi's moggy playouts
start from).

A pattern is a 3x3 diagram centred on the candidate move (always an empty point). It is written below with the
top row first, in the colours of the side to move:

    X  a stone of the side to move        x  X or empty (not O)
    O  an opponent stone                  o  O or empty (not X)
    .  empty                              ?  any point on the board (not off board)
    #  off board

Every diagram matches in all 8 rotations / reflections of the square. The paper draws Black and White and marks a
few patterns as valid only for one side to move; the others hold for both colours. Here a pattern that holds for
both colours also matches with X and O swapped (``mover_only=False``); the paper's side-specific ones are written
with X = the side to move and match only that way (``mover_only=True``). A pattern may list *exceptions*: it
matches in an orientation only if none of its exceptions matches in the same orientation (the paper's cut1: "the
first pattern is matched and the next two are not").

Because ``?`` never matches an off-board point, the centre patterns (hane, cut1, cut2) apply to points off the
first line and the edge patterns (bottom row ``###``) to first-line points that are not corners; corners match
nothing. That is how Fuego splits the paper's figures into a centre and an edge table.

The table (``PATTERN_TABLE``, built at import): one uint8 per *neighbourhood code* ``sum(content(cell_k) * 4**k)``
over the 8 neighbours (contents EMPTY 0 / BLACK 1 / WHITE 2 / BORDER 3; cell k in ``NEIGHBOUR_CELLS`` order, the
row-major cells of the square from the bottom-left, skipping the centre). Bit ``c`` (BLACK 1, WHITE 2) is set when
some pattern matches for colour c to move. The kernel ``matches`` reads 8 board points and one table entry.
"""

import itertools
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from usi_engine.go.layout import BLACK, BORDER, EMPTY, WHITE
from usi_engine.go.shapes import square_maps
from usi_engine.jit import bare_kernel

NEIGHBOUR_CELLS = (0, 1, 2, 3, 5, 6, 7, 8)  # cell = row * 3 + column, row 0 at the bottom; 4 is the centre
CENTRE = 4
N_CODES = 4**8
# what each diagram symbol matches, in the colours of the diagram ("X" / "O" are resolved per colouring)
SYMBOLS = {
    "X": ("X",),
    "O": ("O",),
    ".": (".",),
    "x": ("X", "."),
    "o": ("O", "."),
    "?": ("X", "O", "."),
    "#": ("#",),
}


@dataclass(frozen=True)
class Pattern:
    """One of the paper's patterns: a 3x3 diagram (top row first), the diagrams that veto it in the same
    orientation, and whether X must be the side to move (else X may be either colour)."""

    name: str
    diagram: str
    exceptions: tuple[str, ...] = ()
    mover_only: bool = False


PATTERNS = (
    # Hane (RR-6062, patterns for hane): true if any matches.
    Pattern(
        "hane1: enclosing hane",
        """
        X O X
        . . .
        ? ? ?
        """,
    ),
    Pattern(
        "hane2: non-cutting hane",
        """
        X O .
        . . .
        ? . ?
        """,
    ),
    Pattern(
        "hane3: magari",
        """
        X O ?
        X . .
        ? . ?
        """,
    ),
    Pattern(
        "hane4: thin hane (only for X to play)",
        """
        X O O
        . . .
        ? . ?
        """,
        mover_only=True,
    ),
    # Cut1: the first diagram, unless one of the next two matches (three O around the point, one empty).
    Pattern(
        "cut1",
        """
        X O ?
        O . ?
        ? ? ?
        """,
        exceptions=(
            """
            X O ?
            O . O
            ? . ?
            """,
            """
            X O ?
            O . .
            ? O ?
            """,
        ),
    ),
    # Cut2: the upper six points as drawn and no O on the bottom row.
    Pattern(
        "cut2",
        """
        ? X ?
        O . O
        x x x
        """,
    ),
    # Board side (the move on the first line; the bottom row is off board).
    Pattern(
        "edge1",
        """
        X . ?
        O . ?
        # # #
        """,
    ),
    Pattern(
        "edge2",
        """
        ? X ?
        o . O
        # # #
        """,
    ),
    # The paper's three side-specific edge patterns, redrawn with X = the side to move: the first for Black to
    # play (X = Black), the last two for White to play (the paper's O, so its colours are swapped here).
    Pattern(
        "edge3 (only for X to play)",
        """
        ? X O
        ? . ?
        # # #
        """,
        mover_only=True,
    ),
    Pattern(
        "edge4 (only for X to play)",
        """
        ? O X
        ? . x
        # # #
        """,
        mover_only=True,
    ),
    Pattern(
        "edge5 (only for X to play)",
        """
        ? O X
        X . O
        # # #
        """,
        mover_only=True,
    ),
)


def diagram_cells(diagram: str, alphabet: Iterable[str] = SYMBOLS) -> list[str]:
    """The 9 symbols of a diagram by cell (row * 3 + column, row 0 at the bottom = the diagram's last line); rows
    are lines or separated by "/", symbols by spaces, each one of `alphabet`."""
    allowed = set(alphabet)
    rows = [line.split() for line in diagram.replace("/", "\n").strip().splitlines()]
    if len(rows) != 3 or any(len(r) != 3 or any(s not in allowed for s in r) for r in rows):
        raise ValueError(f"not a 3x3 pattern diagram: {diagram!r}")
    return [rows[2 - i][j] for i in range(3) for j in range(3)]


def _codes(diagram: str, g: int, own: int) -> set[int]:
    """Neighbourhood codes that symmetry g of the diagram matches with X = colour own."""
    cells = diagram_cells(diagram)
    placed = [""] * 9
    for cell, image in enumerate(square_maps(3)[g]):
        placed[image] = cells[cell]
    if placed[CENTRE] != ".":
        raise ValueError(f"a pattern's centre is the empty point of the move: {diagram!r}")
    content = {"X": own, "O": 3 - own, ".": EMPTY, "#": BORDER}
    options = [[content[s] for s in SYMBOLS[placed[cell]]] for cell in NEIGHBOUR_CELLS]
    return {sum(v * 4**k for k, v in enumerate(combo)) for combo in itertools.product(*options)}


def pattern_codes(pattern: Pattern, mover: int) -> set[int]:
    """Neighbourhood codes at which the pattern matches for colour `mover` to play."""
    owners = (mover,) if pattern.mover_only else (BLACK, WHITE)
    out: set[int] = set()
    for own in owners:
        for g in range(8):
            codes = _codes(pattern.diagram, g, own)
            for exception in pattern.exceptions:
                codes -= _codes(exception, g, own)
            out |= codes
    return out


def build_table() -> np.ndarray:
    """table[code] has bit c set (c = BLACK 1 / WHITE 2) when one of PATTERNS matches for c to play."""
    table = np.zeros(N_CODES, dtype=np.uint8)
    for mover in (BLACK, WHITE):
        for pattern in PATTERNS:
            table[sorted(pattern_codes(pattern, mover))] |= mover
    table.setflags(write=False)
    return table


PATTERN_TABLE = build_table()


@bare_kernel
def neighbourhood_code(board, w, p):
    """Base-4 code of the contents of the 8 neighbours of p (digit k = cell NEIGHBOUR_CELLS[k]; stride w)."""
    return (
        board[p - w - 1]
        + 4 * board[p - w]
        + 16 * board[p - w + 1]
        + 64 * board[p - 1]
        + 256 * board[p + 1]
        + 1024 * board[p + w - 1]
        + 4096 * board[p + w]
        + 16384 * board[p + w + 1]
    )


@bare_kernel
def matches(board, w, p, c):
    """The empty point p matches one of MoGo's patterns for colour c to play."""
    return (PATTERN_TABLE[neighbourhood_code(board, w, p)] & c) != 0

"""SGF loading for GTP `loadsgf` (sgfmill): the main line of a Go game record replayed on a GoBoard.

Setup stones (AB/AW in any node of the main line) are played as moves of their colour (the way Sabaki
syncs setup stones over GTP), then the moves. `until` is a move number (the position BEFORE that move,
counting moves from 1) or a vertex (the position before the first move played there). The colour to move
is the next move's colour, else the root's PL, else the opposite of the last move.
"""

from sgfmill import sgf

from usi_engine.go import layout as L
from usi_engine.go.goboard import COLUMNS, GoBoard


def _vertex(point) -> str:
    """GTP vertex of an sgfmill (row, col) point, None meaning pass."""
    if point is None:
        return "pass"
    row, col = point
    return f"{COLUMNS[col]}{row + 1}"


def load_sgf(path: str, until=None, ko_rule: str = "positional"):
    """(GoBoard, colour to move) of the game in `path` up to `until` (see the module docstring).
    ValueError on a malformed file, a board size outside 2..19, or an illegal move."""
    with open(path, "rb") as fh:
        try:
            game = sgf.Sgf_game.from_bytes(fh.read())
        except ValueError as e:
            raise ValueError(f"bad sgf: {e}") from None
    size = game.get_size()
    if not L.MIN_SIZE <= size <= L.MAX_SIZE:
        raise ValueError(f"board size {size} not supported")
    board = GoBoard(size, game.get_komi(), ko_rule)
    by_number = until is not None and str(until).isdigit()
    target = int(until) if by_number else (None if until is None else board.parse_vertex(until))
    moves = 0
    next_colour = None
    for node in game.get_main_sequence():
        for prop, colour in (("AB", L.BLACK), ("AW", L.WHITE)):
            if node.has_property(prop):
                for point in sorted(node.get(prop)):
                    board.play(colour, _vertex(point))
        colour, point = node.get_move()
        if colour is None:
            continue
        vertex = _vertex(point)
        if (by_number and target is not None and moves + 1 >= target) or (
            not by_number and target is not None and point is not None and board.parse_vertex(vertex) == target
        ):
            next_colour = L.BLACK if colour == "b" else L.WHITE
            break
        board.play(colour, vertex)
        moves += 1
    if next_colour is None:
        root = game.get_root()
        if moves == 0 and root.has_property("PL"):
            next_colour = L.BLACK if root.get("PL") == "b" else L.WHITE
        else:
            next_colour = board.to_move
    board.to_move = next_colour
    return board, next_colour

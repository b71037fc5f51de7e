"""Opening files: start positions that every pair of games plays once with each colour.

Shogi, one opening per line (blank lines and lines starting with # are skipped):
  7g7f 3c3d 2g2f                      USI moves from the normal start position
  startpos moves 7g7f 3c3d            (also `position startpos moves ...`)
  sfen <board> <side> <hand> [n] [moves ...]   or the SFEN alone
Go: an SGF file (each game of the collection is one opening; its main line's moves) or a text file with
one opening per line of GTP vertices, alternating from Black (`D4 E5 pass C3`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

GO_COLUMNS = "ABCDEFGHJKLMNOPQRSTUVWXYZ"  # GTP columns skip I


@dataclass(frozen=True)
class Opening:
    sfen: str | None = None  # shogi start SFEN; None = normal start position
    moves: tuple = field(default=())  # shogi: USI strings; Go: (colour, (row, col) | None)
    label: str = ""


def parse_shogi_line(line: str) -> Opening:
    """One shogi opening line (module docstring); ValueError with the reason otherwise."""
    tokens = line.split()
    if tokens and tokens[0] == "position":
        tokens = tokens[1:]
    if not tokens:
        raise ValueError("empty opening")
    sfen = None
    if tokens[0] == "startpos":
        tokens = tokens[1:]
    elif tokens[0] == "sfen" or "/" in tokens[0]:
        if tokens[0] == "sfen":
            tokens = tokens[1:]
        end = tokens.index("moves") if "moves" in tokens else len(tokens)
        if end not in (3, 4):
            raise ValueError(f"SFEN needs 3 or 4 fields, got {' '.join(tokens[:end])!r}")
        sfen = " ".join(tokens[:end] + (["1"] if end == 3 else []))
        tokens = tokens[end:]
    if tokens and tokens[0] == "moves":
        tokens = tokens[1:]
    return Opening(sfen, tuple(tokens), line.strip())


def load_shogi_openings(path: str) -> list[Opening]:
    openings = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, start=1):
            if line.strip() and not line.lstrip().startswith("#"):
                try:
                    openings.append(parse_shogi_line(line))
                except ValueError as e:
                    raise ValueError(f"{path}:{n}: {e}") from None
    if not openings:
        raise ValueError(f"{path}: no openings")
    return openings


def parse_vertex(text: str, size: int):
    """GTP vertex -> (row, col) counted from the bottom-left, or None for pass."""
    v = text.strip().upper()
    if v == "PASS":
        return None
    if len(v) < 2 or v[0] not in GO_COLUMNS[:size] or not v[1:].isdigit() or not 1 <= int(v[1:]) <= size:
        raise ValueError(f"bad vertex {text!r} for size {size}")
    return int(v[1:]) - 1, GO_COLUMNS.index(v[0])


def format_vertex(point) -> str:
    if point is None:
        return "pass"
    row, col = point
    return f"{GO_COLUMNS[col]}{row + 1}"


def load_go_openings(path: str, size: int) -> list[Opening]:
    if path.lower().endswith(".sgf"):
        openings = _sgf_openings(path, size)
    else:
        openings = []
        with open(path, encoding="utf-8") as f:
            for n, line in enumerate(f, start=1):
                if line.strip() and not line.lstrip().startswith("#"):
                    try:
                        pts = [parse_vertex(v, size) for v in line.split()]
                    except ValueError as e:
                        raise ValueError(f"{path}:{n}: {e}") from None
                    openings.append(Opening(None, tuple(("bw"[i % 2], p) for i, p in enumerate(pts)), line.strip()))
    if not openings:
        raise ValueError(f"{path}: no openings")
    return openings


def _sgf_openings(path: str, size: int) -> list[Opening]:
    from sgfmill import sgf, sgf_grammar

    with open(path, "rb") as f:
        data = f.read()
    openings = []
    for i, tree in enumerate(sgf_grammar.parse_sgf_collection(data)):
        game = sgf.Sgf_game.from_coarse_game_tree(tree)
        if game.get_size() != size:
            raise ValueError(f"{path}: game {i + 1} is {game.get_size()}x{game.get_size()}, match is {size}")
        if any(game.get_root().has_property(p) for p in ("AB", "AW", "AE")):
            raise ValueError(f"{path}: game {i + 1} has setup stones; only move sequences are supported")
        moves = tuple(node.get_move() for node in game.get_main_sequence()[1:] if node.get_move()[0])
        openings.append(Opening(None, moves, f"{path}#{i + 1}"))
    return openings

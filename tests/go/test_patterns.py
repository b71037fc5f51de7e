"""MoGo's 3x3 playout patterns (usi_engine/go/patterns.py) and the playout / prior rules that use them: the lookup
table against a brute-force matcher of the ASCII diagrams, hand-made hane and cut positions, legality of pattern
playouts, and the option off giving the same playouts as the policy before patterns existed."""

import re

import numpy as np
import pytest

from usi_engine.go import GoBoard
from usi_engine.go import layout as L
from usi_engine.go.game import MAX_MOVES, P_PLAYOUT_POLICY, P_PRIOR_PATTERNS, default_params, expand_amaf
from usi_engine.go.patterns import PATTERNS, PATTERN_TABLE, matches
from usi_engine.go.player import GoPlayer
from usi_engine.go.playout import (
    PRIOR_EMPTY_EDGE,
    PRIOR_EVEN,
    PRIOR_NEAR_LAST,
    PRIOR_OPEN_CORNER,
    PRIOR_OPEN_FIRST,
    PRIOR_OPEN_THIRD,
    PRIOR_PATTERN,
    move_cap,
    move_priors,
    playout_policy,
    run_playout,
    seed_rng,
)
from usi_engine.go.workspace import new_workspace
from usi_engine.gtp_options import build_parser, player_settings

NONE = np.empty(0, dtype=np.float64)
# The 8 neighbours in the order of the code's base-4 digits: (dx, dy), dy = +1 is the row above.
DIGIT_OFFSETS = ((-1, -1), (0, -1), (1, -1), (-1, 0), (1, 0), (-1, 1), (0, 1), (1, 1))
CLASS = {"X": "X", "O": "O", ".": r"\.", "x": "[X.]", "o": "[O.]", "?": "[XO.]", "#": "#"}
SWAP = str.maketrans("XOxo", "OXox")


# --- an independent brute-force matcher: diagrams as text grids, symmetries by turning the text --------------
def _grid(diagram: str) -> list[str]:
    return ["".join(line.split()) for line in diagram.strip().splitlines()]


def _images(grid: list[str]) -> list[list[str]]:
    """The 8 rotations / reflections of a 3x3 text grid."""
    out = []
    for g in (grid, [row[::-1] for row in grid]):
        for _ in range(4):
            out.append(g)
            g = ["".join(g[2 - r][c] for r in range(3)) for c in range(3)]  # a quarter turn clockwise
    return out


def _regex(grid: list[str]) -> re.Pattern:
    return re.compile("".join(CLASS[s] for s in "".join(grid)))


def _variants(mover_is_x_only: bool, diagram: str, exceptions: tuple) -> list:
    """(regex of the diagram, regexes of its exceptions) per orientation and colouring."""
    colourings = [lambda s: s] if mover_is_x_only else [lambda s: s, lambda s: s.translate(SWAP)]
    out = []
    for colour in colourings:
        grids = [_images(_grid(colour(d))) for d in (diagram, *exceptions)]
        for g in range(8):
            out.append((_regex(grids[0][g]), [_regex(e[g]) for e in grids[1:]]))
    return out


VARIANTS = [v for p in PATTERNS for v in _variants(p.mover_only, p.diagram, p.exceptions)]


def brute_force(text: str) -> bool:
    """text: the 3x3 neighbourhood read top row first, in the mover's colours (X own, O opponent, . empty,
    # off board). True when some diagram matches in some orientation and none of its exceptions does there."""
    return any(main.fullmatch(text) and not any(e.fullmatch(text) for e in exc) for main, exc in VARIANTS)


def code_text(code: int, mover: int) -> str:
    """The neighbourhood of a table code as brute_force text for `mover` to play."""
    symbol = {L.EMPTY: ".", mover: "X", 3 - mover: "O", L.BORDER: "#"}
    cells = {(0, 0): "."}
    for k, (dx, dy) in enumerate(DIGIT_OFFSETS):
        cells[(dx, dy)] = symbol[(code >> (2 * k)) & 3]
    return "".join(cells[(dx, dy)] for dy in (1, 0, -1) for dx in (-1, 0, 1))


def board_text(pos: np.ndarray, p: int, mover: int) -> str:
    """The neighbourhood of point p of pos as brute_force text, read from the board directly."""
    w = int(pos[L.STRIDE])
    symbol = {L.EMPTY: ".", mover: "X", 3 - mover: "O", L.BORDER: "#"}
    board = pos[L.BOARD : L.BOARD + L.BOARD_CAP]
    return "".join(symbol[int(board[(p + dy * w + dx) % L.BOARD_CAP])] for dy in (1, 0, -1) for dx in (-1, 0, 1))


def _on_board_shape(code: int) -> bool:
    """The border cells of a code are none or exactly one whole side: an off-corner point's neighbourhood."""
    border = {DIGIT_OFFSETS[k] for k in range(8) if (code >> (2 * k)) & 3 == L.BORDER}
    sides = [{(d, e) for e in (-1, 0, 1)} for d in (-1, 1)] + [{(e, d) for e in (-1, 0, 1)} for d in (-1, 1)]
    return not border or border in sides


# --- the table ----------------------------------------------------------------------------------------------
def test_table_equals_a_brute_force_matcher_of_the_diagrams():
    """Every neighbourhood without a border or with one border side, both sides to move: the table bit equals
    the brute-force match; every other code (corners, impossible borders) matches nothing."""
    checked = 0
    for code in range(4**8):
        entry = int(PATTERN_TABLE[code])
        if not _on_board_shape(code):
            assert entry == 0, code
            continue
        for mover in (L.BLACK, L.WHITE):
            assert bool(entry & mover) == brute_force(code_text(code, mover)), (code, mover, code_text(code, mover))
            checked += 1
    assert checked == 2 * (3**8 + 4 * 3**5)


@pytest.mark.parametrize(
    "text, mover, expected",
    [
        ("XOX......", L.BLACK, True),  # hane1 (enclosing hane)
        ("OXO......", L.BLACK, True),  # hane1 with the colours swapped
        ("XO.......", L.WHITE, True),  # hane2 (non-cutting hane)
        ("XOXO.X..X", L.BLACK, True),  # cut1
        ("XO.O.O...", L.BLACK, False),  # cut1's first exception: three O around the point
        ("XO.O...O.", L.BLACK, False),  # cut1's second exception
        (".X.O.O...", L.BLACK, True),  # cut2
        (".X.O.O..O", L.BLACK, False),  # cut2 needs no O on the row below
        ("XOO......", L.BLACK, True),  # hane4 (thin hane): only for X to play ...
        ("OXX......", L.BLACK, False),  # ... not for O to play
    ],
)
def test_table_on_hand_made_neighbourhoods(text, mover, expected):
    """A few neighbourhoods written out (top row first, X = Black, O = White) and looked up in the table."""
    board = GoBoard(5, komi=0)
    colour = {"X": L.BLACK, "O": L.WHITE}
    for i, s in enumerate(text):
        if s in colour:
            board.play(colour[s], "BCD"[i % 3] + str(4 - i // 3))
    board.to_move = mover
    p = board.parse_vertex("C3")
    assert bool(matches(board.pos[L.BOARD : L.BOARD + L.BOARD_CAP], 6, p, mover)) == expected


def test_kernel_reads_the_board_like_the_brute_force_matcher():
    """matches() on random boards of several sizes, every empty point (edges and corners included), both sides
    to move, equals the brute-force matcher on the neighbourhood read from the board."""
    rng = np.random.default_rng(7)
    for size in (5, 9, 19):
        for _ in range(6):
            pos = L.new_pos(size)
            board = pos[L.BOARD : L.BOARD + L.BOARD_CAP]
            points = [L.point(size, x, y) for y in range(size) for x in range(size)]
            board[points] = rng.choice([L.EMPTY, L.BLACK, L.WHITE], size=len(points), p=[0.5, 0.25, 0.25])
            for p in points:
                if board[p] == L.EMPTY:
                    for mover in (L.BLACK, L.WHITE):
                        assert bool(matches(board, size + 1, p, mover)) == brute_force(board_text(pos, p, mover))


# --- the playout rule ---------------------------------------------------------------------------------------
def _game(size: int, moves: list[str]) -> GoBoard:
    b = GoBoard(size, komi=7.0)
    for i, vertex in enumerate(moves):
        b.play("bw"[i % 2], vertex)
    return b


def _pattern_candidates(b: GoBoard) -> set[str]:
    """Empty 8-neighbours of the last move that the brute-force matcher accepts for the side to move."""
    pos, w = b.pos, b.size + 1
    last = int(pos[L.HIST + L.HIST_STRIDE * (int(pos[L.PLY]) - 1) + L.H_MOVE])
    mover = int(pos[L.SIDE])
    near = [last + dy * w + dx for dy in (-1, 0, 1) for dx in (-1, 0, 1)]
    return {b.vertex(q) for q in near if pos[L.BOARD + q] == L.EMPTY and brute_force(board_text(pos, q, mover))}


def _first_moves(b: GoBoard, patterns: bool, n: int = 400) -> dict[str, int]:
    ws, rng = new_workspace(), seed_rng(17)
    trace = np.full(1, -1, dtype=np.int32)
    counts: dict[str, int] = {}
    for _ in range(n):
        run_playout(b.pos, ws, rng, 1, NONE, NONE, trace, playout_policy(patterns, False))
        v = b.vertex(int(trace[0]))
        counts[v] = counts.get(v, 0) + 1
    return counts


@pytest.mark.parametrize(
    "moves, expected",
    [
        (["E5", "E6"], {"D5", "F5", "D6", "F6"}),  # White attaches on top of E5: Black's hane on either side
        (["D4", "E4", "C6", "D5"], {"E5", "C4"}),  # White D5 + E4 against Black D4: the cut at E5, a hane at C4
    ],
)
def test_pattern_moves_answer_the_last_move_uniformly(moves, expected):
    """No capture or atari around the last move: with patterns on, the first playout move is one of the pattern
    points next to it, each about equally often over 400 seeded playouts; with patterns off, it is a random
    point (the pattern points get only their share of the ~75 empty points)."""
    b = _game(9, moves)
    assert _pattern_candidates(b) == expected
    on = _first_moves(b, True)
    assert set(on) == expected
    share = 400 / len(expected)
    assert all(0.7 * share < count < 1.3 * share for count in on.values()), on
    off = _first_moves(b, False)
    assert sum(off.get(v, 0) for v in expected) < 0.15 * 400, off


# --- the prior and the options ------------------------------------------------------------------------------
def test_pattern_prior_marks_the_pattern_moves_next_to_the_last_move():
    """move_priors with patterns: the hane points next to White's E6 get PRIOR_PATTERN, the other points near
    it keep PRIOR_NEAR_LAST; without patterns all of them are PRIOR_NEAR_LAST."""
    b = _game(9, ["E5", "E6"])
    moves = np.array([b.parse_vertex(v) for v in ("D5", "F5", "D6", "F6", "E7", "D7", "E8")], dtype=np.int32)
    out = np.zeros(len(moves))
    move_priors(b.pos, new_workspace(), moves, len(moves), out, True, False)
    assert list(out) == [PRIOR_PATTERN] * 4 + [PRIOR_NEAR_LAST] * 3
    move_priors(b.pos, new_workspace(), moves, len(moves), out, False, False)
    assert list(out) == [PRIOR_NEAR_LAST] * 7


def _line(b: GoBoard, vertex: str) -> int:
    """0 for the first line, 1 for the second ... from the vertex text (GTP letters skip I)."""
    x = "ABCDEFGHJKLMNOPQRST".index(vertex[0])
    y = int(vertex[1:]) - 1
    return min(x, y, b.size - 1 - x, b.size - 1 - y)


@pytest.mark.parametrize("size", [9, 19])
def test_edge_priors_follow_the_line_and_the_board_size(size):
    """Open points (no stone within distance 2): on 19x19 the corner points on the third and fourth lines
    both ways get PRIOR_OPEN_CORNER, the rest of the third line PRIOR_OPEN_THIRD and the first line
    PRIOR_OPEN_FIRST (Pachi's large-board prior); on 9x9 the first line gets PRIOR_EMPTY_EDGE and the rest the
    even prior; points near a stone keep the other rules."""
    b = _game(size, ["E5", "pass"] if size == 9 else ["D16", "pass"])
    stone = b.parse_vertex("E5" if size == 9 else "D16")
    corner = {f"{x}{y}" for x in "CDQR" for y in (3, 4, 16, 17)}
    vertices = [v for v in b.legal_moves() if v != "pass"]
    moves = np.array([b.parse_vertex(v) for v in vertices], dtype=np.int32)
    out = np.zeros(len(moves))
    move_priors(b.pos, new_workspace(), moves, len(moves), out, True, False)
    w = size + 1
    seen = set()
    for v, m, h in zip(vertices, moves.tolist(), out.tolist()):
        near = abs(m % w - stone % w) + abs(m // w - stone // w) <= 2
        line = _line(b, v)
        if near:
            assert h not in (PRIOR_OPEN_THIRD, PRIOR_OPEN_FIRST, PRIOR_EMPTY_EDGE), v
        elif line == 0:
            assert h == (PRIOR_OPEN_FIRST if size == 19 else PRIOR_EMPTY_EDGE), v
        elif size == 19 and v in corner:
            assert h == PRIOR_OPEN_CORNER, v
        elif line == 2:
            assert h == (PRIOR_OPEN_THIRD if size == 19 else PRIOR_EVEN), v
        else:
            assert h == PRIOR_EVEN, v
        seen.add((near, line))
    assert {(False, 0), (False, 1), (False, 2), (True, 2)} | ({(False, 3)} if size == 19 else set()) <= seen


def test_expand_amaf_follows_both_params():
    """The search's expansion kernel reads P_PRIOR_PATTERNS (the hane points' priors) and P_PLAYOUT_POLICY
    (the same seed gives other playouts) from its params."""
    b = _game(9, ["E5", "E6"])
    hane = [b.parse_vertex(v) for v in ("D5", "F5", "D6", "F6")]
    results = []
    for on in (False, True):
        moves = np.empty(MAX_MOVES, dtype=np.int32)
        values, prior = np.empty(MAX_MOVES), np.empty(MAX_MOVES)
        flags = np.empty(MAX_MOVES, dtype=np.int8)
        trace = np.empty(MAX_MOVES * move_cap(9), dtype=np.int32)
        tstart = np.empty(MAX_MOVES + 1, dtype=np.int64)
        params = default_params(rave_playouts=0, playout_patterns=on, prior_patterns=on)
        n, _ = expand_amaf(b.pos, np.zeros(1), params, seed_rng(5), moves, values, flags, prior, trace, tstart)
        by_move = dict(zip(moves[:n].tolist(), prior[:n].tolist()))
        assert all(by_move[m] == (PRIOR_PATTERN if on else PRIOR_NEAR_LAST) for m in hane)
        results.append(trace[: tstart[n]].copy())
    assert not np.array_equal(results[0], results[1])


@pytest.mark.parametrize("value, playout, prior", [("on", 1.0, 1.0), ("off", 0.0, 0.0), (None, 1.0, 1.0)])
def test_gtp_options_reach_the_search_params(value, playout, prior):
    """`--playout-patterns on|off` (default on) and `--prior-patterns on|off` (default on) become the adapter's
    params."""
    argv = ["--hash", "1"] + ([] if value is None else ["--playout-patterns", value, "--prior-patterns", value])
    settings = player_settings(build_parser().parse_args(argv))
    params = GoPlayer(settings)._searcher(9).adapter.params
    assert params[P_PLAYOUT_POLICY] == playout and params[P_PRIOR_PATTERNS] == prior

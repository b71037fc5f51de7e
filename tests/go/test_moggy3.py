"""Pachi's moggy 3x3 patterns (usi_engine/go/moggy3.py) and rule 5 with them (`--playout-patterns moggy`): the
table against a brute-force matcher of the diagrams, the kernel's index read from real boards with their ataris,
the draw by the gammas, and the option."""

import re

import numpy as np
import pytest
from test_patterns import _images

from usi_engine.go import GoBoard
from usi_engine.go import layout as L
from usi_engine.go.game import P_PLAYOUT_POLICY
from usi_engine.go.moggy3 import ATARI, MOGGY_GAMMAS, MOGGY_PATTERNS, MOGGY_TABLE, N_INDEX, moggy_gamma
from usi_engine.go.player import GoPlayer
from usi_engine.go.playout import (
    POLICY_MOGGY,
    POLICY_PATTERNS,
    _setup,
    playout_policy,
    run_playout,
    seed_rng,
)
from usi_engine.go.tactics import bad_selfatari
from usi_engine.go.workspace import new_workspace
from usi_engine.gtp_options import build_parser, player_settings

NONE = np.empty(0, dtype=np.float64)
# --- an independent brute-force matcher: 9-character texts, top row first, in the mover's colours ------------
# '.' empty, '#' off board, 'X' / 'O' a stone of the mover / the opponent, 'A' / 'B' the same in atari (seen on
# the four orthogonal neighbours only; a diagonal stone is always written X or O).
CLASS = {
    "X": "[XA]",
    "O": "[OB]",
    "Y": "X",
    "Q": "O",
    ".": r"\.",
    "#": "#",
    "x": "[.OB#]",
    "o": "[.XA#]",
    "?": "[.XAOB#]",
}
SWAP = str.maketrans("XOYQxo", "OXQYox")


def _grid(diagram: str) -> list[str]:
    return ["".join(row.split()) for row in diagram.split("/")]


def _regexes(diagram: str, mover_only: bool) -> list[re.Pattern]:
    texts = [diagram] if mover_only else [diagram, diagram.translate(SWAP)]
    return [re.compile("".join(CLASS[s] for s in "".join(g))) for t in texts for g in _images(_grid(t))]


VARIANTS = [_regexes(p.diagram, p.mover_only) for p in MOGGY_PATTERNS]


def brute_force(text: str) -> int:
    """The gamma of the last pattern in the list that matches the text in some orientation (0: none)."""
    gamma = 0
    for pattern, regexes in zip(MOGGY_PATTERNS, VARIANTS):
        if any(r.fullmatch(text) for r in regexes):
            gamma = pattern.gamma
    return gamma


# (dx, dy) of the index's digits: the diagonals in base 4, then the orthogonal neighbours in base 6
DIAGONALS = ((-1, -1), (1, -1), (-1, 1), (1, 1))
ORTHOGONALS = ((0, -1), (-1, 0), (1, 0), (0, 1))


def index_text(index: int, mover: int) -> str:
    """The neighbourhood of a table index as brute_force text for `mover` to play."""
    plain = {L.EMPTY: ".", mover: "X", 3 - mover: "O", L.BORDER: "#"}
    atari = {mover: "A", 3 - mover: "B"}
    cells = {(0, 0): "."}
    for k, d in enumerate(DIAGONALS):
        cells[d] = plain[(index >> (2 * k)) & 3]
    rest = index // 256
    for d in ORTHOGONALS:
        state, rest = rest % 6, rest // 6
        cells[d] = atari[state - ATARI] if state > ATARI else plain[state]
    return "".join(cells[(dx, dy)] for dy in (1, 0, -1) for dx in (-1, 0, 1))


def test_table_equals_a_brute_force_matcher_of_the_diagrams():
    """3,000 random indices and 3,000 of those the table marks, both sides to move: the table's gamma equals the
    brute-force match of the diagrams (the later pattern winning a shared neighbourhood)."""
    rng = np.random.default_rng(3)
    marked = np.flatnonzero(MOGGY_TABLE)
    indices = np.concatenate([rng.integers(0, N_INDEX, 3000), rng.choice(marked, 3000, replace=False)])
    seen = set()
    for index in indices:
        entry = int(MOGGY_TABLE[index])
        for mover, number in ((L.BLACK, entry & 15), (L.WHITE, entry >> 4)):
            expected = brute_force(index_text(int(index), mover))
            assert MOGGY_GAMMAS[number] == expected, (index, mover, index_text(int(index), mover))
            seen.add(expected)
    assert len(seen) >= 12  # most patterns were met (gammas 0 and all but a few of the 15)


@pytest.mark.parametrize(
    "text, mover, gamma",
    [
        ("XOX......", L.BLACK, 52),  # enclosing hane
        ("XO.......", L.BLACK, 53),  # non-cutting hane: X (a diagonal) may be anything of the mover's
        ("OX.......", L.BLACK, 53),  # ... and with the colours swapped
        (".O.X.....", L.BLACK, 37),  # diagonal attachment: O above, X to the left, the rest empty
        (".B.X.....", L.BLACK, 0),  # ... not when the attached stone is in atari
        ("OX...O...", L.BLACK, 82),  # keima cut
        ("XOO......", L.BLACK, 22),  # thin hane, only for X to move ...
        ("OXX......", L.BLACK, 0),  # ... not for O to move
        ("OX.X.O###", L.BLACK, 57),  # edge: blocks the side cut (20), but the edge cut (57, later) holds too
        ("OX.X.B###", L.BLACK, 20),  # ... not with the cut stone in atari
    ],
)
def test_hand_made_neighbourhoods(text, mover, gamma):
    """A few neighbourhoods written out (top row first, X = the mover): the brute force and the table agree with
    the gamma read off the diagrams by hand."""
    assert brute_force(text) == gamma
    entry = int(MOGGY_TABLE[text_index(text, mover)])
    assert MOGGY_GAMMAS[(entry >> 4) if mover == L.WHITE else (entry & 15)] == gamma


def text_index(text: str, mover: int) -> int:
    """The table index of a brute_force text for `mover` to play (index_text's inverse)."""
    state = {".": L.EMPTY, "#": L.BORDER, "X": mover, "O": 3 - mover, "A": mover + ATARI, "B": 3 - mover + ATARI}
    cell = {(dx, dy): text[(1 - dy) * 3 + dx + 1] for dy in (1, 0, -1) for dx in (-1, 0, 1)}
    index = sum(state[cell[d]] * 4**k for k, d in enumerate(DIAGONALS))
    return index + 256 * sum(state[cell[d]] * 6**k for k, d in enumerate(ORTHOGONALS))


def _random_game(size: int, moves: int, seed: int) -> GoBoard:
    rng = np.random.default_rng(seed)
    b = GoBoard(size, komi=7.0)
    for _ in range(moves):
        legal = [v for v in b.legal_moves() if v != "pass"]
        if not legal:
            break
        b.play(b.to_move, legal[rng.integers(len(legal))])
    return b


def _board_text(b: GoBoard, p: int, mover: int) -> str:
    """The neighbourhood of p read from the board, ataris by GoBoard's blocks."""
    w = b.size + 1
    board = b.pos[L.BOARD : L.BOARD + L.BOARD_CAP]
    in_atari = {q for stones, libs in _blocks(b) if len(libs) == 1 for q in stones}
    out = []
    for dy in (1, 0, -1):
        for dx in (-1, 0, 1):
            q = p + dy * w + dx
            v = int(board[q % L.BOARD_CAP])
            if (dx, dy) == (0, 0):
                out.append(".")
            elif v in (L.BLACK, L.WHITE):
                mine = v == mover
                out.append(("A" if mine else "B") if q in in_atari and dx * dy == 0 else ("X" if mine else "O"))
            else:
                out.append("." if v == L.EMPTY else "#")
    return "".join(out)


def _blocks(b: GoBoard) -> list[tuple[set[int], set[int]]]:
    """(stones, liberties) of every block, by a flood fill of the board."""
    w = b.size + 1
    board = b.pos[L.BOARD : L.BOARD + L.BOARD_CAP]
    seen: set[int] = set()
    out = []
    for p in range(L.BOARD_CAP):
        if board[p] in (L.BLACK, L.WHITE) and p not in seen:
            stones, libs, todo = {p}, set(), [p]
            while todo:
                q = todo.pop()
                for d in (1, -1, w, -w):
                    r = q + d
                    if board[r] == L.EMPTY:
                        libs.add(r)
                    elif board[r] == board[p] and r not in stones:
                        stones.add(r)
                        todo.append(r)
            seen |= stones
            out.append((stones, libs))
    return out


def test_kernel_reads_the_board_like_the_brute_force_matcher():
    """moggy_gamma on positions of random games (5x5 to 19x19, edges, corners and ataris), every empty point, both
    sides to move, equals the brute-force matcher on the neighbourhood read from the board."""
    ws = new_workspace()
    checked = atari_seen = 0
    for size, moves, seed in ((5, 14, 1), (9, 40, 2), (9, 70, 3), (13, 90, 4), (19, 150, 5)):
        b = _random_game(size, moves, seed)
        _setup(b.pos, ws)
        w = size + 1
        for y in range(size):
            for x in range(size):
                p = L.point(size, x, y)
                if b.pos[L.BOARD + p] != L.EMPTY:
                    continue
                for mover in (L.BLACK, L.WHITE):
                    text = _board_text(b, p, mover)
                    assert moggy_gamma(ws, w, p, mover) == brute_force(text), (size, b.vertex(p), mover, text)
                    checked += 1
                    atari_seen += "A" in text or "B" in text
    assert checked > 500 and atari_seen > 0


def _first_moves(b: GoBoard, policy: int, n: int) -> dict[str, int]:
    ws, rng = new_workspace(), seed_rng(23)
    trace = np.full(1, -1, dtype=np.int32)
    counts: dict[str, int] = {}
    for _ in range(n):
        run_playout(b.pos, ws, rng, 1, NONE, NONE, trace, policy)
        v = b.vertex(int(trace[0]))
        counts[v] = counts.get(v, 0) + 1
    return counts


def test_rule_5_draws_the_patterns_around_the_last_two_moves_by_their_gammas():
    """A quiet position (no atari), White to move: the first playout move is one of the moggy pattern points next
    to Black's last move C1 or White's previous one E7, each with probability gamma / sum of gammas (chi-square over
    3,000 seeded playouts), which a uniform draw over the same points fails."""
    b = _game(["B2", "B8", "E5", "D6", "E6", "E7", "C1"])
    gammas = _pattern_gammas(b, L.WHITE, "C1", "E7")
    assert len(set(gammas.values())) >= 2, gammas  # distinct gammas, or the test could not tell the draws apart
    n = 3000
    counts = _first_moves(b, POLICY_PATTERNS | POLICY_MOGGY, n)
    assert set(counts) == set(gammas), (counts, gammas)
    total = sum(gammas.values())
    chi2 = sum((counts[v] - n * g / total) ** 2 / (n * g / total) for v, g in gammas.items())
    uniform = sum((counts[v] - n / len(gammas)) ** 2 / (n / len(gammas)) for v in gammas)
    dof = len(gammas) - 1
    assert chi2 < dof + 5 * np.sqrt(2 * dof), (chi2, counts, gammas)
    assert uniform > dof + 8 * np.sqrt(2 * dof), (uniform, counts)


def test_rule_5_refuses_a_bad_self_atari_among_the_pattern_moves():
    """White to move after Black's J8, White's previous move F6: the corner point J9 matches a moggy pattern but is
    a lone stone in atari for nothing (tactics.bad_selfatari): it is never the first move, the other pattern points
    are."""
    moves = "F4 J2 E7 H8 E3 C4 G1 G9 F9 B7 A6 J5 G6 G7 H5 A8 J4 J3 J1 C8 F3 H6 F7 A7 B9 F6 J8".split()
    b = _game(moves)
    gammas = _pattern_gammas(b, L.WHITE, "J8", "F6")
    ws = new_workspace()
    _setup(b.pos, ws)
    assert "J9" in gammas and bad_selfatari(ws, 10, b.parse_vertex("J9"), L.WHITE)
    counts = _first_moves(b, POLICY_PATTERNS | POLICY_MOGGY, 600)
    assert set(counts) == set(gammas) - {"J9"}, (counts, gammas)


def _game(moves: list[str]) -> GoBoard:
    b = GoBoard(9, komi=7.0)
    for i, v in enumerate(moves):
        b.play("bw"[i % 2], v)
    return b


def _pattern_gammas(b: GoBoard, mover: int, last: str, prev: str) -> dict[str, int]:
    """The empty points next to `last` or `prev` with a moggy pattern for the mover, and their gammas, by the brute
    force on the board."""
    w = b.size + 1
    out = {}
    for c in (b.parse_vertex(last), b.parse_vertex(prev)):
        for q in (c + dy * w + dx for dy in (-1, 0, 1) for dx in (-1, 0, 1)):
            if b.pos[L.BOARD + q] == L.EMPTY and brute_force(_board_text(b, q, mover)) > 0:
                out[b.vertex(q)] = brute_force(_board_text(b, q, mover))
    return out


@pytest.mark.parametrize("value, policy", [("moggy", POLICY_PATTERNS | POLICY_MOGGY), ("on", POLICY_PATTERNS)])
def test_gtp_option_reaches_the_search_params(value, policy):
    """`--playout-patterns moggy` turns rule 5 on with the moggy bit; `on` keeps MoGo's set."""
    settings = player_settings(build_parser().parse_args(["--hash", "1", "--playout-patterns", value]))
    assert settings.playout_patterns == value
    assert GoPlayer(settings)._searcher(9).adapter.params[P_PLAYOUT_POLICY] == policy
    assert playout_policy(False, False, moggy=True) == POLICY_PATTERNS | POLICY_MOGGY

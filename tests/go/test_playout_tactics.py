"""The playout policy's local tactics (usi_engine/go/tactics.py, playout.py rules 0, 3, 4 and the second-move
patterns): the two-liberty rule and the nakade rule on hand-made boards, their exact liberty counts against a flood
fill, the ko retake, the option (whole playouts of every policy and the pinned seeded playouts: test_playout.py)."""

import numpy as np
import pytest
from board_oracle import block

from usi_engine.go import GoBoard
from usi_engine.go import board as kb
from usi_engine.go import layout as L
from usi_engine.go.game import P_PLAYOUT_POLICY
from usi_engine.go.player import GoPlayer
from usi_engine.go.playout import (
    POLICY_KO,
    POLICY_PATTERNS,
    POLICY_PLAIN,
    POLICY_TACTICS,
    playout_policy,
    run_playout,
    seed_rng,
)
from usi_engine.go.tactics import block_libs, nakade_move, two_lib_moves
from usi_engine.go.workspace import R_HEAD, R_STACK, _setup, new_workspace
from usi_engine.gtp_options import build_parser, player_settings

pytestmark = pytest.mark.process

NONE = np.empty(0, dtype=np.float64)
ALL = playout_policy(True, True)


def _board(black: str, white: str, last: str, size: int = 9) -> GoBoard:
    """Black and White stones (space-separated vertices), then White's move `last`: Black to move after it."""
    b = GoBoard(size, komi=7.0)
    for v in black.split():
        b.play("b", v)
    for v in white.split():
        b.play("w", v)
    b.play("w", last)
    return b


def _last(b: GoBoard) -> int:
    return int(b.pos[L.HIST + L.HIST_STRIDE * (b.move_number - 1) + L.H_MOVE])


def _two_lib_candidates(b: GoBoard) -> set[str]:
    ws = new_workspace()
    _setup(b.pos, ws)
    n = two_lib_moves(ws, b.size + 1, b.to_move, _last(b), int(b.pos[L.KO]))
    return {b.vertex(int(p)) for p in ws[R_STACK, :n]}


def _nakade(b: GoBoard) -> str | None:
    ws = new_workspace()
    _setup(b.pos, ws)
    p = nakade_move(ws, b.size + 1, b.to_move, _last(b), int(b.pos[L.KO]))
    return None if p == 0 else b.vertex(int(p))


def _first_moves(b: GoBoard, policy: int, n: int = 300, plies: int = 1) -> list[list[str]]:
    """The first `plies` moves of n seeded playouts from b."""
    ws, rng = new_workspace(), seed_rng(31)
    trace = np.full(plies, -1, dtype=np.int32)
    out = []
    for _ in range(n):
        run_playout(b.pos, ws, rng, plies, NONE, NONE, trace, policy)
        out.append([b.vertex(int(m)) for m in trace])
    return out


# --- two liberties -------------------------------------------------------------------------------------------
# White F5 takes a liberty of Black D5-E5, leaving D4 and E4. Extending at D4 gives three liberties (C4 D3 E4),
# at E4 only two (D4 E3: White F4 is there).
SAVE = ("D5 E5", "D6 E6 C5 F4", "F5")


def test_own_two_liberty_block_extends_where_it_gains_liberties():
    b = _board(*SAVE)
    assert _two_lib_candidates(b) == {"D4"}
    firsts = _first_moves(b, ALL)
    assert sum(m == ["D4"] for m in firsts) >= 0.8 * len(firsts)  # tried on TWO_LIB_RATE = 90 % of the moves
    plain = _first_moves(b, POLICY_PLAIN)
    assert sum(m == ["D4"] for m in plain) < 0.1 * len(plain)


def test_own_two_liberty_block_captures_a_neighbour_in_atari_first():
    """The same block next to White C5 in atari (Black B5, C6 around it): capturing at C4 saves it."""
    black, white, last = SAVE
    b = _board(black + " B5 C6", white, last)
    assert _two_lib_candidates(b) == {"C4"}


# White E5 (just played) has two liberties, E4 and F5, next to Black D5-D4 and E6.
ATTACK = ("D5 D4 E6 E7", "", "E5")


def test_atari_on_a_two_liberty_block_that_cannot_escape():
    """Black F5 leaves White only E4, whose escape has two liberties (E3 F4): the atari holds. Black E4 leaves
    White F5, which escapes to three (F6 G5 F4): no candidate."""
    b = _board(*ATTACK)
    assert _two_lib_candidates(b) == {"F5"}
    firsts = _first_moves(b, ALL)
    assert sum(m == ["F5"] for m in firsts) >= 0.8 * len(firsts)


def test_atari_that_is_a_self_atari_is_refused():
    """White F6 and G5 make Black F5 a self-atari (its one liberty F4), and E4 lets White escape to F5 and join
    them: no atari is a candidate."""
    black, _, last = ATTACK
    b = _board(black, "F6 G5", last)
    assert _two_lib_candidates(b) == set()


def test_atari_refused_when_the_block_can_capture_instead():
    """Black E6 in atari next to White E5 (White D6 F6 around it): White would capture at E7 rather than run. Black
    E3 in atari on White's escape point E4 (White D3 F3 E2 around it): the escape would capture it. Neither atari
    (F5, with E4 leading out to three liberties) is a candidate."""
    assert _two_lib_candidates(_board("D5 D4 E6", "D6 F6", "E5")) == set()
    assert _two_lib_candidates(_board("D5 D4 E6 E7 E3", "D3 F3 E2", "E5")) == set()


def test_exact_liberties_match_a_flood_fill():
    """block_libs on positions from seeded playouts: min(3, the block's liberties) and, below 3, the liberties
    themselves."""
    ws, rng = new_workspace(), seed_rng(5)
    checked = 0
    for size, plies in ((9, 40), (9, 80), (13, 120), (19, 200)):
        start = GoBoard(size, komi=7.0, ko_rule="simple", history=plies + 8)
        trace = np.full(plies, -1, dtype=np.int32)
        _, n = run_playout(start.pos, ws, rng, plies, NONE, NONE, trace, POLICY_PLAIN)
        pos = start.pos.copy()
        for mv in trace[:n]:
            kb.do_move(pos, mv)
        _setup(pos, ws)
        board, w = pos[L.BOARD : L.BOARD + L.BOARD_CAP], size + 1
        for p in range(L.BOARD_CAP):
            if board[p] in (L.BLACK, L.WHITE) and ws[R_HEAD, p] == p:
                _, libs = block(board, w, p)
                k, a, b = block_libs(ws, w, p)
                assert k == min(3, len(libs))
                if k < 3:
                    assert {a, b} - {0} == libs
                checked += 1
    assert checked > 50


# --- nakade --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "white, last, vital",
    [
        ("A2 B2 C2 D2 E1", "D1", "B1"),  # straight three A1 B1 C1: the middle
        ("A3 B3 C2 C1", "B2", "A1"),  # bent three A1 B1 A2: the corner
        ("A2 C2 B3 E1", "D1", "B1"),  # pyramid four A1 B1 C1 B2: the centre of the T
        ("A3 B3 C3 D2 D1", "C2", "B1"),  # bulky five A1 B1 C1 A2 B2: the point next to the tail
        ("A1 A3 C1 C3 B4 E2", "D2", "B2"),  # crossed five A2 B1 B2 B3 C2: the centre
        ("A1 A3 C1 D3 C4 B4 E2", "D2", "B2"),  # rabbity six A2 B1 B2 B3 C2 C3: the centre of the cross
    ],
)
def test_nakade_plays_the_vital_point(white, last, vital):
    b = _board("", white, last)
    assert _nakade(b) == vital


def test_nakade_passes_on_other_spaces():
    """Straight four (A1-D1 under White's wall), a two-by-three space (A1-C2), an eye space touching a Black stone,
    and a white stone with empty points on opposite sides (it divides the space)."""
    assert _nakade(_board("", "A2 B2 C2 D2 F1", "E1")) is None
    assert _nakade(_board("", "A3 B3 C3 D2 E1", "D1")) is None
    assert _nakade(_board("B1", "A2 B2 C2 D2 E1", "D1")) is None
    assert _nakade(_board("", "A2 B2 C2 D2", "D1")) is None


# --- ko ------------------------------------------------------------------------------------------------------
def test_ko_is_retaken_after_a_threat():
    """Black E5 has just taken the ko at D5. White may not retake at once; Black's next move connects there on
    about KO_RATE = 40 % of the playouts (the point is no eye: two White diagonals), and White's next one retakes on
    about 40 % of the rest. Without the rule Black connects only at random, and White retakes only when Black's
    move put a White stone next to E5 in atari (the atari escape captures E5)."""
    b = GoBoard(9, komi=7.0)
    for v in ("C5", "D6", "D4"):
        b.play("b", v)
    for v in ("E6", "E4", "F5", "D5"):
        b.play("w", v)
    b.play("b", "E5")
    assert b.pos[L.KO] == b.parse_vertex("D5") and b.to_move == L.WHITE
    n = 400
    on = _first_moves(b, POLICY_KO, n=n, plies=3)
    off = _first_moves(b, POLICY_PLAIN, n=n, plies=3)
    assert all(m[0] != "D5" for m in on + off)
    connects, retakes = (sum(m[i] == "D5" for m in on) for i in (1, 2))
    assert 0.3 * n < connects < 0.5 * n
    assert 0.15 * n < retakes < 0.4 * n
    connects_off, retakes_off = (sum(m[i] == "D5" for m in off) for i in (1, 2))
    assert connects_off < 0.05 * n and retakes_off < 0.15 * n and retakes > retakes_off + 0.1 * n


@pytest.mark.parametrize("value, policy", [("on", POLICY_PATTERNS | POLICY_TACTICS), (None, POLICY_PATTERNS)])
def test_gtp_option_reaches_the_playout_policy(value, policy):
    """`--playout-tactics on|off` (default off) sets the tactics bits of the adapter's playout policy."""
    argv = ["--hash", "1"] + ([] if value is None else ["--playout-tactics", value])
    params = GoPlayer(player_settings(build_parser().parse_args(argv)))._searcher(9).adapter.params
    assert params[P_PLAYOUT_POLICY] == policy

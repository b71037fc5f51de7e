"""Killing sacrifices in the playouts (usi_engine/go/tactics.py ``killing_sacrifice``, playout.py POLICY_SACRIFICE,
`--playout-sacrifice`): a self-atari of 2-6 stones is played when it leaves every surrounding opponent block in
atari on the same liberty and the stones' points, once captured, are a dead eye space (nakade); sekis that the
sacrifice would not break stay, and so does the refusal of every other self-atari of two or more stones."""

import numpy as np
import pytest

from usi_engine.go import GoBoard
from usi_engine.go.game import P_PLAYOUT_POLICY
from usi_engine.go.player import GoPlayer
from usi_engine.go.playout import (
    POLICY_PATTERNS,
    POLICY_SACRIFICE,
    _permit,
    playout_policy,
    run_playouts,
    seed_rng,
)
from usi_engine.go.tactics import killing_sacrifice
from usi_engine.go.workspace import _random_ok, _setup, new_workspace
from usi_engine.gtp_options import build_parser, player_settings

pytestmark = pytest.mark.process

NONE = np.empty(0, dtype=np.float64)

# The top-left corner, White's block A8 A7 B7 C7 C8 D8 D9 enclosed by Black (A6 B6 C6 D7 E8 E9), with Black B9 B8
# inside: both sides have the liberties A9 and C9 only (White's eye space A9 B9 C9 B8, a pyramid four).
CORNER_BLACK = "B9 B8 A6 B6 C6 D7 E8 E9"
CORNER_WHITE = "A8 A7 B7 C7 C8 D8 D9"


def _board(black: str, white: str) -> GoBoard:
    """Black and White stones (space-separated vertices), then Black to move."""
    b = GoBoard(9, komi=7.0)
    for v in black.split():
        b.play("b", v)
    for v in white.split():
        b.play("w", v)
    b.to_move = "b"
    return b


def _kills(b: GoBoard, vertex: str, ko: str | None = None) -> bool:
    ws = new_workspace()
    _setup(b.pos, ws)
    w, p = b.size + 1, b.parse_vertex(vertex)
    return bool(killing_sacrifice(ws, w, p, 1, 0 if ko is None else b.parse_vertex(ko)))


CASES = [
    # Black A9 (or C9) makes the bent three A9 B9 B8 in atari on C9 (A9) and puts White in atari there: White's capture
    # leaves it that eye space, which Black kills at B9
    (CORNER_BLACK, CORNER_WHITE, "A9", True),
    (CORNER_BLACK, CORNER_WHITE, "C9", True),
    # the same with White's outside liberty E9: White is not in atari after the move, it captures and lives
    ("B9 B8 A6 B6 C6 D7 E8", CORNER_WHITE, "A9", False),
    # a straight four along the top edge (A9-D9, liberty E9) once captured: White lives in it
    ("A9 B9 C9 A7 B7 C7 D7 E7 F7 G8 G9", "A8 B8 C8 D8 E8 F8 F9", "D9", False),
    # a square four (A9 B9 A8 B8, liberty C9): dead without a vital point
    ("A9 B9 A8 E9 E8 D7 C6 B6 A6", "D9 D8 C8 C7 B7 A7", "B8", True),
    # one stone: a throw-in, not this rule's (tactics.bad_selfatari judges it)
    ("A6 B6 C6 D7 E8 E9", CORNER_WHITE, "B8", False),
]


@pytest.mark.parametrize("black, white, move, kills", CASES)
def test_killing_sacrifices_are_recognised(black, white, move, kills):
    b = _board(black, white)
    ws = new_workspace()
    _setup(b.pos, ws)
    assert not _random_ok(ws, b.size + 1, b.parse_vertex(move), 1, 0) or move == "B8"  # a refused self-atari
    assert _kills(b, move) is kills


def test_a_sacrifice_on_the_ko_point_or_of_seven_stones_is_not_played():
    b = _board(CORNER_BLACK, CORNER_WHITE)
    assert _kills(b, "A9", ko="A9") is False
    # Black G1 would make seven stones on the first line in atari on H1, with White's row 2 in atari there too: no
    # sacrifice of more than six stones
    row = _board("A1 B1 C1 D1 E1 F1 A3 B3 C3 D3 E3 F3 G3 H3 J3", "A2 B2 C2 D2 E2 F2 G2 H2 J2 J1")
    assert _kills(row, "G1") is False


def test_the_policy_plays_the_sacrifice_only_with_its_bit():
    b = _board(CORNER_BLACK, CORNER_WHITE)
    ws, rng = new_workspace(), seed_rng(1)
    _setup(b.pos, ws)
    w, a9 = b.size + 1, b.parse_vertex("A9")
    assert _permit(ws, w, a9, 1, 0, rng, POLICY_PATTERNS | POLICY_SACRIFICE)
    assert not _permit(ws, w, a9, 1, 0, rng, POLICY_PATTERNS)


# A game of Pachi (Black) against the engine (2026-11-30): after move 64 Black's B9 and B8 sit inside White's
# top-left eye space, and Black wins (B+14) because White's group there is dead. Without sacrifices the playouts
# never fill the space and score the group alive in seki; Pachi at 16,000 playouts gave Black 0.95.
NAKADE_GAME = (
    "df fd dd ff fc gc ec gb fg eg ef gg fh gf eh cc cd db bb bc ea ab ba da fa bd be ce cf bf ae ad de af ce gh ed "
    "gd gi hi fi hh dh ga ge dc bg he ee fe aa fb eb ac bi cg dg bh ca cb ba ch ag ei"
)


def test_playouts_kill_a_group_in_a_dead_eye_space():
    b = GoBoard(9, 7.0)
    for i, sgf in enumerate(NAKADE_GAME.split()):
        b.play("bw"[i % 2], "ABCDEFGHJ"[ord(sgf[0]) - 97] + str(9 - (ord(sgf[1]) - 97)), allow_superko=True)
    n = 400
    won = {}
    for sacrifice in (False, True):
        ws, rng = new_workspace(), seed_rng(7)
        policy = playout_policy(True, False, sacrifice=sacrifice)
        wins, _, _ = run_playouts(b.pos, ws, rng, n, 3 * 81, NONE, NONE, policy)
        won[sacrifice] = wins / n
    assert won[False] < 0.2 and won[True] > 0.5, won


@pytest.mark.parametrize("value, bit", [("on", POLICY_SACRIFICE), ("off", 0), (None, 0)])
def test_gtp_option_reaches_the_playout_policy(value, bit):
    """`--playout-sacrifice on|off` (default off) sets POLICY_SACRIFICE in the adapter's playout policy."""
    argv = ["--hash", "1"] + ([] if value is None else ["--playout-sacrifice", value])
    params = GoPlayer(player_settings(build_parser().parse_args(argv)))._searcher(9).adapter.params
    assert int(params[P_PLAYOUT_POLICY]) & POLICY_SACRIFICE == bit

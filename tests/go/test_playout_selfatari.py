"""The playouts' judgement of single-stone self-ataris (usi_engine/go/tactics.py ``bad_selfatari``, playout.py
POLICY_SELFATARI): useless ones are bad, snapbacks, throw-ins into false eyes and kills inside the opponent's last
liberties are not; the policy refuses a bad one on SELFATARI_RATE % of its judgements; the option."""

import numpy as np
import pytest

from usi_engine.go import GoBoard
from usi_engine.go.game import P_PLAYOUT_POLICY
from usi_engine.go.player import GoPlayer
from usi_engine.go.playout import (
    POLICY_PATTERNS,
    POLICY_REDIRECT,
    POLICY_SELFATARI,
    SELFATARI_RATE,
    _cousin,
    _permit,
    playout_policy,
    run_playout,
    seed_rng,
)
from usi_engine.go.tactics import bad_selfatari
from usi_engine.go.workspace import _setup, new_workspace
from usi_engine.gtp_options import build_parser, player_settings

pytestmark = pytest.mark.process

NONE = np.empty(0, dtype=np.float64)


def _board(black: str, white: str, size: int = 9) -> GoBoard:
    """Black and White stones (space-separated vertices), then Black to move."""
    b = GoBoard(size, komi=7.0)
    for v in black.split():
        b.play("b", v)
    for v in white.split():
        b.play("w", v)
    b.to_move = "b"
    return b


def _bad(b: GoBoard, vertex: str) -> bool:
    ws = new_workspace()
    _setup(b.pos, ws)
    return bool(bad_selfatari(ws, b.size + 1, b.parse_vertex(vertex), 1))


# Black's throw-ins below, each with its one liberty; the comment says what the move does.
CASES = [
    # a lone stone thrown into White's side: White just captures it
    ("A9", "D5 F5 E6", "E5", True),
    # the same on the edge
    ("A9", "D1 F1", "E1", True),
    # snapback: White B2-C2 has B3 and C3; after C3 White's capture at B3 is retaken at C3
    ("B4 A3 A2 B1 C1 D1 D2", "C4 D3 B2 C2", "C3", False),
    # a kill inside White's last two liberties: White A2-B2-C2-C1 has A1 and B1 only
    ("A3 B3 C3 D2 D1", "A2 B2 C2 C1", "B1", False),
    # the same block with an outside liberty (D1): the stone only helps White
    ("A3 B3 C3 D2", "A2 B2 C2 C1", "B1", True),
    # a throw-in into White's false eye: Black D4 and F4 on its diagonals, the liberty E6 between White D6 and F6
    ("D4 F4", "D5 F5 E4 D6 F6", "E5", False),
    # the same without White F6: not the shape of a throw-in, E6 is Black's way out
    ("D4 F4", "D5 F5 E4 D6", "E5", True),
]


@pytest.mark.parametrize("black, white, move, bad", CASES)
def test_single_stone_self_ataris_are_judged(black, white, move, bad):
    assert _bad(_board(black, white), move) is bad


@pytest.mark.parametrize(
    "black, white, move",
    [
        ("A9", "D5 F5", "E5"),  # two liberties
        ("E4", "D5 F5 E6", "E5"),  # joins an own stone: workspace._random_ok's case
    ],
)
def test_other_moves_are_not_single_stone_self_ataris(black, white, move):
    assert _bad(_board(black, white), move) is False


def test_a_capture_is_not_a_self_atari():
    # White D5 has only E5 left (Black C5, D6, D4): Black E5 captures it, though E5 touches White F5 and E6
    b = _board("C5 D6 D4", "D5 F5 E6 E4")
    assert _bad(b, "E5") is False


def test_the_policy_refuses_a_bad_self_atari_on_its_rate():
    """_permit accepts the bad E5 on (100 - SELFATARI_RATE) % of its judgements with the bit, always without it,
    and the good snapback always."""
    b = _board("A9", "D5 F5 E6")
    ws, rng, n = new_workspace(), seed_rng(3), 4000
    _setup(b.pos, ws)
    e5, w = b.parse_vertex("E5"), b.size + 1
    on = sum(_permit(ws, w, e5, 1, 0, rng, POLICY_SELFATARI) for _ in range(n))
    off = sum(_permit(ws, w, e5, 1, 0, rng, 0) for _ in range(n))
    assert off == n
    expected = n * (100 - SELFATARI_RATE) / 100
    assert abs(on - expected) < 4 * np.sqrt(n * 0.24)
    snap = _board("B4 A3 A2 B1 C1 D1 D2", "C4 D3 B2 C2")
    _setup(snap.pos, ws)
    assert all(_permit(ws, w, snap.parse_vertex("C3"), 1, 0, rng, POLICY_SELFATARI) for _ in range(200))


def test_playouts_play_fewer_bad_self_ataris():
    """From a board where White's side has one bad throw-in point for Black, Black's first playout moves go there
    about (100 - SELFATARI_RATE) % as often with the bit as without it."""
    b = _board("A9", "D5 F5 E6 C4 D3 E3 F3 G4 C6 D7 E7 F7 G6 B5 H5")
    counts = []
    for policy in (POLICY_PATTERNS, POLICY_PATTERNS | POLICY_SELFATARI):
        ws, rng = new_workspace(), seed_rng(17)
        trace = np.full(1, -1, dtype=np.int32)
        hits = 0
        for _ in range(6000):
            run_playout(b.pos, ws, rng, 1, NONE, NONE, trace, policy)
            hits += int(trace[0]) == b.parse_vertex("E5")
        counts.append(hits)
    off, on = counts
    assert off > 60  # uniform over the 60-odd empty points: about 100
    assert abs(on / off - (100 - SELFATARI_RATE) / 100) < 0.2


def test_a_refused_self_atari_gives_way_to_its_approach_move():
    """Black E5 next to White D5 (two liberties, C5 and E5) and White F5, E4 is a bad self-atari; it gives way to D5's
    other liberty C5. With no such block, to the empty diagonals of E5 and of its liberty that keep two liberties."""
    b = _board("A9 D6 D4", "D5 F5 E4")
    ws, rng = new_workspace(), seed_rng(5)
    _setup(b.pos, ws)
    w = b.size + 1
    assert _bad(b, "E5")
    assert {b.vertex(int(_cousin(ws, w, b.parse_vertex("E5"), 1, 0, rng))) for _ in range(50)} == {"C5"}
    lone = _board("A9", "D5 F5 E6")
    _setup(lone.pos, ws)
    answers = {lone.vertex(int(_cousin(ws, w, lone.parse_vertex("E5"), 1, 0, rng))) for _ in range(300)}
    assert answers == {"D6", "F6", "D4", "F4", "D3", "F3"}


def test_redirected_refusals_become_approach_moves():
    """With POLICY_REDIRECT Black's first playout move goes to the bad E5 as often as with the refusal alone, and
    the refused draws (60 % of E5's share of 1/78) turn into its approach moves: about 0.8 % more first moves there."""
    b = _board("A9", "D5 F5 E6")
    approach = {b.parse_vertex(v) for v in ("D6", "F6", "D4", "F4", "D3", "F3")}
    e5, n = b.parse_vertex("E5"), 20000
    counts = []
    for policy in (POLICY_PATTERNS | POLICY_SELFATARI, POLICY_PATTERNS | POLICY_SELFATARI | POLICY_REDIRECT):
        ws, rng = new_workspace(), seed_rng(17)
        trace = np.full(1, -1, dtype=np.int32)
        hits = np.zeros(2, dtype=np.int64)
        for _ in range(n):
            run_playout(b.pos, ws, rng, 1, NONE, NONE, trace, policy)
            hits += (int(trace[0]) == e5, int(trace[0]) in approach)
        counts.append(hits)
    (plain_e5, plain_near), (redirected_e5, redirected_near) = counts
    assert 0.5 * n / 78 * 0.4 < redirected_e5 < 2 * n / 78 * 0.4
    assert abs(redirected_e5 - plain_e5) < 4 * np.sqrt(plain_e5)
    assert redirected_near - plain_near > 0.004 * n  # expected 0.0077 n; 4 standard errors above 0


@pytest.mark.parametrize(
    "value, bits", [("on", POLICY_SELFATARI), ("redirect", POLICY_SELFATARI | POLICY_REDIRECT), (None, 0)]
)
def test_gtp_option_reaches_the_playout_policy(value, bits):
    """`--playout-selfatari off|on|redirect` (default off) sets POLICY_SELFATARI, and with redirect POLICY_REDIRECT,
    in the adapter's playout policy."""
    argv = ["--hash", "1"] + ([] if value is None else ["--playout-selfatari", value])
    params = GoPlayer(player_settings(build_parser().parse_args(argv)))._searcher(9).adapter.params
    assert int(params[P_PLAYOUT_POLICY]) & (POLICY_SELFATARI | POLICY_REDIRECT) == bits
    assert playout_policy(True, False, selfatari=True) == POLICY_PATTERNS | POLICY_SELFATARI
    assert playout_policy(True, False, redirect=True) == POLICY_PATTERNS | POLICY_SELFATARI | POLICY_REDIRECT

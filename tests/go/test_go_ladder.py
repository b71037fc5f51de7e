"""Ladder reading (usi_engine/go/ladder.py) against an independent reader that plays the chase out with the
full rules of GoBoard (captures included), the prior it feeds (playout.PRIOR_LADDERED) and the playouts' ladder
check (playout.POLICY_LADDERS)."""

import random

import numpy as np
import pytest
from board_oracle import block

from usi_engine.go import GoBoard
from usi_engine.go import layout as L
from usi_engine.go.game import P_PRIOR_LADDERS
from usi_engine.go.ladder import escape_is_laddered
from usi_engine.go.player import GoPlayer
from usi_engine.go.playout import (
    NO_GAMMAS,
    PRIOR_ESCAPE,
    PRIOR_LADDERED,
    first_moves,
    move_priors,
    playout_policy,
    seed_rng,
)
from usi_engine.go.workspace import WS_ROWS, new_workspace
from usi_engine.gtp_options import build_parser, player_settings

ORACLE_PLIES = 160


# --- the independent reader: GoBoard plays every move, liberties by flood fill over pos ------------------
def _block_libs(b: GoBoard, p: int) -> tuple[set, set]:
    """(stones, liberties) of the block at point p."""
    return block(b.pos[L.BOARD : L.BOARD + L.BOARD_CAP], b.size + 1, p)


def _try(b: GoBoard, colour: int, p: int) -> bool:
    try:
        b.play(colour, b.vertex(p), allow_superko=True)
        return True
    except ValueError:
        return False


def oracle_chase(b: GoBoard, s: int, plies: int = 0) -> bool:
    """The block of s has two liberties and its opponent moves: can the opponent capture it by ataris,
    whatever the defender answers (extending at its last liberty or capturing an attacking block in atari)?"""
    if plies > ORACLE_PLIES:
        return False
    c = int(b.pos[L.BOARD + s])
    o = 3 - c
    stones, libs = _block_libs(b, s)
    for a in sorted(libs):
        if not _try(b, o, a):
            continue
        attacker_wins = True
        if b.pos[L.BOARD + s] == c:  # not captured by the atari itself
            stones, now = _block_libs(b, s)
            answers = set(now)
            for q in stones:
                for r in (q + 1, q - 1, q + b.size + 1, q - b.size - 1):
                    if b.pos[L.BOARD + r] == o:
                        _, their = _block_libs(b, r)
                        if len(their) == 1:
                            answers |= their
            for r in sorted(answers):
                if not _try(b, c, r):
                    continue
                _, after = _block_libs(b, s)
                escaped = len(after) >= 3 or (len(after) == 2 and not oracle_chase(b, s, plies + 2))
                b.undo()
                if escaped:
                    attacker_wins = False
                    break
        b.undo()
        if attacker_wins:
            return True
    return False


def _position(black: list[str], white: list[str], size: int = 19) -> GoBoard:
    b = GoBoard(size, komi=7.5)
    for v in black:
        b.play("b", v)
    for v in white:
        b.play("w", v)
    return b


def _reader(b: GoBoard, vertex: str, colour: int) -> bool:
    return bool(
        escape_is_laddered(b.pos[L.BOARD : L.BOARD + L.BOARD_CAP].copy(), b.size + 1, b.parse_vertex(vertex), colour)
    )


def _oracle(b: GoBoard, vertex: str, colour: int) -> bool:
    b.play(colour, vertex)
    try:
        return oracle_chase(b, b.parse_vertex(vertex))
    finally:
        b.undo()


# White K10 in atari (Black K11, J10, K9; M10 blocks the straight run): extending at L10 leaves two liberties.
LADDER_BLACK = ["K11", "J10", "K9", "M10"]


def test_a_ladder_on_an_open_board_works():
    b = _position(LADDER_BLACK, ["K10"])
    assert _oracle(b, "L10", L.WHITE)
    assert _reader(b, "L10", L.WHITE)


@pytest.mark.parametrize("breaker", ["Q5", "Q15"])
def test_a_ladder_breaker_on_the_path_saves_the_stones(breaker):
    """The chase runs towards one corner; a white stone on its diagonal (the oracle finds which) breaks it."""
    b = _position(LADDER_BLACK, ["K10", breaker])
    assert _reader(b, "L10", L.WHITE) == _oracle(b, "L10", L.WHITE)
    both = _position(LADDER_BLACK, ["K10", "Q5", "Q15"])
    assert not _oracle(both, "L10", L.WHITE) and not _reader(both, "L10", L.WHITE)


def test_an_attacking_stone_in_atari_is_no_ladder():
    """Black J10 has one liberty left (White H10, J11): after the first atari White captures it and escapes."""
    b = _position(LADDER_BLACK, ["K10", "H10", "J11"])
    assert not _oracle(b, "L10", L.WHITE)
    assert not _reader(b, "L10", L.WHITE)


def test_an_atari_that_saves_its_own_stone_keeps_the_ladder():
    """Black K11 has one liberty (White J11, K12), but Black's atari at L11 joins it to safety: still a ladder."""
    b = _position(LADDER_BLACK, ["K10", "J11", "K12"])
    assert _oracle(b, "L10", L.WHITE)
    assert _reader(b, "L10", L.WHITE)


def test_the_reader_never_claims_a_ladder_the_rules_refute():
    """Positions after uniformly random moves on 19x19: at every atari escape (for either colour) that leaves
    two liberties, a ladder the reader claims is one the full-rules oracle confirms (the reader may miss
    ladders, never invent one); and it finds most of them."""
    rnd = random.Random(3)
    checked = claimed = confirmed = 0
    for game in range(20):
        b = GoBoard(19, komi=7.5)
        for _ in range(80 + 12 * game):
            b.play(b.to_move, rnd.choice([v for v in b.legal_moves() if v != "pass"]))
        for colour in (L.BLACK, L.WHITE):
            b.to_move = colour
            for v in b.legal_moves():
                if v == "pass":
                    continue
                p = b.parse_vertex(v)
                mine = [p + d for d in (1, -1, 20, -20) if b.pos[L.BOARD + p + d] == colour]
                if not any(len(_block_libs(b, q)[1]) == 1 for q in mine):
                    continue
                b.play(colour, v, allow_superko=True)
                two = len(_block_libs(b, p)[1]) == 2
                b.undo()
                if not two:
                    continue
                checked += 1
                oracle = _oracle(b, v, colour)
                confirmed += oracle
                if _reader(b, v, colour):
                    claimed += 1
                    assert oracle, (b.to_string(), v)
    assert checked >= 10 and claimed >= 1 and claimed >= confirmed // 2, (checked, claimed, confirmed)


def test_the_prior_of_a_laddered_escape_is_low_with_the_option_on_every_board_size():
    b = _position(LADDER_BLACK, ["K10"])
    b.to_move = "w"
    moves = np.array([b.parse_vertex("L10")], dtype=np.int32)
    out = np.zeros(1)
    move_priors(b.pos, new_workspace(), moves, 1, out, True, True)
    assert out[0] == PRIOR_LADDERED
    move_priors(b.pos, new_workspace(), moves, 1, out, True, False)
    assert out[0] == PRIOR_ESCAPE
    small = _position(["E6", "D5", "E4", "G5"], ["E5"], size=9)  # the same shape on 9x9
    small.to_move = "w"
    assert _oracle(small, "F5", L.WHITE)
    moves = np.array([small.parse_vertex("F5")], dtype=np.int32)
    move_priors(small.pos, new_workspace(), moves, 1, out, True, True)
    assert out[0] == PRIOR_LADDERED


@pytest.mark.parametrize("size", [9, 19])
def test_playouts_with_ladders_do_not_run_into_a_working_ladder(size):
    """Black's last move ataris White's stone, whose extension is a working ladder: rule 1 of the playouts extends
    there every time without POLICY_LADDERS, and with it leaves the point to the other rules (patterns, random)."""
    shape = ["K11", "J10", "M10", "K9"] if size == 19 else ["E6", "D5", "G5", "E4"]
    stone, run = ("K10", "L10") if size == 19 else ("E5", "F5")
    b = GoBoard(size, komi=7.5)
    b.play("w", stone)
    for v in shape:
        b.play("b", v)  # the last one, next to the white stone, is the atari
    b.to_move = "w"
    assert _oracle(b, run, L.WHITE)
    ws = np.empty((WS_ROWS, L.BOARD_CAP), np.int64)
    target = b.parse_vertex(run)
    first = np.zeros(400, np.int64)
    for ladders in (False, True):
        first_moves(b.pos, ws, seed_rng(7), playout_policy(True, False, False, ladders), NO_GAMMAS, first)
        hits = int(np.sum(first == target))
        if ladders:  # the patterns (a hane next to the atari) and the random rule still pick it at times
            assert hits < 200 and len(set(first.tolist())) >= 3, hits
        else:
            assert hits == 400


@pytest.mark.parametrize("value, expected", [("on", 1.0), ("off", 0.0), (None, 0.0)])
def test_gtp_option_reaches_the_search_params(value, expected):
    """`--prior-ladders on|off` (default off) becomes the adapter's P_PRIOR_LADDERS."""
    argv = ["--hash", "1"] + ([] if value is None else ["--prior-ladders", value])
    player = GoPlayer(player_settings(build_parser().parse_args(argv)))
    assert player._searcher(19).adapter.params[P_PRIOR_LADDERS] == expected

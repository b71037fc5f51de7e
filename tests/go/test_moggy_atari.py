"""Rules 1-3 in Pachi's form (`--playout-local pachi`, POLICY_MOGGY_LOCAL, tactics.moggy_atari_moves and
moggy_two_lib_moves): the candidates of its local atari check on hand-made boards (capture, countercapture, escape;
the first-line ladder and the self-atari it leaves out), the forced answer for a big block, the policy's draw over
the candidates; the two-liberty check (atari of the last move's block, defence of an own block, miai, hopeless
extensions, lumpy liberties); the GTP option."""

import numpy as np
import pytest

from tests.go.test_playout_tactics import _board, _last
from usi_engine.go import GoBoard
from usi_engine.go import layout as L
from usi_engine.go.game import P_PLAYOUT_POLICY
from usi_engine.go.player import GoPlayer
from usi_engine.go.playout import (
    ALWAYS_CCAP_RATE,
    LOCAL_CAPTURE_RATE,
    NO_GAMMAS,
    POLICY_MOGGY_LOCAL,
    first_moves,
    playout_policy,
    seed_rng,
)
from usi_engine.go.tactics import moggy_atari_moves, moggy_two_lib_moves, two_lib_moves
from usi_engine.go.workspace import R_STACK, _setup, new_workspace
from usi_engine.gtp_options import build_parser, player_settings


def _candidates(b: GoBoard, ccap_roll: bool = False) -> tuple[set[str], bool]:
    ws = new_workspace()
    _setup(b.pos, ws)
    n, force = moggy_atari_moves(ws, b.size + 1, b.to_move, _last(b), int(b.pos[L.KO]), ccap_roll)
    return {b.vertex(int(p)) for p in ws[R_STACK, :n]}, bool(force)


def _two_lib(b: GoBoard, flip: bool = False) -> set[str]:
    ws = new_workspace()
    _setup(b.pos, ws)
    n = moggy_two_lib_moves(ws, b.size + 1, b.to_move, _last(b), int(b.pos[L.KO]), flip)
    return {b.vertex(int(p)) for p in ws[R_STACK, :n]}


def test_escape_in_the_open_and_capture_of_a_self_atari():
    # Black D5 in atari after White's D6; D4 extends to three liberties
    assert _candidates(_board("D5", "C5 E5", "D6")) == ({"D4"}, False)
    # White's last stone E5 is itself in atari: Black captures it at F5
    assert _candidates(_board("E4 D5 E6", "C4", "E5")) == ({"F5"}, False)


def test_no_escape_along_the_edge_into_a_first_line_ladder():
    """Black D8 in atari after White's E8 (C8 and D7 White): extending to D9 on the first line leaves two liberties
    that White's blocks beside it chase along the edge (Pachi's is_border_ladder); the default rule would extend."""
    b = _board("D8", "C8 D7", "E8")
    assert _candidates(b) == (set(), False)
    # with a Black stone two points away on both sides along the edge the chase fails: the escape is a candidate
    assert _candidates(_board("D8 B9 F9", "C8 D7", "E8")) == ({"D9"}, False)


def test_countercaptures_come_first_on_the_roll():
    """Black D5 in atari after White's D6, and White's C5 in atari (B5, C4 and D5 Black; its liberty C6): the
    countercapture C6 and the escape D4 are candidates, and on the always-countercapture roll only C6."""
    b = _board("D5 B5 C4", "C5 E5", "D6")
    assert _candidates(b, ccap_roll=False) == ({"C6", "D4"}, False)
    assert _candidates(b, ccap_roll=True) == ({"C6"}, False)


def test_no_escape_into_a_self_atari_and_force_for_big_blocks():
    # Black D5 E5 F5 in atari after White's G5, its one liberty F4: a block of three forces the answer
    b = _board("D5 E5 F5", "C5 D6 E6 F6 D4 E4", "G5")
    assert _candidates(b) == ({"F4"}, True)
    # the lone stone A5 in atari after White's A6: extending to A4 leaves A4-A5 the one liberty A3
    assert _candidates(_board("A5", "B5 B4", "A6")) == (set(), False)


def test_the_policy_draws_the_candidates_at_the_local_capture_rate():
    """On the countercapture board the rule answers in LOCAL_CAPTURE_RATE % of the draws: C6 always on the
    ALWAYS_CCAP_RATE roll, else C6 or D4 uniformly; the rest goes to the random rule (some 70 points)."""
    b = _board("D5 B5 C4", "C5 E5", "D6")
    draws = np.empty(6000, np.int64)
    policy = playout_policy(False, False, moggy_local=True)
    assert policy == POLICY_MOGGY_LOCAL
    first_moves(b.pos, new_workspace(), seed_rng(5), policy, NO_GAMMAS, draws)
    moves = [b.vertex(int(m)) for m in draws]
    rate, ccap = LOCAL_CAPTURE_RATE / 100, ALWAYS_CCAP_RATE / 100
    assert abs(moves.count("C6") / len(moves) - rate * (ccap + (1 - ccap) / 2)) < 0.03
    assert abs(moves.count("D4") / len(moves) - rate * (1 - ccap) / 2) < 0.03


def test_two_lib_atari_on_the_last_moves_block():
    """White's D6 with the two liberties D7 and E6 (C6 and D5 Black): both ataris are candidates. Pachi does not ask
    whether the atari holds; the `mogo` rule (two_lib_moves) does, and here D6 would escape to three liberties."""
    b = _board("C6 D5", "", "D6")
    assert _two_lib(b) == {"D7", "E6"} == _two_lib(b, flip=True)
    ws = new_workspace()
    _setup(b.pos, ws)
    assert two_lib_moves(ws, 10, b.to_move, _last(b), 0) == 0


def test_two_lib_defence_skips_hopeless_extensions_and_miai():
    """Black D5 with the two liberties D4 and D6 after White's E5: both extensions are candidates; with White C6 and
    E6 the extension to D6 gains nothing (one free neighbour: hopeless) and only D4 is left; with a Black friend at
    D7 the block has miai, found in one order of its liberties (Pachi's test reads its liberty list in order)."""
    assert _two_lib(_board("D5", "C5", "E5")) == {"D4", "D6"}
    assert _two_lib(_board("D5", "C5 C6 E6", "E5")) == {"D4"}
    b = _board("D5 D7", "C5", "E5")
    assert {frozenset(_two_lib(b)), frozenset(_two_lib(b, flip=True))} == {frozenset(), frozenset({"D4", "D6"})}


@pytest.mark.parametrize("value, bit", [("pachi", POLICY_MOGGY_LOCAL), ("mogo", 0), (None, 0)])
def test_gtp_option_reaches_the_playout_policy(value, bit):
    """`--playout-local mogo|pachi` (default mogo) sets POLICY_MOGGY_LOCAL in the adapter's playout policy."""
    argv = ["--hash", "1"] + ([] if value is None else ["--playout-local", value])
    params = GoPlayer(player_settings(build_parser().parse_args(argv)))._searcher(9).adapter.params
    assert int(params[P_PLAYOUT_POLICY]) & POLICY_MOGGY_LOCAL == bit

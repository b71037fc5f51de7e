"""`python -m learn go-review`: GNU Go's estimate along game records, seen from the reviewed engine's side.

The arithmetic (estimate parsing, phase changes, worst drop) on hand-made curves; then the command on real SGF
files with a real GNU Go (Debian's gnugo, installed by tools/test.sh): a game where one side only passes must
show that side's margin falling, the same game with the names swapped the negated curve, and records it
cannot review are skipped with their names while the others are reviewed.
"""

import json
import subprocess
import sys

import pytest

from learn.match.go_review import (
    default_phases,
    margin_at,
    parse_estimate,
    phase_changes,
    read_sgf,
    worst_drop,
)
from tests.learn.test_runner import ROOT

WHITE_TAKES_THE_BOARD = "".join(f";B[];W[{p}]" for p in ("cc", "gg", "cg", "gc", "ee", "ce", "ge", "ec", "eg", "dd"))


def sgf(black: str, white: str, moves: str, result: str = "W+R", size: int = 9) -> str:
    return f"(;GM[1]FF[4]SZ[{size}]KM[7]PB[{black}]PW[{white}]RE[{result}]{moves})"


def test_parse_estimate_reads_gnugo_answers_as_black_margins():
    assert parse_estimate("B+4.8 (upper bound: -4.8, lower: -4.8)") == 4.8
    assert parse_estimate("W+12 (upper bound: 10, lower: 14)") == -12.0
    assert parse_estimate("w+0.5") == -0.5
    assert parse_estimate("0") == 0.0
    for bad in ("", "B+", "X+3", "resign", "B+x"):
        with pytest.raises(ValueError):
            parse_estimate(bad)


def test_phase_changes_and_worst_drop_on_a_hand_made_curve():
    curve = [(0, -7.0), (2, -5.0), (4, 3.0), (6, 1.0), (8, -9.0), (10, -10.0), (12, -30.0)]
    assert margin_at(curve, 5) == 3.0 and margin_at(curve, 0) == -7.0 and margin_at(curve, 99) == -30.0
    changes = phase_changes(curve, (4, 10))
    assert changes == {"opening": 10.0, "middle": -13.0, "endgame": -20.0}
    assert sum(changes.values()) == curve[-1][1] - curve[0][1]  # the phases split the whole change
    assert worst_drop(curve, 2) == (10, 12, 20.0)
    assert worst_drop(curve, 6) == (6, 12, 31.0)
    assert worst_drop([(0, 1.0), (2, 2.0)], 4) is None  # never fell
    short = phase_changes(curve[:3], (16, 48))
    assert short == {"opening": 10.0, "middle": None, "endgame": None}
    assert default_phases(9) == (16, 48) and default_phases(19) == (72, 216)


def test_read_sgf_names_setup_stones_moves_and_passes(tmp_path):
    path = tmp_path / "g.sgf"
    path.write_text("(;GM[1]SZ[9]KM[6.5]PB[a]PW[b]RE[B+3.5]AB[cc][gg];W[ee];B[];W[dc])")
    record = read_sgf(str(path))
    assert (record.size, record.komi, record.black, record.white, record.result) == (9, 6.5, "a", "b", "B+3.5")
    assert record.setup == [("b", (2, 6)), ("b", (6, 2))]  # (row from the bottom, column)
    assert record.moves == [("w", (4, 4)), ("b", None), ("w", (6, 3))]


@pytest.mark.process
@pytest.mark.gnugo
def test_go_review_follows_a_lost_game_with_a_real_gnugo(tmp_path):
    (tmp_path / "a.sgf").write_text(sgf("ours-1", "pachi", WHITE_TAKES_THE_BOARD))
    (tmp_path / "b.sgf").write_text(sgf("pachi", "ours-1", WHITE_TAKES_THE_BOARD, "W+R"))
    (tmp_path / "c.sgf").write_text(sgf("gnugo", "pachi", ";B[ee]"))  # neither player is ours
    (tmp_path / "d.sgf").write_text("not a game")
    out = tmp_path / "review.json"
    proc = subprocess.run(
        [sys.executable, "-m", "learn", "go-review", str(tmp_path), "--engine", "ours", "--json", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert "c.sgf" in proc.stderr and "d.sgf" in proc.stderr  # skipped, by name
    data = json.loads(out.read_text())
    a, b = data["games"]
    assert (a["colour"], a["opponent"], b["colour"], b["opponent"]) == ("b", "pachi", "w", "pachi")
    assert [n for n, _ in a["curve"]] == list(range(0, 21, 2))
    # Black only passes: White's stones take the board, Black's margin ends far below where it began
    assert a["curve"][-1][1] < a["curve"][0][1] - 20
    assert a["worst_drop"][2] > 0
    # the same game reviewed for White: the margins negated, and it was won
    assert [m for _, m in b["curve"]] == [-m for _, m in a["curve"]]
    assert data["summary"]["games"] == 2 and data["summary"]["lost"] == 1 and data["summary"]["won"] == 1
    assert data["summary"]["resigned"] == 1
    assert "2 games, 1 won, 1 lost" in proc.stdout

"""`python -m learn go-screen`: the draw of open positions, the referee's cache, and the command with this project's
own engine as candidate and referee (real processes): a move and its value per position, a second screen choosing
the same moves valued from the cache (a paired difference of exactly 0), a refused rerun and a resumed one."""

import json
import subprocess
import sys
from dataclasses import asdict

import pytest

from learn.match.go_label import Label
from learn.match.go_screen import RefereeCache, pick_positions, read_screen, summary
from tests.learn.test_runner import ROOT

MOVES = ";B[ee];W[cc];B[gc];W[cg];B[gg];W[dd];B[ec];W[ce];B[fe];W[cf]"
RECORD = f"(;GM[1]FF[4]SZ[9]KM[7]PB[a]PW[b]RE[W+R]{MOVES})"
ENGINE = f"{sys.executable} -m usi_engine gtp --size 9 --playouts 300 --seconds 30 --resign 0 --seed 3"


def _label(record, moves, value):
    return Label(record, moves, 9, 7.0, "b" if moves % 2 == 0 else "w", value, "E5", 100, 1.0)


def test_pick_positions_draws_open_positions_reproducibly():
    labels = [_label("r", n, v) for n, v in enumerate([0.5, 0.1, 0.9, 0.3, 0.7, 0.45, 0.55, 0.2, 0.8, 0.6])]
    chosen = pick_positions(labels, 4, 0.2, 0.8, 3, seed=5)
    assert len(chosen) == 4
    assert all(0.2 <= lab.value <= 0.8 and lab.moves >= 3 for lab in chosen)
    assert [lab.moves for lab in chosen] == sorted(lab.moves for lab in chosen)
    assert chosen == pick_positions(labels, 4, 0.2, 0.8, 3, seed=5)
    assert len(pick_positions(labels, 100, 0.2, 0.8, 3, seed=5)) == 7  # moves 3..9 with an open value


def test_referee_cache_keeps_only_its_referees_values(tmp_path):
    path = str(tmp_path / "referee.jsonl")
    cache = RefereeCache(path, "pachi", 16000, 60.0)
    cache.put("g.sgf", 12, "E5", 0.25)
    assert RefereeCache(path, "pachi", 16000, 60.0).get("g.sgf", 12, "E5") == 0.25
    assert RefereeCache(path, "pachi", 8000, 60.0).get("g.sgf", 12, "E5") is None  # another budget
    assert RefereeCache(path, "gnugo", 16000, 60.0).get("g.sgf", 12, "E5") is None
    with open(path, "a") as f:
        f.write("{not json\n")
    with pytest.raises(ValueError, match="referee.jsonl:2"):
        RefereeCache(path, "pachi", 16000, 60.0)


def test_go_screen_with_the_engine_as_candidate_and_referee(tmp_path):
    sgf = tmp_path / "g.sgf"
    sgf.write_text(RECORD)
    labels = tmp_path / "labels.jsonl"
    labels.write_text("".join(json.dumps(asdict(_label(str(sgf), n, 0.5))) + "\n" for n in (2, 5, 8)))
    out = tmp_path / "screens"
    base = [sys.executable, "-m", "learn", "go-screen", str(labels), "--out", str(out), "--referee", ENGINE]
    base += ["--playouts", "300", "--positions", "3", "--min-moves", "0", "--concurrency", "2"]

    def run(name, *extra):
        return subprocess.run(
            base + ["--engine", ENGINE, "--name", name, *extra], cwd=ROOT, capture_output=True, text=True, timeout=600
        )

    first = run("a")
    assert first.returncode == 0, first.stderr
    rows = read_screen(str(out / "a.jsonl"))
    assert sorted(r.moves for r in rows) == [2, 5, 8]
    for r in rows:
        assert 0.0 <= r.value <= 1.0 and r.label == 0.5 and r.regret == pytest.approx(0.5 - r.value)
        assert r.to_move == ("b" if r.moves % 2 == 0 else "w") and len(r.move) >= 2
    referee_lines = (out / "referee.jsonl").read_text().splitlines()
    assert len(referee_lines) == 3
    second = run("b", "--against", "a")  # the same seeded engine: the same moves, valued from the cache
    assert second.returncode == 0, second.stderr
    assert {(r.moves, r.move, r.value) for r in read_screen(str(out / "b.jsonl"))} == {
        (r.moves, r.move, r.value) for r in rows
    }
    assert (out / "referee.jsonl").read_text().splitlines() == referee_lines
    line = [x for x in summary(str(out), "a") if x.startswith("b ")][0]
    assert line.split()[4:] == ["+0.0000", "0.0000", "1.00"]  # diff, its se, the share of the same moves
    refused = run("a")
    assert refused.returncode == 2 and "--resume" in refused.stderr
    resumed = run("a", "--resume")
    assert resumed.returncode == 0, resumed.stderr
    assert len(read_screen(str(out / "a.jsonl"))) == 3

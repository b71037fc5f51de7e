"""`python -m learn ladder`: the parity interpolation, and a real two-rung ladder of our engine (at a clock)
against our engine limited by NodesLimit, over real pipes."""

import json
import math
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from learn.match.ladder import Rung, crossing, parity, parse_budgets

REPO = Path(__file__).resolve().parents[3]
ENGINE = f"{shlex.quote(sys.executable)} -m usi_engine"
OPENINGS = REPO / "learn" / "match" / "data" / "shogi-openings.txt"


def test_crossing_is_linear_in_log_budget():
    # +100 Elo at 1,000 nodes, -100 at 100,000: halfway in log budget = 10,000
    assert crossing([(1000, 100.0), (100000, -100.0)]) == pytest.approx(10000.0)
    # a quarter of the way: +50 then -150
    assert crossing([(1000, 50.0), (10000, -150.0)]) == pytest.approx(1000 * 10**0.25)
    assert crossing([(10, 5.0), (20, 1.0)]) == "above"
    assert crossing([(10, -5.0), (20, 1.0)]) == "below"
    # the first rung from which we lose is the crossing, later noise does not move it
    assert crossing([(10, 30.0), (100, -30.0), (1000, 10.0)]) == pytest.approx(math.sqrt(10) * 10)


def _summary(w, l, d, pairs):
    return {
        "games": w + l + d,
        "wins": w,
        "losses": l,
        "draws": d,
        "pentanomial": pairs,
        "score": (w + d / 2) / (w + l + d),
    }


def test_parity_from_rungs_handles_sweeps():
    won = Rung(1000, _summary(40, 0, 0, [0, 0, 0, 0, 20]))  # clean sweep: finite Elo for the fit
    lost = Rung(8000, _summary(0, 40, 0, [20, 0, 0, 0, 0]))
    point, lo, hi = won.elo_bounds()
    assert math.isfinite(point) and point > 0 and lo <= point <= hi
    par = parity([lost, won])  # order of the rungs does not matter
    assert par["budget"] == round(math.sqrt(1000 * 8000))  # symmetric rungs: the geometric mean
    assert isinstance(par["low"], int) and isinstance(par["high"], int)
    assert par["low"] <= par["budget"] <= par["high"]
    assert parity([won])["budget"] == "above" and parity([lost])["budget"] == "below"


def test_budgets_are_checked():
    assert parse_budgets("3000, 1000,3000") == [1000, 3000]
    for bad in ("", "0,10", "ten"):
        with pytest.raises(ValueError):
            parse_budgets(bad)


def test_two_rung_ladder_against_our_own_engine(tmp_path):
    out = tmp_path / "ladder"
    common = ["Threads=1", "USI_Hash=16", "NetworkDelay2=200", "MinimumThinkingTime=1000"]
    cmd = [
        sys.executable,
        "-m",
        "learn",
        "ladder",
        "--engine",
        ENGINE,
        "--opponent",
        ENGINE,
        "--opponent-name",
        "self",
        "--budgets",
        "300,3000",
        "--games",
        "2",
        "--byoyomi",
        "1000",
        "--max-moves",
        "12",
        "--openings",
        str(OPENINGS),
        "--out",
        str(out),
        "--option",
        "NodesLimit=1500",
    ]
    for option in common:
        cmd += ["--option", option, "--opponent-option", option]
    done = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "parity budget:" in done.stdout

    data = json.loads((out / "ladder.json").read_text())
    assert [r["budget"] for r in data["rungs"]] == [300, 3000]
    assert data["time_control"]["kind"] == "byoyomi" and data["opponent"]["nodes_option"] == "NodesLimit"
    for rung in data["rungs"]:
        s = rung["summary"]
        assert s["games"] == 2 and s["wins"] + s["losses"] + s["draws"] == 2
        assert s["faults"] == {"ours": {}, f"self-{rung['budget']}": {}}
        match = json.loads((out / f"rung-{rung['budget']}" / "match.json").read_text())
        assert match["engines"][1]["options"]["NodesLimit"] == str(rung["budget"])
        assert len(list((out / f"rung-{rung['budget']}" / "records").glob("*.csa"))) == 2
    par = data["parity"]["budget"]
    assert par in ("above", "below") or 300 <= par <= 3000

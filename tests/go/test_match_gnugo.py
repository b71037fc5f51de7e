"""A full 9x9 game against GNU Go level 1 through the project's match runner (`python -m learn match`):
the engine must finish it with no illegal move, no protocol fault and no time loss. (1 s per move:
the runner sends GTP clocks in whole seconds, at least 1.)"""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from learn.match.go_game import find_gnugo

pytestmark = [pytest.mark.process, pytest.mark.gnugo, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]


def test_full_game_against_gnugo_level_1(tmp_path):
    out = tmp_path / "match.json"
    engine = f"{sys.executable} -m usi_engine gtp --size 9 --threads 1"
    cmd = [
        sys.executable,
        "-m",
        "learn",
        "match",
        "--game",
        "go",
        "--size",
        "9",
        "--komi",
        "7",
        "--engine1",
        engine,
        "--engine2",
        f"{find_gnugo()} --mode gtp --level 1 --chinese-rules",
        "--name1",
        "mcss",
        "--name2",
        "gnugo1",
        "--games",
        "1",
        "--movetime",
        "1000",
        "--fixed-timeout",
        "600000",
        "--json",
        str(out),
        "--records",
        str(tmp_path / "sgf"),
    ]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(out.read_text())
    games = result["games"]
    assert len(games) == 1
    assert games[0]["reason"] in ("score", "resign"), games[0]
    assert result["summary"]["faults"]["mcss"] == {}
    assert games[0]["plies"] >= 10

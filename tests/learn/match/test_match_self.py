"""`python -m learn match` with the project's own engine (`python -m usi_engine`) against itself at two
temperatures, over real pipes: the match finishes, records are written and readable, the JSON is sane."""

import json
import shlex
import subprocess
import sys
from pathlib import Path

import cshogi.KIF
import pytest
import shogi.CSA

from usi_engine.shogi import Board

pytestmark = pytest.mark.process

REPO = Path(__file__).resolve().parents[3]
ENGINE = f"{shlex.quote(sys.executable)} -m usi_engine"
REASONS = {"mate", "resign", "max-moves", "repetition", "perpetual-check", "declaration", "declaration-draw"}


def test_engine_against_itself_at_two_temperatures(tmp_path):
    out, records = tmp_path / "match.json", tmp_path / "records"
    common = ["Threads=1", "USI_Hash=16", "Seed=1"]
    cmd = [
        sys.executable,
        "-m",
        "learn",
        "match",
        "--engine1",
        ENGINE,
        "--engine2",
        ENGINE,
        "--name1",
        "t92",
        "--name2",
        "t200",
        "--option2",
        "SoftmaxTemperature=200",
        "--option2",
        "BackupTemperature=200",
        "--games",
        "2",
        "--nodes",
        "3000",
        "--max-moves",
        "40",
        "--records",
        str(records),
        "--json",
        str(out),
    ]
    for option in common:
        cmd += ["--option1", option, "--option2", option]
    done = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr
    assert "Score of t92 vs t200" in done.stdout

    data = json.loads(out.read_text())
    s = data["summary"]
    assert s["games"] == 2 and s["wins"] + s["losses"] + s["draws"] == 2
    assert s["score"] == (s["wins"] + s["draws"] / 2) / 2
    assert sum(s["pentanomial"]) == 1 and 0.0 <= s["los"] <= 1.0
    assert s["faults"] == {"t92": {}, "t200": {}}  # neither engine crashed, hung or moved illegally
    assert set(s["reasons"]) <= REASONS
    for k, name in enumerate(("t92", "t200")):  # the summary's slowest answer is the games' slowest
        assert s["slowest_move_s"][name] == max(g["slowest"][k] for g in data["games"]) > 0.0
    assert data["engines"][1]["options"]["SoftmaxTemperature"] == "200"

    for game in data["games"]:
        assert game["reason"] in REASONS and 0 < game["plies"] <= 40
        csa, kif = sorted(game["records"], key=lambda p: Path(p).suffix)
        moves = shogi.CSA.Parser.parse_file(csa)[0]["moves"]
        assert len(moves) == game["plies"]
        board = Board()
        for move in moves:
            board.push_usi(move)  # every recorded move is legal
        if game["reason"] == "mate":
            assert board.is_checkmate()
        parsed = cshogi.KIF.Parser.parse_file(kif)
        assert len(parsed.moves) == game["plies"]

"""`python -m learn go-label` and `python -m learn go-balance` over its output.

The lz-analyze parsing (Leela Zero's / Pachi's integer winrates, this engine's lines), the sampled move counts and
the side to move; then the commands on a real SGF file with this project's own engine as the oracle (a real
process speaking lz-analyze): labels in [0, 1] for the side to move, a resumed run adding only the missing
positions, a bad record skipped by name; go-balance measuring the playout policies against the labels (and a GTP
engine's genmove as one, a broken engine named) and writing a weights file the engine reads.
"""

import json
import subprocess
import sys

import pytest

from learn.match.go_label import Label, parse_analysis, read_labels, sample_points, to_move_after
from learn.match.go_review import read_sgf
from tests.learn.test_runner import ROOT
from usi_engine.go.softplayout import read_playout_weights

MOVES = ";B[ee];W[cc];B[gc];W[cg];B[gg];W[dd];B[ec];W[ce];B[fe];W[cf];B[];W[]"
RECORD = f"(;GM[1]FF[4]SZ[9]KM[7]PB[a]PW[b]RE[W+R]{MOVES})"
ORACLE = f"{sys.executable} -m usi_engine gtp --size 9"


def test_parse_analysis_reads_leela_style_records():
    line = (
        "info move D4 visits 120 winrate 5310 prior 2198 order 0 pv D4 E5 "
        "info move Q16 visits 30 winrate 4687 prior 100 lcb 4600 order 1 pv Q16"
    )
    records = parse_analysis(line)
    assert records == [
        {"move": "D4", "visits": 120, "winrate": 0.531},
        {"move": "Q16", "visits": 30, "winrate": 0.4687},
    ]
    with pytest.raises(ValueError, match="no lz-analyze record"):
        parse_analysis("= ")
    with pytest.raises(ValueError, match="not an lz-analyze record"):
        parse_analysis("info move D4 visits many winrate 5000")


def test_sample_points_and_side_to_move(tmp_path):
    path = tmp_path / "g.sgf"
    path.write_text(RECORD)
    record = read_sgf(str(path))
    assert sample_points(record, 2, 3) == [2, 5, 8]  # 10 stones, then two passes that end the game
    assert [to_move_after(record, n) for n in (0, 1, 2)] == ["b", "w", "b"]


def test_go_label_with_the_engine_as_oracle_then_go_balance(tmp_path):
    good = tmp_path / "g.sgf"
    good.write_text(RECORD)
    bad = tmp_path / "bad.sgf"
    bad.write_text("(;GM[1]SZ[9];B[ee];W[ee])")  # W plays on an occupied point
    out = tmp_path / "labels.jsonl"
    base = [sys.executable, "-m", "learn", "go-label", "--oracle", ORACLE, "--playouts", "300", "--seconds", "20"]
    first = subprocess.run(
        base + [str(good), "--every", "4", "--skip", "2", "--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert first.returncode == 0, first.stderr
    labels = read_labels(str(out))
    assert [lab.moves for lab in labels] == [2, 6, 10]
    for lab in labels:
        assert 0.0 <= lab.value <= 1.0 and lab.visits >= 300 and lab.to_move == ("b" if lab.moves % 2 == 0 else "w")
    again = subprocess.run(
        base + [str(bad), str(good), "--every", "2", "--skip", "2", "--out", str(out), "--resume"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert again.returncode == 0, again.stderr
    assert "skipped" in again.stderr and "bad.sgf" in again.stderr
    labels = read_labels(str(out))
    assert sorted(lab.moves for lab in labels) == [2, 4, 6, 8, 10]  # 2, 6, 10 kept, 4 and 8 added
    refused = subprocess.run(base + [str(good), "--out", str(out)], cwd=ROOT, capture_output=True, text=True)
    assert refused.returncode == 2 and "--resume" in refused.stderr

    measured = subprocess.run(
        [sys.executable, "-m", "learn", "go-balance", str(out), "--evaluate", "--eval-playouts", "64"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert measured.returncode == 0, measured.stderr
    lines = measured.stdout.strip().splitlines()
    names = ["plain", "patterns", "patterns+tactics", "patterns+softmax(move model)", "patterns+selfatari", "moggy"]
    names += ["moggy+tactics+redirect", "plain+sacrifice", "patterns+sacrifice", "patterns+tactics+sacrifice"]
    names += ["moggy+tactics+redirect+sacrifice", "moggy-local+tactics+redirect+sacrifice"]
    assert [line.split(":")[0] for line in lines] == names
    assert all("5 positions" in line for line in lines)
    # an engine's genmove as a playout policy (here this engine at a few playouts a move), on 2 drawn positions
    policy = f"{ORACLE} --playouts 8 --resign 0 --seed 1"
    evaluate = [sys.executable, "-m", "learn", "go-balance", str(out), "--evaluate", "--eval-playouts", "2"]
    with_engine = subprocess.run(
        evaluate + ["--positions", "2", "--engine-policy", policy],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert with_engine.returncode == 0, with_engine.stderr
    lines = with_engine.stdout.strip().splitlines()
    assert [line.split(":")[0] for line in lines] == names + ["engine"]
    assert all("2 positions" in line and "without the playouts' noise" in line for line in lines)
    broken = subprocess.run(
        evaluate + ["--positions", "1", "--engine-policy", f"{sys.executable} -c pass"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert broken.returncode == 2 and "policy engine failed" in broken.stderr
    weights = tmp_path / "w.npz"
    trained = subprocess.run(
        [sys.executable, "-m", "learn", "go-balance", str(out), "--out", str(weights), "--epochs", "2", "--batch", "2"]
        + ["--holdout", "0", "--value-playouts", "4", "--grad-playouts", "4", "--eval-playouts", "8"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert trained.returncode == 0, trained.stderr
    _, meta = read_playout_weights(weights)
    assert meta["epochs"] == 2 and [row["epoch"] for row in meta["history"]] == [0, 1, 2]
    rows = [json.loads(line[len("go-balance: ") :]) for line in trained.stdout.splitlines() if "{" in line]
    assert [row["epoch"] for row in rows] == [1, 2] and all(row["train_mse"] >= 0 for row in rows)


def test_read_labels_names_a_bad_line(tmp_path):
    path = tmp_path / "l.jsonl"
    good = Label("g.sgf", 2, 9, 7.0, "b", 0.5, "E5", 10, 1.0)
    path.write_text(json.dumps(good.__dict__) + "\n{not json\n")
    with pytest.raises(ValueError, match="l.jsonl:2: not a go-label line"):
        read_labels(str(path))

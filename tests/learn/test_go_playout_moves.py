"""`python -m learn go-playout-moves`: our playout policies' first moves against an engine's.

The answer of `gogui-playout_moves` (Pachi's format) read into a distribution, total variation, our draws against
`playout.first_moves`; then the command with this project's own engine as the other program (a real process
answering `gogui-playout_moves` with its default policy, MoGo's patterns): that policy must come out as close to
the engine as two seeds of it are to each other, and the plain policy further away.
"""

import json
import subprocess
import sys

import numpy as np
import pytest

from learn.go_balance import standard_policies
from learn.go_playout_moves import draw_distribution, parse_playout_moves, total_variation
from learn.match.engines import EngineError, GtpEngine
from tests.learn.test_runner import ROOT
from usi_engine.go.goboard import GoBoard
from usi_engine.go.playout import NO_GAMMAS, first_moves, seed_rng
from usi_engine.go.workspace import new_workspace

# a fight: atari, extensions and a cut, so the policies' rules (captures, escapes, patterns) have moves to draw
MOVES = ";B[ee];W[ed];B[dd];W[fe];B[de];W[fd];B[ef];W[ff];B[eg];W[fg];B[eh];W[fh]"
RECORD = f"(;GM[1]FF[4]SZ[9]KM[7]PB[a]PW[b]RE[W+R]{MOVES})"
ENGINE = f"{sys.executable} -m usi_engine gtp --size 9"


def test_parse_playout_moves_reads_pachis_answer():
    dist = parse_playout_moves("VAR w C5\nLABEL C5 40\nLABEL C4 36\nLABEL E4 20")
    assert dist == pytest.approx({"c5": 0.40, "c4": 0.36, "e4": 0.20, "pass": 0.04})
    assert parse_playout_moves("") == {"pass": 1.0}  # no move drawn but the pass
    rounded = parse_playout_moves("VAR b A1\nLABEL A1 51\nLABEL B2 51")  # whole percents may sum above 100
    assert rounded == pytest.approx({"a1": 0.5, "b2": 0.5})
    with pytest.raises(ValueError, match="not a percentage"):
        parse_playout_moves("VAR b A1\nLABEL A1 many")


QUIRKY = """
import sys
for line in sys.stdin:
    cid, _, cmd = line.strip().partition(" ")
    if cmd == "gogui-playout_moves":
        print(f"={cid} ", flush=True)  # Pachi's answer when every draw passes: no terminating empty line
    elif cmd == "quit":
        print(f"={cid} \\n", flush=True)
        break
    else:
        print(f"={cid} ok\\n", flush=True)
"""


def test_an_answer_without_its_empty_line_ends_after_the_grace(tmp_path):
    """A real process that leaves out the empty line after an answer listing no move (Pachi's gogui-playout_moves
    when every draw passes): with a grace the answer ends, the pass takes it all, and the next command is answered
    in turn; without one the wait times out."""
    script = tmp_path / "quirky.py"
    script.write_text(QUIRKY)
    engine = GtpEngine(f"{sys.executable} {script}", "quirky")
    try:
        engine.ensure_started()
        ok, answer, _ = engine.command("gogui-playout_moves", timeout=30, grace=0.5)
        assert ok and parse_playout_moves(answer) == {"pass": 1.0}
        assert engine.command_ok("name") == "ok"
        with pytest.raises(EngineError, match="no answer in time"):
            engine.command("gogui-playout_moves", timeout=1.0)
    finally:
        engine.kill()


def test_total_variation():
    p = {"a1": 0.5, "b2": 0.5}
    assert total_variation(p, p) == 0.0
    assert total_variation(p, {"c3": 1.0}) == 1.0
    assert total_variation(p, {"a1": 1.0}) == pytest.approx(0.5)


def test_draw_distribution_counts_first_moves():
    b = GoBoard(9, 7.0)
    for i, v in enumerate("E5 E4 D4 F4 D5 F5".split()):
        b.play("bw"[i % 2], v)
    policy = standard_policies()["patterns"][0]
    dist = draw_distribution(b, policy, 500, 3)
    out = np.empty(500, np.int64)
    first_moves(b.pos, new_workspace(), seed_rng(3), policy, NO_GAMMAS, out)
    expect = {b.vertex(int(m)).lower(): float(np.mean(out == m)) for m in set(out.tolist())}
    assert dist == pytest.approx(expect) and sum(dist.values()) == pytest.approx(1.0)


def test_go_playout_moves_against_our_own_engine(tmp_path):
    record = tmp_path / "g.sgf"
    record.write_text(RECORD)
    labels = tmp_path / "labels.jsonl"
    with open(labels, "w") as f:
        for n in (6, 9, 12):
            lab = dict(record=str(record), moves=n, size=9, komi=7.0, to_move="bw"[n % 2], value=0.5, best="pass")
            f.write(json.dumps({**lab, "visits": 1, "seconds": 0.1}) + "\n")
    out = tmp_path / "rows.jsonl"
    args = [sys.executable, "-m", "learn", "go-playout-moves", str(labels), "--engine", ENGINE, "--walk", "3"]
    run = subprocess.run(
        args + ["--policy", "plain", "--show", "1", "--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert run.returncode == 0, run.stderr
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 3
    for r in rows:
        assert sum(r["engine"].values()) == pytest.approx(1.0) and 0 <= len(r["walk"]) <= 3
        assert set(r["tv"]) == set(standard_policies())
    tv = {name: np.mean([r["tv"][name] for r in rows]) for name in standard_policies()}
    noise = np.mean([r["noise"] for r in rows])
    assert tv["patterns"] <= noise + 0.05, (tv, noise)  # the engine's own policy: only sampling noise
    assert tv["plain"] > tv["patterns"] + 0.1, tv  # no patterns, no tactics: another policy
    assert "patterns: TV" in run.stdout and "noise (patterns against itself" in run.stdout and "plain:" in run.stdout
    assert "engine:" in run.stdout  # --show prints the position where the plain policy differs most
    broken = subprocess.run(
        args[:5] + ["--engine", f"{sys.executable} -c pass"], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert broken.returncode == 2 and "go-playout-moves:" in broken.stderr

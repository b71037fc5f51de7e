"""`python -m learn go-td`: a run writes weights, metrics and a curve, resumes where it stopped, and refuses a
resume with another board size."""

import json

from learn.__main__ import main
from usi_engine.go import value as V


def test_go_td_runs_resumes_and_refuses_another_size(tmp_path):
    run = tmp_path / "run"
    assert main(["go-td", str(run), "--games", "200", "--size", "5", "--komi", "0.5", "--checkpoint-every", "100"]) == 0
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert [r["games_done"] for r in rows] == [100, 200]
    assert all(0.0 <= r["mse"] <= 1.0 for r in rows)
    theta, meta = V.read_value_weights(run / "weights" / "latest.npz", 5)
    assert meta["games"] == 200 and theta.any()
    assert (run / "weights" / "g00000100.npz").is_file()
    assert main(["go-td", str(run), "--games", "300", "--size", "5", "--komi", "0.5", "--plot"]) == 0
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert [r["games_done"] for r in rows] == [100, 200, 300]
    assert V.read_value_weights(run / "weights" / "latest.npz", 5)[1]["games"] == 300
    assert (run / "curve.png").stat().st_size > 0
    assert main(["go-td", str(run), "--games", "400", "--size", "7"]) == 2

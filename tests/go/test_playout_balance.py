"""Simulation balancing of the softmax playouts (learn/go_balance.py, softplayout.soft_score, run_playout's psi):
the score function of one draw against its formula, its zero mean over whole playouts, balancing that drives a
position's playout value to its target from either side, the playout-weights file (round trip, a corrupt file
named with its problem) and the engine playing with such a file over GTP."""

import subprocess
import sys

import numpy as np
import pytest

from learn.go_balance import Balancer
from tests.go.test_playout_softmax import _code
from usi_engine.go import GoBoard
from usi_engine.go.moveprior import N_SHAPE3
from usi_engine.go.playout import POLICY_PATTERNS, POLICY_SOFTMAX, move_cap, run_playout, run_playouts, seed_rng
from usi_engine.go.softplayout import (
    draw_table,
    read_playout_weights,
    score_classes,
    shape_gammas,
    weights_table,
    write_playout_weights,
)
from usi_engine.go.workspace import new_workspace
from usi_engine.weightfile import WeightFileError

NONE = np.empty(0, dtype=np.float64)
CLASSES = score_classes()


def _theta(seed: int) -> np.ndarray:
    return np.random.default_rng(seed).normal(0.0, 1.0, N_SHAPE3)


def test_score_function_of_one_draw_is_the_drawn_class_minus_the_expected_class():
    """On the empty board (no last move: rules 0-5 give nothing) the first move is rule 6's draw over all points;
    psi = onehot(class of the drawn point) - sum_p pi(p) onehot(class of p), pi = gamma / sum gamma."""
    b = GoBoard(9, 7.0)
    table = draw_table(shape_gammas(_theta(3)))
    points = [b.parse_vertex(v) for v in b.legal_moves() if v != "pass"]
    gamma = np.array([table[2 * _code(b, p)] for p in points])
    expected_mean = np.zeros(N_SHAPE3)
    np.add.at(expected_mean, [CLASSES[2 * _code(b, p)] for p in points], gamma / gamma.sum())
    for seed in range(5):
        psi = np.zeros(N_SHAPE3)
        trace = np.zeros(1, np.int32)
        run_playout(b.pos, new_workspace(), seed_rng(seed), 1, NONE, NONE, trace, POLICY_SOFTMAX, table, CLASSES, psi)
        drawn = np.zeros(N_SHAPE3)
        drawn[CLASSES[2 * _code(b, int(trace[0]))]] = 1.0
        np.testing.assert_allclose(psi, drawn - expected_mean, atol=1e-12)


def test_score_function_has_zero_mean_over_whole_playouts():
    """E[psi] = 0 (the score function's mean), estimated over 3,000 seeded playouts with the patterns on: every class
    that shows some variance stays within 4 standard errors of 0, and each playout's psi sums to 0."""
    b = GoBoard(9, 7.0)
    for v in ("e5", "c3", "g7"):
        b.play(b.to_move, v)
    table = draw_table(shape_gammas(_theta(5)))
    ws, rng = new_workspace(), seed_rng(11)
    trace = np.empty(0, np.int32)
    n = 3000
    total, squares, psi = np.zeros(N_SHAPE3), np.zeros(N_SHAPE3), np.zeros(N_SHAPE3)
    policy = POLICY_SOFTMAX | POLICY_PATTERNS
    for _ in range(n):
        psi[:] = 0.0
        run_playout(b.pos, ws, rng, move_cap(9), NONE, NONE, trace, policy, table, CLASSES, psi)
        assert abs(psi.sum()) < 1e-9
        total += psi
        squares += psi * psi
    mean = total / n
    var = squares / n - mean**2
    seen = var > 0.05
    assert seen.sum() >= 20
    z = mean[seen] / np.sqrt(var[seen] / n)
    assert np.abs(z).max() < 4.0


def test_psi_leaves_the_seeded_playout_unchanged():
    """The score function only reads: the same seed gives the same moves and score with and without it."""
    b = GoBoard(9, 7.0)
    b.play("b", "e5")
    table = draw_table(shape_gammas(_theta(7)))
    policy = POLICY_SOFTMAX | POLICY_PATTERNS
    plain, scored = np.zeros(300, np.int32), np.zeros(300, np.int32)
    r1 = run_playout(b.pos, new_workspace(), seed_rng(4), 243, NONE, NONE, plain, policy, table)
    psi = np.zeros(N_SHAPE3)
    r2 = run_playout(b.pos, new_workspace(), seed_rng(4), 243, NONE, NONE, scored, policy, table, CLASSES, psi)
    assert r1 == r2
    assert np.array_equal(plain, scored)
    assert np.abs(psi).sum() > 0


def _value(pos, table, n=2000) -> float:
    wins, _, _ = run_playouts(pos, new_workspace(), seed_rng(99), n, move_cap(7), NONE, NONE, POLICY_SOFTMAX, table)
    return wins / n


@pytest.mark.parametrize("shift", [+0.3, -0.3])
def test_balancing_drives_a_positions_playout_value_to_its_target(shift):
    """Synthetic data: one 7x7 position whose target is its uniform playouts' value shifted by 0.3. A hundred steps
    of simulation balancing (32 + 32 playouts a step) take the playout value within 0.12 of the target (60 % of
    the way or more), from either side: the estimated gradient has the right sign and scale. (Balancer seeds 1-6
    all end within 0.1 on 2026-11-30.)"""
    b = GoBoard(7, 7.0)
    for v in ("d4", "c3", "e5", "c5"):
        b.play(b.to_move, v)
    bal = Balancer(np.zeros(N_SHAPE3), 0, threads=1, seed=3)
    start = _value(b.pos, bal.table)
    target = start + shift
    for _ in range(100):
        _, step = bal.batch([b.pos], np.array([target]), 32, 32)
        bal.apply(step, lr=50.0, l2=0.0)
    assert abs(start - target) > 0.25
    assert abs(_value(b.pos, bal.table) - target) < 0.12


def test_playout_weights_file_round_trip_and_errors(tmp_path):
    theta = _theta(1)
    path = tmp_path / "w.npz"
    write_playout_weights(path, theta, epochs=3)
    back, meta = read_playout_weights(path)
    np.testing.assert_allclose(back, theta.astype(np.float32))
    assert meta["epochs"] == 3
    assert np.array_equal(weights_table(path), draw_table(shape_gammas(back)))
    with pytest.raises(ValueError, match="shape weights"):
        write_playout_weights(tmp_path / "bad.npz", theta[:10])
    (tmp_path / "junk.npz").write_bytes(b"not an archive")
    with pytest.raises(WeightFileError, match="junk.npz: not a readable"):
        read_playout_weights(tmp_path / "junk.npz")
    with pytest.raises(WeightFileError, match="no such file"):
        weights_table(tmp_path / "missing.npz")


def test_engine_plays_with_a_playout_weights_file(tmp_path):
    """`usi-engine gtp --playout-weights FILE` answers genmove with a legal move; a missing file is named."""
    path = tmp_path / "w.npz"
    write_playout_weights(path, _theta(2))
    script = "boardsize 9\nclear_board\nplay b e5\ngenmove w\nquit\n"
    cmd = [sys.executable, "-m", "usi_engine", "gtp", "--size", "9", "--seconds", "0.3"]
    out = subprocess.run(cmd + ["--playout-weights", str(path)], input=script, capture_output=True, text=True)
    answers = [line for line in out.stdout.splitlines() if line.startswith(("=", "?"))]
    assert answers[:3] == ["=", "=", "="]
    move = answers[3][1:].strip()
    board = GoBoard(9, 7.0)
    board.play("b", "e5")
    assert board.is_legal("w", move)
    out = subprocess.run(
        cmd + ["--playout-weights", str(tmp_path / "none.npz")], input=script, capture_output=True, text=True
    )
    assert "none.npz: no such file" in out.stdout

"""The move prior learned from self-play trees (learn/selfplay_prior.py): the cross-entropy gradient, a step toward a
target, a self-play game under progressive widening that teaches it, the worker's payload, the run's checkpoint
and resume (in process, and a real run killed with -9 against one never stopped), and a run folder that is
unchanged when the prior does not learn."""

import dataclasses
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from learn.movefit import position_cross_entropy, position_nll
from learn.run import Run
from learn.runconfig import load_config
from learn.runfiles import RUN_SUBDIRS, prior_path, store_game
from learn.selfplay import AdvantageSum, SelfPlayConfig, SelfPlayer
from learn.selfplay_prior import PriorConfig, PriorGradient, PriorStateError, PriorUpdate, load_state, start_model
from learn.worker import play_selfplay_task
from usi_engine.search import layout
from usi_engine.shogi import Board
from usi_engine.shogi.layout import MAX_MOVES
from usi_engine.shogi.movegen import gen_search_moves
from usi_engine.shogi_eval.evalfile import load_weights
from usi_engine.shogi_eval.features import N_WEIGHTS
from usi_engine.shogi_search import moveprior as M

ROOT = Path(__file__).resolve().parents[2]
SMOKE = ROOT / "configs" / "learn-smoke.toml"
MIDGAME = "ln1g3nl/1r3kg2/p2pppsp1/2ps2p1p/1p7/2P1P1P2/PPSP1P1PP/2G2S1R1/LN2KG1NL b Bb 1"
# the state.json keys of a run whose prior does not learn (the layout before the prior could learn)
STATE_KEYS = {"run_id", "version", "games_done", "best", "seed", "seconds", "cpu_seconds", "positions", "wins_b",
              "wins_w", "draws", "opt"}  # fmt: skip
SHORT = dict(samples=16, grad_samples=16, qdepth=4, qsearch_see=True, opening_min=2, opening_max=2, max_moves=12)


def test_the_cross_entropy_gradient_matches_finite_differences():
    rng = np.random.default_rng(4)
    rows = rng.integers(0, 15, size=(9, 3)).astype(np.int16)
    w = rng.normal(size=15)
    use = np.array([True, False, True])
    q = rng.dirichlet(np.ones(7))  # a target over rows 2..8
    grad = np.zeros(15)
    s = np.empty(9)
    h = position_cross_entropy(rows, 2, 9, q, w, use, s, grad, 1.0)
    scores = w[rows[2:, 0]] + w[rows[2:, 2]]
    log_p = scores - np.log(np.exp(scores).sum())
    assert h == pytest.approx(-(q * log_p).sum())
    for i in range(15):
        e = np.zeros(15)
        e[i] = 1e-6
        up = position_cross_entropy(rows, 2, 9, q, w + e, use, s, np.zeros(0), 0.0)
        down = position_cross_entropy(rows, 2, 9, q, w - e, use, s, np.zeros(0), 0.0)
        assert grad[i] == pytest.approx((up - down) / 2e-6, abs=1e-6)


def test_the_likelihood_of_the_move_played_is_the_cross_entropy_of_its_one_hot_target():
    rng = np.random.default_rng(5)
    rows = rng.integers(0, 12, size=(6, 4)).astype(np.int16)
    w = rng.normal(size=12)
    use = np.ones(4, np.bool_)
    g_nll, g_ce = np.zeros(12), np.zeros(12)
    nll = position_nll(rows, 0, 6, 3, w, use, np.empty(6), g_nll, 0.5)
    ce = position_cross_entropy(rows, 0, 6, np.eye(6)[3], w, use, np.empty(6), g_ce, 0.5)
    assert nll == pytest.approx(ce) and np.allclose(g_nll, g_ce)


def _roots():
    """(position, search moves) of three real positions: the start, the start after 7g7f, a middlegame."""
    out = []
    for sfen, moves in ((None, []), (None, ["7g7f"]), (MIDGAME, [])):
        board = Board(sfen) if sfen else Board()
        for m in moves:
            board.push_usi(m)
        buf = np.zeros(MAX_MOVES, np.int32)
        out.append((board.pos, buf[: gen_search_moves(board.pos, buf)].copy()))
    return out


def _kl(model, pos, moves, q) -> float:
    """KL(q || P_E): P_E the model's softmax over `moves` only (renormalised over that set)."""
    p = np.empty(len(moves))
    M.move_probabilities(pos, model, moves, len(moves), p)
    return float(np.sum(q * (np.log(q) - np.log(p))))


def test_one_step_moves_the_prior_toward_the_target_over_the_entered_moves():
    """Targets over a subset of each position's moves (the children a widened root has entered): the loss is the
    cross-entropy to the model renormalised over that subset, and one Adam step lowers the KL to the targets."""
    rng = np.random.default_rng(6)
    model = start_model(PriorConfig())
    prior = PriorGradient(model)
    cases = []
    for pos, moves in _roots():
        entered = moves[rng.permutation(len(moves))[: len(moves) // 2]]
        q = rng.dirichlet(np.full(len(entered), 0.3)) + 1e-9
        q /= q.sum()
        h = prior.add(pos, entered, q * 7.0)  # the target is normalised by add
        assert h == pytest.approx(_kl(model, pos, entered, q) - float(np.sum(q * np.log(q))))
        cases.append((pos, entered, q))
    assert prior.positions == 3 and prior.loss - prior.entropy == pytest.approx(sum(_kl(model, *c) for c in cases))
    update = PriorUpdate.start(model, lr=0.01, l2=0.0)
    stats = update.step([prior.sparse()], prior.positions)
    assert stats["prior_grad_norm"] > 0 and update.steps[0] == 1
    before = sum(_kl(model, *c) for c in cases)
    after = sum(_kl(update.w, *c) for c in cases)
    assert after < before - 0.05


def test_a_selfplay_game_under_widening_teaches_the_prior():
    """widen_k0 > 0: the searches enter children by the prior (nodes hold fewer children than moves), every
    learned move gives the prior a target, the gradient kernels still recompute every leaf exactly, and the same
    game seed gives the same prior gradient."""
    cfg = SelfPlayConfig.from_dict(dict(SHORT, widen_k0=2, prior_beta=0.5))
    model = M.load_model()
    player = SelfPlayer(load_weights(), cfg, seed=1, prior=model)
    assert player.adapter.move_model is not None
    runs = []
    for _ in range(2):
        prior = PriorGradient(model)
        grads = {s: AdvantageSum(N_WEIGHTS, 1.0) for s in "bw"}
        out = player.play(9, grads, prior)
        runs.append((out, prior.grad.copy()))
        assert prior.positions == out.learned_moves >= 8
        assert prior.loss > prior.entropy  # KL > 0: the prior is not the search's policy
        assert out.leaf_mismatch < 1e-6
    (a, ga), (b, gb) = runs
    assert a.moves == b.moves and np.array_equal(ga, gb) and np.count_nonzero(ga) > 50
    pool = player.searcher.pool
    assert pool.widen
    tree, n = pool.tree, int(pool.ctl[layout.C_NODES])
    assert np.any(tree[layout.T_COUNT][:n] < tree[layout.T_NMOVES][:n])  # nodes with moves not yet entered
    board = Board()
    for m in a.moves:
        board.push_usi(m)
    # without widening the searches carry no prior, whatever the run gives
    assert SelfPlayer(load_weights(), SelfPlayConfig.from_dict(SHORT), prior=model).adapter.move_model is None


def test_the_worker_returns_the_prior_gradient_only_when_the_run_learns_it():
    selfplay = SelfPlayConfig.from_dict(dict(SHORT, max_moves=8)).__dict__
    task = {"run": "a", "version": 0, "index": 0, "seed": 11, "selfplay": selfplay}
    plain = play_selfplay_task(task, load_weights())
    assert set(plain) == {"meta", "idx", "val", "csa", "kif"} and "prior_loss" not in plain["meta"]
    learning = play_selfplay_task(dict(task, run="b", prior=M.load_model(), learn_prior=True), load_weights())
    assert set(learning) == set(plain) | {"prior_idx", "prior_val"}
    meta = learning["meta"]
    assert meta["prior_positions"] == meta["learned_moves"] > 0 and meta["prior_loss"] > meta["prior_entropy"] >= 0
    assert learning["prior_idx"].dtype == np.int64 and np.all(learning["prior_val"] != 0)


def test_prior_settings_are_checked():
    with pytest.raises(ValueError, match="unknown \\[prior\\]"):
        PriorConfig.from_dict({"rate": 1.0})
    with pytest.raises(ValueError, match="lr and l2"):
        PriorConfig.from_dict({"lr": -1.0})
    with pytest.raises(ValueError, match="lr and l2"):
        PriorConfig.from_dict({"lr": "fast"})
    with pytest.raises(ValueError, match="widen_k0"):
        SelfPlayConfig.from_dict({"widen_k0": -1})
    assert not PriorConfig().learns and PriorConfig(lr=0.01).learns
    assert np.array_equal(start_model(PriorConfig(start="uniform")), M.uniform_model())
    with pytest.raises(ValueError, match="missing.npz"):
        start_model(PriorConfig(start="missing.npz"))


def _run(tmp_path, **prior) -> Run:
    cfg = load_config(SMOKE)
    cfg = dataclasses.replace(cfg, dir=str(tmp_path / "run"), prior=PriorConfig(**prior))
    return Run(cfg, SMOKE)


def _files(folder: Path) -> set:
    return {str(p.relative_to(folder)) for p in folder.rglob("*")}


def test_checkpoint_and_resume_restore_the_prior_exactly(tmp_path):
    """_checkpoint writes the prior as a file the engine loads and its float64 model with the Adam state;
    _prior (resume) restores them bit for bit; the old state file goes; a corrupt one stops with its name."""
    run = _run(tmp_path, lr=0.01)
    state = run._init_state()
    assert state["prior_state"] == "s000000.npz"
    prior = run._prior(state)
    assert np.array_equal(prior.w, M.load_model()) and prior.steps[0] == 0
    assert np.array_equal(M.load_model(prior_path(run.dir, 0)), M.load_model())
    opt = run._optimizer(state)
    rng = np.random.default_rng(2)
    for _ in range(3):
        idx = np.unique(rng.integers(0, M.N_WEIGHTS, 400))
        prior.step([(idx, rng.normal(size=idx.size))], 40)
    state["version"] = 1
    run._checkpoint(state, opt, prior)
    resumed = run._prior(run.load_state())
    assert all(np.array_equal(resumed.state()[k], prior.state()[k]) for k in prior.state())
    assert resumed.steps[0] == 3
    assert sorted(p.name for p in (run.dir / "prior").iterdir()) == ["s000001.npz", "v000000.npz", "v000001.npz"]
    engine = M.option_model(str(prior_path(run.dir, 1)))  # what MovePriorFile loads
    assert np.array_equal(engine, prior.w.astype(np.float32))
    state_file = run.dir / "prior" / "s000001.npz"
    state_file.write_bytes(b"PK\x03\x04 cut short")
    with pytest.raises(PriorStateError, match=re.escape(f"{state_file}: not a readable")):
        run._prior(run.load_state())
    with pytest.raises(ValueError, match="learns its move prior"):
        _run(tmp_path)._prior(run.load_state())


def test_a_run_whose_prior_does_not_learn_keeps_its_folder_layout(tmp_path):
    """[prior] off (the default), also with the searches widening by a fixed prior: the same files, state keys,
    tasks and pending files as before the prior could learn."""
    for widen in (0, 3):
        run = _run(tmp_path / f"w{widen}")
        run.cfg.selfplay = dataclasses.replace(run.cfg.selfplay, widen_k0=widen)
        state = run._init_state()
        opt = run._optimizer(state)
        assert run._prior(state) is None
        state["version"] = 1
        run._checkpoint(state, opt)
        assert set(json.loads((run.dir / "state.json").read_text())) == STATE_KEYS
        assert _files(run.dir) == {"config.toml", "state.json", "opt/o000001.npz", "weights/v000000.npz",
                                   "weights/v000001.npz", *RUN_SUBDIRS}  # fmt: skip
        carried = run._task_prior(None)  # the searches' prior rides in the tasks, not in the folder
        assert set(carried) == (set() if widen == 0 else {"prior"})
    meta = {"index": 3, "version": 1}
    store_game(run.dir, {"meta": meta, "idx": np.zeros(1, np.int64), "val": np.ones(1, np.float32),
                         "csa": b"", "kif": b""})  # fmt: skip
    with np.load(run.dir / "pending" / "g00000003.npz") as z:
        assert sorted(z.files) == ["idx", "meta", "val"]


def _prior_config(tmp_path) -> Path:
    text = SMOKE.read_text().replace("every_games = 4", "every_games = 0")
    text = text.replace("[selfplay]\n", "[selfplay]\nwiden_k0 = 3\n") + "\n[prior]\nlr = 0.01\n"
    conf = tmp_path / "prior.toml"
    conf.write_text(text)
    return conf


@pytest.mark.slow
@pytest.mark.process
def test_a_killed_run_resumes_its_prior_exactly(tmp_path):
    """A run that learns its prior (4 games, 2 batches, widening on) killed with -9 after its first checkpoint and
    a finished game of the next batch, then resumed: its prior and the prior's Adam state at the end are the same,
    bit for bit, as those of the same run never stopped; each batch row reports the prior's loss."""
    conf = _prior_config(tmp_path)
    whole, killed = tmp_path / "whole", tmp_path / "killed"
    cmd = [sys.executable, "-m", "learn", "run", str(conf), "--dir"]
    r = subprocess.run(cmd + [str(whole)], cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr
    proc = subprocess.Popen(
        cmd + [str(killed)], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    deadline = time.time() + 600
    try:
        while not (_version(killed) >= 1 and list((killed / "pending").glob("*.npz"))):
            assert proc.poll() is None, "run ended before it could be killed"
            assert time.time() < deadline, "the run did not reach the kill point"
            time.sleep(0.05)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    r = subprocess.run(cmd + [str(killed), "--resume"], cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr
    for run in (whole, killed):
        assert json.loads((run / "state.json").read_text())["prior_state"] == "s000002.npz"
    assert np.array_equal(M.load_model(prior_path(whole, 2)), M.load_model(prior_path(killed, 2)))
    a, b = load_state(whole / "prior" / "s000002.npz"), load_state(killed / "prior" / "s000002.npz")
    assert all(np.array_equal(a[k], b[k]) for k in a) and a["steps"][0] == 2
    assert not np.array_equal(a["w"], M.load_model())  # the prior learned
    rows = [json.loads(x) for x in (killed / "metrics.jsonl").read_text().splitlines()]
    assert [row["games_done"] for row in rows] == [2, 4]
    assert all(row["prior_positions"] > 0 and row["prior_loss"] > row["prior_kl"] >= 0 for row in rows)


def _version(run: Path) -> int:
    st = run / "state.json"
    return json.loads(st.read_text())["version"] if st.is_file() else -1

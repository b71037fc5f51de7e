"""`python -m learn run` end to end over real processes: the smoke config (with an evaluation match and the
plot), a kill -9 of a real run and --resume, and CLI errors."""

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from learn.match.outcome import FAULTS
from usi_engine.shogi_eval.evalfile import MATERIAL_PATH

pytestmark = pytest.mark.process

ROOT = Path(__file__).resolve().parents[2]
SMOKE = ROOT / "configs" / "learn-smoke.toml"


def learn(*args, timeout=600):
    return subprocess.run(
        [sys.executable, "-m", "learn", *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout
    )


def metrics(run):
    return [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines() if line.strip()]


def checkpoint(run) -> int:
    """The run's version (-1 before its state.json exists)."""
    st = run / "state.json"
    return json.loads(st.read_text())["version"] if st.is_file() else -1


def kill_when(proc, ready, limit_s: float) -> None:
    """SIGKILL the process group of a running `learn run` as soon as ready() holds (fail if it ends first or
    ready() does not hold within limit_s)."""
    deadline = time.time() + limit_s
    try:
        while time.time() < deadline:
            if ready():
                return
            assert proc.poll() is None, "run ended before it could be killed"
            time.sleep(0.05)
        pytest.fail("the run did not reach the kill point within the time limit")
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


@pytest.mark.slow
def test_smoke_run_checkpoints_evaluates_and_plots(tmp_path):
    run = tmp_path / "smoke"
    r = learn("run", str(SMOKE), "--dir", str(run))
    assert r.returncode == 0, r.stderr
    state = json.loads((run / "state.json").read_text())
    assert state["games_done"] == 4 and state["version"] == 2
    assert "prior_state" not in state and not (run / "prior").exists()  # [prior] off: no prior files
    assert state["wins_b"] + state["wins_w"] + state["draws"] == 4
    rows = metrics(run)
    assert [r["kind"] for r in rows] == ["batch", "batch", "eval"]
    # the CPU budget: the workers' game CPU (each game > 0) plus the driver's, cumulative like `seconds`
    assert 0 < rows[0]["games_cpu_seconds"] <= rows[0]["cpu_seconds"] < rows[1]["cpu_seconds"]
    assert rows[1]["cpu_seconds"] == pytest.approx(state["cpu_seconds"], abs=1e-3)
    assert all(-1 <= r["half_agreement"] <= 1 for r in rows[:2])
    signals = {f"signal_games_{name}" for name in ("material", "p", "rel", "ks", "ef")}
    assert all(signals <= set(r) for r in rows[:2])
    assert rows[-1]["vs"] == "start" and rows[-1]["games"] == 2 and rows[-1]["openings"] == "run"
    assert rows[-1]["nodes"] == 300  # the run's [eval] nodes
    assert "game/s" in r.stderr or "game]" in r.stderr  # the tqdm bar
    assert len(list((run / "records").glob("*.csa"))) == 4 and len(list((run / "records").glob("*.kif"))) == 4
    assert not list((run / "pending").iterdir())
    from usi_engine.shogi_eval.evalfile import load_weights

    w0, w2 = load_weights(run / "weights" / "v000000.npz"), load_weights(run / "weights" / "v000002.npz")
    assert (w0 != w2).sum() > 0  # lam < 1: every game moves the weights
    from usi_engine.shogi_eval.features import OFF_KS, OFF_PP

    assert np.array_equal(w0[OFF_PP:OFF_KS], w2[OFF_PP:OFF_KS])  # PP is not a trainable group here
    assert (w0[OFF_KS:] != w2[OFF_KS:]).sum() > 0  # the king-safety block is
    openings = tmp_path / "openings.txt"
    openings.write_text("startpos moves 7g7f 3c3d\n")
    e = learn("evaluate", str(run), "--version", "1", "--vs", "2", "--games", "2", "--openings", str(openings))
    assert e.returncode == 0, e.stderr
    row = metrics(run)[-1]
    assert row["kind"] == "eval" and (row["version"], row["opponent"], row["vs"]) == (1, 2, "v2")
    assert row["games"] == 2 and row["games_done"] == 2  # the games behind checkpoint 1
    assert row["openings"] == "openings"  # the file's name, a series of its own in the plot
    csas = list((run / "eval" / "v000001-vs-v2-2g-openings").glob("*.csa"))  # both colours from the given opening
    assert len(csas) == 2 and all("+7776FU\nT0\n-3334FU\n" in c.read_text() for c in csas)
    e = learn("evaluate", str(run), "--games", "2", "--openings-seed", "5")
    assert e.returncode == 0, e.stderr
    row = metrics(run)[-1]
    assert (row["version"], row["opponent"], row["vs"], row["games_done"]) == (2, 0, "start", 4)
    assert row["openings"] == "seed5"
    folder = run / "eval" / "v000002-vs-start-2g-seed5"
    assert len(list(folder.glob("*.csa"))) == 2
    # an evaluation cut after its first game: --resume keeps that game and plays only the other
    summary = json.loads((folder / "summary.json").read_text())
    summary["games"] = summary["games"][:1]
    (folder / "summary.json").write_text(json.dumps(summary))
    for record in list(folder.glob("*.csa")) + list(folder.glob("*.kif")):
        record.unlink()
    e = learn("evaluate", str(run), "--games", "2", "--openings-seed", "5", "--resume")
    assert e.returncode == 0, e.stderr
    resumed = metrics(run)[-1]
    assert resumed["games"] == 2 and resumed["wins"] + resumed["losses"] + resumed["draws"] == 2
    assert len(list(folder.glob("*.csa"))) == 1  # one game played, one taken over
    # against a weight file instead of a checkpoint, at another budget: a series of its own, named by the file
    material = MATERIAL_PATH
    e = learn("evaluate", str(run), "--games", "2", "--vs-weights", str(material), "--nodes", "200")
    assert e.returncode == 0, e.stderr
    row = metrics(run)[-1]
    assert (row["vs"], row["opponent"], row["nodes"], row["games"]) == ("material", -1, 200, 2)
    folder = run / "eval" / "v000002-vs-material-2g-200n"
    played = json.loads((folder / "summary.json").read_text())
    assert played["time_control"]["nodes"] == 200
    assert played["engines"][1]["name"] == "material"
    assert played["engines"][1]["options"]["EvalFile"] == str(material.relative_to(ROOT))  # below the working folder
    assert played["engines"][0]["options"]["EvalFile"] == str((run / "weights" / "v000002.npz").resolve())  # outside
    assert played["engines"][0]["command"] == "{python} -m usi_engine"  # no machine path in a committed summary
    # at a byoyomi instead of fixed nodes: its own folder, series and clock
    e = learn("evaluate", str(run), "--games", "2", "--vs-weights", str(material), "--byoyomi", "200")
    assert e.returncode == 0, e.stderr
    row = metrics(run)[-1]
    assert (row["vs"], row["nodes"], row["byoyomi_ms"], row["games"]) == ("material", None, 200, 2)
    played = json.loads((run / "eval" / "v000002-vs-material-2g-byo200ms" / "summary.json").read_text())
    assert played["time_control"]["byoyomi_ms"] == 200 and not played["time_control"]["nodes"]
    # Ctrl-C in the middle of an evaluation: no metrics row for the part; --resume finishes it and writes one
    rows_before = len(metrics(run))
    folder = run / "eval" / "v000002-vs-start-8g-seed6"
    # 8 games: 6 are still to come when the first record appears, so the interrupt cannot arrive after the end
    args = ("evaluate", str(run), "--games", "8", "--openings-seed", "6")
    proc = subprocess.Popen(
        [sys.executable, "-m", "learn", *args], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    deadline = time.time() + 300
    while not list(folder.glob("*.csa")) and time.time() < deadline:
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)  # the engines of the match keep running until the runner closes them
    _, err = proc.communicate(timeout=120)
    kept = json.loads((folder / "summary.json").read_text())["games"]
    assert proc.returncode == 1 and "interrupted after" in err and "--resume" in err
    assert 1 <= len(kept) < 8 and len(metrics(run)) == rows_before
    # the games the interrupt cut short are not kept (as crashes of the engines it closed) nor written
    assert not any(g["reason"] in FAULTS for g in kept), kept
    assert len(list(folder.glob("*.csa"))) == len(kept)
    e = learn(*args, "--resume")
    assert e.returncode == 0, e.stderr
    assert len(metrics(run)) == rows_before + 1 and metrics(run)[-1]["games"] == 8
    bad = learn("evaluate", str(run), "--vs-weights", str(tmp_path / "missing.npz"))
    assert bad.returncode == 2 and "missing.npz" in bad.stderr
    bad = learn("evaluate", str(run), "--vs", "1", "--vs-weights", str(material))
    assert bad.returncode == 2 and "exclude" in bad.stderr
    bad = learn("evaluate", str(run), "--nodes", "100", "--byoyomi", "100")
    assert bad.returncode == 2 and "exclude" in bad.stderr
    p = learn("plot", str(run))
    assert p.returncode == 0, p.stderr
    png = run / "learning-curve.png"
    assert png.read_bytes()[:4] == b"\x89PNG"
    again = learn("run", str(SMOKE), "--dir", str(run))
    assert again.returncode == 2 and "--resume" in again.stderr


@pytest.mark.slow
def test_probe_measures_one_batch_under_overridden_settings(tmp_path):
    out = tmp_path / "probe"
    sets = ["selfplay.lam=1", "selfplay.max_moves=12", "run.start_weights=" + str(MATERIAL_PATH)]
    r = learn("probe", str(SMOKE), "--games", "2", "--workers", "1", "--dir", str(out), *(f"--set={s}" for s in sets))
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout.strip().splitlines()[-1])
    assert got == json.loads((out / "probe.json").read_text())
    assert got["set"] == sets and got["games"] == 2 and got["start_weights"] == str(MATERIAL_PATH)
    assert "half_agreement" in got and got["grad_norm"] > 0 and "signal_games_material" in got
    assert metrics(out)[0]["plies"] == got["plies"] <= 12  # the override reached the games (the config: 24)
    assert len(list((out / "records").glob("*.csa"))) == 2
    r = learn("probe", str(SMOKE), "--games", "2", "--workers", "1", "--set", "selfplay.max_moves=8")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout.strip().splitlines()[-1])["plies"] <= 8


def test_kill_dash_nine_and_resume(tmp_path):
    cfg = SMOKE.read_text().replace("games = 4", "games = 6").replace("every_games = 4", "every_games = 0")
    conf = tmp_path / "kill.toml"
    conf.write_text(cfg)
    run = tmp_path / "kill"
    proc = subprocess.Popen(
        [sys.executable, "-m", "learn", "run", str(conf), "--dir", str(run)],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    # kill once a checkpoint exists AND a game of the next batch is done
    kill_when(proc, lambda: checkpoint(run) >= 1 and list((run / "pending").glob("*.npz")), 400)
    state = json.loads((run / "state.json").read_text())
    kept = {p.name: p.stat().st_mtime for p in (run / "pending").glob("*.npz")}
    done_before = state["games_done"]
    resumed_at = time.time()
    r = learn("run", str(conf), "--dir", str(run), "--resume")
    assert r.returncode == 0, r.stderr
    final = json.loads((run / "state.json").read_text())
    assert final["games_done"] == 6 and final["version"] == 3
    rows = [m for m in metrics(run) if m["kind"] == "batch"]
    assert [m["games_done"] for m in rows] == [2, 4, 6]  # no batch lost or applied twice
    for name in kept:  # finished games were not replayed
        record = run / "records" / (Path(name).stem + ".csa")
        assert record.stat().st_mtime < resumed_at
    assert done_before >= 2
    assert len(list((run / "records").glob("*.csa"))) == 6
    # on a new machine a run has only what a commit keeps of it (its pending, records and eval folders are
    # generated data): --resume continues from that alone
    copy = tmp_path / "copy"
    copy.mkdir()
    for name in ("config.toml", "state.json", "metrics.jsonl"):
        shutil.copyfile(run / name, copy / name)
    for sub in ("weights", "opt"):
        shutil.copytree(run / sub, copy / sub)
    conf.write_text(cfg.replace("games = 6", "games = 8"))
    r = learn("run", str(conf), "--dir", str(copy), "--resume")
    assert r.returncode == 0, r.stderr
    final = json.loads((copy / "state.json").read_text())
    assert final["games_done"] == 8 and final["version"] == 4
    assert len(list((copy / "records").glob("*.csa"))) == 2


def test_cli_errors(tmp_path):
    bad = tmp_path / "bad.toml"
    cases = [
        ("[selfplay]\nsamplez = 3", "samplez"),
        ("[learn]\ngroup_scale = { ks = -1 }", "group_scale"),
        ('[learn]\ngroup_h0 = { pe = "big" }', "group_h0"),
        ("[prior]\nlr = -1", "[prior] lr"),
    ]
    for table, named in cases:
        bad.write_text(f'[run]\ndir = "x"\n{table}\n')
        r = learn("run", str(bad))
        assert r.returncode == 2 and named in r.stderr, (table, r.stderr)
    r = learn("run", str(SMOKE), "--dir", str(tmp_path / "none"), "--resume")
    assert r.returncode == 2 and "no run to resume" in r.stderr
    bad_sets = (
        ("selfplay.lamz=1", "lamz"),
        ("lam=1", "TABLE.KEY=VALUE"),
        ("probe.x=1", "probe"),
        ("selfplay.lam=O.7", "not text"),  # a letter O: the config's number stays a number
    )
    for item, named in bad_sets:
        r = learn("probe", str(SMOKE), "--set", item)
        assert r.returncode == 2 and named in r.stderr, (item, r.stderr)
    r = learn("probe", str(SMOKE), "--games", "1")
    assert r.returncode == 2 and "--games" in r.stderr
    r = learn("plot", str(tmp_path))
    assert r.returncode == 2 and "metrics" in r.stderr
    r = learn("evaluate", str(tmp_path))
    assert r.returncode == 2 and "config.toml" in r.stderr
    r = learn("evaluate", str(tmp_path), "--openings", "x.txt", "--openings-seed", "3")
    assert r.returncode == 2 and "exclude" in r.stderr
    try:
        import ray  # noqa: F401
    except ImportError:
        r = learn("run", str(SMOKE), "--dir", str(tmp_path / "ray"), "--ray-address", "auto")
        assert r.returncode == 2 and "pip install" in r.stderr


ORPHAN_PROBE = """
import sys, time
from learn.backends import LocalBackend
backend = LocalBackend(2)
pids = [backend.pool.submit(__import__("os").getpid).result() for _ in range(4)]
print(" ".join(map(str, sorted(set(pids)))), flush=True)
time.sleep(600)
"""


def test_workers_exit_when_the_run_process_is_killed_alone():
    proc = subprocess.Popen([sys.executable, "-c", ORPHAN_PROBE], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        pids = [int(p) for p in proc.stdout.readline().split()]
        assert pids and proc.pid not in pids
    finally:
        proc.kill()  # the run process only, not its process group
        proc.wait()
    deadline = time.time() + 20
    alive = pids
    while alive and time.time() < deadline:
        time.sleep(0.2)
        alive = [p for p in pids if pid_alive(p)]
    assert not alive, f"worker(s) {alive} outlived the run process"


BUSY_PROBE = """
import os, time
from learn.backends import LocalBackend
backend = LocalBackend(2)
pids = sorted({backend.pool.submit(os.getpid).result() for _ in range(4)})
games = [backend.pool.submit(time.sleep, 600) for _ in range(4)]  # both workers busy, two tasks queued
time.sleep(1)
print(" ".join(map(str, pids)), flush=True)
backend.close()
"""


def test_a_stopped_run_does_not_wait_for_its_workers_games():
    """A run stopped mid-batch (^C, or an error such as a full disk) closes its backend: queued games are
    cancelled and running ones killed, so the process exits at once and leaves no worker behind."""
    proc = subprocess.Popen([sys.executable, "-c", BUSY_PROBE], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        pids = [int(p) for p in proc.stdout.readline().split()]
        assert pids and proc.pid not in pids
        proc.wait(timeout=30)
    finally:
        proc.kill()
        proc.wait()
    assert not [p for p in pids if pid_alive(p)]


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return not Path(f"/proc/{pid}/stat").is_file() or Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"


def test_pooled_signal_games_measures_agreement_between_games():
    from learn.batchstats import pooled_signal_games
    from usi_engine.shogi_eval.features import OFF_KP

    idx = np.array([1, 5, OFF_KP + 100, OFF_KP + 2000])
    same = [(idx, np.array([1.0, -2.0, 0.5, 0.25]))] * 4
    assert pooled_signal_games(same) == {
        "signal_games_material": 0.0,
        "signal_games_p": 0.0,
        "signal_games_rel": 0.0,
        "signal_games_ks": None,
        "signal_games_ef": None,
        "signal_games_em": None,
        "signal_games_pe": None,
        "signal_games_kz": None,
        "signal_games_kpos": None,
    }  # no feature of the king-term blocks in these rows
    opposite = same[:2] + [(idx, -v) for i, v in same[:2]]  # mean zero: nothing to learn
    assert set(pooled_signal_games(opposite).values()) == {None}
    rng = np.random.default_rng(0)
    noisy = [(idx, np.array([1.0, -2.0, 0.5, 0.25]) + rng.normal(0, 3.0, 4)) for _ in range(400)]
    n_star = pooled_signal_games(noisy)["signal_games_material"]
    assert 2 < n_star < 6  # variance 2 * 9 / |mean|^2 5 = 3.6
    assert pooled_signal_games(same[:1]) == {}


def test_ablation_arms_differ_only_in_the_terms_they_switch():
    from dataclasses import asdict

    from learn.runconfig import load_config

    arms = {name: asdict(load_config(ROOT / "configs" / f"ablation-{name}.toml")) for name in ("both", "pg", "strap")}
    terms = {name: (a["selfplay"].pop("pg_weight"), a["selfplay"].pop("strap_weight")) for name, a in arms.items()}
    assert terms == {"both": (1.0, 20.0), "pg": (1.0, 0.0), "strap": (0.0, 20.0)}
    dirs = {a.pop("dir") for a in arms.values()}
    assert len(dirs) == 3
    assert arms["both"] == arms["pg"] == arms["strap"]
    assert "ks" in arms["both"]["groups"] and arms["both"]["games"] >= 512
    assert arms["both"]["selfplay"]["qsearch_see"] is True  # the engine's quiescence (QSearchSEE)
    # the policy term's next test: the pg arm with lambda 0 and T_learn 92, nothing else changed
    lam0, pg = (asdict(load_config(ROOT / "configs" / f"ablation-{name}.toml")) for name in ("pg-lam0", "pg"))
    assert lam0.pop("dir") not in dirs | {pg.pop("dir")}
    assert (lam0["selfplay"].pop("lam"), lam0["selfplay"].pop("t_learn")) == (0.0, 92.0)
    assert (pg["selfplay"].pop("lam"), pg["selfplay"].pop("t_learn")) == (0.7, 20.0)
    assert lam0 == pg


def test_resume_drops_batch_rows_of_versions_never_checkpointed(tmp_path):
    """A run killed between a batch's metrics row and its checkpoint replays that batch on resume: the
    stale row goes, rows of saved versions and evaluation rows stay."""
    import dataclasses

    from learn.run import Run
    from learn.runconfig import load_config

    cfg = dataclasses.replace(load_config(SMOKE), dir=str(tmp_path))
    rows = [
        {"kind": "batch", "version": 1, "games_done": 2},
        {"kind": "eval", "version": 1, "elo": 3.0},
        {"kind": "batch", "version": 2, "games_done": 4},
    ]
    (tmp_path / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    Run(cfg, SMOKE)._drop_unsaved_metrics(1)
    kept = [json.loads(x) for x in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert kept == rows[:2]


def test_resume_removes_what_a_kill_right_after_a_checkpoint_left(tmp_path):
    """A kill between a checkpoint's state file and the removal of its batch's pending files (or of the old
    optimiser state) leaves files of applied games behind; --resume removes them and keeps the current batch's."""
    import dataclasses

    from learn.run import Run
    from learn.runconfig import load_config
    from learn.runfiles import pending_path

    cfg = dataclasses.replace(load_config(SMOKE), dir=str(tmp_path))
    run = Run(cfg, SMOKE)
    for sub in ("pending", "opt"):
        (tmp_path / sub).mkdir()
    for i in (1, 2, 3):
        pending_path(tmp_path, i).write_bytes(b"x")
    for name in ("o000000.npz", "o000001.npz", "o000002.npz"):
        (tmp_path / "opt" / name).write_bytes(b"x")
    run._drop_leftovers({"games_done": 2, "opt": "o000001.npz"})
    assert sorted(p.name for p in (tmp_path / "pending").iterdir()) == ["g00000002.npz", "g00000003.npz"]
    assert [p.name for p in (tmp_path / "opt").iterdir()] == ["o000001.npz"]


def test_checkpoint_keeps_the_optimiser_state_compact_and_exact(tmp_path):
    """_checkpoint writes the compact optimiser state; _optimizer (resume) restores it bit for bit, also from
    the dense file of older runs; a corrupt file stops --resume with a message naming it."""
    import dataclasses

    from learn.optim import load_state
    from learn.run import Run
    from learn.runconfig import load_config

    run_dir = tmp_path / "run"
    cfg = dataclasses.replace(load_config(SMOKE), dir=str(run_dir))
    run = Run(cfg, SMOKE)
    state = run._init_state()
    opt = run._optimizer(state)
    rng = np.random.default_rng(1)
    for _ in range(2):
        idx = np.unique(rng.integers(0, opt.w.size, 3000))
        opt.step(idx, rng.normal(size=idx.size))
    state["version"] = 1
    run._checkpoint(state, opt)
    opt_file = run_dir / "opt" / state["opt"]
    dense = tmp_path / "dense.npz"
    np.savez(dense, **opt.state())
    assert opt_file.stat().st_size < dense.stat().st_size / 5

    def restored(resumed):
        return all(np.array_equal(resumed.state()[k], opt.state()[k]) for k in opt.state())

    assert restored(run._optimizer(run.load_state()))
    opt_file.write_bytes(dense.read_bytes())  # a checkpoint written before the compact format
    assert restored(run._optimizer(run.load_state()))
    assert set(load_state(opt_file)) == set(opt.state())
    opt_file.write_bytes(b"PK\x03\x04 cut short")
    r = learn("run", str(SMOKE), "--dir", str(run_dir), "--resume", timeout=120)
    assert r.returncode == 2
    assert f"optimiser state {opt_file}: not a readable .npz archive" in r.stderr

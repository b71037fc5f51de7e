"""`python -m learn run --ray-address` on a real local Ray cluster (started here: one head node with 2 CPUs, so
two workers; stopped after): configs/learn-smoke.toml end to end, a kill -9 of the driver and --resume. The
tasks get their weights from Ray's object store and return their games; only the driver writes the run folder."""

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import numpy as np
import pytest

from tests.learn.test_runner import ROOT, SMOKE, checkpoint, kill_when, metrics

pytestmark = [pytest.mark.process, pytest.mark.slow]

RAY = shutil.which("ray") or str(Path(sys.executable).with_name("ray"))


def free_ports(n: int) -> list:
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


RAY_ENV = dict(os.environ, RAY_AUTH_MODE="disabled", PYTHONPATH=str(ROOT))  # every node runs this checkout


@contextmanager
def ray_node(*args: str) -> Iterator[tuple[subprocess.Popen, Path]]:
    """One Ray node, `ray start --block ARGS`, in its own session, with its own temp folder as its working
    folder (short: Ray's socket paths have a length limit) and free ports; yields (the `ray start` process,
    the temp folder). Stopped by signalling the process group it started (never a machine-wide `ray stop`):
    `ray start --block` stops the node's processes on SIGTERM, SIGKILL then ends whatever of the group is left."""
    temp = Path(tempfile.mkdtemp(prefix="ray", dir="/tmp"))
    agent, metrics_port, env_agent = free_ports(3)
    log = open(temp / "node.log", "w")
    command = [RAY, "start", "--block", "--temp-dir", str(temp), "--disable-usage-stats", *args]
    ports = ["--dashboard-agent-listen-port", str(agent), "--metrics-export-port", str(metrics_port)]
    ports += ["--runtime-env-agent-port", str(env_agent)]
    proc = subprocess.Popen(
        command + ports, cwd=temp, env=RAY_ENV, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )
    try:
        yield proc, temp
    finally:
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                break
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                pass
            time.sleep(2.0)
        proc.wait()
        log.close()
        shutil.rmtree(temp, ignore_errors=True)


@contextmanager
def ray_head(cpus: int) -> Iterator[tuple[str, subprocess.Popen, Path]]:
    """A head node with `cpus` CPUs (ray_node), up; yields (its address, process, temp folder)."""
    (gcs,) = free_ports(1)
    head = ("--head", "--port", str(gcs), "--num-cpus", str(cpus), "--include-dashboard", "false")
    with ray_node(*head) as (proc, temp):
        address = f"127.0.0.1:{gcs}"
        deadline = time.time() + 120
        while time.time() < deadline:
            assert proc.poll() is None, "ray start --head exited: " + (temp / "node.log").read_text()[-2000:]
            status = subprocess.run(
                [RAY, "status", "--address", address], env=RAY_ENV, capture_output=True, check=False
            )
            if status.returncode == 0:
                break
            time.sleep(1.0)
        else:
            pytest.fail("the Ray head did not come up within 120 s")
        yield address, proc, temp


@pytest.fixture(scope="module")
def cluster():
    """A one-node cluster: a head with 2 CPUs (two workers); yields its address."""
    import ray  # noqa: F401  (the 'test' extra installs it: pip install '.[test]')

    with ray_head(2) as (address, _, _):
        yield address


def test_smoke_run_on_a_ray_cluster_with_kill_and_resume(cluster, tmp_path):
    cfg = SMOKE.read_text().replace("every_games = 4", "every_games = 0")  # the match path is tested locally
    conf = tmp_path / "ray.toml"
    conf.write_text(cfg)
    run = tmp_path / "run"
    cmd = [sys.executable, "-m", "learn", "run", str(conf), "--dir", str(run), "--ray-address", cluster]
    proc = subprocess.Popen(
        cmd, cwd=ROOT, env=RAY_ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    # stop the driver hard after the first checkpoint (the limit guards a hang: Ray workers of a fresh checkout
    # compile the kernels, ≈ 3.5 min on a quiet 2-core box, more under load)
    kill_when(proc, lambda: checkpoint(run) >= 1, 600)
    r = subprocess.run(
        cmd + ["--resume"], cwd=ROOT, env=RAY_ENV, capture_output=True, text=True, timeout=300, check=False
    )
    assert r.returncode == 0, r.stderr
    assert "Connected to Ray cluster" in r.stderr or "Connecting to existing Ray cluster" in r.stderr
    final = json.loads((run / "state.json").read_text())
    assert final["games_done"] == 4 and final["version"] == 2
    assert final["wins_b"] + final["wins_w"] + final["draws"] == 4
    rows = metrics(run)
    assert [m["games_done"] for m in rows if m["kind"] == "batch"] == [2, 4]  # no batch lost or applied twice
    assert len(list((run / "records").glob("*.csa"))) == 4 and len(list((run / "records").glob("*.kif"))) == 4
    assert not list((run / "pending").iterdir())
    from usi_engine.shogi_eval.evalfile import load_weights

    w0, w2 = load_weights(run / "weights" / "v000000.npz"), load_weights(run / "weights" / "v000002.npz")
    assert (w0 != w2).sum() > 0
    # the same run on local worker processes plays the same games and learns the same weights: the Ray tasks get
    # each version as its checkpoint file holds it, like a local worker (not the optimiser's float64 copy)
    local = tmp_path / "local"
    r = subprocess.run(
        [sys.executable, "-m", "learn", "run", str(conf), "--dir", str(local)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert r.returncode == 0, r.stderr
    for v in (1, 2):
        name = f"weights/v{v:06d}.npz"
        assert np.array_equal(load_weights(run / name), load_weights(local / name)), name
    for rec in sorted((run / "records").glob("*.csa")):
        assert game_lines(rec) == game_lines(local / "records" / rec.name), rec.name


def game_lines(record: Path) -> list[str]:
    """A CSA record's lines without its start time."""
    return [line for line in record.read_text().splitlines() if not line.startswith("$START_TIME")]


def test_ray_task_takes_weights_from_the_object_store_and_returns_the_game(cluster, monkeypatch, tmp_path):
    """The remote function gets the weights by value from the object store (the driver read them from the
    checkpoint file, as stored: float32) and returns the whole game, gradient and records included; it runs in
    a Ray worker process, not in the driver."""
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")
    from learn.backends import RayBackend
    from learn.selfplay import SelfPlayConfig
    from learn.worker import game_seed
    from usi_engine.shogi_eval.evalfile import load_weights, save_weights

    exact = load_weights("material") + 0.1  # not float32 values: the file rounds them
    path = tmp_path / "v000000.npz"
    save_weights(path, exact)
    backend = RayBackend(cluster, 2)
    try:
        backend.set_weights(path)
        import ray

        sent = ray.get(backend.weights_ref)
        assert np.array_equal(sent, load_weights(str(path))) and not np.array_equal(sent, exact)
        sp = SelfPlayConfig(
            samples=16,
            grad_samples=8,
            qdepth=2,
            max_moves=6,
            opening_max=2,
            adjudicate_cp=1.0,
            baseline_scale=600.0,
            lam=0.8,
            strap_weight=5.0,
        )
        task = {"run": "t", "version": 0, "index": 3, "seed": game_seed(1, 3), "selfplay": sp.__dict__.copy()}
        futures = {backend.submit(task): 3}
        results = []
        while futures:
            for f, res in backend.wait_any(futures):
                futures.pop(f)
                results.append(res)
    finally:
        backend.close()
    (res,) = results
    assert res["meta"]["index"] == 3 and res["meta"]["pid"] != os.getpid()
    assert res["csa"].startswith(b"V2") and res["idx"].shape == res["val"].shape and res["idx"].size > 0
    assert np.all(np.diff(res["idx"]) > 0)

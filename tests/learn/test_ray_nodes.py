"""`python -m learn run --ray-address` on a real two-node Ray cluster on this machine: a head node and a second
node (`ray start --address`), 1 CPU each, each with its own temp and working folder; the run folder is the
driver's alone. The second node plays games; then it is killed (SIGKILL to its whole process tree) while one
of its games is in flight, and the run still ends exactly as a clean run on the intact cluster: the lost game
is played again on the head, every batch applied once with each of its games once."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from learn.worker import play_selfplay_task_ray
from tests.learn.test_ray import RAY_ENV, ray_head, ray_node
from tests.learn.test_runner import ROOT, SMOKE, checkpoint, metrics

pytestmark = [pytest.mark.process, pytest.mark.slow]

TASK_TITLE = f"ray::{play_selfplay_task_ray.__name__}".encode()  # a Ray worker's process title during the task


def process_tree(root: int) -> list[int]:
    """`root` and all its descendants (parent ids from /proc)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            ppid = int(stat.read_text().rsplit(")", 1)[1].split()[1])  # "pid (comm) state ppid ..."
        except (OSError, IndexError, ValueError):
            continue  # the process ended meanwhile
        children.setdefault(ppid, []).append(int(stat.parent.name))
    tree, todo = [], [root]
    while todo:
        pid = todo.pop()
        tree.append(pid)
        todo.extend(children.get(pid, []))
    return tree


def playing(root: int) -> bool:
    """A process of the node started as `root` is running a self-play task now."""
    for pid in process_tree(root):
        try:
            if Path(f"/proc/{pid}/cmdline").read_bytes().startswith(TASK_TITLE):
                return True
        except OSError:
            continue
    return False


def kill_node(proc: subprocess.Popen) -> None:
    """SIGKILL every process of a node at once (its `ray start`, raylet, agents and workers): a machine lost."""
    for pid in process_tree(proc.pid):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    proc.wait()


def node_ids(address: str, second_temp: Path) -> tuple[str, str]:
    """(head id, second node id) once both nodes are alive (the second is the one whose raylet socket lies in
    its temp folder)."""
    import ray

    ray.init(address=address, log_to_driver=False)
    try:
        deadline = time.time() + 120
        while time.time() < deadline:
            alive = [n for n in ray.nodes() if n["Alive"]]
            if len(alive) == 2:
                second = [n["NodeID"] for n in alive if n["RayletSocketName"].startswith(str(second_temp))]
                (head,) = [n["NodeID"] for n in alive if n["NodeID"] not in second]
                return head, second[0]
            time.sleep(0.5)
        pytest.fail("the second Ray node did not join within 120 s")
    finally:
        ray.shutdown()


def batches(run: Path) -> list[dict]:
    return [m for m in metrics(run) if m["kind"] == "batch"]


def test_two_nodes_and_a_node_killed_mid_batch(tmp_path, monkeypatch):
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")
    conf = tmp_path / "nodes.toml"
    conf.write_text(SMOKE.read_text().replace("every_games = 4", "every_games = 0"))  # 4 games, batches of 2

    def command(run: Path) -> list[str]:
        return [sys.executable, "-m", "learn", "run", str(conf), "--dir", str(run), "--ray-address", address]

    with ray_head(1) as (address, _, _), ray_node("--address", address, "--num-cpus", "1") as (second, temp):
        head_id, second_id = node_ids(address, temp)
        # the reference: the same run on the intact cluster
        clean = tmp_path / "clean"
        r = subprocess.run(command(clean), cwd=ROOT, env=RAY_ENV, capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr
        rows = batches(clean)
        assert [m["games_done"] for m in rows] == [2, 4] and [m["lost_attempts"] for m in rows] == [0, 0]
        assert all(sum(m["games_per_node"].values()) == 2 for m in rows)
        assert sum(m["games_per_node"].get(second_id, 0) for m in rows) >= 1  # the second node played

        # the same run, the second node killed while it plays a game of the second batch
        run = tmp_path / "killed"
        log = tmp_path / "killed.log"
        with open(log, "w") as err:
            proc = subprocess.Popen(command(run), cwd=ROOT, env=RAY_ENV, stdout=subprocess.DEVNULL, stderr=err)
            try:
                deadline = time.time() + 120
                while not (checkpoint(run) >= 1 and playing(second.pid)):
                    assert proc.poll() is None and time.time() < deadline, "no game of batch 2 on the second node"
                    time.sleep(0.05)
                kill_node(second)
                assert proc.wait(timeout=180) == 0, log.read_text()
            finally:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
    stderr = log.read_text()
    assert "attempt 1 lost" in stderr and "playing it again" in stderr
    rows = batches(run)
    assert [m["games_done"] for m in rows] == [2, 4]  # no batch lost or applied twice
    assert [m["lost_attempts"] for m in rows] == [0, 1]
    assert rows[1]["games_per_node"] == {head_id: 2}  # the lost game was played again on the head
    # nothing lost or applied twice: the counters, the games and the weights are the clean run's
    final, reference = (json.loads((d / "state.json").read_text()) for d in (run, clean))
    for key in ("version", "games_done", "wins_b", "wins_w", "draws", "positions"):
        assert final[key] == reference[key], key
    assert final["version"] == 2 and final["games_done"] == 4
    names = sorted(p.name for p in (run / "records").iterdir())
    assert names == sorted(p.name for p in (clean / "records").iterdir())
    assert names == [f"g{i:08d}.{ext}" for i in range(4) for ext in ("csa", "kif")]
    assert not list((run / "pending").iterdir())
    from usi_engine.shogi_eval.evalfile import load_weights

    for v in (1, 2):
        name = f"weights/v{v:06d}.npz"
        assert np.array_equal(load_weights(run / name), load_weights(clean / name)), name

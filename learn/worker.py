"""The self-play worker: one task in, one finished game out (its gradient, outcome and records).

A task is a dict {"run": run id, "version": checkpoint, "index": game index, "seed": game_seed(...),
"selfplay": SelfPlayConfig fields}, and when the searches widen by a move prior or the run learns one, "prior"
(the version's model array: a few tens of kB, carried by the task itself) with "learn_prior" (the game returns
the prior's cross-entropy gradient, learn/selfplay_prior.py). The same `play_selfplay_task` serves local worker
processes (`play_selfplay_task_local`, which reads the version's weight file) and Ray tasks
(`play_selfplay_task_ray`, which gets the weights from Ray's object store): it touches no file, and the run
process stores what it returns (learn/runfiles.py).
"""

from __future__ import annotations

import os

import numpy as np

from . import selfplay as sp
from .selfplay_prior import PriorGradient

GRADIENT_DTYPE = np.float32

_WORKER: dict = {}  # this process's SelfPlayer and gradient sums, kept between tasks of one version


def game_seed(run_seed: int, index: int) -> int:
    """Seed of self-play game `index`: a fixed function of the run seed, so a replayed game is the same."""
    return int(np.random.SeedSequence([run_seed, index]).generate_state(1, np.uint64)[0] >> np.uint64(1))


def play_selfplay_task(task: dict, weights: np.ndarray | None) -> dict:
    """Play one self-play game and return everything the driver stores: the outcome `meta`, the game's sparse
    gradient sum_t A_t e(t) (`idx`, `val`), its records (`csa`, `kif` bytes) and, when the task says
    learn_prior, the sparse gradient of the prior's cross-entropy (`prior_idx`, `prior_val`; the meta adds the
    learned moves `prior_positions` and the sums `prior_loss`, `prior_entropy`). Touches no file: the same
    function serves local worker processes and Ray tasks. The SelfPlayer stays cached in the process between
    tasks of one version (`task["version"]` with `task["run"]`, the run's identity); `weights` may be None
    for a task of the cached version."""
    from usi_engine.shogi_eval.features import N_WEIGHTS

    key = (task["run"], task["version"])
    if _WORKER.get("key") != key:
        w = np.array(weights, dtype=np.float64)  # a private, writable copy (object-store arrays are read-only)
        cfg = sp.SelfPlayConfig.from_dict(task["selfplay"])
        if "player" in _WORKER and _WORKER["player"].cfg == cfg:
            _WORKER["player"].set_weights(w)
        else:
            _WORKER["player"] = sp.SelfPlayer(w, cfg, seed=task["seed"])
            _WORKER["grads"] = {s: sp.AdvantageSum(N_WEIGHTS, cfg.lam) for s in "bw"}
        _WORKER["player"].set_prior(task.get("prior"))
        _WORKER["prior"] = PriorGradient(task["prior"]) if task.get("learn_prior") else None
        _WORKER["key"] = key
    player, grads, prior = _WORKER["player"], _WORKER["grads"], _WORKER["prior"]
    for g in grads.values():
        g.clear()
    if prior is not None:
        prior.clear()
    out = player.play(task["seed"], grads, prior)
    total = sum(g.total(out.reward(s)) for s, g in grads.items())  # sum_t A_t e(t)
    idx = np.flatnonzero(total)
    meta = out.as_dict()
    meta.update(index=task["index"], version=task["version"], pid=os.getpid())
    csa, kif = sp.record_bytes(out)
    result = {"meta": meta, "idx": idx.astype(np.int64), "val": total[idx].astype(GRADIENT_DTYPE)}
    result.update(csa=csa, kif=kif)
    if prior is not None:
        result["prior_idx"], result["prior_val"] = prior.sparse()
        meta.update(prior_positions=prior.positions, prior_loss=prior.loss, prior_entropy=prior.entropy)
    return result


def play_selfplay_task_local(task: dict, weights_file: str) -> dict:
    """Local worker process: the weights come from the run folder on this machine (read once per version)."""
    from usi_engine.shogi_eval.evalfile import load_weights

    if _WORKER.get("key") != (task["run"], task["version"]):
        return play_selfplay_task(task, load_weights(weights_file))
    return play_selfplay_task(task, None)


def play_selfplay_task_ray(task: dict, weights: np.ndarray) -> dict:
    """Ray task: the weights come from the object store; the meta names the cluster node that played the game
    (`ray_node`, Ray's node id)."""
    import ray

    result = play_selfplay_task(task, weights)
    result["meta"]["ray_node"] = ray.get_runtime_context().get_node_id()
    return result

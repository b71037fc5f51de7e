"""Where a run's self-play games are played: worker processes on this machine, or Ray tasks on a cluster.

Both backends take the same tasks (learn/worker.py) and give back the same results, so the run (learn/run.py)
does not know which one plays: `set_weights` once per version, `submit` a task (a future), `wait_any` for the
futures that have finished (with their results, within about a second), `close` to stop at once.

A game of a Ray run whose worker process or node is lost is played again (same task, same seed, same weights,
so the same game) on whatever the cluster has left; the future the run holds stays the same, and the result
counts its lost attempts (`meta["lost"]`). The run keys every result by its game index, so a batch is applied
once, with each of its games once, however often a game was played.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass
from multiprocessing import active_children, get_context
from pathlib import Path
from typing import Any, Iterable, Protocol

from .worker import play_selfplay_task_local, play_selfplay_task_ray


class Backend(Protocol):
    """What the run needs of a backend."""

    def set_weights(self, path: Path) -> None:
        """The weights of the tasks submitted next: the checkpoint file at `path`. Every game plays with the
        weights as that file holds them (float32), whichever backend plays it, so a Ray run, a local run and a
        resumed run play the same games."""

    def submit(self, task: dict) -> Any:
        """Start one game; returns its future."""

    def wait_any(self, futures: Iterable[Any]) -> list[tuple[Any, dict]]:
        """The finished futures with their results (none after about a second without one)."""

    def close(self) -> None:
        """Stop at once, games in flight included."""


def exit_with_parent(parent_pid: int, poll_s: float = 0.5) -> None:
    """Worker initializer: end this process when the run process is gone (kill -9 of the run alone would
    otherwise leave idle workers behind)."""

    def watch() -> None:
        while os.getppid() == parent_pid:
            time.sleep(poll_s)
        os._exit(1)

    threading.Thread(target=watch, name="exit-with-parent", daemon=True).start()


class LocalBackend:
    """Worker processes on this machine (spawned: each loads the numba kernels from the cache). They read the
    version's weight file from the run folder; the driver writes everything."""

    def __init__(self, workers: int):
        self.pool = ProcessPoolExecutor(
            max_workers=workers, mp_context=get_context("spawn"), initializer=exit_with_parent, initargs=(os.getpid(),)
        )
        self.weights_file = ""

    def set_weights(self, path: Path) -> None:
        """The weights of the next tasks: the workers read them from `path`."""
        self.weights_file = str(path)

    def submit(self, task: dict) -> Future:
        """Queue one game."""
        return self.pool.submit(play_selfplay_task_local, task, self.weights_file)

    @staticmethod
    def wait_any(futures: Iterable[Future]) -> list[tuple[Future, dict]]:
        """The finished futures with their results (none after a second without one)."""
        done, _ = wait(futures, return_when=FIRST_COMPLETED, timeout=1.0)
        return [(f, f.result()) for f in done]

    def close(self) -> None:
        """Stop now: queued games are cancelled and running ones killed, so that a run stopped by ^C or by an
        error mid-batch exits at once instead of waiting for its workers' games (the driver has no other
        multiprocessing children)."""
        self.pool.shutdown(wait=False, cancel_futures=True)
        for worker in active_children():
            worker.terminate()


LOST_ATTEMPTS = 3  # a game lost this often (its worker or node gone each time) stops a Ray run with an error


@dataclass(eq=False)
class RayGame:
    """The future of one game on a Ray cluster: its task, the weights it is played with, the ObjectRef of the
    attempt in flight and how many attempts were lost (hashed by identity: the run's key for the game)."""

    task: dict
    weights: Any  # ray.ObjectRef of the task's version's weights
    ref: Any = None  # ray.ObjectRef of the attempt in flight
    lost: int = 0


class RayBackend:
    """The same games as Ray tasks on an existing cluster (`pip install '.[ray]'`; every node runs the same
    project code). Workers need nothing but the cluster: each version's weights go once into Ray's object
    store, a task returns its game (gradient, outcome, records, the node that played it) as its result, and
    only the driver writes the run folder. An attempt lost with its worker process or its node is submitted
    again here (not by Ray's own task retries, so that each loss is seen, reported and counted), at most
    LOST_ATTEMPTS times per game."""

    def __init__(self, address: str, workers: int):
        try:
            import ray
        except ImportError:
            raise RuntimeError("--ray-address needs Ray: pip install '.[ray]' (or pip install ray)") from None
        self.ray = ray
        ray.init(address=address, ignore_reinit_error=True, log_to_driver=False)
        self.remote = ray.remote(num_cpus=1, max_retries=0)(play_selfplay_task_ray)
        # what a lost worker or node looks like to the driver (an exception in the game's code is not one)
        self.lost_errors = (
            ray.exceptions.WorkerCrashedError,
            ray.exceptions.NodeDiedError,
            ray.exceptions.ObjectLostError,
            ray.exceptions.OutOfMemoryError,
        )
        self.weights_ref: Any = None  # a ray.ObjectRef of the current version's weights

    def set_weights(self, path: Path) -> None:
        """The weights of the next tasks: read from `path` on this machine (exactly what a local worker loads,
        not the optimiser's unrounded float64 copy) and put once into the object store."""
        from usi_engine.shogi_eval.evalfile import load_weights

        self.weights_ref = self.ray.put(load_weights(str(path)))

    def submit(self, task: dict) -> RayGame:
        """Start one game as a Ray task."""
        game = RayGame(task, self.weights_ref)
        game.ref = self.remote.remote(task, game.weights)
        return game

    def wait_any(self, futures: Iterable[RayGame]) -> list[tuple[RayGame, dict]]:
        """The finished games with their results (none after a second without one); a game whose attempt was
        lost is submitted again and stays in flight."""
        games = {g.ref: g for g in futures}
        done, _ = self.ray.wait(list(games), num_returns=1, timeout=1.0)
        finished = []
        for ref in done:
            game = games[ref]
            try:
                result = self.ray.get(ref)
            except self.lost_errors as e:
                self._play_again(game, e)
                continue
            result["meta"]["lost"] = game.lost
            finished.append((game, result))
        return finished

    def _play_again(self, game: RayGame, error: Exception) -> None:
        """Submit a lost game again (RuntimeError once it was lost LOST_ATTEMPTS times)."""
        game.lost += 1
        what = f"game {game.task['index']}: attempt {game.lost} lost ({type(error).__name__})"
        if game.lost >= LOST_ATTEMPTS:
            raise RuntimeError(f"{what}; stopping (--resume plays the batch's missing games)") from error
        print(f"ray: {what}; playing it again", file=sys.stderr, flush=True)
        game.ref = self.remote.remote(game.task, game.weights)

    def close(self) -> None:
        """Disconnect this driver from the cluster."""
        self.ray.shutdown()

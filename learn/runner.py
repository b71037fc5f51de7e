"""`python -m learn run CONFIG [--resume] [--workers N] [--ray-address ADDR]`: self-play learning runs.

A run lives in one folder (config `run.dir`):
  config.toml          the configuration the run started with
  state.json           counters and the current files (replaced atomically, written last)
  weights/vNNNNNN.npz  weights after each checkpoint (eval/weightfile.py); v000000 = the start
  opt/oNNNNNN.npz      optimiser state of that checkpoint (AdaGrad accumulators, piece-square factor;
                       learn/optim.py; only the latest is kept; its nonzero entries only, compressed, exact)
  pending/gNNNNNNNN.npz  finished games of the current batch: the game's sparse gradient
                       sum_t A_t e(t) (eq. 14 with an advantage, learn/selfplay.py) and its outcome; written
                       atomically by the run process as each game's result arrives
  records/             CSA + KIF of every self-play game;  eval/  match JSON and records
  metrics.jsonl        one JSON object per batch ("kind": "batch") and per evaluation ("kind": "eval")
Loop: the games of a batch are played with the weights of the current version (local worker processes,
or Ray tasks that get the weights from Ray's object store); each game comes back as a result (gradient,
outcome, records) and only this process writes the run folder; when all have finished, Delta w = mean over
the batch's games, applied by optim.ShogiUpdate; version + 1; checkpoint (weights, optimiser state; the RNG
state is the run seed plus the game counter, since game i's seed is a function of both); pending files of the
batch are removed. A kill -9 at any point loses at most the games in flight: a finished game is written to
pending/ as soon as its result arrives, and `--resume` replays only the missing game indices with their
original seeds.
Evaluation every `eval.every_games`: matches with the match runner at fixed nodes, the checkpoint vs the
start weights and vs the previous best (promoted when it scores above 50 %); Elo +- 95 % into metrics.
`python -m learn evaluate RUN` plays the same match for any pair of checkpoints afterwards (own games and
openings) and appends the same row.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
import tomllib
from collections import Counter
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from multiprocessing import active_children, get_context
from pathlib import Path

import numpy as np

from . import selfplay as sp

STATE = "state.json"
RUN_SUBDIRS = ("weights", "opt", "pending", "records", "eval")  # a run folder's sub-folders
GRADIENT_DTYPE = np.float32


@dataclass
class EvalConfig:
    every_games: int = 0  # 0 = no periodic evaluation
    games: int = 20  # games per match (pairs of colours per opening)
    nodes: int = 20000  # fixed nodes per move
    concurrency: int = 1
    opening_plies: int = 6  # random opening plies (softmax at selfplay.opening_temp, start weights)
    max_moves: int = 256
    engine: str = ""  # engine command; empty = this Python running `-m usi_engine`
    hash_mb: int = 64


@dataclass
class RunConfig:
    dir: str
    games: int = 100  # total self-play games
    batch_games: int = 8  # games per weight update (and per checkpoint)
    seed: int = 1
    workers: int = 2
    start_weights: str = "material"  # a shipped name (eval/weights/NAME.npz) or a weight file path
    lr: float = 2.0  # AdaGrad step (centipawns)
    l2: float = 0.0  # pull toward the start weights
    max_step: float = 10.0  # per-coordinate step clip (centipawns)
    # feature groups that learn directly (learn/optim.py)
    groups: tuple = ("material", "kp", "pp", "ks", "ef", "em", "pe", "kz", "kpos")
    factor_lr: float = 0.0  # > 0: AdaGrad step of the shared piece-square factor of the KP table
    rel_factor_lr: float = 0.0  # > 0: AdaGrad step of the king-relative factor of the KP table
    group_scale: dict = field(default_factory=dict)  # group -> multiplier of lr and max_step (learn/optim.py)
    group_h0: dict = field(default_factory=dict)  # group -> AdaGrad accumulator at a coordinate's first step
    selfplay: sp.SelfPlayConfig = field(default_factory=sp.SelfPlayConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)


def load_config(path) -> RunConfig:
    """RunConfig from a TOML file with tables [run], [learn], [selfplay], [eval]; ValueError on mistakes."""
    with open(path, "rb") as f:
        data = tomllib.load(f)
    unknown = set(data) - {"run", "learn", "selfplay", "eval"}
    if unknown:
        raise ValueError(f"{path}: unknown table(s) {', '.join(sorted(unknown))}")
    flat = dict(data.get("run", {}))
    flat.update(data.get("learn", {}))
    if "dir" not in flat:
        raise ValueError(f"{path}: [run] needs dir")
    known = set(RunConfig.__dataclass_fields__) - {"selfplay", "eval"}
    bad = set(flat) - known
    if bad:
        raise ValueError(f"{path}: unknown setting(s) {', '.join(sorted(bad))}")
    ev = data.get("eval", {})
    bad = set(ev) - set(EvalConfig.__dataclass_fields__)
    if bad:
        raise ValueError(f"{path}: unknown [eval] setting(s) {', '.join(sorted(bad))}")
    cfg = RunConfig(selfplay=sp.SelfPlayConfig.from_dict(data.get("selfplay", {})), eval=EvalConfig(**ev), **flat)
    cfg.groups = tuple(cfg.groups)
    for name, table, ok, what in (
        ("group_scale", cfg.group_scale, lambda v: v > 0, "positive number"),
        ("group_h0", cfg.group_h0, lambda v: v >= 0, "number >= 0"),
    ):
        if not isinstance(table, dict) or not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) and ok(v) for v in table.values()
        ):
            raise ValueError(f"{path}: {name} must be a table of group = {what}, got {table!r}")
    if min(cfg.games, cfg.batch_games, cfg.workers) < 1:
        raise ValueError(f"{path}: games, batch_games and workers must be >= 1")
    return cfg


# --- files --------------------------------------------------------------------------------------


def _unsaved_batch_row(line: str, version: int) -> bool:
    """A metrics line that is a batch row of a version after `version`."""
    try:
        row = json.loads(line)
    except ValueError:
        return False
    return isinstance(row, dict) and row.get("kind") == "batch" and row.get("version", 0) > version


def atomic_write(path: Path, data: bytes) -> None:
    """Write via a temporary file, fsync, rename: readers see the old or the new file, never a part."""
    tmp = path.with_name(path.name + f".tmp{os.getpid()}")
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def atomic_save(path: Path, writer) -> None:
    """writer(file object) then an atomic rename (for np.save / savez)."""
    tmp = path.with_name(path.name + f".tmp{os.getpid()}")
    with open(tmp, "wb") as f:
        writer(f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def game_seed(run_seed: int, index: int) -> int:
    """Seed of self-play game `index`: a fixed function of the run seed, so a replayed game is the same."""
    return int(np.random.SeedSequence([run_seed, index]).generate_state(1, np.uint64)[0] >> np.uint64(1))


def weights_path(run_dir: Path, version: int) -> Path:
    return run_dir / "weights" / f"v{version:06d}.npz"


def pending_path(run_dir: Path, index: int) -> Path:
    return run_dir / "pending" / f"g{index:08d}.npz"


# --- worker side ------------------------------------------------------------------------------------

_WORKER: dict = {}


def play_game(task: dict, weights) -> dict:
    """Play one self-play game and return everything the driver stores: the outcome `meta`, the game's sparse
    gradient sum_t A_t e(t) (`idx`, `val`) and its records (`csa`, `kif` bytes). Touches no file: the same
    function serves local worker processes and Ray tasks. The SelfPlayer stays cached in the process between
    tasks of one version (`task["version"]` with `task["run"]`, the run's identity)."""
    from eval.shogi_features import N_WEIGHTS

    key = (task["run"], task["version"])
    if _WORKER.get("key") != key:
        w = np.array(weights, dtype=np.float64)  # a private, writable copy (object-store arrays are read-only)
        cfg = sp.SelfPlayConfig.from_dict(task["selfplay"])
        if "player" in _WORKER and _WORKER["player"].cfg == cfg:
            _WORKER["player"].set_weights(w)
        else:
            _WORKER["player"] = sp.SelfPlayer(w, cfg, seed=task["seed"])
            _WORKER["grads"] = {s: sp.AdvantageSum(N_WEIGHTS, cfg.lam) for s in "bw"}
        _WORKER["key"] = key
    player, grads = _WORKER["player"], _WORKER["grads"]
    for g in grads.values():
        g.clear()
    out = player.play(task["seed"], grads)
    total = sum(g.total(out.reward(s)) for s, g in grads.items())  # sum_t A_t e(t)
    idx = np.flatnonzero(total)
    meta = out.as_dict()
    meta.update(index=task["index"], version=task["version"], pid=os.getpid())
    csa, kif = sp.record_bytes(out)
    return {"meta": meta, "idx": idx.astype(np.int64), "val": total[idx].astype(GRADIENT_DTYPE), "csa": csa, "kif": kif}


def play_local(task: dict, weights_file: str) -> dict:
    """Local worker process: the weights come from the run folder on this machine (read once per version)."""
    from eval.weightfile import load_weights

    if _WORKER.get("key") != (task["run"], task["version"]):
        return play_game(task, load_weights(weights_file))
    return play_game(task, None)


def store_game(run_dir: Path, result: dict) -> dict:
    """Driver side: the game's records and its pending file (atomic), from a worker's result; returns the meta."""
    meta = result["meta"]
    name = f"g{meta['index']:08d}"
    records = run_dir / "records"
    records.mkdir(parents=True, exist_ok=True)
    (records / f"{name}.csa").write_bytes(result["csa"])
    (records / f"{name}.kif").write_bytes(result["kif"])
    atomic_save(
        pending_path(run_dir, meta["index"]),
        lambda f: np.savez(f, idx=result["idx"], val=result["val"], meta=np.array(json.dumps(meta))),
    )
    return meta


def read_pending(path: Path):
    with np.load(path, allow_pickle=False) as z:
        return z["idx"], z["val"].astype(np.float64), json.loads(str(z["meta"][()]))


# --- backends -------------------------------------------------------------------------------------


def exit_with_parent(parent_pid: int, poll_s: float = 0.5) -> None:
    """Worker initializer: end this process when the run process is gone (kill -9 of the run alone would
    otherwise leave idle workers behind)."""
    import threading

    def watch():
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

    def set_weights(self, version: int, w, path: Path) -> None:
        self.weights_file = str(path)

    def submit(self, task):
        return self.pool.submit(play_local, task, self.weights_file)

    @staticmethod
    def wait_any(futures):
        done, _ = wait(futures, return_when=FIRST_COMPLETED, timeout=1.0)
        return [(f, f.result()) for f in done]

    def close(self):
        """Stop now: queued games are cancelled and running ones killed, so that a run stopped by ^C or by an
        error mid-batch exits at once instead of waiting for its workers' games (the driver has no other
        multiprocessing children)."""
        self.pool.shutdown(wait=False, cancel_futures=True)
        for worker in active_children():
            worker.terminate()


class RayBackend:
    """The same games as Ray tasks on an existing cluster (`pip install '.[ray]'`; every node runs the same
    project code). Workers need nothing but the cluster: each version's weights go once into Ray's object
    store, a task returns its game (gradient, outcome, records) as its result, and only the driver writes
    the run folder."""

    def __init__(self, address: str, workers: int):
        try:
            import ray
        except ImportError:
            raise RuntimeError("--ray-address needs Ray: pip install '.[ray]' (or pip install ray)") from None
        self.ray = ray
        ray.init(address=address, ignore_reinit_error=True, log_to_driver=False)
        self.remote = ray.remote(num_cpus=1, max_retries=2)(play_game)
        self.weights_ref: object = None  # a ray.ObjectRef of the current version's weights

    def set_weights(self, version: int, w, path: Path) -> None:
        self.weights_ref = self.ray.put(np.asarray(w, dtype=np.float64))

    def submit(self, task):
        return self.remote.remote(task, self.weights_ref)

    def wait_any(self, futures):
        done, _ = self.ray.wait(list(futures), num_returns=1, timeout=1.0)
        return [(f, self.ray.get(f)) for f in done]

    def close(self):
        self.ray.shutdown()


# --- the run ---------------------------------------------------------------------------------------


class Run:
    def __init__(self, cfg: RunConfig, config_path, workers=None, ray_address=None, out=sys.stderr):
        self.cfg = cfg
        self.dir = Path(cfg.dir)
        self.config_path = Path(config_path)
        self.workers = workers or cfg.workers
        self.ray_address = ray_address
        self.out = out

    # state ---------------------------------------------------------------------------------------------
    def _init_state(self) -> dict:
        from eval.weightfile import load_weights, save_weights

        if self.dir.exists() and any(self.dir.iterdir()):
            raise ValueError(f"run folder {self.dir} is not empty; use --resume to continue it")
        self._make_subdirs()
        shutil.copyfile(self.config_path, self.dir / "config.toml")
        w = load_weights(self.cfg.start_weights)
        save_weights(weights_path(self.dir, 0), w, source="learn run start")
        state = {
            "run_id": os.urandom(8).hex(),
            "version": 0,
            "games_done": 0,
            "best": 0,
            "seed": self.cfg.seed,
            "seconds": 0.0,
            "cpu_seconds": 0.0,
            "positions": 0,
            "wins_b": 0,
            "wins_w": 0,
            "draws": 0,
            "opt": None,
        }
        self._write_state(state)
        return state

    def _make_subdirs(self) -> None:
        """The run's sub-folders; a resume makes those a copy of the run left out (only what a commit keeps:
        config, state, metrics, weights and optimiser state)."""
        for sub in RUN_SUBDIRS:
            (self.dir / sub).mkdir(parents=True, exist_ok=True)

    def _write_state(self, state: dict) -> None:
        atomic_write(self.dir / STATE, json.dumps(state, indent=1).encode())

    def load_state(self) -> dict:
        path = self.dir / STATE
        if not path.is_file():
            raise ValueError(f"{path}: no run to resume")
        state = json.loads(path.read_text())
        state.setdefault("run_id", str(self.dir.resolve()))  # runs started before run ids existed
        state.setdefault("cpu_seconds", 0.0)  # runs started before the CPU counter count from this resume
        return state

    def _optimizer(self, state):
        from eval.weightfile import load_weights

        from .optim import ShogiUpdate, load_state

        w = load_weights(weights_path(self.dir, state["version"]))
        w0 = load_weights(weights_path(self.dir, 0))
        saved = load_state(self.dir / "opt" / state["opt"]) if state["opt"] else {}
        return ShogiUpdate(
            w,
            w0,
            self.cfg.lr,
            self.cfg.l2,
            self.cfg.max_step,
            self.cfg.groups,
            self.cfg.factor_lr,
            saved,
            self.cfg.rel_factor_lr,
            self.cfg.group_scale,
            self.cfg.group_h0,
        )

    def _checkpoint(self, state, opt) -> None:
        """Weights and optimiser state under the new version's names, then state.json (atomic) last."""
        from eval.weightfile import save_weights

        from .optim import save_state

        v = state["version"]
        tmp = weights_path(self.dir, v).with_suffix(".tmp")
        save_weights(tmp, opt.w, source="learn run", checkpoint=v, games=state["games_done"])
        os.replace(tmp, weights_path(self.dir, v))
        name = f"o{v:06d}.npz"
        atomic_save(self.dir / "opt" / name, lambda f: save_state(f, opt.state()))
        old = state["opt"]
        state["opt"] = name
        self._write_state(state)
        if old and old != name:
            (self.dir / "opt" / old).unlink(missing_ok=True)

    # loop ---------------------------------------------------------------------------------------------
    def run(self, resume: bool) -> dict:
        from tqdm import tqdm

        backend = RayBackend(self.ray_address, self.workers) if self.ray_address else LocalBackend(self.workers)
        try:
            state = self.load_state() if resume else self._init_state()
            if resume:
                self._drop_unsaved_metrics(state["version"])
                self._drop_leftovers(state)
                self._make_subdirs()
            opt = self._optimizer(state)
        except BaseException:
            backend.close()
            raise
        cfg = self.cfg
        bar = tqdm(total=cfg.games, initial=state["games_done"], unit="game", file=self.out, dynamic_ncols=True)
        try:
            while state["games_done"] < cfg.games:
                started, cpu_started = time.perf_counter(), time.process_time()
                first = state["games_done"]
                batch = range(first, min(first + cfg.batch_games, cfg.games))
                metas = self._play_batch(state, opt, batch, backend, bar)
                stats = self._update(state, opt, batch, metas)
                state["games_done"] = batch.stop
                state["version"] += 1
                state["seconds"] += time.perf_counter() - started
                # the budget that waiting does not inflate: the games' CPU (workers) plus the driver's own
                state["cpu_seconds"] += stats["games_cpu_seconds"] + time.process_time() - cpu_started
                stats.update(
                    kind="batch",
                    version=state["version"],
                    games_done=state["games_done"],
                    seconds=round(state["seconds"], 3),
                    cpu_seconds=round(state["cpu_seconds"], 3),
                    time=time.time(),
                )
                self._metric(stats)  # before the checkpoint: a resume drops rows of versions it never saved
                self._checkpoint(state, opt)
                for i in batch:
                    pending_path(self.dir, i).unlink(missing_ok=True)
                bar.set_postfix(
                    loss=f"{stats['loss']:+.3f}",
                    b=state["wins_b"],
                    w=state["wins_w"],
                    d=state["draws"],
                    pos_s=f"{stats['positions_per_s']:.0f}",
                )
                every = cfg.eval.every_games
                if every and (batch.stop // every > first // every or batch.stop == cfg.games):
                    self._evaluate(state)
        finally:
            bar.close()
            backend.close()
        return state

    def _play_batch(self, state, opt, batch, backend, bar) -> dict:
        """Outcome metas of every game in `batch`: pending files of this version are reused, the rest
        played (in parallel) with the current weights."""
        metas = {}
        for i in batch:
            p = pending_path(self.dir, i)
            if p.is_file():
                meta = read_pending(p)[2]
                if meta["version"] == state["version"]:
                    metas[i] = meta
                    continue
                p.unlink()
        futures = {}
        if len(metas) < len(batch):
            backend.set_weights(state["version"], opt.w, weights_path(self.dir, state["version"]))
        for i in batch:
            if i not in metas:
                task = {
                    "run": state["run_id"],
                    "version": state["version"],
                    "index": i,
                    "seed": game_seed(state["seed"], i),
                    "selfplay": self.cfg.selfplay.__dict__.copy(),
                }
                futures[backend.submit(task)] = i
        t0 = time.perf_counter()
        while futures:
            for f, result in backend.wait_any(futures):
                meta = store_game(self.dir, result)
                metas[futures.pop(f)] = meta
                bar.update(1)
                bar.set_postfix(games_s=f"{len(metas) / max(1e-9, time.perf_counter() - t0):.3f}", last=meta["reason"])
        return metas

    def _update(self, state, opt, batch, metas) -> dict:
        """Delta w = mean over the batch of each game's sum_side r * sum_t e(t) (eq. 14), AdaGrad step."""
        parts = [read_pending(pending_path(self.dir, i))[:2] for i in batch]
        idx = np.concatenate([p[0] for p in parts]) if parts else np.zeros(0, np.int64)
        val = np.concatenate([p[1] for p in parts]) if parts else np.zeros(0)
        uniq, inv = np.unique(idx, return_inverse=True)
        g = np.zeros(uniq.shape[0])
        np.add.at(g, inv, val)
        g /= len(batch)
        agreement = split_half_agreement(parts, uniq, inv)
        signal = pooled_signal_games(parts)
        steps = opt.step(uniq, g)
        ms = [metas[i] for i in batch]
        for m in ms:
            key = "draws" if m["winner"] is None else f"wins_{m['winner']}"
            state[key] += 1
            state["positions"] += m["nodes"]
        secs = sum(m["seconds"] for m in ms)
        return {
            "games": len(ms),
            "games_cpu_seconds": sum(m.get("cpu_seconds", 0.0) for m in ms),  # games stored before it: 0
            "loss": float(np.mean([m["loss"] for m in ms])),
            "grad_norm": float(np.linalg.norm(g)),
            "half_agreement": agreement,
            **signal,
            **steps,
            "touched": int(uniq.size),
            "plies": float(np.mean([len(m["moves"]) for m in ms])),
            "positions_per_s": sum(m["nodes"] for m in ms) / max(secs, 1e-9),
            "game_seconds": secs / len(ms),
            "reasons": dict(Counter(m["reason"] for m in ms)),
            "leaf_mismatch": max(m["leaf_mismatch"] for m in ms),
            "material": opt.w[:24].round(1).tolist(),
        }

    def _drop_leftovers(self, state: dict) -> None:
        """Remove what a run killed right after a checkpoint left behind: pending files of games the checkpoint
        already applied (index < games_done) and optimiser states other than the current one."""
        for p in (self.dir / "pending").glob("g*.npz"):
            if p.stem[1:].isdigit() and int(p.stem[1:]) < state["games_done"]:
                p.unlink()
        for p in (self.dir / "opt").glob("o*.npz"):
            if p.name != state["opt"]:
                p.unlink()

    def _drop_unsaved_metrics(self, version: int) -> None:
        """Remove batch rows of versions after `version` (written by a run killed before their checkpoint)."""
        path = self.dir / "metrics.jsonl"
        if not path.exists():
            return
        lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
        kept = [x for x in lines if not _unsaved_batch_row(x, version)]
        if len(kept) != len(lines):
            atomic_write(path, "".join(kept).encode())

    def _metric(self, record: dict) -> None:
        with open(self.dir / "metrics.jsonl", "a", encoding="utf-8") as f:
            f.write(json.dumps(record) + "\n")
            f.flush()
            os.fsync(f.fileno())

    # evaluation ---------------------------------------------------------------------------------------
    def _evaluate(self, state) -> None:
        """Checkpoint vs start and vs previous best at fixed nodes; the better-than-best becomes best."""
        v = state["version"]
        for label, other in (("start", 0), ("best", state["best"])):
            if label == "best" and other in (0, v):
                continue
            summary = self.evaluate(v, other, label, state["games_done"])
            if summary["interrupted"]:
                return
            if label == ("best" if state["best"] else "start") and (summary["score"] or 0) > 0.5:
                state["best"] = v
                self._write_state(state)

    def evaluate(
        self,
        version: int,
        other: int,
        label: str,
        games_done: int,
        games: int | None = None,
        openings: list | None = None,
        openings_name: str = "run",
        resume: bool = False,
        nodes: int | None = None,
        opponent_weights: Path | None = None,
    ) -> dict:
        """Match checkpoint `version` against checkpoint `other` (or the weight file `opponent_weights`, then
        `other` is -1) at fixed nodes per move (`nodes`, default eval.nodes; `games` default eval.games;
        `openings` default the run's eval openings, named `openings_name` in the row; records in
        eval/vVERSION-vs-LABEL-GAMESg[-NAME][-NODESn], the last part when `nodes` is not eval.nodes), Elo +- 95 %
        appended to the metrics as an "eval" row with its nodes; returns the match summary. resume: keep the
        games that folder's summary.json already holds (the same engines and settings) and play only the
        missing ones. A match interrupted before all its games (Ctrl-C) writes no row: its summary.json keeps
        the finished games for a later resume, and the summary returned has "interrupted" true."""
        games = games or self.cfg.eval.games
        nodes = nodes or self.cfg.eval.nodes
        tag = f"-{games}g" + ("" if openings_name == "run" else f"-{openings_name}")
        tag += "" if nodes == self.cfg.eval.nodes else f"-{nodes}n"
        opponent = (label, opponent_weights) if opponent_weights else (f"v{other}", weights_path(self.dir, other))
        summary = self._match(version, opponent, label, games, openings, tag, resume, nodes)
        summary["interrupted"] = summary["games"] < games
        if summary["interrupted"]:
            return summary
        elo = summary["elo_pentanomial"] or summary["elo_trinomial"]
        self._metric(
            {
                "kind": "eval",
                "vs": label,
                "version": version,
                "opponent": -1 if opponent_weights else other,
                "nodes": nodes,
                "games_done": games_done,
                "games": summary["games"],
                "wins": summary["wins"],
                "losses": summary["losses"],
                "draws": summary["draws"],
                "score": summary["score"],
                "elo": elo["elo"],
                "elo_lower": elo["lower"],
                "elo_upper": elo["upper"],
                "openings": openings_name,
                "time": time.time(),
            }
        )
        return summary

    def _match(
        self,
        version: int,
        opponent: tuple[str, Path],
        label: str,
        games: int,
        openings: list | None,
        tag: str,
        resume: bool,
        nodes: int,
    ) -> dict:
        from .match.clock import TimeControl
        from .match.match import EngineSpec, Match, MatchConfig
        from .match.shogi_game import ShogiRules

        ev = self.cfg.eval
        command = ev.engine or f"{sys.executable} -m usi_engine"

        def spec(name, path):
            return EngineSpec(
                name, command, {"EvalFile": str(Path(path).resolve()), "USI_Hash": str(ev.hash_mb), "Threads": "1"}
            )

        folder = self.dir / "eval" / f"v{version:06d}-vs-{label}{tag}"
        config = MatchConfig(
            game="shogi",
            engines=(spec(f"v{version}", weights_path(self.dir, version)), spec(*opponent)),
            tc=TimeControl.from_args(nodes=nodes),
            games=games,
            concurrency=ev.concurrency,
            openings=openings or eval_openings(self.cfg, max(1, games // 2)),
            shogi_rules=ShogiRules(max_moves=ev.max_moves),
            records_dir=str(folder),
            json_path=str(folder / "summary.json"),
            resume=resume,
        )
        with open(os.devnull, "w") as quiet:
            return Match(config, out=quiet).run()


def eval_openings(cfg: RunConfig, count: int, seed: int | None = None) -> list:
    """`count` distinct-ish opening lines drawn with the start weights (softmax at opening_temp), the same
    for every evaluation of a run (fixed seed: `seed`, default the run's), each played with both colours by
    the match runner."""
    from eval.weightfile import load_weights
    from usi_engine.shogi import Board, move_to_usi
    from usi_engine.shogi.layout import MAX_MOVES
    from usi_engine.shogi_search.game import make_params

    from .match.openings import Opening

    w = load_weights(cfg.start_weights)
    params = make_params(qsearch_depth=cfg.selfplay.qdepth)
    rng = np.random.default_rng([cfg.seed if seed is None else seed, 7])
    buf = (np.zeros(MAX_MOVES, np.int32), np.zeros(MAX_MOVES, np.float64), np.zeros(MAX_MOVES, np.int8))
    openings = []
    for _ in range(count):
        board = Board()
        moves = []
        for _ in range(cfg.eval.opening_plies):
            m = sp.opening_move(board.pos, w, params, rng, cfg.selfplay.opening_temp, *buf)
            if m is None:
                break
            board.push_code(m)
            moves.append(move_to_usi(m))
        openings.append(Opening(None, tuple(moves), " ".join(moves) or "startpos"))
    return openings


def split_half_agreement(parts, uniq, inv) -> float | None:
    """Cosine between the gradient sums of the batch's even and odd games: ~0 when the batch gradient is
    noise, rising toward 1 as the games agree on a direction (a signal-to-noise gauge for lr and batch size)."""
    if len(parts) < 2:
        return None
    halves = np.zeros((2, uniq.shape[0]))
    start = 0
    for k, (idx, val) in enumerate(parts):
        np.add.at(halves[k % 2], inv[start : start + idx.shape[0]], val)
        start += idx.shape[0]
    norm = np.linalg.norm(halves[0]) * np.linalg.norm(halves[1])
    return float(halves[0] @ halves[1] / norm) if norm > 0 else None


def pooled_signal_games(parts) -> dict:
    """Games a batch needs before its mean gradient stands above the per-game noise (N* = per-game variance /
    squared mean, unbiased estimates over the batch's games; None when the mean is not detectable), on
    low-dimensional projections: material, the piece-square pooling of the own-king KP table, the
    king-relative pooling of both tables (learn/optim.py factors), and each block of the king terms (king
    safety, effects, multiple effects, piece effects, king-zone occupancy, king placement).
    Small N* = a learnable direction."""
    from eval import shogi_features as F

    from .optim import pool_kp

    n = len(parts)
    if n < 2:
        return {}
    blocks = F.KING_BLOCKS
    out = {}
    for name in ("material", "p", "rel", *blocks):
        rows = []
        for idx, val in parts:
            if name == "material":
                keep = idx < F.OFF_KP
                rows.append(np.bincount(idx[keep], weights=val[keep], minlength=F.OFF_KP))
            elif name in blocks:
                lo, size = blocks[name]
                keep = (idx >= lo) & (idx < lo + size)
                rows.append(np.bincount(idx[keep] - lo, weights=val[keep], minlength=size))
            else:
                kp = (idx >= F.OFF_KP) & (idx < F.OFF_PP)
                rows.append(pool_kp(name, idx[kp] - F.OFF_KP, val[kp]))
        g = np.array(rows)
        total = g.sum(axis=0)
        square_sum = float((g * g).sum())
        mean_sq = (float(total @ total) - square_sum) / (n * (n - 1))
        variance = square_sum / n - mean_sq
        out[f"signal_games_{name}"] = round(variance / mean_sq, 2) if mean_sq > 0 else None
    return out


def add_run_parser(sub) -> None:
    p = sub.add_parser(
        "run",
        help="self-play PG-expectation learning run (checkpoints, resume, workers)",
        description="Self-play learning (docs/learning.md).",
    )
    p.add_argument("config", help="TOML run configuration (configs/learn.toml)")
    p.add_argument("--resume", action="store_true", help="continue the run in the configured folder")
    p.add_argument("--workers", type=int, default=None, help="local worker processes (default: config)")
    p.add_argument("--ray-address", default=None, help="run the self-play tasks on this Ray cluster")
    p.add_argument("--dir", default=None, help="override the run folder of the config")
    p.set_defaults(handler=run_command)


def run_command(a) -> int:
    try:
        cfg = load_config(a.config)
        if a.dir:
            cfg.dir = a.dir
        if a.workers is not None and a.workers < 1:
            raise ValueError("--workers must be >= 1")
        state = Run(cfg, a.config, a.workers, a.ray_address).run(a.resume)
    except (ValueError, OSError, RuntimeError) as e:
        print(f"run: error: {e}", file=sys.stderr)
        return 2
    print(json.dumps({k: state[k] for k in ("version", "games_done", "wins_b", "wins_w", "draws", "best")}))
    return 0


def add_evaluate_parser(sub) -> None:
    p = sub.add_parser(
        "evaluate",
        help="match a checkpoint of a run folder against another; Elo into its metrics",
        description="Play checkpoint VERSION of RUN against checkpoint --vs at the run's [eval] "
        "settings and append the result to RUN/metrics.jsonl (drawn by `plot`). "
        "Safe beside a running `run`: it reads checkpoints and only appends.",
    )
    p.add_argument("run", help="run folder (contains config.toml and weights/)")
    p.add_argument("--version", type=int, default=None, help="checkpoint to evaluate (default: the latest)")
    p.add_argument("--vs", type=int, default=0, help="opponent checkpoint (default 0 = the start weights)")
    p.add_argument(
        "--vs-weights",
        default=None,
        metavar="FILE",
        help="opponent: this weight file instead of a checkpoint (e.g. eval/weights/default.npz; the series is "
        "named by the file's stem)",
    )
    p.add_argument("--nodes", type=int, default=None, help="nodes per move (default: the run's eval.nodes)")
    p.add_argument("--games", type=int, default=None, help="games (default: the run's eval.games)")
    p.add_argument(
        "--openings", default=None, help="opening file (docs/match.md; default: the run's seeded eval openings)"
    )
    p.add_argument(
        "--openings-seed",
        type=int,
        default=None,
        help="draw the eval openings with this seed instead of the run's (an independent set)",
    )
    p.add_argument("--concurrency", type=int, default=None, help="games at once (default: eval.concurrency)")
    p.add_argument(
        "--resume",
        action="store_true",
        help="keep the games an interrupted evaluation of the same checkpoints, games and openings finished "
        "(its summary.json) and play the rest",
    )
    p.set_defaults(handler=evaluate_command)


def evaluate_command(a) -> int:
    from .match.match import MatchError, format_summary, load_openings

    try:
        if a.openings and a.openings_seed is not None:
            raise ValueError("--openings and --openings-seed exclude each other")
        if a.games is not None and a.games < 1:
            raise ValueError("--games must be >= 1")
        if a.nodes is not None and a.nodes < 1:
            raise ValueError("--nodes must be >= 1")
        if a.vs_weights and a.vs:
            raise ValueError("--vs and --vs-weights exclude each other")
        run_dir = Path(a.run)
        cfg = load_config(run_dir / "config.toml")
        cfg.dir = str(run_dir)
        if a.concurrency is not None:
            cfg.eval.concurrency = a.concurrency
        run = Run(cfg, run_dir / "config.toml")
        state = run.load_state()
        version = state["version"] if a.version is None else a.version
        for v in (version,) if a.vs_weights else (version, a.vs):
            if not weights_path(run_dir, v).is_file():
                raise ValueError(f"{weights_path(run_dir, v)}: no such checkpoint")
        opponent_weights = None
        if a.vs_weights:
            from eval.weightfile import read_weights

            opponent_weights = Path(a.vs_weights)
            read_weights(opponent_weights)  # a missing or corrupt file is named here, before any game
        if a.openings:
            openings = load_openings("shogi", a.openings, 9, None)
        elif a.openings_seed is not None:
            openings = eval_openings(cfg, max(1, (a.games or cfg.eval.games) // 2), a.openings_seed)
        else:
            openings = None
        label = opponent_weights.stem if opponent_weights else "start" if a.vs == 0 else f"v{a.vs}"
        name = Path(a.openings).stem if a.openings else f"seed{a.openings_seed}" if openings else "run"
        summary = run.evaluate(
            version,
            a.vs,
            label,
            checkpoint_games(run_dir, version),
            a.games,
            openings,
            name,
            a.resume,
            a.nodes,
            opponent_weights,
        )
    except (ValueError, OSError, RuntimeError, MatchError) as e:
        print(f"evaluate: error: {e}", file=sys.stderr)
        return 2
    print(format_summary(summary))
    if summary["interrupted"]:
        print(
            f"evaluate: interrupted after {summary['games']} games: no metrics row written; the same command "
            "with --resume plays the rest",
            file=sys.stderr,
        )
        return 1
    return 0


def checkpoint_games(run_dir, version: int) -> int:
    """Self-play games behind checkpoint `version` (from its weight file's metadata; 0 for the start)."""
    from eval.weightfile import read_weights

    return int(read_weights(weights_path(run_dir, version))[1].get("games", 0))

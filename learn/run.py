"""A self-play learning run: the loop that plays batches, updates the weights and checkpoints, and its evaluations.

Loop: the games of a batch are played with the weights of the current version (learn/backends.py: local
worker processes, or Ray tasks that get the weights from Ray's object store); each game comes back as a result
(gradient, outcome, records) and only this process writes the run folder (learn/runfiles.py); when all have
finished, Delta w = mean over the batch's games, applied by optim.ShogiUpdate; version + 1; checkpoint
(weights, optimiser state; the RNG state is the run seed plus the game counter, since game i's seed is a
function of both); pending files of the batch are removed. A kill -9 at any point loses at most the games in
flight: a finished game is written to pending/ as soon as its result arrives, and `--resume` replays only the
missing game indices with their original seeds. On a Ray cluster a game lost with its worker process or node
is played again by the backend within the batch. Each batch appends a metrics row with the batch's statistics
(learn/batchstats.py), its games per Ray node (`games_per_node`) and lost attempts played again (`lost_attempts`).
The move prior ([prior], learn/selfplay_prior.py): the tasks carry the version's prior when the searches widen by
it or it learns; when it learns, each game also returns its cross-entropy gradient, the batch takes one Adam step
of the prior beside the weights' update, and the checkpoint writes the prior (prior/) before state.json.
Evaluation every `eval.every_games`: matches with the match runner at fixed nodes, the checkpoint vs the
start weights and vs the previous best (promoted when it scores above 50 %); Elo +- 95 % into metrics.
`python -m learn evaluate RUN` (learn/run_cli.py) plays the same match for any pair of checkpoints afterwards
(own games and openings) and appends the same row.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

import numpy as np

from . import selfplay as sp
from .backends import Backend, LocalBackend, RayBackend
from .batchstats import pooled_signal_games, split_half_agreement
from .optim import ShogiUpdate, load_state, save_state
from .runconfig import RunConfig
from .runfiles import (
    PRIOR_SUBDIR,
    RUN_SUBDIRS,
    STATE,
    atomic_save,
    atomic_write,
    pending_path,
    prior_path,
    read_pending,
    read_pending_prior,
    store_game,
    unsaved_batch_row,
    weights_path,
)
from .selfplay_prior import PriorUpdate, start_model
from .selfplay_prior import load_state as load_prior_state
from .selfplay_prior import save_state as save_prior_state
from .worker import game_seed

if TYPE_CHECKING:
    from tqdm import tqdm

    from .match.clock import TimeControl


class Run:
    """One run folder: started from a configuration or resumed, played to `cfg.games` games."""

    def __init__(
        self,
        cfg: RunConfig,
        config_path: str | Path,
        workers: int | None = None,
        ray_address: str | None = None,
        out: TextIO = sys.stderr,
    ):
        self.cfg = cfg
        self.dir = Path(cfg.dir)
        self.config_path = Path(config_path)
        self.workers = workers or cfg.workers
        self.ray_address = ray_address
        self.out = out
        self._fixed_prior: np.ndarray | None = None  # the searches' prior when it does not learn (loaded once)

    # state ---------------------------------------------------------------------------------------------
    def _init_state(self) -> dict:
        """A new run: the empty folder's sub-folders, the config copy, checkpoint 0 and the first state."""
        from usi_engine.shogi_eval.evalfile import load_weights, save_weights

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
        if self.cfg.prior.learns:  # the prior's checkpoint 0; a run whose prior does not learn has no such key
            prior = PriorUpdate.start(start_model(self.cfg.prior), self.cfg.prior.lr, self.cfg.prior.l2)
            state["prior_state"] = self._save_prior(state, prior)
        self._write_state(state)
        return state

    def _make_subdirs(self) -> None:
        """The run's sub-folders (prior/ when its prior learns); a resume makes those a copy of the run left out
        (only what a commit keeps: config, state, metrics, weights, optimiser state and prior/)."""
        for sub in RUN_SUBDIRS + ((PRIOR_SUBDIR,) if self.cfg.prior.learns else ()):
            (self.dir / sub).mkdir(parents=True, exist_ok=True)

    def _write_state(self, state: dict) -> None:
        """state.json, replaced atomically."""
        atomic_write(self.dir / STATE, json.dumps(state, indent=1).encode())

    def load_state(self) -> dict:
        """The state of the run in the folder (ValueError when there is none)."""
        path = self.dir / STATE
        if not path.is_file():
            raise ValueError(f"{path}: no run to resume")
        state = json.loads(path.read_text())
        state.setdefault("run_id", str(self.dir.resolve()))  # runs started before run ids existed
        state.setdefault("cpu_seconds", 0.0)  # runs started before the CPU counter count from this resume
        return state

    def _optimizer(self, state: dict) -> ShogiUpdate:
        """The optimiser at the state's checkpoint (its weights and saved state), anchored at the start weights."""
        from usi_engine.shogi_eval.evalfile import load_weights

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

    def _prior(self, state: dict) -> PriorUpdate | None:
        """The learning prior at the state's checkpoint (its float64 model and Adam state), or None when the
        run's prior does not learn; ValueError when the config and the run folder disagree on that."""
        learns, saved = self.cfg.prior.learns, state.get("prior_state")
        if learns != (saved is not None):
            raise ValueError(
                f"{self.dir}: the run {'does not learn' if learns else 'learns'} its move prior but the config's "
                f"[prior] lr is {self.cfg.prior.lr}"
            )
        if saved is None:
            return None
        return PriorUpdate(load_prior_state(self.dir / PRIOR_SUBDIR / saved), self.cfg.prior.lr, self.cfg.prior.l2)

    def _task_prior(self, prior: PriorUpdate | None) -> dict:
        """What the batch's tasks carry of the move prior: the learning prior's model (learn_prior), the fixed
        [prior] start when only the searches widen by it, or nothing."""
        if prior is not None:
            return {"prior": prior.w.copy(), "learn_prior": True}
        if self.cfg.selfplay.widen_k0 > 0:
            if self._fixed_prior is None:
                self._fixed_prior = start_model(self.cfg.prior)
            return {"prior": self._fixed_prior}
        return {}

    def _save_prior(self, state: dict, prior: PriorUpdate) -> str:
        """The prior file (the engine's format, atomic) and the state file of checkpoint state["version"]; returns
        the state file's name."""
        from usi_engine.shogi_search.moveprior import save_model

        v = state["version"]
        path = prior_path(self.dir, v)
        tmp = path.with_suffix(".tmp")
        save_model(tmp, prior.w, source="learn run", checkpoint=v, games=state["games_done"])
        os.replace(tmp, path)
        name = f"s{v:06d}.npz"
        save_prior_state(self.dir / PRIOR_SUBDIR / name, prior.state())
        return name

    def _checkpoint(self, state: dict, opt: ShogiUpdate, prior: PriorUpdate | None = None) -> None:
        """Weights and optimiser state (and the learning prior's files) under the new version's names, then
        state.json (atomic) last."""
        from usi_engine.shogi_eval.evalfile import load_weights, save_weights

        v = state["version"]
        tmp = weights_path(self.dir, v).with_suffix(".tmp")
        save_weights(tmp, opt.w, source="learn run", checkpoint=v, games=state["games_done"])
        os.replace(tmp, weights_path(self.dir, v))
        # go on from the weights as stored (float32), as a resume and every game of the version do: a run killed
        # and resumed then ends bit for bit as the same run never stopped
        opt.w[:] = load_weights(weights_path(self.dir, v))
        name = f"o{v:06d}.npz"
        atomic_save(self.dir / "opt" / name, lambda f: save_state(f, opt.state()))
        old = state["opt"]
        state["opt"] = name
        old_prior = state.get("prior_state")
        if prior is not None:
            state["prior_state"] = self._save_prior(state, prior)
        self._write_state(state)
        if old and old != name:
            (self.dir / "opt" / old).unlink(missing_ok=True)
        if old_prior and old_prior != state.get("prior_state"):
            (self.dir / PRIOR_SUBDIR / old_prior).unlink(missing_ok=True)

    # loop ---------------------------------------------------------------------------------------------
    def run(self, resume: bool) -> dict:
        """Play the run to its last game (a new one, or the one in the folder when `resume`); returns the state."""
        from tqdm import tqdm

        backend = RayBackend(self.ray_address, self.workers) if self.ray_address else LocalBackend(self.workers)
        try:
            state = self.load_state() if resume else self._init_state()
            if resume:
                self._drop_unsaved_metrics(state["version"])
                self._drop_leftovers(state)
                self._make_subdirs()
            opt = self._optimizer(state)
            prior = self._prior(state)
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
                metas = self._play_batch(state, opt, batch, backend, bar, prior)
                stats = self._update(state, opt, batch, metas)
                if prior is not None:
                    stats.update(self._update_prior(prior, batch, metas))
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
                self._checkpoint(state, opt, prior)
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

    def _play_batch(
        self, state: dict, opt: ShogiUpdate, batch: range, backend: Backend, bar: tqdm, prior: PriorUpdate | None
    ) -> dict:
        """Outcome metas of every game in `batch`: pending files of this version are reused, the rest
        played (in parallel) with the current weights (and move prior)."""
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
            backend.set_weights(weights_path(self.dir, state["version"]))
        carried = self._task_prior(prior)
        for i in batch:
            if i not in metas:
                task = {
                    "run": state["run_id"],
                    "version": state["version"],
                    "index": i,
                    "seed": game_seed(state["seed"], i),
                    "selfplay": self.cfg.selfplay.__dict__.copy(),
                    **carried,
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

    def _update(self, state: dict, opt: ShogiUpdate, batch: range, metas: dict) -> dict:
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
        per_node = Counter(m["ray_node"] for m in ms if "ray_node" in m)  # Ray tasks name their node
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
            "lost_attempts": sum(m.get("lost", 0) for m in ms),  # Ray: attempts lost with a worker or node
            **({"games_per_node": dict(per_node)} if per_node else {}),
        }

    def _update_prior(self, prior: PriorUpdate, batch: range, metas: dict) -> dict:
        """One Adam step of the prior on the mean cross-entropy gradient over the batch's learned moves; the
        batch's mean loss H(q, P_E) and KL(q || P_E) = H(q, P_E) - H(q) at the model the games searched with."""
        parts = [read_pending_prior(pending_path(self.dir, i)) for i in batch]
        positions = sum(metas[i]["prior_positions"] for i in batch)
        loss = sum(metas[i]["prior_loss"] for i in batch) / max(1, positions)
        entropy = sum(metas[i]["prior_entropy"] for i in batch) / max(1, positions)
        stats = {"prior_positions": positions, "prior_loss": loss, "prior_kl": loss - entropy}
        return stats | prior.step(parts, positions)

    def _drop_leftovers(self, state: dict) -> None:
        """Remove what a run killed right after a checkpoint left behind: pending files of games the checkpoint
        already applied (index < games_done) and optimiser states (the prior's too) other than the current one."""
        for p in (self.dir / "pending").glob("g*.npz"):
            if p.stem[1:].isdigit() and int(p.stem[1:]) < state["games_done"]:
                p.unlink()
        for p in (self.dir / "opt").glob("o*.npz"):
            if p.name != state["opt"]:
                p.unlink()
        for p in (self.dir / PRIOR_SUBDIR).glob("s*.npz"):
            if p.name != state.get("prior_state"):
                p.unlink()

    def _drop_unsaved_metrics(self, version: int) -> None:
        """Remove batch rows of versions after `version` (written by a run killed before their checkpoint)."""
        path = self.dir / "metrics.jsonl"
        if not path.exists():
            return
        lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
        kept = [x for x in lines if not unsaved_batch_row(x, version)]
        if len(kept) != len(lines):
            atomic_write(path, "".join(kept).encode())

    def _metric(self, record: dict) -> None:
        """Append one row to metrics.jsonl (flushed to disk)."""
        with open(self.dir / "metrics.jsonl", "a", encoding="utf-8") as f:
            f.write(json.dumps(record) + "\n")
            f.flush()
            os.fsync(f.fileno())

    # evaluation ---------------------------------------------------------------------------------------
    def _evaluate(self, state: dict) -> None:
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
        byoyomi_ms: int = 0,
    ) -> dict:
        """Match checkpoint `version` against checkpoint `other` (or the weight file `opponent_weights`, then
        `other` is -1) at fixed nodes per move (`nodes`, default eval.nodes) or, when `byoyomi_ms` > 0, at that
        byoyomi per move (no main time; `games` default eval.games;
        `openings` default the run's eval openings, named `openings_name` in the row; records in
        eval/vVERSION-vs-LABEL-GAMESg[-NAME][-NODESn | -byoMSms], the last part when `nodes` is not eval.nodes or a
        byoyomi is played), Elo +- 95 % appended to the metrics as an "eval" row with its nodes or byoyomi_ms;
        returns the match summary. resume: keep the
        games that folder's summary.json already holds (the same engines and settings) and play only the
        missing ones. A match interrupted before all its games (Ctrl-C) writes no row: its summary.json keeps
        the finished games for a later resume, and the summary returned has "interrupted" true."""
        from .match.clock import TimeControl

        if byoyomi_ms and nodes:
            raise ValueError("nodes and byoyomi exclude each other")
        games = games or self.cfg.eval.games
        tag = f"-{games}g" + ("" if openings_name == "run" else f"-{openings_name}")
        if byoyomi_ms:
            tag += f"-byo{byoyomi_ms}ms"
            tc = TimeControl.from_args(byoyomi_ms=byoyomi_ms)
        else:
            nodes = nodes or self.cfg.eval.nodes
            tag += "" if nodes == self.cfg.eval.nodes else f"-{nodes}n"
            tc = TimeControl.from_args(nodes=nodes)
        opponent = (label, opponent_weights) if opponent_weights else (f"v{other}", weights_path(self.dir, other))
        summary = self._match(version, opponent, label, games, openings, tag, resume, tc)
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
                **({"byoyomi_ms": byoyomi_ms} if byoyomi_ms else {}),
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
        tc: TimeControl,
    ) -> dict:
        """Play one evaluation match of checkpoint `version` against `opponent` (name, weight file) at the run's
        [eval] settings and the time control `tc`; records and summary.json in eval/vVERSION-vs-LABEL`tag`;
        returns the summary."""
        from .match.engines import PYTHON
        from .match.match import EngineSpec, Match, MatchConfig
        from .match.shogi_game import ShogiRules

        ev = self.cfg.eval
        command = ev.engine or f"{PYTHON} -m usi_engine"

        def spec(name: str, path: Path) -> EngineSpec:
            return EngineSpec(
                name, command, {"EvalFile": portable_path(path), "USI_Hash": str(ev.hash_mb), "Threads": "1"}
            )

        folder = self.dir / "eval" / f"v{version:06d}-vs-{label}{tag}"
        config = MatchConfig(
            game="shogi",
            engines=(spec(f"v{version}", weights_path(self.dir, version)), spec(*opponent)),
            tc=tc,
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


def portable_path(path) -> str:
    """A weight file as an engine started in this folder reads it: relative when it lies below the folder (the
    summary committed with a run then names no machine path), else absolute."""
    full = Path(path).resolve()
    try:
        return str(full.relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(full)


def eval_openings(cfg: RunConfig, count: int, seed: int | None = None) -> list:
    """`count` distinct-ish opening lines drawn with the start weights (softmax at opening_temp), the same
    for every evaluation of a run (fixed seed: `seed`, default the run's), each played with both colours by
    the match runner."""
    from usi_engine.shogi import Board, move_to_usi
    from usi_engine.shogi.layout import MAX_MOVES
    from usi_engine.shogi_eval.evalfile import load_weights
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

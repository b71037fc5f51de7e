"""The files of a run folder: their names, and writes that a kill -9 never leaves half done.

A run lives in one folder (config `run.dir`):
  config.toml          the configuration the run started with
  state.json           counters and the current files (replaced atomically, written last)
  weights/vNNNNNN.npz  weights after each checkpoint (usi_engine/weightfile.py); v000000 = the start
  opt/oNNNNNN.npz      optimiser state of that checkpoint (AdaGrad accumulators, piece-square factor;
                       learn/optim.py; only the latest is kept; its nonzero entries only, compressed, exact)
  prior/vNNNNNN.npz    only when the run learns its move prior ([prior] lr > 0, learn/selfplay_prior.py): the
                       prior after each checkpoint, a file the engine loads (MovePriorFile); v000000 = the start
  prior/sNNNNNN.npz    ... and its float64 model with the Adam state (only the latest is kept)
  pending/gNNNNNNNN.npz  finished games of the current batch: the game's sparse gradient
                       sum_t A_t e(t) (eq. 14 with an advantage, learn/selfplay.py), its outcome and, when the
                       prior learns, the sparse gradient of its cross-entropy; written atomically by the run
                       process as each game's result arrives
  records/             CSA + KIF of every self-play game;  eval/  match JSON and records
  metrics.jsonl        one JSON object per batch ("kind": "batch") and per evaluation ("kind": "eval")
Only the run process writes the folder (learn/run.py); workers return their games as results
(learn/worker.py). What a commit keeps of a run is config, state, metrics, weights and optimiser state (and
prior/ when the prior learns).
"""

from __future__ import annotations

import json
import os
import zipfile
import zlib
from pathlib import Path
from typing import IO, Callable

import numpy as np

STATE = "state.json"
RUN_SUBDIRS = ("weights", "opt", "pending", "records", "eval")  # a run folder's sub-folders
PRIOR_SUBDIR = "prior"  # ... and this one when the run learns its move prior
PRIOR_ARRAYS = ("prior_idx", "prior_val")  # a game result's sparse gradient of the prior's cross-entropy


def atomic_write(path: Path, data: bytes) -> None:
    """Write via a temporary file, fsync, rename: readers see the old or the new file, never a part."""
    atomic_save(path, lambda f: f.write(data))


def atomic_save(path: Path, writer: Callable[[IO[bytes]], object]) -> None:
    """writer(file object) then an atomic rename (for np.save / savez)."""
    tmp = path.with_name(path.name + f".tmp{os.getpid()}")
    with open(tmp, "wb") as f:
        writer(f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def weights_path(run_dir: Path, version: int) -> Path:
    """The weight file of checkpoint `version` (v000000 = the start weights)."""
    return run_dir / "weights" / f"v{version:06d}.npz"


def prior_path(run_dir: Path, version: int) -> Path:
    """The move-prior file of checkpoint `version` (v000000 = the start) of a run that learns its prior."""
    return run_dir / PRIOR_SUBDIR / f"v{version:06d}.npz"


def pending_path(run_dir: Path, index: int) -> Path:
    """The pending file of self-play game `index` (its gradient and outcome until its batch is applied)."""
    return run_dir / "pending" / f"g{index:08d}.npz"


def checkpoint_games(run_dir: Path, version: int) -> int:
    """Self-play games behind checkpoint `version` (from its weight file's metadata; 0 for the start)."""
    from usi_engine.shogi_eval.evalfile import read_weights

    return int(read_weights(weights_path(run_dir, version))[1].get("games", 0))


def store_game(run_dir: Path, result: dict) -> dict:
    """Driver side: the game's records and its pending file (atomic; the prior's gradient too when the result
    has one), from a worker's result; returns the meta."""
    meta = result["meta"]
    name = f"g{meta['index']:08d}"
    records = run_dir / "records"
    records.mkdir(parents=True, exist_ok=True)
    (records / f"{name}.csa").write_bytes(result["csa"])
    (records / f"{name}.kif").write_bytes(result["kif"])
    atomic_save(
        pending_path(run_dir, meta["index"]),
        lambda f: np.savez(
            f,
            idx=result["idx"],
            val=result["val"],
            meta=np.array(json.dumps(meta)),
            **{k: result[k] for k in PRIOR_ARRAYS if k in result},
        ),
    )
    return meta


def read_pending(path: Path) -> tuple[np.ndarray, np.ndarray, dict]:
    """A pending file's gradient (feature indices, float64 values) and its game's meta."""
    with np.load(path, allow_pickle=False) as z:
        return z["idx"], z["val"].astype(np.float64), json.loads(str(z["meta"][()]))


def read_pending_prior(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """A pending file's sparse gradient of the prior's cross-entropy (indices, float64 values); ValueError when
    the game was played without the prior learning."""
    with np.load(path, allow_pickle=False) as z:
        if not set(PRIOR_ARRAYS) <= set(z.files):
            raise ValueError(f"{path}: a game without the move prior's gradient")
        return z["prior_idx"], z["prior_val"].astype(np.float64)


def unsaved_batch_row(line: str, version: int) -> bool:
    """A metrics line that is a batch row of a version after `version`."""
    try:
        row = json.loads(line)
    except ValueError:
        return False
    return isinstance(row, dict) and row.get("kind") == "batch" and row.get("version", 0) > version


def read_npz(path, error: Callable[[object, str], Exception]) -> dict:
    """Every array of the .npz archive at `path` (no pickles), or `error(path, problem)` raised for a missing or
    unreadable file."""
    try:
        with np.load(path, allow_pickle=False) as z:
            return {k: z[k] for k in z.files}
    except FileNotFoundError:
        raise error(path, "no such file") from None
    except (zipfile.BadZipFile, zlib.error, ValueError, OSError, EOFError, KeyError) as e:
        raise error(path, f"not a readable .npz archive ({type(e).__name__}: {e})") from None

"""The weight-file archive every weight file of the engine uses (the shogi evaluation's, the shogi and Go move
priors', the Go value's): checksummed float32 blocks and JSON metadata in one .npz, written by write_archive and
read back, validated, by read_archive. numpy and the standard library only: the format knows no game, and loading a
Go file loads nothing of shogi.

An archive holds one float32 array per named weight block and a JSON metadata string:

- one ``float32`` array per block, in the order the writer gave them (the owner of the format names and shapes
  them: e.g. usi_engine/shogi_eval/evalfile.py for the shogi evaluation's nine blocks);
- ``meta``: a 0-d unicode array with JSON ``{"feature_set", "version", "value_scale", "dtype", "shapes", "sha256",
  ...}``. ``value_scale`` is the number of value units per stored unit (the loaded blocks are ``stored *
  value_scale``); ``sha256`` is the hex digest of the little-endian float32 bytes of the blocks in order. Extra
  keys (e.g. ``source``) are kept as notes.

Archives are written with ``np.savez_compressed``: a mostly-zero file (the material-only shogi weights)
compresses to a few kB. Every problem on load raises WeightFileError naming the file and the cause: missing,
unreadable or truncated, metadata absent or not JSON, another feature set, a version the reader does not know, a
bad value_scale, a missing block, a wrong shape or dtype, a checksum mismatch, NaN or infinity.
"""

import hashlib
import json
import os
import zipfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

STORE_DTYPE = np.dtype("<f4")
PathLike = str | os.PathLike[str]


class WeightFileError(ValueError):
    """A weight file is missing, unreadable, or does not match the feature set."""

    def __init__(self, path: PathLike, problem: str) -> None:
        super().__init__(f"weight file {path}: {problem}")
        self.path = str(path)
        self.problem = problem


def checksum(blocks: Mapping[str, np.ndarray], names: Iterable[str]) -> str:
    """sha256 hex digest of the little-endian float32 bytes of blocks[name] for name in names, in order."""
    h = hashlib.sha256()
    for name in names:
        h.update(np.ascontiguousarray(blocks[name], dtype=STORE_DTYPE).tobytes())
    return h.hexdigest()


def write_archive(
    path: PathLike,
    blocks: Mapping[str, np.ndarray],
    feature_set: str,
    version: int,
    value_scale: float,
    **notes: object,
) -> Path:
    """Write float blocks {name: array} (in order) as a checksummed .npz with this module's metadata (notes:
    extra JSON-serialisable keys); returns the path."""
    stored = {k: np.asarray(v).astype(STORE_DTYPE) for k, v in blocks.items()}
    meta: dict[str, object] = dict(notes)
    meta.update(
        {
            "feature_set": feature_set,
            "version": version,
            "value_scale": float(value_scale),
            "dtype": STORE_DTYPE.str,
            "shapes": {k: list(v.shape) for k, v in stored.items()},
            "sha256": checksum(stored, list(stored)),
        }
    )
    arrays: dict[str, Any] = {"meta": np.array(json.dumps(meta, sort_keys=True)), **stored}
    out = Path(path)
    with open(out, "wb") as f:  # a file object keeps numpy from appending ".npz"
        np.savez_compressed(f, **arrays)
    return out


def read_archive(
    path: PathLike, feature_set: str, version_shapes: Mapping[int, Mapping[str, Sequence[int]]]
) -> tuple[dict[str, np.ndarray], dict]:
    """(float64 blocks {name: array * value_scale}, metadata) of an archive written by write_archive, checked
    against the feature set and, for the file's version, the block shapes version_shapes[version] = {name:
    shape} (checksum order); every problem raises WeightFileError."""
    path = Path(path)
    if not path.is_file():
        raise WeightFileError(path, "no such file")
    try:
        with np.load(path, allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
    except (zipfile.BadZipFile, ValueError, OSError, EOFError, KeyError) as e:
        raise WeightFileError(path, f"not a readable .npz archive ({type(e).__name__}: {e})") from None
    if "meta" not in arrays:
        raise WeightFileError(path, "missing key 'meta'")
    try:
        meta = json.loads(str(arrays["meta"][()]))
    except (ValueError, TypeError) as e:
        raise WeightFileError(path, f"metadata is not valid JSON ({e})") from None
    if not isinstance(meta, dict):
        raise WeightFileError(path, "metadata is not a JSON object")
    for key in ("feature_set", "version", "value_scale", "sha256"):
        if key not in meta:
            raise WeightFileError(path, f"metadata lacks '{key}'")
    if meta["feature_set"] != feature_set:
        raise WeightFileError(path, f"feature set '{meta['feature_set']}', expected '{feature_set}'")
    shapes = version_shapes.get(meta["version"]) if isinstance(meta["version"], int) else None
    if shapes is None:
        raise WeightFileError(
            path,
            f"feature-set version {meta['version']!r}, expected one of {', '.join(map(str, sorted(version_shapes)))}",
        )
    scale = meta["value_scale"]
    if not isinstance(scale, (int, float)) or not np.isfinite(scale) or scale <= 0:
        raise WeightFileError(path, f"value_scale {scale!r} is not a positive number")
    for name, shape in shapes.items():
        if name not in arrays:
            raise WeightFileError(path, f"missing key '{name}'")
        a = arrays[name]
        if a.shape != tuple(shape):
            raise WeightFileError(path, f"'{name}' has shape {a.shape}, expected {tuple(shape)}")
        if a.dtype.kind != "f":
            raise WeightFileError(path, f"'{name}' has dtype {a.dtype}, expected a float type")
    digest = checksum(arrays, list(shapes))
    if digest != meta["sha256"]:
        raise WeightFileError(path, f"checksum mismatch (stored {meta['sha256']}, computed {digest})")
    out = {name: arrays[name].astype(np.float64) * float(scale) for name in shapes}
    if not all(np.all(np.isfinite(a)) for a in out.values()):
        raise WeightFileError(path, "weights contain NaN or infinity")
    return out, meta

"""Evaluation weight files (.npz) with validated metadata: the shogi weights, and the generic archive format
(write_archive / read_archive) that every game's weight files use.

An archive holds one float32 array per weight block and a JSON metadata string:

- ``material`` float32[24], ``kp`` float32[2, 81, 1534], ``pp`` float32[1175811], ``ks`` float32[2, 9, 3, 3],
  ``ef`` float32[2, 9], ``em`` float32[2, 9, 2], ``pe`` float32[2, 13, 3, 3], ``kz`` float32[2, 9, 3, 3],
  ``kpos`` float32[2, 81] (the blocks of eval.shogi_features in order; their concatenation is
  the weight vector);
- ``meta``: a 0-d unicode array with JSON ``{"feature_set", "version", "value_scale", "dtype",
  "shapes", "sha256", ...}``. ``value_scale`` is the number of centipawns per stored unit (the
  loaded vector is ``stored * value_scale``); ``sha256`` is the hex digest of the little-endian
  float32 bytes of the blocks in the order above. Extra keys (e.g. ``source``) are kept as notes.

Archives are written with ``np.savez_compressed``: the material-only default is mostly zeros and
compresses to a few kB. Every problem on load raises WeightFileError naming the file and the cause.

Versions: 5 (current) has the nine blocks; a version-4 file (no ``kz`` and ``kpos``, checksum over the first
seven), a version-3 file (no ``em`` and ``pe``, checksum over the first
five), a version-2 file (no ``ef`` either) or a version-1 file (no ``ks`` either) is the same evaluation with
the missing blocks zero and loads as such. Any other version is refused.
"""

import hashlib
import json
import zipfile
from pathlib import Path

import numpy as np

from eval import shogi_features as F

BLOCKS = ("material", "kp", "pp", "ks", "ef", "em", "pe", "kz", "kpos")
# the blocks each readable version stores
VERSION_BLOCKS = {1: BLOCKS[:3], 2: BLOCKS[:4], 3: BLOCKS[:5], 4: BLOCKS[:7], F.FEATURE_VERSION: BLOCKS}
SHAPES = {
    "material": (F.N_MATERIAL,),
    "kp": (2, F.N_SQ, F.FE_END),
    "pp": (F.N_PP,),
    "ks": (2, F.KS_ZONE, F.KS_CAP, F.KS_CAP),
    "ef": (2, F.EF_DIST),
    "em": (2, F.EF_DIST, F.EM_RANK),
    "pe": (2, F.PE_TYPES, F.PE_CAP, F.PE_CAP),
    "kz": (2, F.KS_ZONE, F.KZ_OCC, F.KS_CAP),
    "kpos": (2, F.N_SQ),
}
STORE_DTYPE = np.dtype("<f4")
WEIGHTS_DIR = Path(__file__).resolve().parent / "weights"
DEFAULT_PATH = WEIGHTS_DIR / "default.npz"  # the engine's evaluation: learned + hand-made king safety
LEARNED_PATH = WEIGHTS_DIR / "learned.npz"  # learned from material by self-play (docs/learning.md)
MATERIAL_PATH = WEIGHTS_DIR / "material.npz"  # material only: the start of learning runs


class WeightFileError(ValueError):
    """A weight file is missing, unreadable, or does not match the feature set."""

    def __init__(self, path, problem):
        super().__init__(f"weight file {path}: {problem}")
        self.path = str(path)
        self.problem = problem


def _split(w):
    """Views of the blocks of a flat weight vector, shaped as stored."""
    out = {}
    lo = 0
    for name in BLOCKS:
        size = int(np.prod(SHAPES[name]))
        out[name] = w[lo : lo + size].reshape(SHAPES[name])
        lo += size
    return out


def _checksum(blocks, names):
    """sha256 hex digest of the little-endian float32 bytes of blocks[name] for name in names, in order."""
    h = hashlib.sha256()
    for name in names:
        h.update(np.ascontiguousarray(blocks[name], dtype=STORE_DTYPE).tobytes())
    return h.hexdigest()


def write_archive(path, blocks, feature_set, version, value_scale, **notes):
    """Write float blocks {name: array} (in order) as a checksummed .npz with the metadata of this module's
    format; the generic half of save_weights, for every game's weight files."""
    blocks = {k: np.asarray(v).astype(STORE_DTYPE) for k, v in blocks.items()}
    meta = dict(notes)
    meta.update(
        {
            "feature_set": feature_set,
            "version": version,
            "value_scale": float(value_scale),
            "dtype": STORE_DTYPE.str,
            "shapes": {k: list(v.shape) for k, v in blocks.items()},
            "sha256": _checksum(blocks, list(blocks)),
        }
    )
    path = Path(path)
    with open(path, "wb") as f:  # a file object keeps numpy from appending ".npz"
        np.savez_compressed(f, meta=np.array(json.dumps(meta, sort_keys=True)), **blocks)
    return path


def read_archive(path, feature_set, version_shapes):
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
    digest = _checksum(arrays, list(shapes))
    if digest != meta["sha256"]:
        raise WeightFileError(path, f"checksum mismatch (stored {meta['sha256']}, computed {digest})")
    out = {name: arrays[name].astype(np.float64) * float(scale) for name in shapes}
    if not all(np.all(np.isfinite(a)) for a in out.values()):
        raise WeightFileError(path, "weights contain NaN or infinity")
    return out, meta


def save_weights(path, w, value_scale=1.0, **notes):
    """Write the flat float weight vector w (centipawn units) to path as a validated .npz.

    Stored values are ``w / value_scale`` in float32. notes (JSON-serialisable) go into the
    metadata, e.g. ``source="make_material_weights"``.
    """
    w = np.asarray(w, dtype=np.float64)
    if w.shape != (F.N_WEIGHTS,):
        raise ValueError(f"weight vector has shape {w.shape}, expected ({F.N_WEIGHTS},)")
    if not value_scale > 0:
        raise ValueError(f"value_scale must be > 0, got {value_scale}")
    return write_archive(path, _split(w / value_scale), F.FEATURE_SET, F.FEATURE_VERSION, value_scale, **notes)


def read_weights(path):
    """(flat float64 weight vector in centipawns, metadata dict) of a weight file; validates all. A block the
    file's version lacks is zero."""
    blocks, meta = read_archive(
        path, F.FEATURE_SET, {v: {k: SHAPES[k] for k in names} for v, names in VERSION_BLOCKS.items()}
    )
    return np.concatenate(
        [blocks[k].ravel() if k in blocks else np.zeros(int(np.prod(SHAPES[k]))) for k in BLOCKS]
    ), meta


def weights_location(spec=None) -> Path:
    """The file a weights argument names: None or "" = the shipped default; a bare name of a shipped
    file ("default", "material") = that file in eval/weights/; anything else = a path."""
    if not spec:
        return DEFAULT_PATH
    spec = str(spec)
    shipped = WEIGHTS_DIR / f"{spec}.npz"
    if "/" not in spec and "\\" not in spec and not spec.endswith(".npz") and shipped.is_file():
        return shipped
    return Path(spec)


def load_weights(path=None):
    """Float64 weight vector (centipawn units) for the evaluation kernels (path as weights_location)."""
    w, _ = read_weights(weights_location(path))
    return w

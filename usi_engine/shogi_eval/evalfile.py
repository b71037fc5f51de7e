"""The shogi evaluation's weight files (.npz): the nine blocks of features.py in the archive of
usi_engine/weightfile.py, the shipped files in weights/, and the names that select them (USI EvalFile, learning's
start_weights).

A file holds the blocks ``material`` float32[24], ``kp`` float32[2, 81, 1534], ``pp`` float32[1175811], ``ks``
float32[2, 9, 3, 3], ``ef`` float32[2, 9], ``em`` float32[2, 9, 2], ``pe`` float32[2, 13, 3, 3], ``kz``
float32[2, 9, 3, 3] and ``kpos`` float32[2, 81] (the blocks of features.py in order; their concatenation is the
weight vector), with feature set ``shogi-material-kp-pp``; ``value_scale`` is the number of centipawns per stored
unit, and the checksum covers the blocks in the order above.

Versions: 5 (current) has the nine blocks; a version-4 file (no ``kz`` and ``kpos``, checksum over the first
seven), a version-3 file (no ``em`` and ``pe``, checksum over the first five), a version-2 file (no ``ef``
either) or a version-1 file (no ``ks`` either) is the same evaluation with the missing blocks zero and loads as
such. Any other version is refused. Every problem on load raises WeightFileError (usi_engine/weightfile.py)
naming the file and the cause.
"""

from pathlib import Path

import numpy as np

from usi_engine.weightfile import read_archive, write_archive

from . import features as F

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
WEIGHTS_DIR = Path(__file__).resolve().parent / "weights"
DEFAULT_PATH = WEIGHTS_DIR / "default.npz"  # the engine's evaluation: handmade.npz fine-tuned by self-play
HANDMADE_PATH = WEIGHTS_DIR / "handmade.npz"  # learned KP + hand-made king and effect terms (eval/)
LEARNED_PATH = WEIGHTS_DIR / "learned.npz"  # learned from material by self-play (docs/learning.md)
MATERIAL_PATH = WEIGHTS_DIR / "material.npz"  # material only: the start of learning runs


def _split(w):
    """Views of the blocks of a flat weight vector, shaped as stored."""
    out = {}
    lo = 0
    for name in BLOCKS:
        size = int(np.prod(SHAPES[name]))
        out[name] = w[lo : lo + size].reshape(SHAPES[name])
        lo += size
    return out


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
    file ("default", "handmade", "learned", "material") = that file in usi_engine/shogi_eval/weights/; anything else = a
    path."""
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

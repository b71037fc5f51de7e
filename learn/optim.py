"""The weight update of a shogi learning run: which feature groups learn, and factors shared across the KP table.

Delta w = eps * sum_t A_t e(t) (eq. 14 with the advantage of learn/selfplay.py) is applied by AdaGrad
(pg.SparseAdaGrad) in parts:

- direct: each trainable coordinate of the evaluation (groups "material", "kp", "pp", "ks", "ef", "em", "pe",
  "kz", "kpos" of usi_engine/shogi_eval/features.py) takes its own AdaGrad step;
- factors: vectors u whose entries are added to many KP entries at once, KP(t, k, p) = direct + sum_f u_f[map_f],
  each with its own AdaGrad state and step size. A factor's gradient is the sum of the gradients of the KP
  entries it feeds, so a game's evidence is pooled instead of being spread over 81 king squares. This is the
  "factoriser" idea of KP/KPP learners (YaneuraOu's learner, NNUE trainers), applied to our linear table:
  - "p" (factor_lr): one value per piece object p (1,534), added to every row of the own-king table: a
    piece-square table;
  - "rel" (rel_factor_lr): one value per (king table, piece kind and side, file offset, rank offset from
    that king) for board pieces, 2 x 18 x 17 x 17 = 10,404 values: king safety and attack patterns, the
    structure a hand-made king-safety term with +139 Elo uses (docs/learning.md).
  Factors are folded into the weights after each step (the evaluation and weight file are unchanged); u and
  its AdaGrad state live in the optimiser state.

A group may take larger steps than the rest (`group_scale`, e.g. {"ks": 6}: its lr and max_step times 6): the
king blocks have a few hundred coordinates whose hand-made values are 50-100 cp, which steps sized for the
KP table's sparse, noisy entries cannot reach in a few hundred games (docs/learning.md). AdaGrad's first step of a
coordinate is +-lr whatever the gradient's size, so a block that joins with one batch of mostly noise moves all its
entries by +-lr at once; `group_h0` (e.g. {"pe": 1.0}) starts those coordinates' accumulators at h0 instead of 0,
so a first step is lr * g / sqrt(h0 + g^2): proportional to g while |g| is below sqrt(h0).

The L2 pull of a direct coordinate is toward its start value plus its factors, so regularisation does not
undo what the factors learned; each factor has its own pull toward 0.
"""

from __future__ import annotations

import json
from functools import lru_cache

import numpy as np

from usi_engine.shogi_eval.features import (
    FE_END,
    HAND_END,
    N_KP,
    N_SQ,
    N_WEIGHTS,
    OFF_EF,
    OFF_EM,
    OFF_KP,
    OFF_KPOS,
    OFF_KS,
    OFF_KZ,
    OFF_PE,
    OFF_PP,
)

from .pg import SparseAdaGrad
from .runfiles import read_npz

GROUPS = ("material", "kp", "pp", "ks", "ef", "em", "pe", "kz", "kpos")
N_OFFSETS = 17  # file / rank offsets -8 .. +8


def group_of(idx):
    """Group number (index into GROUPS) of each weight index."""
    starts = np.array([OFF_KP, OFF_PP, OFF_KS, OFF_EF, OFF_EM, OFF_PE, OFF_KZ, OFF_KPOS])
    return np.searchsorted(starts, idx, side="right")


def piece_square_map() -> np.ndarray:
    """KP entry -> piece object p for the own-king table (table 0), -1 for the other king's table."""
    m = np.full(N_KP, -1, np.int64)
    m[: N_SQ * FE_END] = np.tile(np.arange(FE_END), N_SQ)
    return m


def king_relative_map() -> np.ndarray:
    """KP entry -> (table, kind-side block, file offset, rank offset) for board pieces, -1 for hand objects.
    Squares are file * 9 + rank in the side to move's frame (usi_engine/shogi_eval/features.py)."""
    t, k, p = np.unravel_index(np.arange(N_KP), (2, N_SQ, FE_END))
    board = p >= HAND_END
    block, sq = np.divmod(p - HAND_END, N_SQ)
    dfile = sq // 9 - k // 9 + 8
    drank = sq % 9 - k % 9 + 8
    idx = ((t * 18 + block) * N_OFFSETS + dfile) * N_OFFSETS + drank
    return np.where(board, idx, -1)


FACTOR_SHAPES = {"p": (piece_square_map, FE_END), "rel": (king_relative_map, 2 * 18 * N_OFFSETS * N_OFFSETS)}


@lru_cache(maxsize=None)
def factor_map(name: str) -> tuple[np.ndarray, int]:
    """(KP entry -> factor index map, factor size) of factor `name` (built once per process)."""
    build, size = FACTOR_SHAPES[name]
    return build(), size


def pool_kp(name: str, kp_idx, g) -> np.ndarray:
    """Sum of g (given at KP offsets kp_idx) per entry of factor `name`: the factor's gradient."""
    m, size = factor_map(name)
    f = m[kp_idx]
    ok = f >= 0
    return np.bincount(f[ok], weights=g[ok], minlength=size)


class Factor:
    """One shared vector u over KP entries (map: KP entry -> index into u, -1 = not fed) with AdaGrad."""

    def __init__(self, name, lr, l2, max_step, u=None, h=None):
        self.map, size = factor_map(name)
        self.name, self.lr = name, lr
        self.fed = self.map >= 0
        u = np.zeros(size) if u is None else np.array(u, np.float64)
        self.opt = SparseAdaGrad(u, lr=lr, l2=l2, max_step=max_step, h=h, w0=np.zeros(size))

    @property
    def u(self):
        return self.opt.w

    def step(self, kp_idx, g, w_kp) -> float:
        """Pool g (at KP offsets kp_idx) into the factor, step it, add the change to every fed entry of
        w_kp (the KP slice of the weights); returns the factor's step norm."""
        gu = pool_kp(self.name, kp_idx, g)
        f = self.map[kp_idx]
        touched = np.unique(f[f >= 0])
        before = self.u[touched].copy()
        norm = self.opt.step(touched, gu[touched])
        du = np.zeros_like(self.u)
        du[touched] = self.u[touched] - before
        w_kp[self.fed] += du[self.map[self.fed]]
        return norm

    def offsets(self, kp_idx):
        """This factor's current contribution to the KP entries kp_idx."""
        f = self.map[kp_idx]
        return np.where(f >= 0, self.u[np.maximum(f, 0)], 0.0)


class ShogiUpdate:
    """AdaGrad over the trainable groups plus the optional factors (module docstring)."""

    def __init__(
        self,
        w,
        w0,
        lr,
        l2,
        max_step,
        groups=GROUPS,
        factor_lr=0.0,
        state=None,
        rel_factor_lr=0.0,
        group_scale=None,
        group_h0=None,
    ):
        group_scale, group_h0 = group_scale or {}, group_h0 or {}
        bad = (set(groups) | set(group_scale) | set(group_h0)) - set(GROUPS)
        if bad:
            raise ValueError(f"unknown feature group(s) {', '.join(sorted(bad))}: expected {', '.join(GROUPS)}")
        if any(not v > 0 for v in group_scale.values()):
            raise ValueError(f"group_scale values must be > 0, got {group_scale}")
        if any(not v >= 0 for v in group_h0.values()):
            raise ValueError(f"group_h0 values must be >= 0, got {group_h0}")
        self.trainable = np.array([g in groups for g in GROUPS])
        self.scale = np.array([float(group_scale.get(g, 1.0)) for g in GROUPS])
        self.h0 = np.array([float(group_h0.get(g, 0.0)) for g in GROUPS]) if group_h0 else None
        state = state or {}
        self.direct = SparseAdaGrad(w, lr=lr, l2=l2, max_step=max_step, h=state.get("h"), w0=w0)
        self.factors = [
            Factor(name, flr, l2, max_step, state.get(f"u_{name}"), state.get(f"hu_{name}"))
            for name, flr in (("p", factor_lr), ("rel", rel_factor_lr))
            if flr > 0
        ]

    @property
    def w(self):
        return self.direct.w

    def factor(self, name) -> Factor:
        return next(f for f in self.factors if f.name == name)

    def step(self, idx, g) -> dict:
        """Apply the ascent direction g at unique indices idx; returns the step norms."""
        out = {"step_norm": 0.0}
        kp = (idx >= OFF_KP) & (idx < OFF_PP)
        w_kp = self.w[OFF_KP:OFF_PP]
        for f in self.factors:
            out[f"factor_{f.name}_step_norm"] = f.step(idx[kp] - OFF_KP, g[kp], w_kp)
        group = group_of(idx)
        keep = self.trainable[group]
        idx, g, group = idx[keep], g[keep], group[keep]
        if idx.size:
            anchor = self.direct.w0[idx].copy()
            kp = (idx >= OFF_KP) & (idx < OFF_PP)
            for f in self.factors:
                anchor[kp] += f.offsets(idx[kp] - OFF_KP)
            h0 = None if self.h0 is None else self.h0[group]
            out["step_norm"] = self.direct.step(idx, g, anchor, self.scale[group], h0)
        return out

    def state(self) -> dict:
        """Arrays to checkpoint (with the weights) and pass back as `state` on resume."""
        out = {"h": self.direct.h}
        for f in self.factors:
            out[f"u_{f.name}"], out[f"hu_{f.name}"] = f.u, f.opt.h
        return out


# --- the optimiser state on disk ---------------------------------------------------------------------------
#
# Format 1 (runs before the compact state): np.savez of the dense arrays of ShogiUpdate.state(), no metadata;
# 11.6 MB for a KS-era run, almost all of it the zeros of h (only the trainable groups' coordinates are ever
# touched). Format 2: np.savez_compressed with a JSON "meta" (format, array sizes) and per array its nonzero
# entries, "NAME.idx" (int64, increasing) and "NAME.val" (float64, the exact values: bit-identical on load;
# -0.0 and any other nonzero bit pattern is kept too). Both load; h of a run started before the king-safety
# block (length OFF_KS), the effect block (length OFF_EF), the EM and PE blocks (length OFF_EM) or the KZ and KPOS
# blocks (length OFF_KZ) is widened with
# zeros for the new entries, which is what a fresh h holds there.

STATE_FORMAT = 2


class OptimStateError(ValueError):
    """An optimiser state file is unreadable, corrupt or does not fit this feature set."""

    def __init__(self, path, problem):
        super().__init__(f"optimiser state {path}: {problem}")
        self.path, self.problem = str(path), problem


def state_sizes() -> dict:
    """The length of each array ShogiUpdate.state() may hold."""
    sizes = {"h": N_WEIGHTS}
    for name in FACTOR_SHAPES:
        sizes[f"u_{name}"] = sizes[f"hu_{name}"] = FACTOR_SHAPES[name][1]
    return sizes


def save_state(file, state: dict) -> None:
    """Write ShogiUpdate.state() to `file` (a path or a binary file object) in the compact format 2."""
    arrays: dict = {}  # untyped: numpy's stub would match the values against savez's own keywords
    sizes = {}
    for name, a in state.items():
        a = np.ascontiguousarray(a, dtype=np.float64)
        if a.ndim != 1:
            raise ValueError(f"optimiser state array {name!r} has shape {a.shape}, expected 1-D")
        idx = np.flatnonzero(a.view(np.int64))  # every nonzero bit pattern, -0.0 included
        arrays[f"{name}.idx"], arrays[f"{name}.val"] = idx.astype(np.int64), a[idx]
        sizes[name] = int(a.shape[0])
    meta = {"format": STATE_FORMAT, "sizes": sizes}
    np.savez_compressed(file, meta=np.array(json.dumps(meta, sort_keys=True)), **arrays)


def load_state(path) -> dict:
    """The arrays of an optimiser state file (format 1 or 2) as ShogiUpdate's `state`; OptimStateError naming
    the file and the problem for an unreadable, corrupt or mismatched file."""
    raw = read_npz(path, OptimStateError)
    if "meta" in raw:
        try:
            meta = json.loads(str(raw.pop("meta")[()]))
        except (ValueError, TypeError) as e:
            raise OptimStateError(path, f"metadata is not valid JSON ({e})") from None
        if not isinstance(meta, dict) or meta.get("format") != STATE_FORMAT or not isinstance(meta.get("sizes"), dict):
            fmt = meta.get("format") if isinstance(meta, dict) else None
            raise OptimStateError(path, f"unknown state format {fmt!r} (this code reads 1 and {STATE_FORMAT})")
        state = {name: _dense(path, raw, name, size) for name, size in meta["sizes"].items()}
    else:
        state = {}
        for name, a in raw.items():
            if a.ndim != 1 or a.dtype.kind != "f":
                raise OptimStateError(path, f"'{name}' is {a.dtype} of shape {a.shape}, expected a 1-D float array")
            state[name] = a.astype(np.float64)
    return _checked(path, state)


def _dense(path, raw: dict, name: str, size) -> np.ndarray:
    """Array `name` of a format-2 file from its nonzero entries."""
    idx, val = raw.get(f"{name}.idx"), raw.get(f"{name}.val")
    if idx is None or val is None:
        raise OptimStateError(path, f"missing '{name}.idx' or '{name}.val'")
    if not isinstance(size, int) or size < 0:
        raise OptimStateError(path, f"size of '{name}' is {size!r}, expected a count")
    if idx.ndim != 1 or val.ndim != 1 or idx.shape != val.shape or idx.dtype.kind != "i" or val.dtype != np.float64:
        raise OptimStateError(path, f"'{name}.idx' / '{name}.val' are not matching int / float64 vectors")
    if idx.size and (idx[0] < 0 or idx[-1] >= size or np.any(np.diff(idx) <= 0)):
        raise OptimStateError(path, f"'{name}.idx' is not an increasing list of indices below {size}")
    a = np.zeros(size)
    a[idx] = val
    return a


def _checked(path, state: dict) -> dict:
    """Known names, expected lengths (h of a run started before a newer block widened with zeros), finite values."""
    sizes = state_sizes()
    for name, a in state.items():
        if name not in sizes:
            raise OptimStateError(path, f"unknown array '{name}' (expected {', '.join(sizes)})")
        if name == "h" and a.shape[0] in (OFF_KS, OFF_EF, OFF_EM, OFF_KZ):  # started before a newer block
            state[name] = a = np.concatenate([a, np.zeros(N_WEIGHTS - a.shape[0])])
        if a.shape[0] != sizes[name]:
            raise OptimStateError(path, f"'{name}' has {a.shape[0]} entries, expected {sizes[name]}")
        if not np.all(np.isfinite(a)):
            raise OptimStateError(path, f"'{name}' contains NaN or infinity")
    return state

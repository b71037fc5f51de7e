"""Statistics of one batch's game gradients, written into the run's batch rows: how much the games agree.

Each game of a batch contributes a sparse gradient (feature indices, values; learn/worker.py). The batch's
update is their mean; these gauges say whether that mean is signal or noise (for the learning rate and the
batch size): the cosine between the halves of the batch, and the games a batch needs before its mean stands
above the per-game noise on a few low-dimensional projections.
"""

from __future__ import annotations

import numpy as np

Parts = list[tuple[np.ndarray, np.ndarray]]  # per game: feature indices, gradient values


def split_half_agreement(parts: Parts, uniq: np.ndarray, inv: np.ndarray) -> float | None:
    """Cosine between the gradient sums of the batch's even and odd games: ~0 when the batch gradient is
    noise, rising toward 1 as the games agree on a direction (a signal-to-noise gauge for lr and batch size).
    `uniq`, `inv`: np.unique(concatenated indices, return_inverse=True)."""
    if len(parts) < 2:
        return None
    halves = np.zeros((2, uniq.shape[0]))
    start = 0
    for k, (idx, val) in enumerate(parts):
        np.add.at(halves[k % 2], inv[start : start + idx.shape[0]], val)
        start += idx.shape[0]
    norm = np.linalg.norm(halves[0]) * np.linalg.norm(halves[1])
    return float(halves[0] @ halves[1] / norm) if norm > 0 else None


def pooled_signal_games(parts: Parts) -> dict:
    """Games a batch needs before its mean gradient stands above the per-game noise (N* = per-game variance /
    squared mean, unbiased estimates over the batch's games; None when the mean is not detectable), on
    low-dimensional projections: material, the piece-square pooling of the own-king KP table, the
    king-relative pooling of both tables (learn/optim.py factors), and each block of the king terms (king
    safety, effects, multiple effects, piece effects, king-zone occupancy, king placement).
    Small N* = a learnable direction."""
    from usi_engine.shogi_eval import features as F

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

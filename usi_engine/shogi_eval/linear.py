"""The full shogi evaluation w . phi(pos) (features.py) from the side to move, and its exact gradient.

The kernel that computes the value can also write the active features (index, coefficient): that
list IS the exact gradient dValue/dw of the linear evaluation, which learn/ needs at quiescence
leaves. Indices in one list are unique.

This is the reference the search's incremental evaluation (incremental.py) is tested against; learning reads
the gradient at quiescence leaves (eval_features) and the arena's players the value (evaluate).
"""

import numpy as np

from usi_engine.jit import counted_kernel
from usi_engine.shogi.layout import SIDE

from .features import (
    FE_END,
    MAX_FEATURES,
    MAX_PIECES,
    N_EFFECT_TERMS,
    N_MATERIAL,
    N_SQ,
    OFF_KP,
    OFF_MATERIAL,
    collect,
    pp_index,
)
from .king_terms import king_terms, zone_blocks_used


@counted_kernel
def eval_core(pos, w, out_idx, out_coef, emit):
    """Static value of pos from the side to move; if emit, also write the active features.

    Returns (value, n_features). With emit, out_idx[:n] / out_coef[:n] (length >= MAX_FEATURES)
    hold unique weight indices and their coefficients, so value == sum(w[idx] * coef) and the
    coefficients are the gradient of the value with respect to w.
    """
    scratch = np.empty(MAX_PIECES + N_MATERIAL, dtype=np.int64)
    bps = scratch[:MAX_PIECES]
    mat = scratch[MAX_PIECES:]
    n, ku, kt = collect(pos, pos[SIDE], bps, mat)
    value = 0.0
    nf = 0
    for t in range(N_MATERIAL):
        c = mat[t]
        if c != 0:
            value += c * w[OFF_MATERIAL + t]
            if emit:
                out_idx[nf] = OFF_MATERIAL + t
                out_coef[nf] = c
                nf += 1
    for king_row in (ku, N_SQ + kt if kt >= 0 else -1):  # the side to move's king, then the other's
        if king_row < 0:
            continue
        base = OFF_KP + king_row * FE_END
        for i in range(n):
            value += w[base + bps[i]]
            if emit:
                out_idx[nf] = base + bps[i]
                out_coef[nf] = 1.0
                nf += 1
    for i in range(1, n):
        p = bps[i]
        for j in range(i):
            k = pp_index(p, bps[j])
            value += w[k]
            if emit:
                out_idx[nf] = k
                out_coef[nf] = 1.0
                nf += 1
    count = np.empty(N_SQ, dtype=np.int64)
    acc = np.empty(N_EFFECT_TERMS) if emit else w[:0]
    kings, nf = king_terms(pos, w, out_idx, out_coef, nf, emit, emit or zone_blocks_used(w), count, acc)
    return value + kings, nf


@counted_kernel
def evaluate(pos, w):
    """Static value of pos in centipawns from the side to move."""
    # Zero-length views stand in for the unused output buffers (no allocation, writable type).
    value, _ = eval_core(pos, w, pos[:0], w[:0], False)
    return value


@counted_kernel
def eval_features(pos, w, out_idx, out_coef):
    """Value and active features (the exact gradient) of pos; see eval_core."""
    return eval_core(pos, w, out_idx, out_coef, True)


def feature_buffers():
    """Fresh (out_idx, out_coef) buffers large enough for eval_features."""
    return np.zeros(MAX_FEATURES, dtype=np.int64), np.zeros(MAX_FEATURES, dtype=np.float64)


def gradient(pos, w):
    """(value, indices int64[:], coefficients float64[:]): the value and its sparse gradient."""
    idx, coef = feature_buffers()
    value, n = eval_features(pos, w, idx, coef)
    return value, idx[:n].copy(), coef[:n].copy()

"""The run's weight update (learn/optim.py): trainable groups and the pooled piece-square factor."""

import numpy as np
import pytest

from eval.shogi_features import FE_END, N_SQ, N_WEIGHTS, OFF_KP, OFF_PP
from learn.optim import ShogiUpdate, king_relative_map

KP0_END = OFF_KP + N_SQ * FE_END


def kp0(k, p):
    return OFF_KP + k * FE_END + p


def test_factor_pools_the_king_rows_and_moves_every_row():
    w0 = np.zeros(N_WEIGHTS)
    opt = ShogiUpdate(w0.copy(), w0, lr=0.0, l2=0.0, max_step=10.0, groups=(), factor_lr=1.0)
    p, q = 700, 701
    # piece p: small gradients of the same sign on many king rows; piece q: cancelling ones
    idx = np.array([kp0(k, p) for k in range(0, 81, 4)] + [kp0(3, q), kp0(5, q)])
    g = np.array([1e-1] * 21 + [2e-3, -2e-3])
    out = opt.step(idx, g)
    table = opt.w[OFF_KP:KP0_END].reshape(N_SQ, FE_END)
    assert np.allclose(table[:, p], 1.0, rtol=1e-3)  # first AdaGrad step ~ lr, in all 81 rows
    assert np.allclose(table[:, q], 0.0)  # pooled gradient 0: no move
    assert np.count_nonzero(opt.w) == N_SQ  # nothing else changed (direct groups frozen)
    assert out["factor_p_step_norm"] == pytest.approx(1.0, rel=1e-3)


def test_frozen_groups_stay_and_l2_anchor_includes_the_factor():
    w0 = np.zeros(N_WEIGHTS)
    opt = ShogiUpdate(w0.copy(), w0, lr=0.5, l2=1.0, max_step=10.0, groups=("material", "kp"), factor_lr=1.0)
    idx = np.array([3, kp0(10, 5), OFF_PP + 17])
    opt.step(idx, np.array([1.0, 1.0, 1.0]))
    assert opt.w[OFF_PP + 17] == 0.0  # pp frozen
    assert opt.w[3] == pytest.approx(0.5, rel=1e-2)
    assert opt.w[kp0(10, 5)] == pytest.approx(1.0 + 0.5, rel=1e-2)  # factor step 1 + direct step 0.5
    # with a zero gradient the direct pull acts on the direct part only (w - w0 - u), not on the factor
    before = opt.w.copy()
    opt.step(np.array([kp0(10, 5)]), np.array([0.0]))
    direct = before[kp0(10, 5)] - opt.factor('p').u[5]
    assert opt.w[kp0(10, 5)] - opt.factor('p').u[5] < direct  # direct part shrinks toward 0
    assert opt.factor('p').u[5] < 1.0  # the factor has its own pull to 0
    with pytest.raises(ValueError, match="group"):
        ShogiUpdate(w0, w0, 1.0, 0.0, 1.0, groups=("kpp",))


def test_state_round_trip_continues_identically():
    rng = np.random.default_rng(0)
    w0 = rng.normal(size=N_WEIGHTS)
    steps = [(np.unique(rng.integers(0, N_WEIGHTS, 500)), None) for _ in range(3)]
    steps = [(i, rng.normal(size=i.size) * 1e-2) for i, _ in steps]
    steps.append((np.arange(OFF_KP, OFF_KP + 3 * FE_END, 7), np.full(len(range(OFF_KP, OFF_KP + 3 * FE_END, 7)), 1e-3)))
    a = ShogiUpdate(w0.copy(), w0, 0.3, 1e-3, 1.0, factor_lr=0.7, rel_factor_lr=0.4)
    for i, g in steps:
        a.step(i, g)
    b = ShogiUpdate(w0.copy(), w0, 0.3, 1e-3, 1.0, factor_lr=0.7, rel_factor_lr=0.4)
    for i, g in steps[:2]:
        b.step(i, g)
    c = ShogiUpdate(
        b.w.copy(),
        w0,
        0.3,
        1e-3,
        1.0,
        factor_lr=0.7,
        rel_factor_lr=0.4,
        state={k: v.copy() for k, v in b.state().items()},
    )
    for i, g in steps[2:]:
        c.step(i, g)
    assert np.array_equal(a.w, c.w)


def test_king_relative_factor_moves_every_entry_with_the_same_offset():
    """A gold one file left of the own king: the same factor entry for every king square where that square
    exists, so evidence from one king position teaches all of them; hand objects are not fed."""
    from eval.shogi_features import HAND_END, KIND
    from usi_engine.shogi.layout import GOLD

    m = king_relative_map()
    gold_ours = HAND_END + (int(KIND[GOLD]) * 2 + 0) * N_SQ
    pairs = [(k, k - 9) for k in range(9, N_SQ)]  # piece one file lower than the king
    entries = {m[k * FE_END + gold_ours + sq] for k, sq in pairs}
    assert len(entries) == 1 and min(entries) >= 0
    assert m[40 * FE_END + 5] == -1  # a hand object
    assert m[40 * FE_END + gold_ours + 40 - 9] != m[(N_SQ + 40) * FE_END + gold_ours + 40 - 9]  # per table
    w0 = np.zeros(N_WEIGHTS)
    opt = ShogiUpdate(w0.copy(), w0, 0.0, 0.0, 10.0, groups=(), rel_factor_lr=1.0)
    k, sq = pairs[30]
    opt.step(np.array([OFF_KP + k * FE_END + gold_ours + sq]), np.array([1.0]))
    moved = np.flatnonzero(opt.w)
    assert moved.size == len(pairs)
    assert np.allclose(opt.w[moved], opt.w[moved[0]]) and opt.w[moved[0]] > 0.99

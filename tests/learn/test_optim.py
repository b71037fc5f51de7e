"""The run's weight update (learn/optim.py): trainable groups, the pooled piece-square factor, and the optimiser
state file (compact format 2, the dense format 1 of older runs, pre-KS runs, corrupt files)."""

import numpy as np
import pytest

from learn.optim import OptimStateError, ShogiUpdate, king_relative_map, load_state, save_state
from usi_engine.shogi_eval.features import (
    FE_END,
    N_SQ,
    N_WEIGHTS,
    OFF_EF,
    OFF_EM,
    OFF_KP,
    OFF_KS,
    OFF_KZ,
    OFF_PE,
    OFF_PP,
)

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


def test_group_scale_multiplies_the_step_and_its_cap_of_its_groups_only():
    w0 = np.zeros(N_WEIGHTS)
    opt = ShogiUpdate(w0.copy(), w0, lr=2.0, l2=0.0, max_step=1.5, groups=("material", "ks"), group_scale={"ks": 6})
    idx = np.array([3, OFF_KS + 4])
    opt.step(idx, np.array([1.0, -1.0]))  # first AdaGrad step: lr * g / |g| = +-2, clipped to the cap
    assert opt.w[3] == pytest.approx(1.5)  # material: lr 2, cap 1.5
    assert opt.w[OFF_KS + 4] == pytest.approx(-9.0)  # ks: lr 12, cap 9
    opt.step(idx, np.array([1.0, -1.0]))  # second step: lr / sqrt(2), under both caps
    assert opt.w[3] == pytest.approx(1.5 + 2.0 / np.sqrt(2), rel=1e-3)
    assert opt.w[OFF_KS + 4] == pytest.approx(-9.0 - 12.0 / np.sqrt(2), rel=1e-3)
    for bad in ({"kpp": 2.0}, {"ks": 0.0}):
        with pytest.raises(ValueError, match="group"):
            ShogiUpdate(w0, w0, 1.0, 0.0, 1.0, group_scale=bad)


def test_group_h0_warms_the_first_step_of_never_stepped_coordinates_of_its_groups_only():
    w0 = np.zeros(N_WEIGHTS)
    opt = ShogiUpdate(w0.copy(), w0, lr=2.0, l2=0.0, max_step=10.0, groups=("material", "pe"), group_h0={"pe": 1.0})
    idx = np.array([3, OFF_PE + 7])
    opt.step(idx, np.array([0.1, 0.1]))
    assert opt.w[3] == pytest.approx(2.0 * 0.1 / (0.1 + 1e-3))  # material: cold, +-lr whatever |g|
    assert opt.w[OFF_PE + 7] == pytest.approx(0.2 / (np.sqrt(1.01) + 1e-3))  # pe: lr g / (sqrt(h0 + g^2) + delta)
    opt.step(idx, np.array([0.1, 0.1]))  # h0 counts once: the second step sees h0 + 2 g^2
    assert opt.w[OFF_PE + 7] == pytest.approx(0.2 / (np.sqrt(1.01) + 1e-3) + 0.2 / (np.sqrt(1.02) + 1e-3))
    assert opt.state()["h"][OFF_PE + 7] == pytest.approx(1.02)
    for bad in ({"kpp": 1.0}, {"pe": -1.0}):
        with pytest.raises(ValueError, match="group"):
            ShogiUpdate(w0, w0, 1.0, 0.0, 1.0, group_h0=bad)


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
    from usi_engine.shogi.layout import GOLD
    from usi_engine.shogi_eval.features import HAND_END, KIND

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


def trained_update(steps=3, seed=0):
    """(start weights, ShogiUpdate after `steps` random sparse steps on every group and both factors, steps)."""
    rng = np.random.default_rng(seed)
    w0 = rng.normal(size=N_WEIGHTS)
    plan = []
    for _ in range(steps + 2):
        i = np.unique(np.concatenate([rng.integers(0, N_WEIGHTS, 500), rng.integers(OFF_KS, N_WEIGHTS, 20)]))
        plan.append((i, rng.normal(size=i.size) * 1e-2))
    opt = ShogiUpdate(w0.copy(), w0, 0.3, 1e-3, 1.0, factor_lr=0.7, rel_factor_lr=0.4)
    for i, g in plan[:steps]:
        opt.step(i, g)
    return w0, opt, plan


def same_bits(a, b) -> bool:
    return a.shape == b.shape and np.array_equal(a.view(np.int64), b.view(np.int64))


def test_compact_state_round_trip_is_bit_identical_and_small(tmp_path):
    _, opt, _ = trained_update()
    state = opt.state()
    state["u_p"][3] = -0.0  # every bit pattern survives, not only the values
    path = tmp_path / "o.npz"
    save_state(path, state)
    back = load_state(path)
    assert set(back) == set(state) == {"h", "u_p", "hu_p", "u_rel", "hu_rel"}
    assert all(same_bits(back[k], np.asarray(state[k], np.float64)) for k in state)
    dense = tmp_path / "dense.npz"
    np.savez(dense, **state)  # format 1: what runs wrote before
    assert path.stat().st_size < dense.stat().st_size / 10


def test_resume_from_the_compact_file_continues_identically(tmp_path):
    w0, a, plan = trained_update(steps=2)
    path = tmp_path / "o.npz"
    save_state(path, a.state())
    b = ShogiUpdate(a.w.copy(), w0, 0.3, 1e-3, 1.0, factor_lr=0.7, rel_factor_lr=0.4, state=load_state(path))
    for i, g in plan[2:]:
        na, nb = a.step(i, g), b.step(i, g)
        assert na == nb
    assert same_bits(a.w, b.w)
    assert all(same_bits(a.state()[k], b.state()[k]) for k in a.state())


def test_old_dense_state_and_pre_ks_state_load(tmp_path):
    _, opt, plan = trained_update()
    state = opt.state()
    old = tmp_path / "old.npz"
    np.savez(old, **state)
    back = load_state(old)
    assert all(same_bits(back[k], state[k]) for k in state)
    # runs started before the KS block (h had OFF_KS entries), the EF block (OFF_EF) or the EM and PE blocks
    # (OFF_EM) or the KZ and KPOS blocks (OFF_KZ): the newer entries start at zero
    for length in (OFF_KZ, OFF_EM, OFF_EF, OFF_KS):
        pre = tmp_path / f"pre-{length}.npz"
        np.savez(pre, h=state["h"][:length], u_p=state["u_p"])
        back = load_state(pre)
        assert back["h"].shape == (N_WEIGHTS,) and not back["h"][length:].any()
        assert same_bits(back["h"][:length], state["h"][:length])
    w = np.zeros(N_WEIGHTS)
    resumed = ShogiUpdate(w, w.copy(), 0.3, 0.0, 1.0, factor_lr=0.7, state=back)
    ks = np.arange(OFF_KS, N_WEIGHTS, 5)
    resumed.step(ks, np.full(ks.size, 0.01))  # the KS coordinates learn like fresh ones
    assert np.allclose(resumed.w[ks], 0.3 * 0.01 / (0.01 + 1e-3))


def test_corrupt_or_mismatched_state_fails_naming_the_file(tmp_path):
    _, opt, _ = trained_update(steps=1)
    good = tmp_path / "good.npz"
    save_state(good, opt.state())
    data = good.read_bytes()
    cases = {}
    cases["truncated"] = data[: len(data) // 2]
    cases["garbage"] = b"not an npz file at all"
    bad_len = tmp_path / "x.npz"
    np.savez(bad_len, h=np.zeros(1000))
    cases["length"] = bad_len.read_bytes()
    nan = opt.state()
    nan["hu_rel"] = nan["hu_rel"].copy()
    nan["hu_rel"][7] = np.nan
    np.savez(bad_len, **nan)
    cases["nan"] = bad_len.read_bytes()
    np.savez(bad_len, h=np.zeros(N_WEIGHTS), momentum=np.zeros(3))
    cases["unknown"] = bad_len.read_bytes()
    np.savez(bad_len, meta=np.array('{"format": 9, "sizes": {}}'))
    cases["format"] = bad_len.read_bytes()
    np.savez(
        bad_len, meta=np.array('{"format": 2, "sizes": {"h": 10}}'), **{"h.idx": np.array([3, 12]), "h.val": np.ones(2)}
    )
    cases["index"] = bad_len.read_bytes()
    problems = {
        "truncated": "not a readable",
        "garbage": "not a readable",
        "length": "'h' has 1000 entries, expected",
        "nan": "'hu_rel' contains NaN",
        "unknown": "unknown array 'momentum'",
        "format": "unknown state format 9",
        "index": "'h.idx' is not an increasing list",
    }
    for name, content in cases.items():
        path = tmp_path / f"{name}.npz"
        path.write_bytes(content)
        with pytest.raises(OptimStateError, match=problems[name]) as e:
            load_state(path)
        assert str(path) in str(e.value) and str(e.value).startswith("optimiser state ")
    with pytest.raises(OptimStateError, match="no such file"):
        load_state(tmp_path / "missing.npz")

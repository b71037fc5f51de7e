"""Local shape features (usi_engine/go/shapes.py) and the learned value (usi_engine/go/value.py): class counts
against seed 004's table 1, incremental ids = brute-force recount after random play with captures and undo,
symmetric positions get symmetric values, the NTD update equals its formula, weight files round-trip and fail
clearly."""

import numpy as np
import pytest

from usi_engine.go import layout as L
from usi_engine.go import shapes as S
from usi_engine.go import value as V
from usi_engine.go.board import do_move, gen_moves, undo_move
from usi_engine.go.playout import rand_below, seed_rng
from usi_engine.weightfile import WeightFileError


def test_class_counts_match_seed_004_table_1():
    # 9x9: LI 1x1 1, 2x2 8, 3x3 1418 unique weights; LD 1x1 15, 2x2 344; 63303 weights in all
    for ks, li, ld in (((1,), 1, 15), ((2,), 8, 344), ((3,), 1418, None)):
        tab = S.shape_tables(9, ks)
        assert tab[S.T_NLI] == li
        if ld is not None:
            assert tab[S.T_NLD] == ld
    tab = S.shape_tables(9)
    assert S.n_weights(tab) == 63303
    assert tab[S.T_NREG] == 81 + 64 + 49


def test_bad_table_arguments_fail_clearly():
    with pytest.raises(ValueError, match="board size"):
        S.shape_tables(20)
    with pytest.raises(ValueError, match="shape sizes"):
        S.shape_tables(9, (4,))


def _random_game(pos, tab, theta, ids, rng, n_moves, check):
    """Random legal moves (captures happen on a small board) with the incremental update, checking each step;
    returns the moves played."""
    moves = np.empty(L.BOARD_CAP + 1, np.int32)
    played = 0
    x = S.linear_sum(tab, theta, ids)
    for _ in range(n_moves):
        n = gen_moves(pos, moves)
        m = moves[rand_below(rng, n - 1)] if n > 1 else L.PASS
        do_move(pos, m)
        x += S.apply_move(pos, tab, theta, ids)
        played += 1
        check(pos, ids, x)
    return played, x


def test_incremental_ids_equal_recount_after_play_captures_and_undo():
    rng = seed_rng(7)
    for size in (5, 7, 9):
        tab = S.shape_tables(size)
        theta = np.random.default_rng(size).normal(size=S.n_weights(tab))
        pos = L.new_pos(size, 0.5)
        ids = S.board_ids(pos, tab)
        captures = []

        def check(p, i, x, tab=tab, theta=theta, captures=captures):
            assert np.array_equal(i, S.board_ids(p, tab))
            assert x == pytest.approx(S.linear_sum(tab, theta, S.board_ids(p, tab)), abs=1e-9)
            captures.append(int(p[L.CAP_TOP] - p[L.CAPS]))

        played, x = _random_game(pos, tab, theta, ids, rng, 6 * size * size // 2, check)
        assert max(captures) > 0  # the test really saw captures
        for _ in range(played):
            x += S.revert_move(pos, tab, theta, ids)
            undo_move(pos)
            check(pos, ids, x)
        assert not ids.any()


def _transformed(pos, g=None, invert=False):
    """pos with its board under symmetry g (shapes._transform) and/or colours swapped."""
    size = int(pos[L.SIZE])
    out = L.new_pos(size, 0.5)
    for y in range(size):
        for x in range(size):
            c = int(pos[L.BOARD + L.point(size, x, y)])
            if invert and c:
                c = 3 - c
            tx, ty = (x, y) if g is None else S._transform(g, x, y, size)
            out[L.BOARD + L.point(size, tx, ty)] = c
    return out


def test_symmetric_positions_get_symmetric_values():
    rng = seed_rng(3)
    size = 7
    tab = S.shape_tables(size)
    theta = np.random.default_rng(1).normal(size=S.n_weights(tab))
    pos = L.new_pos(size, 0.5)
    _random_game(pos, tab, theta, S.board_ids(pos, tab), rng, 30, lambda *a: None)
    v = V.evaluate(pos, tab, theta)
    assert 0.0 < v < 1.0 and abs(v - 0.5) > 1e-6
    for g in range(8):
        assert V.evaluate(_transformed(pos, g), tab, theta) == pytest.approx(v, abs=1e-12)
        assert V.evaluate(_transformed(pos, g, invert=True), tab, theta) == pytest.approx(1 - v, abs=1e-12)
    empty = L.new_pos(size, 0.5)
    assert V.evaluate(empty, tab, theta) == 0.5  # every empty square is neutral


def test_td_update_equals_its_formula():
    size = 5
    tab = S.shape_tables(size, (1, 2))
    pos = L.new_pos(size, 0.5)
    for xy in ((1, 1), (2, 2), (3, 1)):
        do_move(pos, L.point(size, *xy))
    ids = S.board_ids(pos, tab)
    theta = np.random.default_rng(2).normal(size=S.n_weights(tab))
    # phi by brute force: one +-1 per (region, sharing kind) unless neutral; a shared weight sums its signs
    phi = np.zeros_like(theta)
    for r in range(int(tab[S.T_NREG])):
        for which in (0, 1):
            e = S._entry(tab, r, ids[r], which)
            if e:
                phi[abs(e) - 1] += np.sign(e)
    n_active = sum(1 for r in range(int(tab[S.T_NREG])) for which in (0, 1) if S._entry(tab, r, ids[r], which))
    assert n_active == S.active_count(tab, ids)
    logit = float(phi @ theta)
    assert S.linear_sum(tab, theta, ids) == pytest.approx(logit)
    v_now, target, alpha = V.sigmoid(logit), 0.9, 0.1
    expected = theta + alpha * (target - v_now) * phi / n_active  # seed 004 eq. 10
    delta = V.td_update(tab, theta, ids, v_now, target, alpha)
    assert delta == pytest.approx(target - v_now)
    assert np.allclose(theta, expected)


def test_td_episode_learns_and_restores_the_position():
    size = 5
    tab = S.shape_tables(size)
    theta = np.zeros(S.n_weights(tab))
    pos = L.new_pos(size, 0.5)
    before = L.live_state(pos).copy()
    ws = np.empty((12, L.BOARD_CAP), np.int64)
    r, moves, err = V.td_episode(pos, tab, theta, theta, False, 0.1, 0.1, 10**6, 3 * size * size, seed_rng(5), ws)
    assert r in (0.0, 0.5, 1.0) and moves > 0 and err > 0
    assert np.any(theta != 0)
    assert np.array_equal(L.live_state(pos), before)
    # TD search: short-term weights move, value = long + short stays consistent
    long_w = np.random.default_rng(0).normal(scale=0.1, size=theta.shape)
    short = np.zeros_like(long_w)
    value_w = long_w + short
    V.td_search(pos, tab, value_w, short, 5, 0.1, 0.1, 6, 3 * size * size, seed_rng(6))
    assert np.any(short != 0)
    assert np.allclose(value_w, long_w + short)
    assert np.array_equal(L.live_state(pos), before)


def test_weight_files_round_trip_and_fail_clearly(tmp_path):
    size = 5
    tab = S.shape_tables(size)
    theta = np.random.default_rng(4).normal(size=S.n_weights(tab)).astype(np.float32).astype(np.float64)
    path = V.save_value_weights(tmp_path / "w.npz", theta, size, games=12)
    back, meta = V.read_value_weights(path, size)
    assert np.array_equal(back, theta) and meta["games"] == 12 and meta["size"] == size
    with pytest.raises(WeightFileError, match="feature set"):
        V.read_value_weights(path, 7)
    with pytest.raises(WeightFileError, match="no such file"):
        V.read_value_weights(tmp_path / "missing.npz", size)
    (tmp_path / "junk.npz").write_bytes(b"not a zip")
    with pytest.raises(WeightFileError, match="not a readable"):
        V.read_value_weights(tmp_path / "junk.npz", size)
    with np.load(path) as z:
        arrays = {k: z[k] for k in z.files}
    arrays["ld"] = arrays["ld"].copy()
    arrays["ld"][0] += 1.0
    np.savez(tmp_path / "tampered.npz", **arrays)
    with pytest.raises(WeightFileError, match="checksum"):
        V.read_value_weights(tmp_path / "tampered.npz", size)
    with pytest.raises(ValueError, match="shape"):
        V.save_value_weights(tmp_path / "bad.npz", theta[:-1], size)

"""The learned value in the search (usi_engine/go/game.py): MCSS's learned leaf equals the value formula, the
RAVE prior mix, Dyna-2's short-term memory (td_think / reset), and the GTP options driving a real engine."""

import numpy as np
import pytest

from tests.test_gtp import FIRST_TIMEOUT, GtpProcess
from usi_engine.go import layout as L
from usi_engine.go import shapes as S
from usi_engine.go import value as V
from usi_engine.go.board import do_move, undo_move
from usi_engine.go.game import (
    LEAF_LEARNED,
    MAX_MOVES,
    NO_SIM,
    GoAdapter,
    default_params,
    expand,
    expand_amaf,
    split_weights,
)
from usi_engine.go.player import GoPlayer, PlayerSettings
from usi_engine.go.playout import seed_rng


def _position(size=7):
    pos = L.new_pos(size, 0.5)
    for x, y in ((2, 2), (3, 3), (2, 3), (3, 2), (4, 4)):
        do_move(pos, L.point(size, x, y))
    return pos  # White to move


def _buffers():
    return (np.zeros(MAX_MOVES, np.int32), np.zeros(MAX_MOVES), np.zeros(MAX_MOVES, np.int8), np.zeros(MAX_MOVES))


def test_learned_leaf_is_the_value_formula_from_the_childs_side():
    size = 7
    pos = _position(size)
    theta = np.random.default_rng(0).normal(scale=0.3, size=S.n_weights(S.shape_tables(size)))
    adapter = GoAdapter(size, default_params(leaf=LEAF_LEARNED))
    adapter.set_value_weights(theta)
    moves, values, flags, _ = _buffers()
    before = L.live_state(pos).copy()
    n, work = expand(pos, adapter.weights, adapter.params, seed_rng(1), moves, values, flags)
    assert work == 0 and np.array_equal(L.live_state(pos), before)  # no playout ran, pos unchanged
    tab = S.shape_tables(size)
    for i in range(n):
        do_move(pos, moves[i])
        p_black = V.evaluate(pos, tab, theta)
        undo_move(pos)
        # the child's side to move is Black (White just moved): value = 1000 * (2 V - 1)
        assert values[i] == pytest.approx(1000.0 * (2.0 * p_black - 1.0), abs=1e-9)
        assert flags[i] == 0


def test_prior_mix_blends_heuristic_and_learned_value():
    size = 7
    pos = _position(size)
    theta = np.random.default_rng(1).normal(scale=0.3, size=S.n_weights(S.shape_tables(size)))
    priors = {}
    for mix in (0.0, 0.5, 1.0):
        adapter = GoAdapter(size, default_params(prior_mix=mix, rave_playouts=1))
        adapter.set_value_weights(theta)
        moves, values, flags, prior = _buffers()
        trace = np.zeros(adapter.amaf_capacity(pos), np.int32)
        n, _ = expand_amaf(
            pos,
            adapter.weights,
            adapter.params,
            seed_rng(2),
            moves,
            values,
            flags,
            prior,
            trace,
            np.zeros(MAX_MOVES + 1, np.int64),
        )
        priors[mix] = prior[:n].copy()
        if mix == 1.0:
            tab = S.shape_tables(size)
            for i in range(n):
                do_move(pos, moves[i])
                mover_wins = 1.0 - V.evaluate(pos, tab, theta)  # White moved
                undo_move(pos)
                assert prior[i] == pytest.approx(mover_wins)
                if flags[i] == NO_SIM:
                    assert values[i] == pytest.approx(1000.0 * (1.0 - 2.0 * prior[i]))
    assert np.allclose(priors[0.5], 0.5 * (priors[0.0] + priors[1.0]))


def test_td_think_moves_the_short_term_memory_and_reset_restores_the_long_term():
    size = 7
    pos = _position(size)
    theta = np.random.default_rng(2).normal(scale=0.1, size=S.n_weights(S.shape_tables(size)))
    adapter = GoAdapter(size)
    adapter.set_value_weights(theta)
    before = L.live_state(pos).copy()
    assert adapter.td_think(pos, 0.2) > 0
    assert np.any(adapter.short_term != 0)
    assert np.allclose(split_weights(adapter.weights)[0], theta + adapter.short_term)
    assert np.array_equal(L.live_state(pos), before)
    adapter.reset_short_term()
    assert not adapter.short_term.any() and np.array_equal(split_weights(adapter.weights)[0], theta)
    model = np.arange(5.0)
    adapter.set_move_model(model)  # the move model joins the packed array; the value weights stay
    theta_now, model_now, tab = split_weights(adapter.weights)
    assert np.array_equal(theta_now, theta) and np.array_equal(model_now, model) and len(tab) > 0
    adapter.clear_value_weights()
    assert [len(a) for a in split_weights(adapter.weights)] == [0, 5, 0]
    with pytest.raises(ValueError, match="shape"):
        adapter.set_value_weights(theta[:-1])


@pytest.mark.process
def test_gtp_plays_with_learned_leaves_and_dyna2_and_falls_back_without_weights(tmp_path):
    size = 7
    theta = np.random.default_rng(3).normal(scale=0.1, size=S.n_weights(S.shape_tables(size)))
    path = V.save_value_weights(tmp_path / "w7.npz", theta, size)
    p = GtpProcess(
        "--size",
        "7",
        "--komi",
        "7",
        "--seconds",
        "0.3",
        "--resign",
        "0",
        "--policy",
        "mcss",
        "--leaf",
        "learned",
        "--td-share",
        "0.3",
        "--value-weights",
        str(path),
    )
    try:
        p.ok("boardsize 7")
        first = p.ok("genmove b", timeout=FIRST_TIMEOUT)
        assert first.lower() not in ("resign", "pass")
        for colour in "wb":
            assert p.ok(f"genmove {colour}").lower() != "resign"
        p.ok("boardsize 9")  # the file holds 7x7 weights: 9x9 plays on with playout leaves
        assert p.ok("genmove b", timeout=FIRST_TIMEOUT).lower() != "resign"
    finally:
        p.close()


def test_player_loads_weights_per_board_size_and_says_when_there_are_none(tmp_path, capsys):
    size = 7
    theta = np.random.default_rng(3).normal(scale=0.1, size=S.n_weights(S.shape_tables(size)))
    path = V.save_value_weights(tmp_path / "w7.npz", theta, size)
    player = GoPlayer(PlayerSettings(policy="softmax", leaf="learned", value_weights=str(path)))
    assert np.array_equal(player._searcher(7).adapter.long_term, theta.astype(np.float32))  # stored as float32
    assert player._searcher(9).adapter.long_term is None
    assert "learned value off" in capsys.readouterr().err
    plain = GoPlayer(PlayerSettings(policy="softmax"))
    assert plain._searcher(9).adapter.long_term is None
    value, moves, table = (len(a) for a in split_weights(plain._searcher(9).adapter.weights))
    assert value == 0 and table == 0 and moves > 0  # no value nor playout table asked for; the default 9x9 prior

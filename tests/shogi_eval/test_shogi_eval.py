"""The shogi evaluation: exact sparse gradient, rotation symmetry, material values of the defaults."""

import numpy as np
import pytest

from eval.make_material_weights import BOARD_VALUES
from usi_engine.shogi import Board
from usi_engine.shogi.bench import random_game_sfens
from usi_engine.shogi_eval import features as F
from usi_engine.shogi_eval.evalfile import load_weights
from usi_engine.shogi_eval.linear import eval_features, evaluate, feature_buffers, gradient

SFENS = random_game_sfens(200, seed=7, min_ply=0, max_ply=160)


@pytest.fixture(scope="module")
def random_w():
    return np.random.default_rng(1).normal(0.0, 30.0, F.N_WEIGHTS)


def flip_sfen(sfen):
    """The position rotated 180 degrees with colours (pieces, hands, side to move) swapped."""
    board, side, hand = sfen.split()[:3]
    rows = []
    for row in reversed(board.split("/")):
        tokens, i = [], 0
        while i < len(row):  # keep "+X" together when reversing a rank
            if row[i] == "+":
                tokens.append(row[i : i + 2])
                i += 2
            else:
                tokens.append(row[i])
                i += 1
        rows.append("".join(reversed(tokens)).swapcase())
    new_hand = "-" if hand == "-" else hand.swapcase()
    return f"{'/'.join(rows)} {'w' if side == 'b' else 'b'} {new_hand} 1"


def test_flip_sfen_is_an_involution_and_differs():
    s = "ln1gk2nl/1r1s2gb1/p1pppp1pp/6p2/1p7/2P6/PPBPPPPPP/7R1/LNSGKGSNL w S 12"
    assert Board(flip_sfen(flip_sfen(s))).sfen().split()[:3] == Board(s).sfen().split()[:3]
    assert Board(flip_sfen(s)).sfen() != Board(s).sfen()


def test_value_equals_sum_of_active_features(random_w):
    idx, coef = feature_buffers()
    for s in SFENS[:50]:
        pos = Board(s).pos
        value, n = eval_features(pos, random_w, idx, coef)
        assert n > 0
        assert len(set(idx[:n].tolist())) == n, "feature indices must be unique"
        assert np.all((idx[:n] >= 0) & (idx[:n] < F.N_WEIGHTS))
        assert value == pytest.approx(float(np.dot(random_w[idx[:n]], coef[:n])), abs=1e-6)
        assert evaluate(pos, random_w) == pytest.approx(value, abs=1e-9)


def test_gradient_equals_finite_differences(random_w):
    rng = np.random.default_rng(2)
    h = 0.5
    for s in SFENS[:20]:
        pos = Board(s).pos
        value, idx, coef = gradient(pos, random_w)
        grad = dict(zip(idx.tolist(), coef.tolist()))
        probes = list(rng.choice(idx, size=min(12, len(idx)), replace=False))
        probes += list(rng.integers(0, F.N_WEIGHTS, size=8))  # mostly inactive features
        for k in probes:
            w = random_w.copy()
            w[k] += h
            up = evaluate(pos, w)
            w[k] -= 2 * h
            down = evaluate(pos, w)
            assert (up - down) / (2 * h) == pytest.approx(grad.get(int(k), 0.0), abs=1e-6)


def test_rotated_colour_swapped_position_has_the_same_value(random_w):
    idx, coef = feature_buffers()
    idx2, coef2 = feature_buffers()
    for s in SFENS:
        a, b = Board(s).pos, Board(flip_sfen(s)).pos
        va, na = eval_features(a, random_w, idx, coef)
        vb, nb = eval_features(b, random_w, idx2, coef2)
        assert va == pytest.approx(vb, abs=1e-6), s
        assert sorted(zip(idx[:na], coef[:na])) == sorted(zip(idx2[:nb], coef2[:nb]))


def test_side_to_move_changes_the_view(random_w):
    s = "lnsgkgsnl/1r5b1/ppppppppp/9/9/2P6/PP1PPPPPP/1B5R1/LNSGKGSNL"
    assert evaluate(Board(s + " b - 1").pos, random_w) != evaluate(Board(s + " w - 1").pos, random_w)


def test_material_weights_are_the_material_balance():
    w = load_weights("material")
    assert evaluate(Board().pos, w) == 0.0
    # Black: White's rook in hand and a dragon instead of its rook; White: a promoted pawn.
    s = "lnsgkgsnl/7b1/pppp+ppppp/9/9/9/PPPPPPPPP/1B5+R1/LNSGKGSNL b R 1"
    rook, dragon, pawn, tokin = (BOARD_VALUES[k] for k in (6, 14, 1, 9))
    gain = round(1.1 * rook) + (dragon - rook) + rook - (tokin - pawn)
    assert evaluate(Board(s).pos, w) == pytest.approx(gain)
    assert evaluate(Board(flip_sfen(s)).pos, w) == pytest.approx(gain)
    assert evaluate(Board(s.replace(" b ", " w ")).pos, w) == pytest.approx(-gain)


def test_tsume_position_without_a_king_evaluates():
    w = np.random.default_rng(3).normal(0.0, 10.0, F.N_WEIGHTS)
    pos = Board("4k4/9/4P4/9/9/9/9/9/9 b G2r 1").pos
    value, idx, coef = gradient(pos, w)
    assert value == pytest.approx(float(np.dot(w[idx], coef)))
    kp_them = (idx >= F.OFF_KP + F.N_SQ * F.FE_END) & (idx < F.OFF_PP)
    kp_us = (idx >= F.OFF_KP) & (idx < F.OFF_KP + F.N_SQ * F.FE_END)
    assert kp_them.sum() == 4 and kp_us.sum() == 0  # only the white king sees 4 pieces
    assert ((idx >= F.OFF_PP) & (idx < F.OFF_KS)).sum() == 6  # 4 pieces -> 6 pairs
    ks = (idx >= F.OFF_KS) & (idx < F.OFF_EF)
    assert (ks & (idx >= F.OFF_KS + F.N_KS // 2)).sum() == 6  # the white king's zone on the edge: 6 squares
    assert ks.sum() == 6
    # EF: the pawn's one effect (5b), distance 1 from the other (white) king; no own king to measure from
    ef = (idx >= F.OFF_EF) & (idx < F.OFF_EM)
    assert idx[ef].tolist() == [F.OFF_EF + F.EF_DIST + 1] and coef[ef].tolist() == [1.0]

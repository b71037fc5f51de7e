"""The shipped hand-made weights: the learned file plus the hand-made king terms, reproducible."""

import numpy as np
import pytest

from eval.make_handmade_weights import (
    EF_OTHER,
    EF_OWN,
    KP_OWN,
    KS_ATTACK,
    KS_DEFEND,
    KS_RING,
    PE_ATTACKED,
    PE_DEFENDED,
    handmade_weights,
    king_safety_terms,
    main,
)
from usi_engine.shogi import Board
from usi_engine.shogi.bench import random_game_sfens
from usi_engine.shogi_eval import features as F
from usi_engine.shogi_eval.evalfile import HANDMADE_PATH, LEARNED_PATH, read_weights, save_weights
from usi_engine.shogi_eval.linear import evaluate

MATERIAL = read_weights(LEARNED_PATH)[0][: F.N_MATERIAL]
TERMS = king_safety_terms(MATERIAL)
GOLD = MATERIAL[7]  # board gold


def with_side(sfen, side):
    parts = sfen.split()
    parts[1] = side
    return " ".join(parts)


def test_regenerating_gives_the_shipped_handmade_file_exactly(tmp_path):
    main([str(tmp_path / "handmade.npz")])
    regenerated, meta = read_weights(tmp_path / "handmade.npz")
    shipped, shipped_meta = read_weights(HANDMADE_PATH)
    assert np.array_equal(regenerated, shipped) and meta["sha256"] == shipped_meta["sha256"]
    learned, _ = read_weights(LEARNED_PATH)
    assert np.allclose(shipped - learned, TERMS, atol=1e-4)  # float32 storage rounding only
    assert "learned.npz" in shipped_meta["source"]


def test_the_terms_are_antisymmetric_in_the_side_to_move():
    """No tempo in the hand-made terms: the same board with the other side to move is worth exactly minus."""
    for sfen in random_game_sfens(30, seed=21, min_ply=20, max_ply=150):
        black = evaluate(Board(with_side(sfen, "b")).pos, TERMS)
        white = evaluate(Board(with_side(sfen, "w")).pos, TERMS)
        assert black == pytest.approx(-white, abs=1e-9), sfen


def ef(own, other):
    """The EF term of one side's effects at these distances from its own king and from the other king."""
    return sum(EF_OWN / (d + 1) for d in own) + sum(EF_OTHER / (d + 1) for d in other)


def test_a_gold_beside_the_king_by_hand():
    """Black king 5i, Black gold 4h (distance 1), White king 5a alone: KP +40; the gold defends 5h and 4i, two
    neighbours of the king's square (the king itself is not counted): 2 x KS_RING x KS_DEFEND; its six effects
    (4g 4i 5h 3h 5g 3g) lie at distances 2 1 1 2 2 2 from its king and 6 8 7 7 6 6 from the other; one effect
    per square, so no EM; the king's step defends it once (PE). In hand instead, every term vanishes. A White
    gold on 4h instead: an enemy piece at distance 1 (-24) attacking the king's square 5i and its neighbours 5h
    and 4i; its effects (4i 4g 5h 3h 5i 3i) at 8 6 7 7 8 8 from its own king and 1 2 1 2 0 2 from Black's count
    against Black; Black's king attacks it once, which counts for Black (PE)."""
    near = evaluate(Board("4k4/9/9/9/9/9/9/5G3/4K4 b - 1").pos, TERMS)
    pe = GOLD * PE_DEFENDED[1]
    assert near == pytest.approx(KP_OWN[1] + 2 * KS_RING * KS_DEFEND + ef([2, 1, 1, 2, 2, 2], [6, 8, 7, 7, 6, 6]) + pe)
    assert evaluate(Board("4k4/9/9/9/9/9/9/9/4K4 b G 1").pos, TERMS) == pytest.approx(0.0)
    enemy = evaluate(Board("4k4/9/9/9/9/9/9/5g3/4K4 b - 1").pos, TERMS)
    pe = GOLD * PE_ATTACKED[1]
    expected = -24.0 - KS_ATTACK - 2 * KS_RING * KS_ATTACK - ef([8, 6, 7, 7, 8, 8], [1, 2, 1, 2, 0, 2]) + pe
    assert enemy == pytest.approx(expected)


def test_a_learned_file_with_a_king_safety_block_is_refused(tmp_path):
    w, _ = read_weights(LEARNED_PATH)
    w[F.OFF_KS] = 1.0
    save_weights(tmp_path / "ks.npz", w)
    with pytest.raises(ValueError, match="king-safety block"):
        handmade_weights(tmp_path / "ks.npz")


def test_an_attacked_knight_by_hand():
    """Black knight 5e attacked by a White pawn 5d, defended by nobody; kings far away on 9i and 1a. Against the
    knight in hand the board adds the knight's two effects (4c at distances 6 from Black's king and 3 from
    White's, 6c at 6 and 5; one effect per square, no EM, no king zone) and its PE entry: Black's piece, own
    count 0, enemy count 1."""
    board = evaluate(Board("8k/9/9/4p4/4N4/9/9/9/K8 b - 1").pos, TERMS)
    hand = evaluate(Board("8k/9/9/4p4/9/9/9/9/K8 b N 1").pos, TERMS)
    knight = MATERIAL[3]
    assert board - hand == pytest.approx(ef([6, 6], [3, 5]) + knight * (PE_DEFENDED[0] - PE_ATTACKED[1]), abs=1e-9)

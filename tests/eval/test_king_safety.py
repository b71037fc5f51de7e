"""The king terms (KS and EF blocks, eval.shogi_features.king_terms): each term against an independent Python
reference over python-shogi's attackers, their gradients against finite differences, and their symmetry."""

import numpy as np
import pytest
import shogi

from eval import shogi_features as F
from usi_engine.shogi import Board
from usi_engine.shogi.bench import random_game_sfens

SFENS = random_game_sfens(120, seed=11, min_ply=10, max_ply=200)


def ps_square(sq):
    """python-shogi square of our square sq = (file - 1) * 9 + (rank - 1)."""
    file, rank = sq // 9 + 1, sq % 9 + 1
    return (rank - 1) * 9 + (9 - file)


def attackers_but_kings(ref, colour, sq):
    """python-shogi's attackers of sq by colour, kings left out."""
    return [a for a in ref.attackers(colour, sq) if ref.piece_type_at(a) != shogi.KING]


def reference_ks(sfen, w):
    """The KS term written from the definition, over python-shogi: for each king (side to move's first) and
    each on-board square of its 3x3 zone, w[(king, zone square seen from the mover, capped counts)]."""
    ref = shogi.Board(sfen)
    stm = ref.turn
    total = 0.0
    for t, colour in enumerate((stm, 1 - stm)):
        ksq = ref.king_squares[colour]
        if ksq is None:
            continue
        krank, kfile = divmod(ksq, 9)  # python-shogi: index = rank * 9 + (9 - file)
        for dfile in (-1, 0, 1):  # file offset in board files (file = 9 - kfile)
            for drank in (-1, 0, 1):
                r, c = krank + drank, kfile - dfile
                if not (0 <= r < 9 and 0 <= c < 9):
                    continue
                sq = r * 9 + c
                counts = [min(len(attackers_but_kings(ref, side, sq)), 2) for side in (shogi.BLACK, shogi.WHITE)]
                ours, theirs = counts[stm], counts[1 - stm]
                df, dr = (dfile, drank) if stm == shogi.BLACK else (-dfile, -drank)
                z = (df + 1) * 3 + dr + 1
                total += w[F.OFF_KS + ((t * 9 + z) * 3 + ours) * 3 + theirs]
    return total


def ks_weights(seed):
    w = np.zeros(F.N_WEIGHTS)
    w[F.OFF_KS : F.OFF_EF] = np.random.default_rng(seed).normal(0.0, 40.0, F.N_KS)
    return w


def reference_ef(sfen, w):
    """The EF term from its definition over python-shogi: every (attacker other than a king, attacked square)
    pair adds w[EF, 0, distance to the attacker's own king] + w[EF, 1, distance to the other king], + for the
    side to move's pieces, - for the other side's."""
    ref = shogi.Board(sfen)
    stm = ref.turn
    total = 0.0
    for sq in range(81):
        t = ps_square(sq)
        for colour in (shogi.BLACK, shogi.WHITE):
            n = len(attackers_but_kings(ref, colour, t))
            sign = 1.0 if colour == stm else -1.0
            for block, king_colour in ((0, colour), (1, 1 - colour)):
                ksq = ref.king_squares[king_colour]
                if ksq is None:
                    continue
                krank, kfile = divmod(ksq, 9)
                trank, tfile = divmod(t, 9)
                d = max(abs(krank - trank), abs(kfile - tfile))
                total += sign * n * w[F.OFF_EF + block * F.EF_DIST + d]
    return total


def ef_weights(seed):
    w = np.zeros(F.N_WEIGHTS)
    w[F.OFF_EF :] = np.random.default_rng(seed).normal(0.0, 40.0, F.N_EF)
    return w


def test_ks_term_equals_the_reference():
    w = ks_weights(5)
    for s in SFENS:
        assert F.evaluate(Board(s).pos, w) == pytest.approx(reference_ks(s, w), abs=1e-9), s


@pytest.mark.parametrize("block", ["ks", "ef"])
def test_gradient_equals_finite_differences(block):
    """Every weight of the block: central finite differences equal the emitted coefficient (0 when inactive);
    KS has 4..18 active entries (one per on-board zone square), EF at least one; indices unique."""
    lo, hi = (F.OFF_KS, F.OFF_EF) if block == "ks" else (F.OFF_EF, F.N_WEIGHTS)
    w = np.random.default_rng(6).normal(0.0, 30.0, F.N_WEIGHTS)
    idx, coef = F.feature_buffers()
    h = 0.25
    for s in SFENS[:30]:
        pos = Board(s).pos
        _, n = F.eval_features(pos, w, idx, coef)
        grad = dict(zip(idx[:n].tolist(), coef[:n].tolist()))
        assert len(grad) == n
        active = [k for k in grad if lo <= k < hi]
        assert (4 <= len(active) <= 18) if block == "ks" else active
        for k in range(lo, hi):
            wp, wm = w.copy(), w.copy()
            wp[k] += h
            wm[k] -= h
            fd = (F.evaluate(pos, wp) - F.evaluate(pos, wm)) / (2 * h)
            assert fd == pytest.approx(grad.get(k, 0.0), abs=1e-6)


def test_king_terms_are_symmetric_under_rotation_with_colours_swapped():
    from tests.eval.test_shogi_eval import flip_sfen

    w = ks_weights(7) + ef_weights(8)
    for s in SFENS[:60]:
        assert F.evaluate(Board(s).pos, w) == pytest.approx(F.evaluate(Board(flip_sfen(s)).pos, w), abs=1e-9)


def test_ef_term_equals_the_reference():
    w = ef_weights(9)
    for s in SFENS:
        assert F.evaluate(Board(s).pos, w) == pytest.approx(reference_ef(s, w), abs=1e-9), s


def test_king_terms_without_a_king():
    """A mate problem has no Black king: the terms of the missing king are left out, not read off the table."""
    s = "4k4/9/4P4/9/9/9/9/9/9 b G2r2b3g4s4n4l17p 1"
    w = ks_weights(11) + ef_weights(12)
    assert F.evaluate(Board(s).pos, w) == pytest.approx(reference_ks(s, w) + reference_ef(s, w), abs=1e-9)

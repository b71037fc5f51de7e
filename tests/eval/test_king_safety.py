"""The king-safety (KS) block: attack counts against python-shogi, the term against an independent Python
reference, its gradient against finite differences, and the version-1 weight files it extends."""

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


def test_attack_counts_match_python_shogi():
    checked = 0
    for s in SFENS[:60]:
        pos, ref = Board(s).pos, shogi.Board(s)
        for sq in range(81):
            n0 = len(attackers_but_kings(ref, shogi.BLACK, ps_square(sq)))
            n1 = len(attackers_but_kings(ref, shogi.WHITE, ps_square(sq)))
            assert F.attack_counts(pos, sq, 99) == (n0, n1), (s, sq)
            assert F.attack_counts(pos, sq, F.KS_CAP) == (min(n0, 2), min(n1, 2))
            checked += n0 + n1 > 1
    assert checked > 1000


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


def test_ks_term_equals_the_reference():
    w = np.zeros(F.N_WEIGHTS)
    w[F.OFF_KS :] = np.random.default_rng(5).normal(0.0, 40.0, F.N_KS)
    for s in SFENS:
        assert F.evaluate(Board(s).pos, w) == pytest.approx(reference_ks(s, w), abs=1e-9), s


def test_ks_gradient_equals_finite_differences():
    w = np.random.default_rng(6).normal(0.0, 30.0, F.N_WEIGHTS)
    idx, coef = F.feature_buffers()
    h = 0.25
    for s in SFENS[:30]:
        pos = Board(s).pos
        _, n = F.eval_features(pos, w, idx, coef)
        grad = dict(zip(idx[:n].tolist(), coef[:n].tolist()))
        active = [k for k in grad if k >= F.OFF_KS]
        assert 4 <= len(active) <= 18
        for k in range(F.OFF_KS, F.N_WEIGHTS):  # every KS weight: active ones 1, the others 0
            wp, wm = w.copy(), w.copy()
            wp[k] += h
            wm[k] -= h
            fd = (F.evaluate(pos, wp) - F.evaluate(pos, wm)) / (2 * h)
            assert fd == pytest.approx(grad.get(k, 0.0), abs=1e-6)


def test_ks_is_symmetric_under_rotation_with_colours_swapped():
    from tests.eval.test_shogi_eval import flip_sfen

    w = np.zeros(F.N_WEIGHTS)
    w[F.OFF_KS :] = np.random.default_rng(7).normal(0.0, 40.0, F.N_KS)
    for s in SFENS[:60]:
        assert F.evaluate(Board(s).pos, w) == pytest.approx(F.evaluate(Board(flip_sfen(s)).pos, w), abs=1e-9)

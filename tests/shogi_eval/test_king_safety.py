"""The king and effect terms (KS, EF, EM, PE, KZ and KPOS blocks, usi_engine/shogi_eval/king_terms.py): each term
against an independent Python reference over python-shogi's attackers, their gradients against finite differences,
and their symmetry."""

import numpy as np
import pytest
import shogi

from usi_engine.shogi import Board
from usi_engine.shogi.bench import random_game_sfens
from usi_engine.shogi_eval import features as F
from usi_engine.shogi_eval.linear import eval_features, evaluate, feature_buffers

SFENS = random_game_sfens(120, seed=11, min_ply=10, max_ply=200)


def attackers_but_kings(ref, colour, sq):
    """python-shogi's attackers of sq by colour, kings left out."""
    return [a for a in ref.attackers(colour, sq) if ref.piece_type_at(a) != shogi.KING]


def zone_squares(ref):
    """(king, colour, square, z) for each king (the side to move's first: king 0) and each on-board square of
    its 3x3 zone, z = (file offset + 1) * 3 + rank offset + 1 seen from the side to move."""
    stm = ref.turn
    for t, colour in enumerate((stm, 1 - stm)):
        ksq = ref.king_squares[colour]
        if ksq is None:
            continue
        krank, kfile = divmod(ksq, 9)  # python-shogi: index = rank * 9 + (9 - file)
        for dfile in (-1, 0, 1):  # file offset in board files (file = 9 - kfile)
            for drank in (-1, 0, 1):
                r, c = krank + drank, kfile - dfile
                if 0 <= r < 9 and 0 <= c < 9:
                    df, dr = (dfile, drank) if stm == shogi.BLACK else (-dfile, -drank)
                    yield t, colour, r * 9 + c, (df + 1) * 3 + dr + 1


def reference_ks(sfen, w):
    """The KS term written from the definition, over python-shogi: for each king (side to move's first) and
    each on-board square of its 3x3 zone, w[(king, zone square seen from the mover, capped counts)]."""
    ref = shogi.Board(sfen)
    total = 0.0
    for t, _, sq, z in zone_squares(ref):
        counts = [min(len(attackers_but_kings(ref, side, sq)), 2) for side in (shogi.BLACK, shogi.WHITE)]
        ours, theirs = counts[ref.turn], counts[1 - ref.turn]
        total += w[F.OFF_KS + ((t * 9 + z) * 3 + ours) * 3 + theirs]
    return total


def distance(a, b):
    """Chebyshev distance of two python-shogi squares."""
    return max(abs(a // 9 - b // 9), abs(a % 9 - b % 9))


def square_effects(ref):
    """(square, sign, n, kings) per square and side: n = that side's attackers but kings, sign + for the side to
    move and - for the other, kings = [(block, king colour, king square)]: block 0 the side's own king, 1 the
    other king, missing kings left out."""
    for t in range(81):
        for colour in (shogi.BLACK, shogi.WHITE):
            n = len(attackers_but_kings(ref, colour, t))
            pairs = ((0, colour), (1, 1 - colour))
            kings = [(b, kc, ref.king_squares[kc]) for b, kc in pairs if ref.king_squares[kc] is not None]
            yield t, 1.0 if colour == ref.turn else -1.0, n, kings


def reference_ef(sfen, w):
    """The EF term from its definition over python-shogi: every (attacker other than a king, attacked square)
    pair adds w[EF, 0, distance to the attacker's own king] + w[EF, 1, distance to the other king], + for the
    side to move's pieces, - for the other side's."""
    return sum(
        sign * n * w[F.OFF_EF + block * F.EF_DIST + distance(ksq, t)]
        for t, sign, n, kings in square_effects(shogi.Board(sfen))
        for block, _, ksq in kings
    )


def reference_em(sfen, w):
    """The EM term from its definition: the j-th effect (j >= 2; kings' effects left out) of one side on a square
    adds w[EM, 0, distance to that side's king, rank] + w[EM, 1, distance to the other king, rank], rank 0 for
    j = 2 and 1 after, + for the side to move and - for the other side."""
    return sum(
        sign * w[F.OFF_EM + (block * F.EF_DIST + distance(ksq, t)) * F.EM_RANK + (0 if j == 2 else 1)]
        for t, sign, n, kings in square_effects(shogi.Board(sfen))
        for j in range(2, n + 1)
        for block, _, ksq in kings
    )


# python-shogi piece type -> ours (usi_engine.shogi.layout: P L N S B R G K +P +L +N +S H D = 1..14)
OUR_TYPE = {1: 1, 2: 2, 3: 3, 4: 4, 5: 7, 6: 5, 7: 6, 9: 9, 10: 10, 11: 11, 12: 12, 13: 13, 14: 14}


def reference_pe(sfen, w):
    """The PE term from its definition: every board piece but a king adds w[PE, whose (0 the side to move's),
    type, min(attackers of its own side, 2), min(attackers of the other side, 2)], kings counted as attackers."""
    ref = shogi.Board(sfen)
    stm = ref.turn
    total = 0.0
    for t in range(81):
        piece = ref.piece_at(t)
        if piece is None or piece.piece_type == shogi.KING:
            continue
        c = piece.color
        ours = min(len(ref.attackers(c, t)), 2)
        theirs = min(len(ref.attackers(1 - c, t)), 2)
        kind = F.PE_TYPE[OUR_TYPE[piece.piece_type]]
        total += w[F.OFF_PE + (((0 if c == stm else 1) * F.PE_TYPES + kind) * F.PE_CAP + ours) * F.PE_CAP + theirs]
    return total


def reference_kz(sfen, w):
    """The KZ term from its definition: each on-board neighbour of each king (the side to move's first) adds
    w[KZ, king, zone square seen from the mover, occupant (0 empty, 1 the king's side, 2 the other side),
    min(defenders of the king's side but kings, 2)]."""
    ref = shogi.Board(sfen)
    total = 0.0
    for t, colour, sq, z in zone_squares(ref):
        if sq == ref.king_squares[colour]:
            continue
        piece = ref.piece_at(sq)
        occ = 0 if piece is None else 1 if piece.color == colour else 2
        guards = min(len(attackers_but_kings(ref, colour, sq)), 2)
        total += w[F.OFF_KZ + ((t * 9 + z) * 3 + occ) * 3 + guards]
    return total


def reference_kpos(sfen, w):
    """The KPOS term: each king adds w[KPOS, king (the side to move's first), its square seen from the mover]."""
    ref = shogi.Board(sfen)
    stm = ref.turn
    total = 0.0
    for t, colour in enumerate((stm, 1 - stm)):
        ksq = ref.king_squares[colour]
        if ksq is not None:
            rank, col = divmod(ksq, 9)
            ours = (8 - col) * 9 + rank  # file (9 - col) - 1, rank - 1
            total += w[F.OFF_KPOS + t * 81 + (ours if stm == shogi.BLACK else 80 - ours)]
    return total


def block_weights(block, seed):
    """Random weights in one block, zero elsewhere."""
    lo, size = BLOCKS[block]
    w = np.zeros(F.N_WEIGHTS)
    w[lo : lo + size] = np.random.default_rng(seed).normal(0.0, 40.0, size)
    return w


BLOCKS = F.KING_BLOCKS


@pytest.mark.parametrize(
    "block, reference",
    [("em", reference_em), ("pe", reference_pe), ("kz", reference_kz), ("kpos", reference_kpos)],
)
def test_block_terms_equal_the_reference(block, reference):
    w = block_weights(block, 13)
    for s in SFENS:
        assert evaluate(Board(s).pos, w) == pytest.approx(reference(s, w), abs=1e-9), s


def test_ks_term_equals_the_reference():
    w = block_weights("ks", 5)
    for s in SFENS:
        assert evaluate(Board(s).pos, w) == pytest.approx(reference_ks(s, w), abs=1e-9), s


@pytest.mark.parametrize("block", list(BLOCKS))
def test_gradient_equals_finite_differences(block):
    """Every weight of the block: central finite differences equal the emitted coefficient (0 when inactive);
    KS has 4..18 active entries (one per on-board zone square), KZ 3..16 (one per on-board neighbour), KPOS 2,
    the others at least one; indices unique."""
    lo, hi = BLOCKS[block][0], BLOCKS[block][0] + BLOCKS[block][1]
    w = np.random.default_rng(6).normal(0.0, 30.0, F.N_WEIGHTS)
    idx, coef = feature_buffers()
    h = 0.25
    for s in SFENS[:30]:
        pos = Board(s).pos
        _, n = eval_features(pos, w, idx, coef)
        grad = dict(zip(idx[:n].tolist(), coef[:n].tolist()))
        assert len(grad) == n
        active = [k for k in grad if lo <= k < hi]
        expected = {"ks": range(4, 19), "kz": range(3, 17), "kpos": range(2, 3)}
        assert len(active) in expected[block] if block in expected else active
        for k in range(lo, hi):
            wp, wm = w.copy(), w.copy()
            wp[k] += h
            wm[k] -= h
            fd = (evaluate(pos, wp) - evaluate(pos, wm)) / (2 * h)
            assert fd == pytest.approx(grad.get(k, 0.0), abs=1e-6)


def test_king_terms_are_symmetric_under_rotation_with_colours_swapped():
    from tests.shogi_eval.test_shogi_eval import flip_sfen

    w = sum(block_weights(block, 20 + i) for i, block in enumerate(BLOCKS))
    for s in SFENS[:60]:
        assert evaluate(Board(s).pos, w) == pytest.approx(evaluate(Board(flip_sfen(s)).pos, w), abs=1e-9)


def test_ef_term_equals_the_reference():
    w = block_weights("ef", 9)
    for s in SFENS:
        assert evaluate(Board(s).pos, w) == pytest.approx(reference_ef(s, w), abs=1e-9), s


def test_king_terms_without_a_king():
    """A mate problem has no Black king: the terms of the missing king are left out, not read off the table."""
    s = "4k4/9/4P4/9/9/9/9/9/9 b G2r2b3g4s4n4l17p 1"
    w = sum(block_weights(block, 30 + i) for i, block in enumerate(BLOCKS))
    references = (reference_ks, reference_ef, reference_em, reference_pe, reference_kz, reference_kpos)
    expected = sum(reference(s, w) for reference in references)
    assert evaluate(Board(s).pos, w) == pytest.approx(expected, abs=1e-9)

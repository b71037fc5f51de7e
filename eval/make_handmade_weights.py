"""Generate the hand-made weights usi_engine/shogi_eval/weights/handmade.npz (`EvalFile handmade`; the engine's
default from 2026-11-25 to 2026-11-29 and the start of the learning run that made today's default,
make_default_weights.py): the learned weights plus hand-made king terms.

handmade = usi_engine/shogi_eval/weights/learned.npz (self-play run learn-9, checkpoint v16: material, KP and PP
learned from the material-only start; docs/learning.md) + three hand-made king terms, nothing else changed:

1. KP term (the positive control of the 2026-11-21 learning runs, docs/experiments/2026-11-21-learning-baseline-factor-
   lambda.md): for each king, a silver or a gold-moving piece of its own side at Chebyshev distance 1 from it
   +40 cp, at distance 2 +20 cp; any piece of the other side there -24 / -12 cp. From the side to move's view:
   added to its own king's KP rows, subtracted (with the sides swapped) in the other king's rows.
2. KS block (docs/eval.md "King safety"): for each square of a king's 3x3 zone, the number of pieces of each
   side attacking it (0, 1, 2+) is worth DEFEND cp per defender of the king's own side and ATTACK cp per
   attacker of the other side on the king's own square, half that on the eight neighbours. The numbers follow
   the shape of YaneuraOu's hand-made "kiki" evaluation (attacks weigh more than defences, value falling with
   the distance to the king); its notes credit that family of terms with about +200 Elo over material alone.
3. EF and EM blocks (docs/eval.md "Effects"): every effect of a piece is worth EF_OWN / (d + 1) cp at
   Chebyshev distance d from its own king and EF_OTHER / (d + 1) cp at distance d from the other king; the
   second effect of one side on a square counts EM_SECOND of that, the third and later EM_LATER: the weights
   of YaneuraOu's MATERIAL_LEVEL 4 (85 and 98 per effect at distance 0, falling as 1 / (d + 1); m effects on a
   square worth 6365 - 5341 * 0.8525^(m - 1) in units of 1/1024 of one, i.e. 1, 0.77, 0.66, 0.56, ... more).
4. PE block (docs/eval.md "Piece effects"): a board piece other than a king with its own side's effects on
   its square gains PE_DEFENDED[min(n, 2)] of its material value, with the other side's effects loses
   PE_ATTACKED[min(n, 2)] of it: YaneuraOu's MATERIAL_LEVEL 7 numbers (33 and 43, 113 and 122 per 4096).

Measured against YaneuraOu's material edition at equal nodes and at equal time, docs/strength.md.

Run: ``python -m eval.make_handmade_weights [output.npz]``.
"""

import sys

import numpy as np

from usi_engine.shogi import layout as L
from usi_engine.shogi_eval import features as F
from usi_engine.shogi_eval.evalfile import HANDMADE_PATH, LEARNED_PATH, read_weights, save_weights

KP_OWN = {1: 40.0, 2: 20.0}  # own silver / gold-mover at king distance 1, 2
KP_ENEMY = {1: -24.0, 2: -12.0}  # any enemy piece at king distance 1, 2
OWN_KINDS = (F.KIND[L.SILVER], F.KIND[L.GOLD])  # the gold kind includes the promoted minors
KS_DEFEND = 68.0  # cp per defender of the king's own square (capped count 0, 1, 2+)
KS_ATTACK = 96.0  # cp per attacker of the king's own square
KS_RING = 0.5  # weight of the eight neighbour squares relative to the king's square
EF_OWN = 85.0  # cp per effect at distance 0 from the piece's own king (divided by d + 1 at distance d)
EF_OTHER = 98.0  # cp per effect at distance 0 from the other king
EM_SECOND = 0.77  # value of a second effect on a square relative to the first
EM_LATER = 0.62  # the third and later (YaneuraOu's 0.66, 0.56, 0.48, ... pooled)
PE_DEFENDED = (0.0, 33 / 4096, 43 / 4096)  # share of a piece's value per own-effect count 0, 1, 2+
PE_ATTACKED = (0.0, 113 / 4096, 122 / 4096)  # share lost per enemy-effect count 0, 1, 2+
ONE_PER_KIND = (L.PAWN, L.LANCE, L.KNIGHT, L.SILVER, L.BISHOP, L.ROOK, L.GOLD, L.HORSE, L.DRAGON)


def king_safety_terms(material):
    """The hand-made king and effect terms as a flat weight vector (zero outside KP, KS, EF, EM and PE); the
    PE values are shares of the board piece values in `material` (the material block of a weight vector)."""
    w = np.zeros(F.N_WEIGHTS, dtype=np.float64)
    for king in range(F.N_SQ):
        for sq in range(F.N_SQ):
            dist = max(abs(sq // 9 - king // 9), abs(sq % 9 - king % 9))
            if dist not in KP_OWN:
                continue
            for pt in ONE_PER_KIND:
                for rel in (0, 1):
                    if rel == 1:
                        v = KP_ENEMY[dist]
                    elif F.KIND[pt] in OWN_KINDS:
                        v = KP_OWN[dist]
                    else:
                        continue
                    # our king's rows: our defenders, their attackers; their king's rows: the same, sides swapped
                    w[F.OFF_KP + king * F.FE_END + F.board_bp(rel, pt, sq)] += v
                    w[F.OFF_KP + (F.N_SQ + king) * F.FE_END + F.board_bp(1 - rel, pt, sq)] -= v
    ks = np.zeros((2, F.KS_ZONE, F.KS_CAP, F.KS_CAP))
    counts = np.arange(F.KS_CAP, dtype=np.float64)
    for z in range(F.KS_ZONE):
        scale = 1.0 if z == F.KS_ZONE // 2 else KS_RING
        ks[0, z] = scale * (KS_DEFEND * counts[:, None] - KS_ATTACK * counts[None, :])  # our king
        ks[1, z] = scale * (KS_ATTACK * counts[:, None] - KS_DEFEND * counts[None, :])  # their king
    w[F.OFF_KS : F.OFF_KS + F.N_KS] = ks.ravel()
    d = np.arange(F.EF_DIST, dtype=np.float64)
    ef = np.stack([EF_OWN / (d + 1.0), EF_OTHER / (d + 1.0)])
    w[F.OFF_EF : F.OFF_EF + F.N_EF] = ef.ravel()
    w[F.OFF_EM : F.OFF_EM + F.N_EM] = (ef[:, :, None] * (np.array([EM_SECOND, EM_LATER]) - 1.0)).ravel()
    pe = np.zeros((2, F.PE_TYPES, F.PE_CAP, F.PE_CAP))
    for pt in range(1, len(F.PE_TYPE)):
        if F.PE_TYPE[pt] < 0:
            continue
        share = np.array(PE_DEFENDED)[:, None] - np.array(PE_ATTACKED)[None, :]
        pe[0, F.PE_TYPE[pt]] = material[pt] * share  # the side to move's piece
        pe[1, F.PE_TYPE[pt]] = -material[pt] * share  # the other side's, seen from the side to move
    w[F.OFF_PE : F.OFF_PE + F.N_PE] = pe.ravel()
    return w


def handmade_weights(learned_path=LEARNED_PATH):
    """(weight vector, value_scale) of the hand-made evaluation: the learned weights plus king_safety_terms()
    (its piece-effect values from the learned material)."""
    learned, meta = read_weights(learned_path)
    if np.any(learned[F.OFF_KS :]):
        raise ValueError(f"{learned_path}: has a king-safety block already; the hand-made one would be added twice")
    return learned + king_safety_terms(learned[F.OFF_MATERIAL : F.OFF_MATERIAL + F.N_MATERIAL]), float(
        meta.get("value_scale", 1.0)
    )


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    out = argv[0] if argv else HANDMADE_PATH
    w, scale = handmade_weights()
    path = save_weights(
        out,
        w,
        value_scale=scale,
        source="eval/make_handmade_weights.py: usi_engine/shogi_eval/weights/learned.npz (learn-9 v16) + hand-made "
        "king safety",
    )
    print(f"wrote {path}")


if __name__ == "__main__":
    main()

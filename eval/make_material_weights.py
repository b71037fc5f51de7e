"""Generate the shipped material-only weights usi_engine/shogi_eval/weights/material.npz: relations zero.

Board values (centipawns): pawn 100, lance 300, knight 350, silver 500, gold 550, bishop 800,
rook 1000, promoted pawn 600, promoted lance 580, promoted knight 580, promoted silver 570,
horse 1050, dragon 1250. A piece in hand is worth 10 % more than on the board (customary: it can be
dropped anywhere). KP and PP weights are zero, so the value is exactly the material balance.

These are the start of every learning run (configs/learn.toml `start_weights`);
usi_engine/shogi_eval/weights/learned.npz is what a learning run made of them (docs/learning.md), handmade.npz
adds hand-made king safety to that (eval/make_handmade_weights.py), and the engine's default is handmade.npz
fine-tuned by self-play (eval/make_default_weights.py).

Run: ``python -m eval.make_material_weights [output.npz]``.
"""

import sys

import numpy as np

from usi_engine.shogi import layout as L
from usi_engine.shogi_eval import features as F
from usi_engine.shogi_eval.evalfile import MATERIAL_PATH, save_weights

BOARD_VALUES = {
    L.PAWN: 100,
    L.LANCE: 300,
    L.KNIGHT: 350,
    L.SILVER: 500,
    L.GOLD: 550,
    L.BISHOP: 800,
    L.ROOK: 1000,
    L.PRO_PAWN: 600,
    L.PRO_LANCE: 580,
    L.PRO_KNIGHT: 580,
    L.PRO_SILVER: 570,
    L.HORSE: 1050,
    L.DRAGON: 1250,
}
HAND_BONUS = 1.10


def material_weights():
    """The flat float64 weight vector of the material-only evaluation."""
    w = np.zeros(F.N_WEIGHTS, dtype=np.float64)
    for pt, v in BOARD_VALUES.items():
        w[F.OFF_MATERIAL + pt] = v
        if pt <= L.GOLD:
            w[F.OFF_MATERIAL + F.MAT_HAND + pt] = round(v * HAND_BONUS)
    return w


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    out = argv[0] if argv else MATERIAL_PATH
    path = save_weights(out, material_weights(), value_scale=1.0, source="eval/make_material_weights.py")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()

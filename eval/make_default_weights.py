"""Generate the engine's default weights usi_engine/shogi_eval/weights/default.npz: checkpoint v64 of the self-play
run runs/learn-default, written with its provenance.

The run (`python -m learn run configs/learn-default.toml`, 2,048 self-play games, 2026-11-29) started from the
hand-made weights (handmade.npz, make_handmade_weights.py) and fine-tuned material, KP through its two factors and
every king block (KS, EF, EM, PE, and KZ and KPOS from zero) by search bootstrapping. It replaced the hand-made file
as the default by the rule set before the result (docs/learning.md "Past the hand-made weights"): +63 [+32, +96]
Elo against it at 100,000 nodes over 400 games, and not worse at byoyomi 1 s over 200 games.

The weights are the checkpoint's, bit for bit; only the metadata changes (source, run and checkpoint named).

Run: ``python -m eval.make_default_weights [output.npz]``.
"""

import sys
from pathlib import Path

from usi_engine.shogi_eval.evalfile import DEFAULT_PATH, read_weights, save_weights

RUN = "runs/learn-default"
CHECKPOINT = 64
ROOT = Path(__file__).resolve().parent.parent  # the repository: the run folder is committed beside eval/


def checkpoint_path(root=ROOT):
    """The committed checkpoint the default is made of."""
    return Path(root) / RUN / "weights" / f"v{CHECKPOINT:06d}.npz"


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    out = argv[0] if argv else DEFAULT_PATH
    w, meta = read_weights(checkpoint_path())
    path = save_weights(
        out,
        w,
        value_scale=float(meta.get("value_scale", 1.0)),
        source=f"eval/make_default_weights.py: {RUN} v{CHECKPOINT} (configs/learn-default.toml from handmade.npz, "
        "search bootstrapping)",
        run=RUN,
        checkpoint=CHECKPOINT,
        games=int(meta["games"]),
    )
    print(f"wrote {path}")


if __name__ == "__main__":
    main()

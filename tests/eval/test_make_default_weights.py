"""The shipped default weights: checkpoint v64 of runs/learn-default, started from the hand-made file,
reproducible from the committed checkpoint."""

import numpy as np

from eval.make_default_weights import CHECKPOINT, RUN, checkpoint_path, main
from usi_engine.shogi_eval import features as F
from usi_engine.shogi_eval.evalfile import DEFAULT_PATH, HANDMADE_PATH, read_weights


def test_regenerating_gives_the_shipped_default_exactly(tmp_path):
    main([str(tmp_path / "default.npz")])
    regenerated, meta = read_weights(tmp_path / "default.npz")
    shipped, shipped_meta = read_weights(DEFAULT_PATH)
    assert np.array_equal(regenerated, shipped) and meta["sha256"] == shipped_meta["sha256"]
    assert shipped_meta["run"] == RUN and shipped_meta["checkpoint"] == CHECKPOINT and shipped_meta["games"] == 2048


def test_the_default_is_the_checkpoint_of_a_run_from_the_handmade_file():
    """The run's checkpoint 0 is the hand-made file; the default moved every block the run learned away from it
    and left the frozen PP block alone."""
    run = checkpoint_path().parent
    start, _ = read_weights(run / "v000000.npz")
    handmade, _ = read_weights(HANDMADE_PATH)
    assert np.array_equal(start, handmade)
    default, _ = read_weights(DEFAULT_PATH)
    blocks = {
        "material": (F.OFF_MATERIAL, F.N_MATERIAL),
        "kp": (F.OFF_KP, F.N_KP),
        "ks": (F.OFF_KS, F.N_KS),
        "ef": (F.OFF_EF, F.N_EF),
        "em": (F.OFF_EM, F.N_EM),
        "pe": (F.OFF_PE, F.N_PE),
        "kz": (F.OFF_KZ, F.N_KZ),
        "kpos": (F.OFF_KPOS, F.N_KPOS),
    }
    for name, (lo, n) in blocks.items():
        assert not np.array_equal(default[lo : lo + n], handmade[lo : lo + n]), name
    assert np.array_equal(default[F.OFF_PP : F.OFF_PP + F.N_PP], handmade[F.OFF_PP : F.OFF_PP + F.N_PP])
    assert np.all(default[1:8] > 0)  # board piece values stay positive

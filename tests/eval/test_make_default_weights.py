"""The shipped default weights: checkpoint v64 of runs/learn-default, started from the hand-made file,
reproducible from the committed checkpoint."""

import numpy as np

from eval.make_default_weights import CHECKPOINT, RUN, checkpoint_path, main
from usi_engine.shogi_eval.evalfile import BLOCKS, DEFAULT_PATH, HANDMADE_PATH, _split, read_weights


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
    learned, made = _split(default), _split(handmade)  # the blocks as stored, by name
    for name in BLOCKS:
        assert np.array_equal(learned[name], made[name]) == (name == "pp"), name
    assert np.all(default[1:8] > 0)  # board piece values stay positive

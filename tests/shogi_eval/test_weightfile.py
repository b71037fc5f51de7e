"""Weight files: round trip, shipped default, and clear errors on every kind of bad file."""

import json

import numpy as np
import pytest

from eval.make_material_weights import BOARD_VALUES, material_weights
from usi_engine.shogi_eval import features as F
from usi_engine.shogi_eval.evalfile import (
    BLOCKS,
    DEFAULT_PATH,
    HANDMADE_PATH,
    LEARNED_PATH,
    MATERIAL_PATH,
    load_weights,
    read_weights,
    save_weights,
    weights_location,
)
from usi_engine.weightfile import WeightFileError


def sparse_random_weights(seed=0):
    rng = np.random.default_rng(seed)
    w = np.zeros(F.N_WEIGHTS)
    k = rng.integers(0, F.N_WEIGHTS, 5000)
    w[k] = rng.normal(0, 50, k.size).astype(np.float32)
    w[: F.N_MATERIAL] = material_weights()[: F.N_MATERIAL]
    w[F.OFF_EF :] = rng.normal(0, 50, F.N_WEIGHTS - F.OFF_EF).astype(np.float32)  # the small last blocks too
    return w


def test_round_trip(tmp_path):
    w = sparse_random_weights()
    path = save_weights(tmp_path / "w.npz", w, source="test")
    loaded, meta = read_weights(path)
    assert loaded.dtype == np.float64 and loaded.shape == (F.N_WEIGHTS,)
    assert np.array_equal(loaded, w)
    assert meta["feature_set"] == F.FEATURE_SET and meta["version"] == F.FEATURE_VERSION
    assert meta["source"] == "test"
    assert path.stat().st_size < 200_000  # float32 + compression keeps sparse files small


def test_value_scale_multiplies_stored_values(tmp_path):
    w = sparse_random_weights(1)
    path = save_weights(tmp_path / "s.npz", w, value_scale=4.0)
    with np.load(path) as z:
        assert np.array_equal(z["material"], (w[: F.N_MATERIAL] / 4.0).astype(np.float32))
    assert np.allclose(load_weights(path), w)


def test_material_file_is_material_only_and_small():
    w, meta = read_weights(MATERIAL_PATH)
    assert np.array_equal(w, material_weights())
    assert MATERIAL_PATH.stat().st_size < 50_000
    assert w[1] == 100 and w[2] == 300 and w[3] == 350 and w[4] == 500
    assert w[7] == 550 and w[5] == 800 and w[6] == 1000 and w[13] == 1050 and w[14] == 1250
    assert all(550 <= w[t] <= 600 for t in (9, 10, 11, 12))
    for pt in range(1, 8):
        assert w[F.MAT_HAND + pt] > BOARD_VALUES[pt]
    assert not np.any(w[F.N_MATERIAL :])


def test_default_file_loads_and_is_a_small_shipped_asset():
    w, meta = read_weights(DEFAULT_PATH)
    assert np.array_equal(w, load_weights(None)) and meta["source"]
    assert DEFAULT_PATH.stat().st_size < 2_000_000
    assert np.all(w[1:8] > 0)  # board piece values stay positive whatever was learned


def test_shipped_names_and_paths_resolve(tmp_path, monkeypatch):
    assert weights_location(None) == weights_location("") == weights_location("default") == DEFAULT_PATH
    assert weights_location("material") == MATERIAL_PATH and weights_location("learned") == LEARNED_PATH
    assert weights_location("handmade") == HANDMADE_PATH
    assert np.array_equal(load_weights("material"), material_weights())
    monkeypatch.chdir(tmp_path)
    save_weights("material.npz", sparse_random_weights())  # a local file named like a shipped one
    assert np.array_equal(load_weights("material.npz"), sparse_random_weights())
    with pytest.raises(WeightFileError, match="nosuch: no such file"):
        load_weights("nosuch")


def rewrite(src, dst, drop=(), meta_update=None, arrays_update=None, keep_checksum=True):
    """Copy a weight file with changes, to fabricate bad files."""
    with np.load(src) as z:
        arrays = {k: z[k] for k in z.files}
    meta = json.loads(str(arrays["meta"][()]))
    meta.update(meta_update or {})
    arrays.update(arrays_update or {})
    arrays["meta"] = np.array(json.dumps(meta))
    for k in drop:
        arrays.pop(k)
    with open(dst, "wb") as f:
        np.savez_compressed(f, **arrays)
    return dst


def expect_error(path, *words):
    with pytest.raises(WeightFileError) as e:
        load_weights(path)
    msg = str(e.value)
    assert str(path) in msg
    for word in words:
        assert word in msg, msg


@pytest.fixture()
def good(tmp_path):
    return save_weights(tmp_path / "good.npz", sparse_random_weights(2))


def test_missing_file(tmp_path):
    expect_error(tmp_path / "nope.npz", "no such file")


def test_not_an_npz(tmp_path):
    p = tmp_path / "text.npz"
    p.write_text("this is not a zip archive\n")
    expect_error(p, "not a readable .npz")


def test_truncated_file(tmp_path, good):
    p = tmp_path / "cut.npz"
    p.write_bytes(good.read_bytes()[:2000])
    expect_error(p, "not a readable .npz")


@pytest.mark.parametrize("key", ["meta", *BLOCKS])
def test_missing_key(tmp_path, good, key):
    expect_error(rewrite(good, tmp_path / "m.npz", drop=[key]), f"missing key '{key}'")


def test_wrong_shape(tmp_path, good):
    bad = rewrite(good, tmp_path / "shape.npz", arrays_update={"material": np.zeros(23, np.float32)})
    expect_error(bad, "'material' has shape (23,)")


def test_wrong_version(tmp_path, good):
    expect_error(rewrite(good, tmp_path / "v.npz", meta_update={"version": 99}), "version 99")


def test_wrong_feature_set(tmp_path, good):
    expect_error(rewrite(good, tmp_path / "f.npz", meta_update={"feature_set": "kpp"}), "feature set 'kpp'")


def test_bad_value_scale(tmp_path, good):
    expect_error(rewrite(good, tmp_path / "sc.npz", meta_update={"value_scale": 0}), "value_scale")


def test_checksum_mismatch(tmp_path, good):
    with np.load(good) as z:
        pp = z["pp"].copy()
    pp[12345] += 1.0
    expect_error(rewrite(good, tmp_path / "sum.npz", arrays_update={"pp": pp}), "checksum mismatch")


def test_metadata_not_json(tmp_path, good):
    with np.load(good) as z:
        arrays = {k: z[k] for k in z.files}
    arrays["meta"] = np.array("{not json")
    p = tmp_path / "meta.npz"
    with open(p, "wb") as f:
        np.savez_compressed(f, **arrays)
    expect_error(p, "not valid JSON")


def test_save_rejects_wrong_length(tmp_path):
    with pytest.raises(ValueError, match="shape"):
        save_weights(tmp_path / "x.npz", np.zeros(10))


@pytest.mark.parametrize("version", [1, 2, 3, 4])
def test_older_versions_load_with_their_missing_blocks_zero(tmp_path, good, version):
    """Files written before the KS block (version 1: material, kp, pp), the EF block (version 2: + ks), the EM
    and PE blocks (version 3: + ef) or the KZ and KPOS blocks (version 4: + em, pe) are the same evaluation
    with the blocks they lack zero; the checksum covers only the blocks of their version."""
    from usi_engine.shogi_eval.evalfile import VERSION_BLOCKS
    from usi_engine.weightfile import checksum

    names = VERSION_BLOCKS[version]
    with np.load(good) as z:
        arrays = {k: z[k] for k in z.files if k in names}
        meta = json.loads(str(z["meta"][()]))
    meta.update(version=version, sha256=checksum(arrays, names))
    old = tmp_path / f"v{version}.npz"
    with open(old, "wb") as f:
        np.savez_compressed(f, meta=np.array(json.dumps(meta)), **arrays)
    w = sparse_random_weights(2)
    w[{1: F.OFF_KS, 2: F.OFF_EF, 3: F.OFF_EM, 4: F.OFF_KZ}[version] :] = 0.0
    assert np.array_equal(load_weights(old), w)
    expect_error(rewrite(good, tmp_path / "wrong.npz", meta_update={"version": version}), "checksum mismatch")
    v9 = rewrite(good, tmp_path / "v9.npz", meta_update={"version": 9})
    expect_error(v9, "version 9", "expected one of 1, 2, 3, 4, 5")


def test_shipped_files_load_with_their_versions():
    """material and learned predate the KS block (version 1, KS zero); the hand-made file and the default carry
    king blocks."""
    for path in (LEARNED_PATH, MATERIAL_PATH):
        w, meta = read_weights(path)
        assert meta["version"] == 1 and not np.any(w[F.OFF_KS :])
    for path in (HANDMADE_PATH, DEFAULT_PATH):
        w, meta = read_weights(path)
        assert meta["version"] == F.FEATURE_VERSION and np.any(w[F.OFF_KS :])

"""Loaders, recipes, splits, generators and the processed-file format."""

import os

import numpy as np
import pytest
import scipy.sparse as sp

from dpcd.data import load_dataset, save_dataset
from dpcd.data.cli import register
from dpcd.data.loaders import load_raw
from dpcd.data.preprocess import RawData, apply_recipe, split
from dpcd.data.registry import get_entry
from dpcd.data.synthetic import generate
from test_data_formats import (adult_files, california_data, electricity_arff,
                               libsvm_text, nips_sparse, write_tree)

# The offline copies: ../shared/data, or DPCD_TEST_DATA (e.g. from a git worktree;
# not DPCD_DATA_MIRROR, which would redirect the download tests too).
SHARED = os.environ.get("DPCD_TEST_DATA") or os.path.join(
    os.path.dirname(__file__), "..", "..", "shared", "data")


def _raw(tmp_path, name, files):
    write_tree(str(tmp_path), files)
    return load_raw(get_entry(name), str(tmp_path))


def test_california_crlf_and_lf_give_same_data(tmp_path):
    a = _raw(tmp_path / "a", "california", {"cal_housing.data": california_data(crlf=True)})
    b = _raw(tmp_path / "b", "california", {"cal_housing.data": california_data(crlf=False)})
    np.testing.assert_array_equal(a.X, b.X)
    assert a.X.shape == (40, 8)


def test_wrong_field_count_names_file_and_line(tmp_path):
    lines = california_data(crlf=False).decode().split("\n")
    lines[4] += ",1.0"
    with pytest.raises(ValueError, match=r"california.*cal_housing.data.*line 5"):
        _raw(tmp_path / "a", "california", {"cal_housing.data": "\n".join(lines).encode()})
    lines = california_data(crlf=False).decode().split("\n")
    lines[6] = ",".join(lines[6].split(",")[:-1])
    with pytest.raises(ValueError, match=r"line 7 has fewer than 9 fields"):
        _raw(tmp_path / "b", "california", {"cal_housing.data": "\n".join(lines).encode()})


def test_nan_and_inf_name_line_and_column(tmp_path):
    lines = california_data(crlf=False).decode().split("\n")
    fields = lines[2].split(",")
    fields[3] = "nan"
    lines[2] = ",".join(fields)
    with pytest.raises(ValueError, match=r"line 3, column 'totalRooms'"):
        _raw(tmp_path / "a", "california", {"cal_housing.data": "\n".join(lines).encode()})
    text = electricity_arff().decode().replace("0.0,", "inf,", 1)
    with pytest.raises(ValueError, match="non-finite|not a number"):
        _raw(tmp_path / "b", "electricity", {"electricity.arff": text.encode()})


def test_truncated_or_corrupt_file(tmp_path):
    data = electricity_arff()
    with pytest.raises(ValueError, match="electricity"):
        _raw(tmp_path / "a", "electricity", {"electricity.arff": data[: len(data) // 2 - 7]})
    with pytest.raises(ValueError, match="electricity"):
        _raw(tmp_path / "b", "electricity", {"electricity.arff": b"\x00\xff" * 100})


def test_electricity_arff_labels(tmp_path):
    raw = _raw(tmp_path, "electricity", {"electricity.arff": electricity_arff(crlf=True)})
    assert raw.X.shape == (30, 8) and raw.feature_names[1] == "day"
    assert (raw.y == 1).sum() == 10  # every third row is UP
    bad = electricity_arff().decode().replace("{UP,DOWN}", "{UP,DOWN,FLAT}")
    bad = bad.replace(",UP\n", ",FLAT\n", 1)
    with pytest.raises(ValueError, match=r"label 'FLAT' not in"):
        _raw(tmp_path / "b", "electricity", {"electricity.arff": bad.encode()})


@pytest.mark.parametrize("labels", [["0", "1"], ["-1", "+1"], ["-1", "1"]])
def test_libsvm_labels_01_or_pm1(tmp_path, labels):
    raw = _raw(tmp_path, "phishing", {"phishing": libsvm_text(20, 68, labels)})
    assert set(np.unique(raw.y)) == {-1.0, 1.0} and raw.X.shape[1] == 68


def test_libsvm_label_outside_set(tmp_path):
    with pytest.raises(ValueError, match=r"phishing.*label 2.0"):
        _raw(tmp_path, "phishing", {"phishing": libsvm_text(20, 68, ["0", "1", "2"])})


def test_adult_test_file_quirks_and_one_hot(tmp_path):
    data, test = adult_files()
    raw = _raw(tmp_path, "adult", {"adult.data": data, "adult.test": test})
    assert raw.X.shape[0] == 40 and raw.X_test.shape[0] == 20
    assert raw.X.shape[1] == raw.X_test.shape[1]
    assert set(np.unique(raw.y_test)) == {-1.0, 1.0}  # "<=50K." / ">50K." parsed
    assert "workclass=State-gov" in raw.feature_names
    # '?' imputed with the most frequent training value: one indicator per block.
    block = [j for j, n in enumerate(raw.feature_names) if n.startswith("workclass=")]
    assert np.all(raw.X[:, block].sum(axis=1) == 1)
    assert "categorical_imputation" in raw.nonprivate_inputs


def test_nips_sparse_binary_stays_sparse(tmp_path):
    data, labels = nips_sparse()
    raw = _raw(tmp_path, "dorothea", {"dorothea_train.data": data,
                                      "dorothea_train.labels": labels})
    assert sp.issparse(raw.X) and raw.X.shape == (20, 100000)
    parts, meta = apply_recipe(raw, "raw", "dorothea")
    assert sp.issparse(parts["train"][0]) and parts["train"][0].shape[1] < 60
    assert meta["dropped_columns"]["names"][0] == "f60" or meta["dropped_columns"]


def test_constant_column_dropped_with_warning(capsys):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((20, 4))
    X[:, 1] = 0.0
    X[:, 2] = 3.0
    raw = RawData(X, rng.standard_normal(20), "regression", ["a", "b", "c", "d"])
    parts, meta = apply_recipe(raw, "raw", "toy")
    assert meta["feature_names"] == ["a", "c", "d"]  # all-zero dropped
    parts, meta = apply_recipe(raw, "standardize", "toy")
    assert meta["feature_names"] == ["a", "d"]  # constant dropped too: std 0
    assert np.all(np.isfinite(parts["train"][0]))
    assert "dropping" in capsys.readouterr().err


@pytest.mark.parametrize("n, n_test, sizes", [
    (11055, None, (6218, 2073, 2764)),      # Phishing, DP-SCD App. E
    (32561, 16281, (24420, 8141, 16281)),   # Adult
])
def test_dpscd_split_sizes(n, n_test, sizes):
    X = np.arange(n, dtype=float)[:, None]
    test = (np.zeros((n_test, 1)), np.ones(n_test)) if n_test else (None, None)
    raw = RawData(X, np.ones(n), "binary", ["x"], test[0], test[1])
    parts, desc = split(raw, "dpscd", seed=0)
    assert tuple(parts[k][0].shape[0] for k in ("train", "val", "test")) == sizes
    again, _ = split(raw, "dpscd", seed=0)
    np.testing.assert_array_equal(parts["val"][0], again["val"][0])  # seeded
    assert desc["seed"] == 0


def test_maxabs_unitnorm_centres_regression_labels():
    rng = np.random.default_rng(1)
    raw = RawData(rng.standard_normal((40, 3)) * [1, 10, 100], rng.random(40) + 5,
                  "regression", ["a", "b", "c"])
    parts, meta = apply_recipe(raw, "maxabs_unitnorm", "toy")
    X, y = parts["train"]
    assert np.allclose(np.linalg.norm(X, axis=1), 1) and abs(y.mean()) < 1e-12
    assert {"maxabs_scaling", "label_centering"} <= set(meta["nonprivate_inputs"])


def test_unknown_variant_and_dataset():
    raw = RawData(np.eye(3), np.ones(3), "regression", ["a", "b", "c"])
    with pytest.raises(ValueError, match="unknown variant 'nope'"):
        apply_recipe(raw, "nope", "toy")
    with pytest.raises(ValueError, match="unknown dataset 'nope'"):
        get_entry("nope")


@pytest.mark.parametrize("source", ["sparse_lasso", "log1", "log2"])
def test_generators_deterministic(source):
    a = generate(source, {"n_samples": 30, "n_features": 12, "seed": 5})
    b = generate(source, {"n_samples": 30, "n_features": 12, "seed": 5})
    c = generate(source, {"n_samples": 30, "n_features": 12, "seed": 6})
    assert a[0].tobytes() == b[0].tobytes() and a[1].tobytes() == b[1].tobytes()
    assert a[0].tobytes() != c[0].tobytes()
    if source == "sparse_lasso":
        assert np.count_nonzero(a[2]) == 10
    else:
        assert set(np.unique(a[1])) <= {-1.0, 1.0} and np.all(a[2] > 0)


def test_generator_defaults_match_papers():
    assert generate("log1")[0].shape == (1000, 100)
    assert get_entry("sparse_lasso")["defaults"]["n_features"] == 1000
    with pytest.raises(ValueError, match="unknown generator parameter"):
        generate("log1", {"n_rows": 3})


@pytest.mark.parametrize("sparse", [False, True])
def test_save_load_roundtrip(tmp_path, sparse):
    X = np.arange(12.0).reshape(4, 3)
    X = sp.csr_matrix(X) if sparse else X
    path = str(tmp_path / "d" / "v.npz")
    save_dataset(path, X, np.array([1.0, -1, 1, -1]), {"task": "binary"},
                 X_test=X, y_test=np.ones(4))
    ds = load_dataset(path)
    assert (ds.X.format == "csc") if sparse else ds.X.flags.f_contiguous
    assert ds.meta["n_samples"] == 4 and ds.X_val is None and ds.X_test.shape == (4, 3)
    assert os.listdir(tmp_path / "d") == ["v.npz"]  # no temporary file left


def test_cli_list(capsys):
    import argparse
    parser = argparse.ArgumentParser()
    register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["data", "list"])
    assert args.func(args) == 0
    out = capsys.readouterr().out
    for name in ["california", "electricity", "phishing", "adult", "yearpredictionmsd",
                 "madelon", "madelon_with_class", "mtp", "dorothea", "sparse_lasso", "log1",
                 "log2"]:
        assert f"\n{name}  [" in "\n" + out


@pytest.mark.skipif(not os.path.isdir(SHARED), reason="../shared/data not present")
def test_real_copies_load(tmp_path):
    cal = load_raw(get_entry("california"), os.path.join(SHARED, "california"))
    assert cal.X.shape == (20640, 8)
    ele = load_raw(get_entry("electricity"), os.path.join(SHARED, "electricity"))
    assert ele.X.shape == (45312, 8)
    assert ((ele.y == -1).sum(), (ele.y == 1).sum()) == (26075, 19237)


@pytest.mark.skipif(not os.path.isdir(SHARED), reason="../shared/data not present")
@pytest.mark.parametrize("source, n_features", [("adult", 105), ("adult_dpscd", 81)])
def test_adult_real_columns_and_dpscd_splits(source, n_features):
    """DP-SCD App. E: Adult has 81 coordinates, split 24 420 / 8 141 / 16 281.
    The reference code's encoding (adult_dpscd) gives 81; the full one-hot 105."""
    raw = load_raw(get_entry(source), os.path.join(SHARED, "adult"))
    assert raw.X.shape == (32561, n_features) and raw.X_test.shape == (16281, n_features)
    if source == "adult_dpscd":
        assert not any(n.startswith(("fnlwgt", "education=")) for n in raw.feature_names)
        assert "native-country=United-States" not in raw.feature_names  # most frequent
    parts, meta = apply_recipe(raw, "maxabs_unitnorm", source, seed=0)
    sizes = tuple(parts[k][0].shape for k in ("train", "val", "test"))
    assert sizes == ((24420, n_features), (8141, n_features), (16281, n_features))
    for X, y in parts.values():
        assert np.allclose(np.linalg.norm(X, axis=1), 1.0)
        assert set(np.unique(y)) == {-1.0, 1.0}  # classification labels stay +-1


@pytest.mark.skipif(not os.path.isdir(SHARED), reason="../shared/data not present")
def test_phishing_real_dpscd_splits():
    raw = load_raw(get_entry("phishing"), os.path.join(SHARED, "phishing"))
    parts, meta = apply_recipe(raw, "maxabs_unitnorm", "phishing", seed=0)
    sizes = tuple(parts[k][0].shape for k in ("train", "val", "test"))
    assert sizes == ((6218, 68), (2073, 68), (2764, 68))
    X = parts["train"][0]
    norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1))).ravel() if sp.issparse(X) \
        else np.linalg.norm(X, axis=1)
    assert np.allclose(norms, 1.0) and "label_centering" not in meta["nonprivate_inputs"]


def test_msd_standin_shape_and_official_division(tmp_path):
    """The stand-in has YearPredictionMSD's shape; its last 51 630 rows are the test
    file, so the DP-SCD split gives 347 786 / 115 929 / 51 630 (App. E)."""
    X, y, _, settings = generate("yearpredictionmsd_standin")
    assert X.shape == (515345, 90) and settings["n_test"] == 51630
    assert 1922 <= y.min() and y.max() <= 2011
    save_dataset(str(tmp_path / "generated.npz"), X, y,
                 {"generator": {"name": "msd_standin", "settings": settings}})
    del X
    raw = load_raw(get_entry("yearpredictionmsd_standin"), str(tmp_path))
    assert raw.X.shape == (463715, 90) and raw.X_test.shape == (51630, 90)
    parts, meta = split(raw, "dpscd", seed=0)
    assert tuple(parts[k][0].shape[0] for k in ("train", "val", "test")) == (347786, 115929, 51630)


def test_msd_standin_small_maxabs_unitnorm_centres_labels():
    X, y, _, settings = generate("yearpredictionmsd_standin",
                                 {"n_samples": 400, "n_features": 20, "n_test": 40, "seed": 1})
    again = generate("yearpredictionmsd_standin",
                     {"n_samples": 400, "n_features": 20, "n_test": 40, "seed": 1})
    assert X.tobytes() == again[0].tobytes()
    raw = RawData(X[:-40], y[:-40], "regression", [f"x{j}" for j in range(20)], X[-40:], y[-40:])
    parts, meta = apply_recipe(raw, "maxabs_unitnorm", "msd", seed=0)
    for Xp, _ in parts.values():
        assert np.allclose(np.linalg.norm(Xp, axis=1), 1.0)
    assert abs(parts["train"][1].mean()) < 1e-9  # centred with the training mean
    assert parts["test"][1].mean() == pytest.approx(y[-40:].mean() - meta["label_center"])
    with pytest.raises(ValueError, match="n_test"):
        generate("yearpredictionmsd_standin", {"n_samples": 30, "n_features": 5, "n_test": 30})

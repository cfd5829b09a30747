"""Read raw dataset files as distributed, with library parsers.

Each loader takes the registry entry and the raw directory
(``results/data/raw/<dataset>/``) and returns a
:class:`~dpcd.data.preprocess.RawData` with labels already mapped to
{-1, +1} for binary tasks. Errors name the dataset, the file and the line or
column at fault.
"""

import os

import numpy as np
import pandas as pd
import scipy.sparse as sp
from scipy.io import arff
from sklearn.datasets import load_svmlight_file

from .io import load_dataset
from .preprocess import RawData, check_finite, check_labels


def load_generated(entry, raw_dir):
    """Load ``generated.npz`` written by ``dpcd data generate``."""
    ds = load_dataset(os.path.join(raw_dir, "generated.npz"))
    names = [f"x{j}" for j in range(ds.X.shape[1])]
    generator = ds.meta.get("generator", {})
    X, y, X_test, y_test = ds.X, ds.y, None, None
    # A stand-in of a dataset distributed with a test file: its last n_test rows.
    n_test = int(generator.get("settings", {}).get("n_test") or 0)
    if n_test:
        X, X_test = X[:-n_test], X[-n_test:]
        y, y_test = y[:-n_test], y[-n_test:]
    return RawData(
        X=X,
        y=y,
        task=entry["task"],
        feature_names=names,
        X_test=X_test,
        y_test=y_test,
        notes={"generator": generator},
    )


LOADERS = {"generated": load_generated}


CALIFORNIA_RAW_COLUMNS = [
    "longitude", "latitude", "housingMedianAge", "totalRooms", "totalBedrooms",
    "population", "households", "medianIncome", "medianHouseValue",
]
CALIFORNIA_FEATURES = [
    "MedInc", "HouseAge", "AveRooms", "AveBedrms", "Population", "AveOccup",
    "Latitude", "Longitude",
]
ADULT_COLUMNS = [
    "age", "workclass", "fnlwgt", "education", "education-num", "marital-status",
    "occupation", "relationship", "race", "sex", "capital-gain", "capital-loss",
    "hours-per-week", "native-country", "income",
]
ADULT_CATEGORICAL = [
    "workclass", "education", "marital-status", "occupation", "relationship",
    "race", "sex", "native-country",
]


def _file(entry, raw_dir, role=None, index=0):
    """Path of the entry's file with ``role`` (or the ``index``-th file)."""
    files = entry["files"]
    if role is not None:
        files = [f for f in files if f.get("role") == role]
        if not files:
            return None
    spec = files[0] if role is not None else files[index]
    path = os.path.join(raw_dir, spec.get("extract_as") or spec["name"])
    if not os.path.exists(path):
        raise FileNotFoundError(f"dataset {entry['name']!r}: raw file missing: {path}")
    return path


def _where(entry, path):
    return f"dataset {entry['name']!r}, file {path}"


def _read_csv(entry, path, n_fields, **kwargs):
    """pandas.read_csv with errors naming the dataset, file and line."""
    try:
        df = pd.read_csv(path, header=None, **kwargs)
    except pd.errors.EmptyDataError as exc:
        raise ValueError(f"{_where(entry, path)}: no data rows (empty file)") from exc
    except pd.errors.ParserError as exc:
        raise ValueError(f"{_where(entry, path)}: malformed row: {exc}") from exc
    except (UnicodeDecodeError, EOFError, OSError) as exc:
        raise ValueError(f"{_where(entry, path)}: unreadable (corrupt?): {exc}") from exc
    if df.shape[0] == 0:
        raise ValueError(f"{_where(entry, path)}: no data rows")
    if df.shape[1] != n_fields:
        raise ValueError(
            f"{_where(entry, path)}: expected {n_fields} fields per row, got {df.shape[1]}"
        )
    # A row with too few fields comes back with a missing last field (the label).
    short = df.iloc[:, -1].isna().to_numpy()
    if short.any():
        i = int(np.flatnonzero(short)[0])
        line = i + 1 + int(kwargs.get("skiprows", 0) or 0)
        raise ValueError(
            f"{_where(entry, path)}: line {line} has fewer than {n_fields} fields"
        )
    return df


def _numeric(entry, path, df, names, skip=0):
    """Convert columns to float64, naming the line and column of a bad value."""
    out = np.empty((df.shape[0], len(names)))
    for j, col in enumerate(df.columns):
        values = pd.to_numeric(df[col], errors="coerce").to_numpy(dtype=np.float64)
        bad = np.isnan(values) & df[col].notna().to_numpy()
        bad |= df[col].isna().to_numpy()
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(
                f"{_where(entry, path)}: line {i + 1 + skip}, column {names[j]!r}: "
                f"not a number: {df[col].iloc[i]!r}"
            )
        out[:, j] = values
    return out


def _binary_labels(entry, path, labels, skip=0):
    """Map class labels to {-1, +1} using the entry's ``positive_label``/``classes``.

    Numeric labels from LIBSVM files may be 0/1 or -1/+1 (positive: 1).
    """
    labels = np.asarray(labels)
    if "classes" in entry:
        text = np.array([str(v).strip() for v in labels])
        ok = np.isin(text, [str(c) for c in entry["classes"]])
        if not ok.all():
            i = int(np.flatnonzero(~ok)[0])
            raise ValueError(
                f"{_where(entry, path)}: line {i + 1 + skip}: label {str(text[i])!r} not in "
                f"{entry['classes']}"
            )
        return np.where(text == str(entry["positive_label"]), 1.0, -1.0)
    values = np.asarray(labels, dtype=np.float64)
    seen = set(np.unique(values).tolist())
    if not (seen <= {0.0, 1.0} or seen <= {-1.0, 1.0}):
        bad = sorted(seen - {0.0, 1.0, -1.0}) or sorted(seen)
        i = int(np.flatnonzero(np.isin(values, bad))[0])
        raise ValueError(
            f"{_where(entry, path)}: line {i + 1 + skip}: label {float(values[i])} is not "
            f"0/1 or -1/+1"
        )
    return np.where(values > 0, 1.0, -1.0)


def load_california(entry, raw_dir):
    """StatLib ``cal_housing.data`` -> scikit-learn's 8 derived features, target/1e5."""
    path = _file(entry, raw_dir)
    # "nan" stays text (reported as not a number), not a missing last field.
    df = _read_csv(entry, path, len(CALIFORNIA_RAW_COLUMNS), keep_default_na=False,
                   na_values=[""])
    raw = _numeric(entry, path, df, CALIFORNIA_RAW_COLUMNS)
    c = dict(zip(CALIFORNIA_RAW_COLUMNS, raw.T))
    with np.errstate(divide="ignore", invalid="ignore"):
        X = np.column_stack([
            c["medianIncome"], c["housingMedianAge"],
            c["totalRooms"] / c["households"], c["totalBedrooms"] / c["households"],
            c["population"], c["population"] / c["households"],
            c["latitude"], c["longitude"],
        ])
    check_finite(X, _where(entry, path) + " (derived per-household features)",
                 CALIFORNIA_FEATURES)
    return RawData(X, c["medianHouseValue"] / 1e5, "regression", CALIFORNIA_FEATURES,
                   notes={"target_scale": 1e5})


def _arff_frame(entry, path):
    try:
        data, meta = arff.loadarff(path)
    except (ValueError, arff.ArffError, arff.ParseArffError, IndexError) as exc:
        raise ValueError(f"{_where(entry, path)}: malformed ARFF: {exc}") from exc
    except (UnicodeDecodeError, EOFError) as exc:
        raise ValueError(f"{_where(entry, path)}: unreadable (corrupt?): {exc}") from exc
    return pd.DataFrame(data), meta


def load_arff(entry, raw_dir):
    """An OpenML ARFF file (scipy.io.arff): numeric and numeric-coded nominal features."""
    path = _file(entry, raw_dir)
    df, meta = _arff_frame(entry, path)
    target = entry.get("target") or df.columns[-1]
    if target not in df.columns:
        raise ValueError(f"{_where(entry, path)}: no target attribute {target!r}")
    # ARFF data lines follow the header; report positions as data rows.
    y_col = df.pop(target)
    if y_col.dtype == object:
        y_col = y_col.map(lambda v: v.decode() if isinstance(v, bytes) else v)
    names = list(df.columns)
    for col in names:
        if df[col].dtype == object:
            # Nominal attributes coded as numbers (e.g. electricity's day 1-7).
            df[col] = df[col].map(lambda v: v.decode() if isinstance(v, bytes) else v)
            df[col] = df[col].replace("?", np.nan)
    X = _numeric(entry, path + " (data row numbers)", df, names, skip=0)
    if entry["task"] == "binary":
        y = _binary_labels(entry, path, y_col.to_numpy())
    else:
        y = pd.to_numeric(y_col, errors="coerce").to_numpy(dtype=np.float64)
    if entry.get("target_as_feature"):
        # The label also as the last column, as a source's authors loaded it
        # (madelon_with_class: DP-GCD's 501 madelon features, docs/method/dpgcd_problems.md).
        X = np.column_stack([X, y])
        names = names + [target]
    return RawData(X, y, entry["task"], names)


def _svmlight(entry, path):
    try:
        X, y = load_svmlight_file(path, n_features=entry.get("n_features"),
                                  dtype=np.float64)
    except (ValueError, OSError, EOFError) as exc:
        raise ValueError(f"{_where(entry, path)}: malformed LIBSVM file: {exc}") from exc
    if X.shape[0] == 0:
        raise ValueError(f"{_where(entry, path)}: no data rows")
    X = sp.csc_matrix(X)
    # Dense-by-nature data (MSD) is stored dense; sparse data stays sparse.
    if X.nnz > 0.5 * X.shape[0] * X.shape[1]:
        X = X.toarray()
    return X, y


def load_libsvm(entry, raw_dir):
    """LIBSVM/svmlight files (scikit-learn ``load_svmlight_file``; .bz2/.gz read directly)."""
    path = _file(entry, raw_dir, "train") or _file(entry, raw_dir)
    X, y = _svmlight(entry, path)
    test_path = _file(entry, raw_dir, "test")
    X_test = y_test = None
    if test_path is not None:
        X_test, y_test = _svmlight(entry, test_path)
    if entry["task"] == "binary":
        y = _binary_labels(entry, path, y)
        if y_test is not None:
            y_test = _binary_labels(entry, test_path, y_test)
    names = [f"f{j + 1}" for j in range(X.shape[1])]
    return RawData(X, y, entry["task"], names, X_test, y_test)


def _adult_frame(entry, path, skiprows):
    df = _read_csv(entry, path, len(ADULT_COLUMNS), skiprows=skiprows,
                   skipinitialspace=True, na_values=["?"], keep_default_na=False,
                   dtype=str)
    df.columns = ADULT_COLUMNS
    # adult.test labels carry a trailing dot (">50K."): strip it.
    df["income"] = df["income"].str.strip().str.rstrip(".")
    return df


def load_adult(entry, raw_dir):
    """UCI Adult: one-hot categoricals, missing ('?') -> most frequent training value.

    The test file's first line ("|1x3 Cross validator") is not data. Categories
    and imputation values come from the training file (non-private inputs).

    The entry's ``columns`` (optional) selects the encoding:

    * ``drop``: attributes left out entirely;
    * ``drop_first``: ``most_frequent`` leaves out the indicator of each
      categorical's most frequent training value (one indicator per attribute is
      redundant). DP-SCD's reference code (gdamaskinos/dpscd, ``preprocessor.py``)
      drops ``fnlwgt`` and ``education`` and encodes with pandas'
      ``get_dummies(drop_first=True)`` over categories sorted by frequency, which
      gives the paper's 81 coordinates (App. E); the full one-hot has 105.
    """
    options = entry.get("columns") or {}
    dropped = list(options.get("drop", []))
    unknown = sorted(set(dropped) - set(ADULT_COLUMNS[:-1]))
    if unknown:
        raise ValueError(f"dataset {entry['name']!r}: columns.drop names unknown "
                         f"attributes {unknown}; known: {ADULT_COLUMNS[:-1]}")
    drop_first = options.get("drop_first")
    if drop_first not in (None, "most_frequent"):
        raise ValueError(f"dataset {entry['name']!r}: columns.drop_first must be "
                         f"'most_frequent' or absent, got {drop_first!r}")
    train_path, test_path = _file(entry, raw_dir, "train"), _file(entry, raw_dir, "test")
    frames = {"train": _adult_frame(entry, train_path, 0),
              "test": _adult_frame(entry, test_path, 1)}
    train = frames["train"]
    categorical = [c for c in ADULT_CATEGORICAL if c not in dropped]
    continuous = [c for c in ADULT_COLUMNS[:-1]
                  if c not in ADULT_CATEGORICAL and c not in dropped]
    modes = {c: train[c].mode(dropna=True).iloc[0] for c in categorical}
    categories = {c: sorted(train[c].fillna(modes[c]).unique()) for c in categorical}
    # The reference drops the first category in frequency order: the most frequent.
    left_out = ({c: train[c].fillna(modes[c]).value_counts().index[0] for c in categorical}
                if drop_first else {})
    out = {}
    for part, df in frames.items():
        path = train_path if part == "train" else test_path
        skip = 0 if part == "train" else 1
        num = _numeric(entry, path, df[continuous], continuous, skip=skip)
        blocks, names = [num], list(continuous)
        for c in categorical:
            values = df[c].fillna(modes[c])
            cat = pd.Categorical(values, categories=categories[c])
            # A test category unseen in training becomes an all-zero indicator row.
            onehot = pd.get_dummies(cat)
            keep = [v for v in categories[c] if v != left_out.get(c)]
            blocks.append(onehot[keep].to_numpy(dtype=np.float64))
            names += [f"{c}={v}" for v in keep]
        y = _binary_labels(entry, path, df["income"].to_numpy(), skip=skip)
        out[part] = (np.hstack(blocks), y, names)
    X, y, names = out["train"]
    notes = {"imputation": modes}
    if options:
        notes["encoding"] = {"dropped_attributes": dropped,
                             "dropped_indicators": left_out}
    # imputation by the training mode, the category set read off the training
    # data and (drop_first) its most frequent category left out: all without noise
    nonprivate = ["categorical_imputation", "category_set"]
    if drop_first:
        nonprivate.append("most_frequent_category_drop")
    return RawData(X, y, "binary", names, out["test"][0], out["test"][1],
                   nonprivate_inputs=nonprivate, notes=notes)


def _nips_labels(entry, path):
    df = _read_csv(entry, path, 1)
    return _binary_labels(entry, path, _numeric(entry, path, df, ["label"])[:, 0])


def load_nips_sparse_binary(entry, raw_dir):
    """NIPS 2003 sparse binary format (dorothea): each line lists 1-based indices of ones."""
    data_path = _file(entry, raw_dir, "data")
    labels_path = _file(entry, raw_dir, "labels")
    n_features = int(entry["n_features"])
    indptr, indices = [0], []
    with open(data_path, "rb") as fh:
        for lineno, line in enumerate(fh, start=1):
            try:
                idx = np.array(line.split(), dtype=np.int64)
            except ValueError as exc:
                raise ValueError(
                    f"{_where(entry, data_path)}: line {lineno}: not feature indices: {exc}"
                ) from exc
            if idx.size and (idx.min() < 1 or idx.max() > n_features):
                raise ValueError(
                    f"{_where(entry, data_path)}: line {lineno}: feature index outside "
                    f"1..{n_features}"
                )
            indices.append(idx - 1)
            indptr.append(indptr[-1] + idx.size)
    indices = np.concatenate(indices) if indices else np.zeros(0, dtype=np.int64)
    X = sp.csr_matrix((np.ones(indices.size), indices, np.array(indptr)),
                      shape=(len(indptr) - 1, n_features))
    y = _nips_labels(entry, labels_path)
    if len(y) != X.shape[0]:
        raise ValueError(
            f"{_where(entry, labels_path)}: {len(y)} labels for {X.shape[0]} data rows "
            f"in {data_path}"
        )
    names = [f"f{j + 1}" for j in range(n_features)]
    return RawData(sp.csc_matrix(X), y, "binary", names)


def load_nips_dense(entry, raw_dir):
    """NIPS 2003 dense format (madelon): space-separated values, labels file of +-1."""
    data_path = _file(entry, raw_dir, "data")
    labels_path = _file(entry, raw_dir, "labels")
    n = int(entry["n_features"])
    df = _read_csv(entry, data_path, n, sep=r"\s+")
    names = [f"f{j + 1}" for j in range(n)]
    X = _numeric(entry, data_path, df, names)
    y = _nips_labels(entry, labels_path)
    if len(y) != X.shape[0]:
        raise ValueError(
            f"{_where(entry, labels_path)}: {len(y)} labels for {X.shape[0]} data rows"
        )
    return RawData(X, y, "binary", names)


LOADERS.update({
    "california": load_california,
    "arff": load_arff,
    "libsvm": load_libsvm,
    "adult": load_adult,
    "nips_sparse_binary": load_nips_sparse_binary,
    "nips_dense": load_nips_dense,
})


def load_raw(entry, raw_dir, files=None):
    """Load the raw files of registry ``entry`` from ``raw_dir``.

    Parameters
    ----------
    entry : dict
        Registry entry (with ``name``).
    raw_dir : str
        Directory holding the downloaded (or generated) files.
    files : dict, optional
        ``{file name: sha256}`` recorded by the download, kept as provenance.

    Returns
    -------
    RawData
    """
    kind = "generated" if "generator" in entry else entry["loader"]
    raw = LOADERS[kind](entry, raw_dir)
    where = f"dataset {entry['name']!r}"
    check_finite(raw.X, where, raw.feature_names)
    raw.y = check_labels(raw.y, raw.task, where)
    if raw.X_test is not None:
        check_finite(raw.X_test, where + " (test file)", raw.feature_names)
        raw.y_test = check_labels(raw.y_test, raw.task, where + " (test file)")
    if files:
        raw.files = dict(files)
    return raw

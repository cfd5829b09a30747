"""Preprocessing recipes and splits (the papers'), as named variants.

A variant is (split, transform):

* ``raw`` — DP-CD §6.1 "imbalanced": features as distributed, full training data.
* ``standardize`` — DP-CD §6.2 "balanced": zero mean, unit variance per feature
  with the training set's statistics (recorded as a non-private input).
* ``maxabs_unitnorm`` — DP-SCD App. E: each coordinate divided by its maximum
  absolute value, then each row scaled to unit L2 norm; regression labels
  centred; train/validation/test split of App. E.

All-zero training columns (smoothness constant 0) are dropped with a warning;
``standardize`` also drops constant columns (zero variance). Which columns go
is read off the training data without noise: a dataset that lost columns
records ``column_drop`` among its non-private inputs.
"""

import sys
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp
from sklearn.model_selection import train_test_split

from .io import save_dataset

VARIANTS = {
    "raw": {"split": "full", "transform": "none"},
    "standardize": {"split": "full", "transform": "standardize"},
    "maxabs_unitnorm": {"split": "dpscd", "transform": "maxabs_unitnorm"},
}


@dataclass
class RawData:
    """Data as read from the source files, before any recipe.

    ``X_test``/``y_test`` hold a test set the source distributes separately
    (Adult, YearPredictionMSD); ``files`` maps file names to sha256.
    """

    X: object
    y: np.ndarray
    task: str
    feature_names: list
    X_test: object = None
    y_test: np.ndarray = None
    files: dict = field(default_factory=dict)
    nonprivate_inputs: list = field(default_factory=list)
    notes: dict = field(default_factory=dict)


def _warn(msg):
    print(f"dpcd data: warning: {msg}", file=sys.stderr)


def check_finite(X, where, feature_names=None, row_offset=0):
    """Raise ValueError naming the first row and column holding NaN or inf."""
    data = X.data if sp.issparse(X) else np.asarray(X)
    if np.all(np.isfinite(data)):
        return
    if sp.issparse(X):
        coo = X.tocoo()
        bad = ~np.isfinite(coo.data)
        i, j = coo.row[bad][0], coo.col[bad][0]
        value = coo.data[bad][0]
    else:
        i, j = np.argwhere(~np.isfinite(data))[0]
        value = data[i, j]
    name = feature_names[j] if feature_names is not None else f"#{j}"
    raise ValueError(
        f"{where}: non-finite value {value} in row {i + row_offset} "
        f"(0-based data row), column {name!r}"
    )


def check_labels(y, task, where):
    """Check labels: finite; {-1, +1} for binary tasks."""
    y = np.asarray(y, dtype=np.float64)
    bad = ~np.isfinite(y)
    if task == "binary":
        bad |= ~np.isin(y, (-1.0, 1.0))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        expected = "{-1, +1}" if task == "binary" else "finite values"
        raise ValueError(f"{where}: label {y[i]!r} in data row {i} outside {expected}")
    return y


def _column_stats(X):
    """Mean, std, max|x| and non-zero count per column (dense or sparse)."""
    if sp.issparse(X):
        X = sp.csc_matrix(X)
        mean = np.asarray(X.mean(axis=0)).ravel()
        sq = np.asarray(X.multiply(X).mean(axis=0)).ravel()
        std = np.sqrt(np.maximum(sq - mean**2, 0.0))
        maxabs = np.asarray(abs(X).max(axis=0).todense()).ravel()
        nnz = np.diff(X.indptr)
    else:
        mean, std = X.mean(axis=0), X.std(axis=0)
        maxabs = np.abs(X).max(axis=0)
        nnz = np.count_nonzero(X, axis=0)
    return mean, std, maxabs, nnz


def split(raw, kind, seed):
    """Split ``raw`` into train / validation / test as the papers describe.

    Parameters
    ----------
    raw : RawData
    kind : {"full", "dpscd"}
        ``full``: DP-CD/DP-GCD optimise on all training data (a separately
        distributed test file is kept as the test set). ``dpscd``: DP-SCD App. E,
        the given test file or a 25 % test split, then 25 % of the training
        set held out for validation (scikit-learn ``train_test_split``).
    seed : int

    Returns
    -------
    parts : dict
        ``train``, ``val``, ``test`` -> (X, y) or None.
    description : dict
        What was done, with the seed, for the processed file's metadata.
    """
    X, y = raw.X, raw.y
    test = (raw.X_test, raw.y_test) if raw.X_test is not None else None
    desc = {"kind": kind, "seed": int(seed)}
    if kind == "full":
        desc["train"] = "all training rows"
        desc["test"] = "given test file" if test else None
        return {"train": (X, y), "val": None, "test": test}, desc
    if kind != "dpscd":
        raise ValueError(f"unknown split kind {kind!r}")
    if test is None:
        X, Xt, y, yt = train_test_split(X, y, test_size=0.25, random_state=seed)
        test = (Xt, yt)
        desc["test"] = "25 % of the single file (train_test_split)"
    else:
        desc["test"] = "given test file"
    X, Xv, y, yv = train_test_split(X, y, test_size=0.25, random_state=seed)
    desc["val"] = "25 % of the training rows (train_test_split)"
    return {"train": (X, y), "val": (Xv, yv), "test": test}, desc


def _select(X, keep):
    return X[:, keep] if not sp.issparse(X) else sp.csc_matrix(X)[:, keep]


def _rows_unit_norm(X):
    if sp.issparse(X):
        X = sp.csr_matrix(X)
        norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
        norms[norms == 0] = 1.0  # an all-zero row stays zero
        return sp.diags(1.0 / norms) @ X
    norms = np.linalg.norm(X, axis=1)
    norms[norms == 0] = 1.0
    return X / norms[:, None]


def apply_recipe(raw, variant, dataset="?", seed=0):
    """Split and transform ``raw`` per ``variant``.

    Returns
    -------
    parts : dict of (X, y) or None
    meta : dict
        split description, dropped columns, statistics, nonprivate_inputs.
    """
    if variant not in VARIANTS:
        raise ValueError(
            f"dataset {dataset!r}: unknown variant {variant!r}; "
            f"known: {', '.join(sorted(VARIANTS))}"
        )
    recipe = VARIANTS[variant]
    parts, split_desc = split(raw, recipe["split"], seed)
    X, y = parts["train"]
    if X.shape[0] < 2:
        raise ValueError(f"dataset {dataset!r}: {X.shape[0]} training rows (need >= 2)")
    names = list(raw.feature_names)
    mean, std, maxabs, nnz = _column_stats(X)
    drop = nnz == 0
    reason = "all-zero in the training set (smoothness constant 0)"
    if recipe["transform"] == "standardize":
        drop |= std == 0
        reason = "constant in the training set (zero variance / smoothness 0)"
    meta = {"split": split_desc, "nonprivate_inputs": list(raw.nonprivate_inputs)}
    if drop.any():
        dropped = [names[j] for j in np.flatnonzero(drop)]
        shown = ", ".join(dropped[:10]) + (" ..." if len(dropped) > 10 else "")
        _warn(f"dataset {dataset!r}: dropping {len(dropped)} column(s) {reason}: {shown}")
        keep = np.flatnonzero(~drop)
        if keep.size == 0:
            raise ValueError(f"dataset {dataset!r}: every column is {reason}")
        meta["dropped_columns"] = {"reason": reason, "names": dropped}
        meta["nonprivate_inputs"].append("column_drop")
        names = [names[j] for j in keep]
        mean, std, maxabs = mean[keep], std[keep], maxabs[keep]
        for k, part in parts.items():
            if part is not None:
                parts[k] = (_select(part[0], keep), part[1])
    transform = recipe["transform"]
    if transform == "standardize":
        meta["nonprivate_inputs"].append("standardisation")
        meta["standardisation"] = {"mean": mean.tolist(), "std": std.tolist()}
        for k, part in parts.items():
            if part is not None:
                Xp = part[0].toarray() if sp.issparse(part[0]) else part[0]
                parts[k] = ((Xp - mean) / std, part[1])
    elif transform == "maxabs_unitnorm":
        meta["nonprivate_inputs"].append("maxabs_scaling")
        meta["maxabs"] = maxabs.tolist()
        scale = 1.0 / maxabs
        for k, part in parts.items():
            if part is not None:
                Xp = part[0]
                Xp = Xp @ sp.diags(scale) if sp.issparse(Xp) else Xp * scale
                parts[k] = (_rows_unit_norm(Xp), part[1])
        if raw.task == "regression":
            centre = float(np.mean(parts["train"][1]))
            meta["nonprivate_inputs"].append("label_centering")
            meta["label_center"] = centre
            for k, part in parts.items():
                if part is not None:
                    parts[k] = (part[0], part[1] - centre)
    meta["feature_names"] = names
    meta["variant"] = variant
    meta["recipe"] = recipe
    return parts, meta


def preprocess_to_file(raw, dataset, variant, out, seed=0, extra_meta=None):
    """Apply ``variant`` to ``raw`` and write ``out`` with :func:`save_dataset`."""
    parts, meta = apply_recipe(raw, variant, dataset=dataset, seed=seed)
    meta.update(
        {
            "dataset": dataset,
            "task": raw.task,
            "source_sha256": dict(sorted(raw.files.items())),
            **raw.notes,
            **(extra_meta or {}),
        }
    )
    X, y = parts["train"]
    meta["n_samples"], meta["n_features"] = int(X.shape[0]), int(X.shape[1])
    val = parts["val"] or (None, None)
    test = parts["test"] or (None, None)
    if val[0] is not None:
        meta["n_val"] = int(val[0].shape[0])
    if test[0] is not None:
        meta["n_test"] = int(test[0].shape[0])
    if raw.task == "binary":
        meta["label_balance"] = {
            "+1": int(np.sum(y == 1)),
            "-1": int(np.sum(y == -1)),
        }
    save_dataset(out, X, y, meta, val[0], val[1], test[0], test[1])
    return meta

"""The processed-dataset file format: one ``.npz`` per (dataset, variant).

Every stage reads processed data through :func:`load_dataset`, so the layout of
the file is private to this module. Writes are atomic (temporary file, then
rename) so a failed preprocess never leaves a file Snakemake would take as done.
"""

import json
import os
import sys
import tempfile
from dataclasses import dataclass, field

import numpy as np

# scipy.sparse (0.25 s) is imported where a sparse matrix is read: a job that
# only writes files atomically (tables, figures) never needs it.

_PARTS = ("", "_val", "_test")


@dataclass
class Dataset:
    """A processed dataset.

    Attributes
    ----------
    X : ndarray of shape (n_samples, n_features), float64, or scipy.sparse CSC
        Training design matrix (the data the optimiser uses).
    y : ndarray of shape (n_samples,), float64
        Training labels, in {-1, +1} for binary tasks.
    meta : dict
        Provenance: dataset, variant, task, n_samples, n_features,
        feature_names, nonprivate_inputs, split, source_sha256, ...
    X_val, y_val, X_test, y_test : arrays or None
        Held-out sets when the recipe defines them.
    """

    X: object
    y: np.ndarray
    meta: dict = field(default_factory=dict)
    X_val: object = None
    y_val: np.ndarray = None
    X_test: object = None
    y_test: np.ndarray = None


def atomic_path(path):
    """Return a temporary path in the directory of ``path`` (same filesystem).

    Parameters
    ----------
    path : str
        Final destination.

    Returns
    -------
    str
        A fresh temporary file name ending like ``path`` does.
    """
    directory = os.path.dirname(os.path.abspath(path)) or "."
    os.makedirs(directory, exist_ok=True)
    base = os.path.basename(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{base}.", suffix=".part", dir=directory)
    os.close(fd)
    # mkstemp makes 0600 files; give the final file the usual umask permissions.
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)
    return tmp


def atomic_write(path, write):
    """Call ``write(tmp)`` on a temporary path, then rename it onto ``path``.

    A failure leaves no file at ``path`` that Snakemake could take as done.

    Parameters
    ----------
    path : str
        Final destination.
    write : callable
        Writes the whole content to the temporary path it receives.
    """
    tmp = atomic_path(path)
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def write_json_atomic(path, obj):
    """Write ``obj`` as sorted, indented JSON to ``path`` atomically."""

    def write(tmp):
        with open(tmp, "w") as fh:
            json.dump(obj, fh, indent=2, sort_keys=True)
            fh.write("\n")

    atomic_write(path, write)


def _pack(arrays, suffix, X, y):
    if X is None:
        return
    sparse = sys.modules.get("scipy.sparse")  # a sparse X means it is imported
    if sparse is not None and sparse.issparse(X):
        X = sparse.csc_matrix(X, dtype=np.float64)
        X.sort_indices()
        arrays[f"X{suffix}_format"] = np.array("csc")
        arrays[f"X{suffix}_data"] = X.data
        arrays[f"X{suffix}_indices"] = X.indices
        arrays[f"X{suffix}_indptr"] = X.indptr
        arrays[f"X{suffix}_shape"] = np.array(X.shape, dtype=np.int64)
    else:
        arrays[f"X{suffix}_format"] = np.array("dense")
        # Column-major: the solvers walk X one coordinate (column) at a time.
        arrays[f"X{suffix}"] = np.asfortranarray(X, dtype=np.float64)
    arrays[f"y{suffix}"] = np.asarray(y, dtype=np.float64)


def _unpack(npz, suffix):
    key = f"X{suffix}_format"
    if key not in npz.files:
        return None, None
    if str(npz[key]) == "csc":
        import scipy.sparse as sp

        X = sp.csc_matrix(
            (npz[f"X{suffix}_data"], npz[f"X{suffix}_indices"], npz[f"X{suffix}_indptr"]),
            shape=tuple(npz[f"X{suffix}_shape"]),
        )
    else:
        X = np.asfortranarray(npz[f"X{suffix}"])
    return X, npz[f"y{suffix}"]


def save_dataset(path, X, y, meta, X_val=None, y_val=None, X_test=None, y_test=None):
    """Write a processed dataset to ``path`` (``.npz``) atomically.

    Parameters
    ----------
    path : str
        Destination, e.g. ``results/data/processed/{dataset}/{variant}.npz``.
    X : ndarray or sparse matrix, shape (n_samples, n_features)
        Training design matrix; sparse input is stored as CSC.
    y : ndarray, shape (n_samples,)
        Training labels.
    meta : dict
        JSON-serialisable provenance; ``n_samples``/``n_features`` are filled in.
    X_val, y_val, X_test, y_test : optional
        Held-out sets.
    """
    meta = dict(meta)
    meta["n_samples"], meta["n_features"] = int(X.shape[0]), int(X.shape[1])
    if len(y) != X.shape[0]:
        raise ValueError(f"{path}: X has {X.shape[0]} rows but y has {len(y)}")
    arrays = {"meta_json": np.array(json.dumps(meta, sort_keys=True))}
    for suffix, (Xp, yp) in zip(_PARTS, [(X, y), (X_val, y_val), (X_test, y_test)]):
        _pack(arrays, suffix, Xp, yp)

    def write(tmp):
        with open(tmp, "wb") as fh:
            np.savez(fh, **arrays)

    atomic_write(path, write)


def load_dataset(path):
    """Read a processed dataset written by :func:`save_dataset`.

    Parameters
    ----------
    path : str
        A ``.npz`` file.

    Returns
    -------
    Dataset
    """
    if not os.path.exists(path):
        raise FileNotFoundError(f"processed dataset not found: {path}")
    with np.load(path, allow_pickle=False) as npz:
        meta = json.loads(str(npz["meta_json"]))
        X, y = _unpack(npz, "")
        X_val, y_val = _unpack(npz, "_val")
        X_test, y_test = _unpack(npz, "_test")
    return Dataset(X, y, meta, X_val, y_val, X_test, y_test)

"""Shared pieces of the solvers: result container, input validation, seeds."""
from dataclasses import dataclass, field

import numpy as np

from dpcd.lazy import issparse


@dataclass
class SolverResult:
    """Output of a solver run.

    Attributes
    ----------
    w : array, shape (n_features,)
        Reported iterate.
    objective : array, shape (n_checkpoints,)
        Objective of the reported iterate at each checkpoint: at the start and
        after each pass (see :func:`pass_checkpoints` for fractional passes).
    n_updates : int
        Number of coordinate updates (DP-CD), steps (DP-SGD) or epochs x
        n_features (reference).
    time : float
        Seconds spent in the compiled kernels (``perf_counter``), JIT excluded.
    extra : dict
        Solver-specific diagnostics.
    checkpoints : array, shape (n_checkpoints,), optional
        Passes done at each entry of ``objective``; None means
        ``0, 1, ..., len(objective) - 1`` (whole passes).
    """

    w: np.ndarray
    objective: np.ndarray
    n_updates: int
    time: float
    extra: dict = field(default_factory=dict)
    checkpoints: np.ndarray = None

    @property
    def passes_done(self):
        """Passes done at each entry of ``objective`` (float array)."""
        if self.checkpoints is not None:
            return np.asarray(self.checkpoints, dtype=np.float64)
        return np.arange(len(self.objective), dtype=np.float64)


def pass_checkpoints(passes):
    """Where a run of ``passes`` passes records its objective.

    At the start, after each whole pass, and at the end when ``passes`` is
    fractional (the DP-GCD paper's grids go down to 0.001 passes): 2.5 gives
    ``[0, 1, 2, 2.5]``, 0.01 gives ``[0, 0.01]``.

    Parameters
    ----------
    passes : float
        Number of passes, > 0.

    Returns
    -------
    checkpoints : array of float
    """
    passes = float(passes)
    if not (np.isfinite(passes) and passes > 0):
        raise ValueError(f"passes must be finite and > 0, got {passes!r}")
    whole = np.arange(int(np.floor(passes)) + 1, dtype=np.float64)
    return whole if whole[-1] == passes else np.append(whole, passes)


def as_design(X, layout="csc"):
    """``(sparse, X, data, indices, indptr)`` for a kernel, converting once.

    Kernels that take dense or sparse X get both forms and branch on
    ``sparse``. Dense input becomes float64 in the order the kernel walks
    (Fortran for ``"csc"``, C for ``"csr"``) with length-1 dummies for the
    sparse arrays; scipy sparse input becomes ``layout`` (CSC: columns are
    read, coordinate methods; CSR: rows are read, SGD), float64, canonical
    (sorted, no duplicates), never densified, with a (1, 1) dummy ``X``.

    Parameters
    ----------
    X : array-like or scipy sparse matrix, shape (n_samples, n_features)
    layout : {"csc", "csr"}

    Returns
    -------
    design : tuple
        ``(sparse, X, data, indices, indptr)``.
    shape : tuple of int
    """
    if layout not in ("csc", "csr"):
        raise ValueError(f"layout must be 'csc' or 'csr', got {layout!r}")
    if issparse(X):
        X = X.asformat(layout)
        if X.dtype != np.float64:
            X = X.astype(np.float64)
        if not X.has_canonical_format:
            X = X.copy()  # never reorder the caller's matrix in place
            X.sum_duplicates()
        return (True, np.zeros((1, 1)), X.data, X.indices, X.indptr), X.shape
    X = (np.asfortranarray if layout == "csc" else np.ascontiguousarray)(
        X, dtype=np.float64)
    if X.ndim != 2:
        raise ValueError(f"X must be 2-d, got shape {X.shape}")
    dummy_i = np.zeros(1, dtype=np.int32)
    return (False, X, np.zeros(1), dummy_i, dummy_i), X.shape


def check_design(X, y, datafit, layout, check_input=True):
    """:func:`check_data` for dense or scipy sparse X, via :func:`as_design`.

    Returns
    -------
    design : tuple
        ``(sparse, X, data, indices, indptr)``.
    y : array, shape (n_samples,), float64, contiguous
    shape : tuple of int
        ``(n_samples, n_features)``.
    """
    if not issparse(X):
        X, y = check_data(X, y, datafit, "F" if layout == "csc" else "C", check_input)
        return as_design(X, layout)[0], y, X.shape
    design, (n_samples, n_features) = as_design(X, layout)
    y = np.ascontiguousarray(y, dtype=np.float64)
    if y.shape != (n_samples,):
        raise ValueError(f"y must have shape ({n_samples},), got {y.shape}")
    if n_samples < 1 or n_features < 1:
        raise ValueError(f"X must be non-empty, got shape {(n_samples, n_features)}")
    if check_input:
        if not np.all(np.isfinite(design[2])):
            raise ValueError("X contains NaN or inf")
        datafit.validate(y)
    return design, y, (n_samples, n_features)


def check_data(X, y, datafit, order, check_input=True):
    """Validate and convert ``X`` and ``y``.

    Parameters
    ----------
    X : array-like, shape (n_samples, n_features)
        Design matrix.
    y : array-like, shape (n_samples,)
        Targets.
    datafit : Squares or Logistic
        Datafit whose ``validate`` checks the targets.
    order : {"F", "C"}
        Memory layout the kernel walks; converted once (no copy when already
        float64 in that order).
    check_input : bool, default=True
        Scan ``X`` for NaN/inf and check the targets. A sweep that validated
        its data once passes False, so a run costs no extra pass over ``X``.

    Returns
    -------
    X : array, shape (n_samples, n_features), float64 in ``order``
    y : array, shape (n_samples,), float64, contiguous
    """
    if order == "F":
        X = np.asfortranarray(X, dtype=np.float64)
    else:
        X = np.ascontiguousarray(X, dtype=np.float64)
    if X.ndim != 2:
        raise ValueError(f"X must be 2-d, got shape {X.shape}")
    y = np.ascontiguousarray(y, dtype=np.float64)
    if y.shape != (X.shape[0],):
        raise ValueError(f"y must have shape ({X.shape[0]},), got {y.shape}")
    if X.shape[0] < 1 or X.shape[1] < 1:
        raise ValueError(f"X must be non-empty, got shape {X.shape}")
    if not check_input:
        return X, y
    if not np.all(np.isfinite(X)):
        i, j = np.argwhere(~np.isfinite(X))[0]
        raise ValueError(f"X contains NaN or inf (first at X[{i}, {j}])")
    datafit.validate(y)
    return X, y


def as_feature_array(value, n_features, name, allow_inf=False, positive=False):
    """Broadcast a scalar or array to float64 shape (n_features,) and check it."""
    arr = np.ascontiguousarray(
        np.broadcast_to(np.asarray(value, dtype=np.float64), (n_features,))
    ).copy()
    bad = np.isnan(arr) | (arr < 0) | (positive & (arr == 0))
    if not allow_inf:
        bad |= np.isinf(arr)
    if np.any(bad):
        j = int(np.flatnonzero(bad)[0])
        raise ValueError(f"{name}[{j}] = {arr[j]!r} is not allowed")
    return arr


def spawn_generators(seed, n_streams):
    """``numpy.random.SeedSequence(seed)`` spawned into independent generators."""
    ss = np.random.SeedSequence(seed)
    return [np.random.default_rng(s) for s in ss.spawn(n_streams)]

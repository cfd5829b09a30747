"""The data and constants one sweep shares across all its configurations: a
:class:`~dpcd.algorithms.problem.SweepProblem` loaded from the data and
smoothness stages' files, and each seed's division of it."""

import json
from dataclasses import replace

import numpy as np

from dpcd.algorithms.problem import SweepProblem
from dpcd.data import load_dataset
from dpcd.lazy import issparse
from dpcd.problems import lambda_max, make_problem
from dpcd.solvers.base import check_data


# Sparse data at least this dense is handed to the solvers dense: a sparse
# format saves nothing there (LIBSVM files such as Phishing, 44 % non-zeros,
# load as sparse), and the DP-SCD kernels walk dense rows.  Truly sparse data
# (dorothea: 0.9 %) stays sparse and is never densified.
DENSE_ABOVE = 0.1


def as_solver_input(X):
    """Dense float64 array, or CSC float64 with sorted indices.

    Sparse X is densified only when at least ``DENSE_ABOVE`` of its entries
    are non-zero.
    """
    if issparse(X):
        if X.nnz >= DENSE_ABOVE * X.shape[0] * X.shape[1]:
            return np.asarray(X.toarray(), dtype=np.float64)
        import scipy.sparse as sp

        X = sp.csc_matrix(X, dtype=np.float64)
        X.sort_indices()
        return X
    return np.asarray(X, dtype=np.float64)


def _check_sparse(X, y, datafit):
    """check_data's checks for CSC X (check_data itself converts to dense)."""
    y = np.ascontiguousarray(y, dtype=np.float64)
    if y.shape != (X.shape[0],):
        raise ValueError(f"y must have shape ({X.shape[0]},), got {y.shape}")
    if X.shape[0] < 1 or X.shape[1] < 1:
        raise ValueError(f"X must be non-empty, got shape {X.shape}")
    if not np.all(np.isfinite(X.data)):
        raise ValueError("X contains NaN or inf")
    datafit.validate(y)
    return X, y


def resolve_alpha(problem_spec, X, y):
    """Regularisation strength of a problem spec: ``alpha``, or
    ``lambda_max_fraction`` x :func:`dpcd.problems.lambda_max` of the training
    data when the spec gives a fraction (the experiments ``alpha_grid``
    expands into).

    Returns
    -------
    alpha : float
    lam_max : float
        lambda_max of (X, y) and the spec's loss.
    """
    datafit, _ = make_problem(problem_spec["loss"], "none", 0.0)
    lam_max = lambda_max(X, y, datafit)
    fraction = problem_spec.get("lambda_max_fraction")
    alpha = problem_spec.get("alpha", 0.0) if fraction is None else fraction * lam_max
    return float(alpha), lam_max


def smoothness_constants(X, loss, source="X"):
    """What ``dpcd smoothness`` writes and :func:`load_problem` reads back.

    Parameters
    ----------
    X : array or scipy.sparse matrix, shape (n_samples, n_features)
        The training features (:func:`as_solver_input`: sparse stays sparse).
    loss : str
        The datafit's name (:func:`dpcd.problems.make_problem`).
    source : str
        What the error names (the dataset's path).

    Returns
    -------
    dict
        ``loss``, ``n_samples``, ``n_features``, ``smoothness`` (exact
        coordinate-wise constants M_j), ``global_smoothness`` (both None for
        a non-smooth loss: the hinge has none, the solvers that need them
        refuse it) and ``max_abs`` (each feature's largest magnitude).

    Raises
    ------
    ValueError
        When a column is all zero (M_j = 0): drop it in preprocessing.
    """
    datafit, _ = make_problem(loss, "none", 0.0)
    max_abs = np.ravel(abs(X).max(axis=0).toarray() if hasattr(X, "toarray")
                       else np.abs(X).max(axis=0)).tolist()
    constants = {"loss": loss, "n_samples": int(X.shape[0]), "n_features": int(X.shape[1])}
    if not getattr(datafit, "smooth", True):
        return {**constants, "smoothness": None, "global_smoothness": None, "max_abs": max_abs}
    smoothness = datafit.coordinate_smoothness(X)
    zero = np.flatnonzero(smoothness <= 0)
    if zero.size:
        raise ValueError(
            f"{source}: column(s) {zero.tolist()} are all zero, so M_j = 0; "
            "drop them in preprocessing"
        )
    return {**constants, "smoothness": smoothness.tolist(),
            "global_smoothness": float(datafit.global_smoothness(X)), "max_abs": max_abs}


def load_problem(data_path, problem_spec, smoothness_path):
    """Load a preprocessed dataset and its smoothness constants for one sweep.

    Parameters
    ----------
    data_path : str
        ``results/data/processed/{dataset}/{variant}.npz``.
    problem_spec : dict
        ``{"loss", "penalty", "alpha", "l1_ratio"}`` from the config, or
        ``lambda_max_fraction`` instead of ``alpha`` (see :func:`resolve_alpha`).
    smoothness_path : str
        JSON written by ``dpcd smoothness``.

    Returns
    -------
    SweepProblem
    """
    dataset = load_dataset(data_path)
    X = as_solver_input(dataset.X)
    alpha, _ = resolve_alpha(problem_spec, X, dataset.y)
    nonprivate = list(dataset.meta.get("nonprivate_inputs", []))
    if problem_spec.get("lambda_max_fraction") is not None:
        nonprivate.append("lambda_max")  # lambda = fraction x lambda_max(X, y), no noise
    datafit, penalty = make_problem(
        problem_spec["loss"],
        problem_spec["penalty"],
        alpha,
        problem_spec.get("l1_ratio", 0.5),
    )
    with open(smoothness_path) as fh:
        constants = json.load(fh)
    # Validated once here; every run of the sweep then skips the scan of X.
    if issparse(X):
        X, y = _check_sparse(X, dataset.y, datafit)
    else:
        X, y = check_data(X, dataset.y, datafit, "F")
    return SweepProblem(
        X=X,
        y=y,
        datafit=datafit,
        penalty=penalty,
        # null for a non-smooth loss (hinge): only the DP-SCD solvers and
        # (DP-)SGD, with the step taken as the learning rate, run on it
        smoothness=(None if constants["smoothness"] is None
                    else np.asarray(constants["smoothness"], dtype=np.float64)),
        global_smoothness=(None if constants["global_smoothness"] is None
                           else float(constants["global_smoothness"])),
        max_abs=np.asarray(constants["max_abs"], dtype=np.float64),
        nonprivate_inputs=nonprivate,
        loss=problem_spec["loss"],
        X_val=None if dataset.X_val is None else as_solver_input(dataset.X_val),
        y_val=dataset.y_val,
        X_test=None if dataset.X_test is None else as_solver_input(dataset.X_test),
        y_test=dataset.y_test,
        alpha=alpha,
        split_seed=dataset.meta.get("split", {}).get("seed"),
    )


# The per-seed validation split (``validation_split: per_seed``) ----------------
VALIDATION_SPLITS = ("fixed", "per_seed")
# Share of the training rows held out for validation (DP-SCD App. E, as the
# data stage's fixed split: scikit-learn's ceil(0.25 n) rows).
VALIDATION_FRACTION = 0.25
# Spawn key of the split's stream under the run seed: a child no solver's
# stream is (spawn_generators spawns keys (0,), (1,), ... of SeedSequence(seed)).
SPLIT_SPAWN_KEY = 1 << 20
# Per-seed problems a sweep keeps while they fit (bytes): beyond, each run
# redraws its own (a copy of the training rows per run, still the same split).
KEEP_SEED_PROBLEMS = 1 << 28


def validation_rows(n_pool, seed, fraction=VALIDATION_FRACTION):
    """Rows of the pool (training + validation rows) held out for run ``seed``.

    The reference code of DP-SCD (gdamaskinos/dpscd ``driver.py``) draws a
    fresh 25 % hold-out for every run seed (``train_test_split`` after
    ``np.random.seed(seed)``); this is the same rule on dpcd's seeds: the
    ``ceil(fraction n_pool)`` rows of a uniformly random subset, drawn from
    ``SeedSequence(seed, spawn_key=(SPLIT_SPAWN_KEY,))`` alone, so it depends
    on the seed and the pool's size, never on the data (a data-independent
    choice: no privacy cost, nothing to record as a non-private input).

    Returns
    -------
    train, val : int arrays
        Sorted row indices of the pool: a partition of ``range(n_pool)``.
    """
    n_val = int(np.ceil(fraction * n_pool))
    if not 0 < n_val < n_pool:
        raise ValueError(f"validation split of {n_pool} rows: {n_val} held out")
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(SPLIT_SPAWN_KEY,)))
    val = np.zeros(n_pool, dtype=bool)
    val[rng.permutation(n_pool)[:n_val]] = True
    return np.flatnonzero(~val), np.flatnonzero(val)


def _require_validation(problem):
    if problem.X_val is None:
        raise ValueError(
            "validation_split: per_seed needs a variant with a validation split "
            "(e.g. maxabs_unitnorm)"
        )


def _rows(X, rows):
    if not issparse(X):
        return X[rows]
    import scipy.sparse as sp

    return sp.csc_matrix(sp.csr_matrix(X)[rows])


def redraw_validation(problem, seed):
    """``problem`` with its validation rows redrawn for run ``seed``.

    The pool is the processed file's training and validation rows (preprocessed
    as the data stage did: the max-abs statistics stay those of the file's
    training part); :func:`validation_rows` says which are held out.  Sizes are
    those of the fixed split.  Only the division moves: what was computed from
    the data before it (the data stage's max-abs scaling and label centring,
    the smoothness stage's constants, the reference F*) is computed once, on
    the file's training part, and is the same object for every seed, as in a
    fixed-split sweep; it stays recorded in ``nonprivate_inputs``.  Every row
    of the pool keeps the unit norm the data stage gave it, which is what
    DP-SCD's sensitivity and DP-SGD's global smoothness rest on.

    Raises
    ------
    ValueError
        When the processed data has no validation split.
    """
    _require_validation(problem)
    stack = np.vstack
    if problem.is_sparse:
        import scipy.sparse as sp

        stack = sp.vstack
    X_pool = stack([problem.X, problem.X_val])
    y_pool = np.concatenate([problem.y, problem.y_val])
    train, val = validation_rows(len(y_pool), seed)
    X_train = _rows(X_pool, train)
    if problem.is_sparse:
        X_train.sort_indices()
    return replace(problem, X=X_train, y=np.ascontiguousarray(y_pool[train]),
                   X_val=_rows(X_pool, val), y_val=np.ascontiguousarray(y_pool[val]))


class SeedProblems:
    """The problem each run seed solves: ``problem`` itself (``fixed``), or with
    its validation rows redrawn per seed (``per_seed``), kept across a sweep's
    configurations while they fit in :data:`KEEP_SEED_PROBLEMS` bytes."""

    def __init__(self, problem, seeds, validation_split="fixed"):
        if validation_split not in VALIDATION_SPLITS:
            raise ValueError(f"validation_split must be one of {VALIDATION_SPLITS}, "
                             f"got {validation_split!r}")
        self.problem, self.seeds = problem, list(seeds)
        self.per_seed = validation_split == "per_seed"
        if self.per_seed:
            _require_validation(problem)
        X = problem.X
        size = X.data.nbytes if problem.is_sparse else X.nbytes
        self.keep = self.per_seed and size * len(self.seeds) <= KEEP_SEED_PROBLEMS
        self._kept = {}

    def division(self, seed_index):
        """Which train/validation division run ``seeds[seed_index]`` used, for
        its ledger and MLflow params (None when the data has no validation
        split).  Data-independent randomness: the seed and the sizes say it all.

        Returns
        -------
        dict or None
            ``validation_split`` (``fixed`` or ``per_seed``) and ``seed``: the
            dataset's ``split_seed`` (``fixed``) or the run seed, whose stream
            ``SeedSequence(seed, spawn_key=(spawn_key,))`` drew the hold-out
            (``per_seed``, with ``spawn_key``, ``n_train`` and ``n_val``).
        """
        problem = self.problem
        if problem.X_val is None:
            return None
        if not self.per_seed:
            return {"validation_split": "fixed", "seed": problem.split_seed}
        seed = self.seeds[seed_index]
        n_pool = problem.n_samples + problem.X_val.shape[0]
        n_val = int(np.ceil(VALIDATION_FRACTION * n_pool))  # as validation_rows holds out
        # seed None (noise: secure): drawn from the OS, never recorded
        return {"validation_split": "per_seed", "seed": None if seed is None else int(seed),
                "spawn_key": SPLIT_SPAWN_KEY, "n_train": n_pool - n_val, "n_val": n_val}

    def __call__(self, seed_index):
        """The problem of ``seeds[seed_index]``."""
        if not self.per_seed:
            return self.problem
        if seed_index in self._kept:
            return self._kept[seed_index]
        problem = redraw_validation(self.problem, self.seeds[seed_index])
        if self.keep:
            self._kept[seed_index] = problem
        return problem

"""The problem a spec's run solves: data, datafit and penalty, and the
constants read off the data once (the sweep loads it from the workflow's
files, a spec's prepare builds it for the estimators)."""

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from dpcd.lazy import issparse


@dataclass
class SweepProblem:
    """A dataset, a datafit/penalty pair and their constants (a sweep loads one
    per job, shared by all its configurations).

    Attributes
    ----------
    X : ndarray or scipy.sparse.csc_matrix, shape (n_samples, n_features)
        Design matrix (float64); a sparse dataset (dorothea) stays CSC and is
        never densified: solvers get it through :attr:`X_cols` / :attr:`X_rows`.
    y : ndarray, shape (n_samples,)
        Labels.
    datafit, penalty : objects from :mod:`dpcd.problems`
    smoothness : ndarray, shape (n_features,)
        Exact coordinate-wise smoothness constants M_j of f.
    global_smoothness : float
        Smoothness constant beta of f (DP-SGD's step is gamma / beta).
    max_abs : ndarray, shape (n_features,)
        max_i |x_ij|, from which DP-CD-P's crude bounds are derived.
    nonprivate_inputs : list of str
        What the data stage computed from the data without noise, and
        ``lambda_max`` when the penalty's strength is a fraction of
        lambda_max(X, y) (:func:`dpcd.sweep.problem.resolve_alpha`).
    loss : str
        Name of the datafit (which held-out metric applies).
    X_val, y_val, X_test, y_test : arrays or None
        Held-out splits of the processed file (DP-SCD App. E), for the
        validation and test metrics of each run's final iterate.
    alpha : float
        Regularisation strength the penalty uses (in the workflow:
        :func:`dpcd.sweep.problem.resolve_alpha`).
    split_seed : int or None
        The seed of the data stage's train/validation/test split (the
        dataset's ``split_seed``), None when the file does not say.
    """

    X: np.ndarray
    y: np.ndarray
    datafit: object
    penalty: object
    smoothness: np.ndarray
    global_smoothness: float
    max_abs: np.ndarray
    nonprivate_inputs: list = field(default_factory=list)
    loss: str = ""
    X_val: np.ndarray = None
    y_val: np.ndarray = None
    X_test: np.ndarray = None
    y_test: np.ndarray = None
    alpha: float = 0.0
    split_seed: int = None

    @property
    def n_samples(self):
        return self.X.shape[0]

    @property
    def n_features(self):
        return self.X.shape[1]

    @property
    def is_sparse(self):
        """True when X is a scipy sparse (CSC) matrix."""
        return issparse(self.X)

    @property
    def X_csc(self):
        """The sparse design matrix (CSC, float64, sorted indices)."""
        if not self.is_sparse:
            raise TypeError("X_csc: this problem's X is dense; use X_fortran / X_c")
        return self.X

    @cached_property
    def X_fortran(self):
        """X column-major, as coordinate updates walk it (converted once)."""
        self._refuse_sparse("X_fortran")
        return np.asfortranarray(self.X, dtype=np.float64)

    @cached_property
    def X_c(self):
        """X row-major, as sample-wise (SGD) updates walk it (converted once)."""
        self._refuse_sparse("X_c")
        return np.ascontiguousarray(self.X, dtype=np.float64)

    @property
    def X_cols(self):
        """X as coordinate solvers take it: CSC when sparse, else column-major."""
        return self.X_csc if self.is_sparse else self.X_fortran

    @cached_property
    def X_csr(self):
        """The sparse design matrix as CSR (rows are read; converted once)."""
        if not self.is_sparse:
            raise TypeError("X_csr: this problem's X is dense; use X_fortran / X_c")
        X = self.X.tocsr()
        X.sort_indices()
        return X

    @property
    def X_rows(self):
        """X as sample-wise solvers take it: CSR when sparse, else row-major."""
        return self.X_csr if self.is_sparse else self.X_c

    def _refuse_sparse(self, name):
        if self.is_sparse:
            raise TypeError(
                f"{name}: X is sparse ({self.X.shape[0]} x {self.X.shape[1]}, "
                f"{self.X.nnz} non-zeros) and is never densified; use X_cols / X_rows"
            )


class Probe:
    """A problem without data, for a spec's ``calibrate``: the shape, unit
    smoothness constants (the noise multipliers depend on no constant: each
    threshold and its noise scale together) and a penalty. Without
    ``n_features``, a calibration that reads the number of features is refused.
    """

    def __init__(self, n_samples, n_features=None, penalty=None):
        from dpcd.problems import make_problem

        self.n_samples = n_samples
        self._n_features = n_features
        self.penalty = make_problem("squares", "none", 0.0)[1] if penalty is None else penalty

    @property
    def n_features(self):
        if self._n_features is None:
            raise ValueError("this algorithm's calibration needs the number of features (p)")
        return self._n_features

    @property
    def smoothness(self):
        return np.ones(self.n_features)

"""Compile the secure kernels into NUMBA_CACHE_DIR (tests/conftest.py runs this
beside ``dpcd warmup``, whose families are the fast kernels): one secure fit of
each solver, regression and classification, on a small problem."""

import warnings

import numpy as np

from dpcd.estimators import DPCoordinateDescentClassifier, DPCoordinateDescentRegressor

rng = np.random.default_rng(0)
X = rng.standard_normal((60, 5))
y = X @ rng.standard_normal(5)
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    for solver in ("dp_cd", "dp_cd_p", "dp_gcd", "dp_sgd", "dp_scd", "seq_dp_scd",
                   "primal_dp_scd"):
        DPCoordinateDescentRegressor(solver=solver, noise="secure", epsilon=1.0).fit(X, y)
        DPCoordinateDescentClassifier(solver=solver, noise="secure", epsilon=1.0).fit(X, y > 0)

"""The estimators as a practitioner meets them (issue 31).

Compiled kernels are loaded from numba's cache by every later process.
"""
import os
import subprocess
import sys

# Fits of every estimator on the default path (DP-CD, exact or private
# smoothness), classifier and regressor, dense and sparse X, with and without
# an intercept: the kernels a practitioner's first fit loads.
_FITS = """
import warnings
import numpy as np, scipy.sparse as sp
from dpcd.estimators import DPCoordinateDescentClassifier, DPCoordinateDescentRegressor
warnings.simplefilter("ignore")
rng = np.random.default_rng(0)
X = rng.standard_normal((60, 4))
Xs = sp.csr_matrix(np.where(rng.random((60, 4)) < 0.5, X, 0.0))
Xs[0, :] = 1.0  # no empty column
y = (X[:, 0] > 0).astype(int)
for solver in ("dp_cd", "dp_cd_p"):
    for design in (X, Xs):
        for intercept in (False, True):
            kw = dict(solver=solver, fit_intercept=intercept, passes=2, random_state=0)
            DPCoordinateDescentClassifier(**kw).fit(design, y)
            DPCoordinateDescentRegressor(**kw).fit(design, X[:, 1])
"""


def test_estimator_fits_compile_nothing_after_warmup(tmp_path):
    """After ``dpcd warmup --families dp_cd`` (the documented step after
    installing), a fresh process's first fits write nothing to numba's cache:
    every kernel they call is loaded, none compiled (fails when a kernel the
    estimators reach is not ``cache=True`` or is called with argument types
    the warm-up did not compile)."""
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache")}
    subprocess.run([sys.executable, "-m", "dpcd.cli", "warmup", "--families", "dp_cd",
                    "--out", str(tmp_path / "warm.json")], env=env, check=True,
                   capture_output=True)

    def cache_files():
        return {(p.name, p.stat().st_mtime_ns) for p in (tmp_path / "cache").rglob("*")}

    compiled = cache_files()
    assert any(name.endswith(".nbi") for name, _ in compiled)
    subprocess.run([sys.executable, "-c", _FITS], env=env, check=True, capture_output=True)
    assert cache_files() == compiled

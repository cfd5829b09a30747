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


# ------------------------------------------------- private bound (no public one)
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from dpcd.privacy.bounds import GRID, bound_probabilities, private_feature_bound  # noqa: E402


@pytest.mark.parametrize("relation", ["replace_one", "add_or_remove_one"])
def test_private_bound_is_epsilon_dp_on_neighbours(relation):
    """Every output's probability moves by at most e^eps between neighbouring
    datasets (the definition, checked exactly over the whole grid), for
    extreme replacements (a record moved to the grid's ends) and random ones."""
    rng = np.random.default_rng(0)
    eps = 0.7
    for _ in range(40):
        n = int(rng.integers(2, 60))
        rows = np.exp(rng.normal(0, 3, n))
        if relation == "replace_one":
            other = rows.copy()
            other[rng.integers(n)] = rng.choice([1e-9, 1e9, np.exp(rng.normal(0, 3))])
        else:
            other = rows[np.arange(n) != rng.integers(n)]
        for q in (0.5, 0.95):
            p = bound_probabilities(rows, eps, q, relation)
            p2 = bound_probabilities(other, eps, q, relation)
            assert np.all(np.log(p) - np.log(p2) <= eps + 1e-9)
            assert np.all(np.log(p2) - np.log(p) <= eps + 1e-9)


def test_private_bound_near_the_quantile_and_ledger():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((5000, 3))
    b, ledger = private_feature_bound(X, 10.0, rng)
    truth = np.quantile(np.abs(X).max(axis=1), 0.95)
    assert b in GRID and abs(np.log(b / truth)) < 0.3
    assert ledger.epsilon_achieved == 10.0 and ledger.delta == 0.0
    assert ledger.budget[0].group == "bounds" and not ledger.nonprivate_inputs

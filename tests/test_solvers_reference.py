"""Reference solver against scikit-learn on the paper's objectives."""
import numpy as np
import pytest
from sklearn.linear_model import ElasticNet as SkElasticNet
from sklearn.linear_model import Lasso, LogisticRegression

from dpcd.problems import make_problem, objective
from dpcd.solvers import reference_solve


def _data(seed=0, n=60, p=25, logistic=False):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, p)) * rng.uniform(0.2, 5.0, size=p)
    w_true = np.zeros(p)
    w_true[:5] = rng.standard_normal(5)
    y = X @ w_true + 0.5 * rng.standard_normal(n)
    if logistic:
        y = np.where(y > 0, 1.0, -1.0)
    return X, y


@pytest.mark.parametrize("lam", [0.05, 0.5, 5.0])
def test_reference_vs_sklearn_lasso(lam):
    """(1/n)||Xw - y||^2 + lam ||w||_1  <=>  sklearn Lasso(alpha=lam / 2)."""
    X, y = _data()
    datafit, penalty = make_problem("squares", "l1", lam)
    res = reference_solve(X, y, datafit, penalty, tol=1e-10)
    assert res.extra["converged"] and res.extra["rel_gap"] <= 1e-10
    sk = Lasso(alpha=lam / 2, fit_intercept=False, tol=1e-14, max_iter=1_000_000)
    sk.fit(X, y)
    f_sk = objective(X, y, sk.coef_, datafit, penalty)
    f_ref = objective(X, y, res.w, datafit, penalty)
    assert f_ref <= f_sk * (1 + 1e-10)
    assert f_ref == pytest.approx(f_sk, rel=1e-8)
    np.testing.assert_allclose(res.w, sk.coef_, atol=1e-5)


@pytest.mark.parametrize("lam", [0.01, 0.1, 1.0])
def test_reference_vs_sklearn_logistic(lam):
    """mean log(1 + exp(-y x^T w)) + lam/2 ||w||^2  <=>  C = 1 / (n lam)."""
    X, y = _data(logistic=True)
    n = X.shape[0]
    datafit, penalty = make_problem("logistic", "l2", lam)
    res = reference_solve(X, y, datafit, penalty, tol=1e-10)
    assert res.extra["converged"] and res.extra["rel_gap"] <= 1e-10
    sk = LogisticRegression(C=1.0 / (n * lam), fit_intercept=False, tol=1e-12,
                            max_iter=100_000, solver="lbfgs")
    sk.fit(X, y)
    f_sk = objective(X, y, sk.coef_.ravel(), datafit, penalty)
    f_ref = objective(X, y, res.w, datafit, penalty)
    assert f_ref <= f_sk * (1 + 1e-10)
    assert f_ref == pytest.approx(f_sk, rel=1e-8)


def test_reference_vs_sklearn_elastic_net():
    """Paper scaling: sklearn ElasticNet(alpha=lam / 2, l1_ratio=r)."""
    X, y = _data(seed=2)
    lam, r = 0.4, 0.3
    datafit, penalty = make_problem("squares", "elastic_net", lam, l1_ratio=r)
    res = reference_solve(X, y, datafit, penalty)
    assert res.extra["converged"]
    sk = SkElasticNet(alpha=lam / 2, l1_ratio=r, fit_intercept=False, tol=1e-14,
                      max_iter=1_000_000).fit(X, y)
    f_sk = objective(X, y, sk.coef_, datafit, penalty)
    assert objective(X, y, res.w, datafit, penalty) == pytest.approx(f_sk, rel=1e-8)


@pytest.mark.parametrize("loss", ["squares", "logistic"])
@pytest.mark.parametrize("penalty", ["l1", "l2", "elastic_net", "none"])
def test_reference_reaches_tolerance(loss, penalty):
    X, y = _data(seed=5, n=100, p=10, logistic=loss == "logistic")
    if loss == "logistic" and penalty == "none":
        # separable data has no minimiser; flip labels to make it non-separable
        y[::3] *= -1
    datafit, pen = make_problem(loss, penalty, 0.1)
    res = reference_solve(X, y, datafit, pen, tol=1e-10)
    assert res.extra["converged"]
    if res.extra["rel_gap"] is not None:
        assert 0 <= res.extra["rel_gap"] + 1e-15 and res.extra["rel_gap"] <= 1e-10
    # gap <= 1e-10 F only bounds the KKT violation by about sqrt(gap): be relative
    grad0 = np.abs(datafit.gradient(X, y, np.zeros(X.shape[1]))).max()
    assert res.extra["kkt"] <= 1e-6 * grad0


def test_reference_rejects_zero_column():
    X, y = _data()
    X[:, 4] = 0.0
    datafit, pen = make_problem("squares", "l1", 0.1)
    with pytest.raises(ValueError, match="column 4"):
        reference_solve(X, y, datafit, pen)


def test_the_reference_jobs_only_load_what_warmup_reference_compiled(tmp_path):
    """The workflow runs the reference jobs while warmup_numba compiles the
    solvers' kernels into the same numba cache: after ``dpcd warmup --families
    reference``, a reference job of every (loss, penalty) the paper configs
    use, on dense and sparse data, writes nothing to the cache (numba#4807)."""
    import json
    import os
    import subprocess
    import sys

    import scipy.sparse as sp

    from dpcd.data import save_dataset

    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache")}
    cli = [sys.executable, "-m", "dpcd.cli"]
    subprocess.run([*cli, "warmup", "--families", "reference", "--out",
                    str(tmp_path / "warm.json")], env=env, check=True, capture_output=True)

    def cache_files():
        return {(p.name, p.stat().st_mtime_ns) for p in (tmp_path / "cache").rglob("*")}

    compiled = cache_files()
    assert any(name.endswith(".nbi") for name, _ in compiled)
    X, y = _data(logistic=True)
    # sparse enough to stay sparse (dpcd.sweep.problem.as_solver_input), no empty column
    sparse = sp.csr_matrix(np.where(np.arange(60)[:, None] % 20 == np.arange(25) % 20, X, 0))
    jobs = []
    for name, design in (("dense", X), ("sparse", sparse)):
        path = str(tmp_path / f"{name}.npz")
        save_dataset(path, design, y, {"source": "test"})
        for loss, penalty in (("squares", "l1"), ("squares", "l2"), ("logistic", "l1"),
                              ("logistic", "l2"), ("hinge", "l2")):
            if loss == "hinge" and name == "sparse":
                continue  # the hinge reference needs dense X
            problem = f'{{"loss": "{loss}", "penalty": "{penalty}", "alpha": 0.01}}'
            jobs.append(["reference", "--data", path, "--problem", problem,
                         "--out", str(tmp_path / f"{name}-{loss}-{penalty}.json")])
    # the jobs' command lines through dpcd.cli.main in one fresh process (a
    # cache miss writes the cache there as in a job of its own; 9 start-ups less)
    run = "import json, sys\nfrom dpcd.cli import main\nfor job in json.loads(sys.argv[1]):\n" \
          "    assert main(job) == 0, job\n"
    subprocess.run([sys.executable, "-c", run, json.dumps(jobs)], env=env, check=True,
                   capture_output=True)
    assert len(list(tmp_path.glob("*-*-*.json"))) == len(jobs) == 9
    assert cache_files() == compiled

"""Problems: construction, objective, gradients, smoothness constants, gaps."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from dpcd.problems import (
    L1,
    L2,
    ElasticNet,
    Logistic,
    NoPenalty,
    Squares,
    check_smoothness,
    duality_gap,
    kkt_violation,
    make_problem,
    objective,
    prox_grad_mapping_norm,
)
from dpcd.solvers import reference_solve


def _data(seed=0, n=40, p=7, logistic=False):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, p)) * rng.uniform(0.1, 5.0, size=p)
    y = X @ rng.standard_normal(p) + rng.standard_normal(n)
    if logistic:
        y = np.where(y > 0, 1.0, -1.0)
    return X, y


@pytest.mark.parametrize("loss", ["squares", "logistic"])
@pytest.mark.parametrize("penalty", ["l1", "l2", "elastic_net", "none"])
def test_make_problem_types(loss, penalty):
    datafit, pen = make_problem(loss, penalty, 0.3, l1_ratio=0.2)
    assert isinstance(datafit, {"squares": Squares, "logistic": Logistic}[loss])
    expected = {"l1": L1, "l2": L2, "elastic_net": ElasticNet, "none": NoPenalty}
    assert isinstance(pen, expected[penalty])
    assert pen.params.dtype == np.float64 and pen.params.shape == (2,)


@pytest.mark.parametrize("args, bad", [(("huber", "l1", 1.0), "huber"),
                                       (("squares", "l0", 1.0), "l0")])
def test_make_problem_bad_name(args, bad):
    with pytest.raises(ValueError, match=bad):
        make_problem(*args)


def test_bad_alpha_and_l1_ratio():
    with pytest.raises(ValueError, match="alpha"):
        L1(-1.0)
    with pytest.raises(ValueError, match="l1_ratio"):
        ElasticNet(1.0, l1_ratio=1.5)


def test_objective_formulas():
    X, y = _data()
    w = np.linspace(-1, 1, X.shape[1])
    lam = 0.7
    df, pen = make_problem("squares", "l1", lam)
    expected = np.mean((X @ w - y) ** 2) + lam * np.abs(w).sum()
    assert objective(X, y, w, df, pen) == pytest.approx(expected, rel=1e-14)
    Xl, yl = _data(logistic=True)
    df, pen = make_problem("logistic", "l2", lam)
    expected = np.mean(np.log1p(np.exp(-yl * (Xl @ w)))) + lam / 2 * w @ w
    assert objective(Xl, yl, w, df, pen) == pytest.approx(expected, rel=1e-13)
    df, pen = make_problem("squares", "elastic_net", lam, l1_ratio=0.3)
    expected = np.mean((X @ w - y) ** 2) + lam * (
        0.3 * np.abs(w).sum() + 0.35 * w @ w)
    assert objective(X, y, w, df, pen) == pytest.approx(expected, rel=1e-14)


def test_logistic_label_check():
    X, y = _data()
    with pytest.raises(ValueError, match="labels"):
        Logistic().validate(y)


@pytest.mark.parametrize("datafit", [Squares(), Logistic()])
def test_gradient_finite_differences(datafit):
    X, y = _data(logistic=isinstance(datafit, Logistic))
    w = np.random.default_rng(1).standard_normal(X.shape[1]) * 0.1
    g = datafit.gradient(X, y, w)
    h = 1e-6
    for j in range(X.shape[1]):
        e = np.zeros_like(w)
        e[j] = h
        fd = (datafit.value(X, y, w + e) - datafit.value(X, y, w - e)) / (2 * h)
        assert fd == pytest.approx(g[j], rel=1e-5, abs=1e-7)
    assert np.allclose(datafit.per_sample_gradients(X, y, w).mean(axis=0), g)


@pytest.mark.parametrize("datafit", [Squares(), Logistic()])
def test_smoothness_constants(datafit):
    X, _ = _data()
    n = X.shape[0]
    M = datafit.coordinate_smoothness(X)
    Mi = datafit.per_sample_smoothness(X)
    assert Mi.shape == X.shape
    np.testing.assert_allclose(M, Mi.mean(axis=0), rtol=1e-13)
    c = 2.0 if isinstance(datafit, Squares) else 0.25
    np.testing.assert_allclose(M, c * (X ** 2).sum(axis=0) / n, rtol=1e-13)
    beta = datafit.global_smoothness(X)
    eig = np.linalg.eigvalsh(X.T @ X).max()
    assert beta == pytest.approx(c * eig / n, rel=1e-10)
    # beta >= max_j M_j and <= sum_j M_j
    assert M.max() <= beta * (1 + 1e-12) and beta <= M.sum() * (1 + 1e-12)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**31), j=st.integers(0, 6),
       t=st.floats(-10, 10, allow_nan=False), logistic=st.booleans())
def test_coordinate_descent_lemma(seed, j, t, logistic):
    """f(w + t e_j) <= f(w) + t grad_j f(w) + M_j t^2 / 2."""
    X, y = _data(seed=seed % 1000, logistic=logistic)
    datafit = Logistic() if logistic else Squares()
    w = np.random.default_rng(seed).standard_normal(X.shape[1])
    M = datafit.coordinate_smoothness(X)
    e = np.zeros_like(w)
    e[j] = t
    lhs = datafit.value(X, y, w + e)
    rhs = datafit.value(X, y, w) + t * datafit.gradient(X, y, w)[j] + M[j] * t * t / 2
    assert lhs <= rhs + 1e-9 * max(1.0, abs(rhs))


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**31), logistic=st.booleans())
def test_global_descent_lemma(seed, logistic):
    """f(w + d) <= f(w) + <grad f(w), d> + beta ||d||^2 / 2."""
    X, y = _data(seed=seed % 1000, logistic=logistic)
    datafit = Logistic() if logistic else Squares()
    rng = np.random.default_rng(seed)
    w = rng.standard_normal(X.shape[1])
    d = rng.standard_normal(X.shape[1]) * rng.uniform(0.01, 10)
    beta = datafit.global_smoothness(X)
    lhs = datafit.value(X, y, w + d)
    rhs = datafit.value(X, y, w) + datafit.gradient(X, y, w) @ d + beta * d @ d / 2
    assert lhs <= rhs + 1e-9 * max(1.0, abs(rhs))


def test_zero_column_is_named():
    X, _ = _data()
    X[:, 3] = 0.0
    M = Squares().coordinate_smoothness(X)
    assert M[3] == 0.0
    with pytest.raises(ValueError, match="column 3"):
        check_smoothness(M)


@pytest.mark.parametrize("loss, penalty", [("squares", "l1"), ("squares", "l2"),
                                           ("squares", "elastic_net"),
                                           ("logistic", "l1"), ("logistic", "l2"),
                                           ("logistic", "elastic_net")])
def test_duality_gap_nonnegative(loss, penalty):
    X, y = _data(logistic=loss == "logistic")
    datafit, pen = make_problem(loss, penalty, 0.2)
    f_star = reference_solve(X, y, datafit, pen).objective[-1]
    rng = np.random.default_rng(3)
    for _ in range(20):
        w = rng.standard_normal(X.shape[1]) * rng.uniform(0, 2)
        gap = duality_gap(X, y, w, datafit, pen)
        # weak duality: gap >= F(w) - F* >= 0
        assert gap >= objective(X, y, w, datafit, pen) - f_star - 1e-10
        assert kkt_violation(X, y, w, datafit, pen) >= 0
        M = datafit.coordinate_smoothness(X)
        assert prox_grad_mapping_norm(X, y, w, datafit, pen, M) >= 0


def test_no_penalty_has_no_gap():
    X, y = _data()
    assert duality_gap(X, y, np.zeros(X.shape[1]), Squares(), NoPenalty()) is None


def test_no_penalty_fenchel_young_is_the_indicator_of_zero():
    import numpy as np

    from dpcd.problems import NoPenalty

    w = np.array([1.0, -2.0])
    assert NoPenalty().fenchel_young(w, np.zeros(2)) == 0.0
    assert NoPenalty().fenchel_young(w, np.array([0.0, 1e-12])) == np.inf

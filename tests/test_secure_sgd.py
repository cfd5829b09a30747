"""Secure DP-SGD: Poisson batches from the keystream, integer sums on the grid,
exact discrete Gaussian noise (:mod:`dpcd.solvers._dp_sgd_secure`).

Streams keyed by a fixed key (``keystream.state_from_key``) make the
statistical checks reproducible; each states its false-failure probability.
"""
import numpy as np
import pytest
from scipy import sparse, stats

from dpcd.estimators import DPCoordinateDescentClassifier
from dpcd.privacy import audit, calibrate_dp_sgd, exact, keystream, secure, secure_dp_sgd
from dpcd.problems import make_problem
from dpcd.problems._jit import LOGISTIC, NONE
from dpcd.solvers import dp_sgd
from dpcd.solvers._dp_sgd_secure import _secure_kernel, rounded_sum

pytestmark = pytest.mark.filterwarnings("ignore::dpcd.PrivacyLeakWarning")


def _state(seed):
    return keystream.state_from_key(seed.to_bytes(32, "little"))


def _kernel(X, y, *, eta, clip, grid, scale, batch_size, n_steps, seed, w0=None):
    """The secure kernel on dense X (logistic, no penalty) from a keyed stream;
    returns the iterate and the inclusion counts."""
    n, p = X.shape
    W = np.zeros((1, p)) if w0 is None else np.array(w0, dtype=float).reshape(1, p)
    inclusions = np.zeros(n, dtype=np.int64)
    noise = np.empty(max(1, 4096 // p) * p, dtype=np.int64)
    row_norms = np.sqrt(np.einsum("ij,ij->i", X, X))
    _secure_kernel(False, np.ascontiguousarray(X), np.zeros(1), np.zeros(1, np.int32),
                   np.zeros(1, np.int32), y, W, LOGISTIC, NONE, np.zeros(2), eta, clip, grid,
                   float(batch_size), row_norms, batch_size / n, n_steps, _state(seed),
                   scale, noise, np.zeros(p), inclusions,
                   np.zeros(0, dtype=np.int64), np.zeros((1, 1)))
    return W[0], inclusions


def test_noise_variance_per_coordinate():
    """With zero gradients (X = 0) one step releases γ·K, K discrete Gaussian
    of scale s: over 50 000 coordinates, n·v̂/s² lies in the χ²_n interval
    of level 1 − 1e-6 (the discrete Gaussian's variance is s² to within
    e^{-2π²s²} at s = 2²⁴; false failures with probability 1e-6)."""
    p, s, grid = 50_000, 2.0 ** 24, 2.0 ** -20
    w, _ = _kernel(np.zeros((3, p)), np.ones(3), eta=1.0, clip=1.0, grid=grid, scale=s,
                   batch_size=1, n_steps=1, seed=1)
    k = -w / grid
    assert np.array_equal(k, np.round(k))       # grid multiples: γ·integer
    stat = np.sum(k ** 2) / s ** 2
    assert stats.chi2.ppf(5e-7, p) <= stat <= stats.chi2.isf(5e-7, p), stat / p


def test_batches_are_poisson():
    """Each record's inclusions over T steps are Binomial(T, q): the χ² of the
    counts of 100 records (T = 4000, q = 0.05) and their total (normal
    approximation) at level 1e-6 each."""
    n, steps, b = 100, 4000, 5
    X = np.zeros((n, 3))
    _, inclusions = _kernel(X, np.ones(n), eta=1.0, clip=1.0, grid=2.0 ** -20,
                            scale=2.0 ** 24, batch_size=b, n_steps=steps, seed=2)
    q = b / n
    mean, var = steps * q, steps * q * (1 - q)
    chi2 = np.sum((inclusions - mean) ** 2) / var
    assert chi2 <= stats.chi2.isf(1e-6, n), chi2
    z = (inclusions.sum() - n * mean) / np.sqrt(n * var)
    assert abs(z) <= stats.norm.isf(5e-7), z


@pytest.mark.parametrize("m", [2 ** 20, 2 ** 44])
def test_rounded_sum_sensitivity_on_neighbours(m):
    """The integer sum of the rounded clipped gradients moves by at most
    Δ = m + ⌈√d/2⌉ + 1 grid steps when a record is removed, and by at most
    2(m + ⌈√d/2⌉ + 1) when it is replaced by another (extreme rows, random
    iterates; m up to the largest grid the float bound allows at d = 37),
    and by more than 0.9 m somewhere (the bound is not vacuous)."""
    rng = np.random.default_rng(3)
    n, d, clip = 60, 37, 0.8
    X = rng.standard_normal((n, d))
    X[:5] *= 1e3                                  # clipped hard
    y = np.sign(rng.standard_normal(n))
    X2 = X.copy()
    X2[0] = -1e3 * np.sign(X[0])
    grid = clip / m
    worst_remove = worst_replace = 0.0
    dense = (False, np.zeros(1), np.zeros(1, np.int32), np.zeros(1, np.int32))
    for _ in range(30):
        w = rng.standard_normal(d) * 0.1
        sums = []
        for data, rows in ((X, np.arange(n)), (X, np.arange(1, n)), (X2, np.arange(n))):
            qsum = np.zeros(d)
            norms = np.sqrt(np.einsum("ij,ij->i", data, data))
            rounded_sum(dense[0], np.ascontiguousarray(data), *dense[1:], y, rows, w,
                        LOGISTIC, norms, clip, grid, qsum)
            sums.append(qsum)
        worst_remove = max(worst_remove, np.linalg.norm(sums[0] - sums[1]))
        worst_replace = max(worst_replace, np.linalg.norm(sums[0] - sums[2]))
    assert all(np.array_equal(q, np.round(q)) for q in sums)   # integers, exact
    assert 0.9 * m < worst_remove <= secure.lattice_sensitivity(m, 1, d)
    assert worst_replace <= secure.lattice_sensitivity(m, 2, d, records=2)


def test_sparse_rounded_sum_matches_dense():
    """The CSR path rounds and sums the same integers as the dense one."""
    rng = np.random.default_rng(4)
    X = rng.standard_normal((40, 12)) * (rng.random((40, 12)) < 0.3)
    y = np.sign(rng.standard_normal(40))
    w, rows, grid = rng.standard_normal(12), np.arange(40), 1.0 / 2 ** 30
    norms = np.sqrt(np.einsum("ij,ij->i", X, X))
    dense, csr = np.zeros(12), np.zeros(12)
    rounded_sum(False, X, np.zeros(1), np.zeros(1, np.int32), np.zeros(1, np.int32), y, rows,
                w, LOGISTIC, norms, 1.0, grid, dense)
    A = sparse.csr_matrix(X)
    rounded_sum(True, np.zeros((1, 1)), A.data, A.indices, A.indptr, y, rows, w, LOGISTIC,
                norms, 1.0, grid, csr)
    assert np.array_equal(dense, csr)


def _problem(n=2000, p=8, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, p)) / np.sqrt(p)
    y = np.where(X @ np.linspace(-2, 2, p) + 0.3 * rng.standard_normal(n) > 0, 1.0, -1.0)
    return X, y


def test_secure_fit_ledger_and_default():
    """A default fit (no random_state) of dp_sgd is secure: its ledger has the
    discrete Gaussian mechanism on the grid, the continuous event's line at
    (ε − 2a, δ_c) and the lattice_rounding line, adding up to (ε, δ); a
    random_state gives the fast path."""
    X, y = _problem()
    model = DPCoordinateDescentClassifier(solver="dp_sgd", epsilon=1.0, batch_size=50,
                                          passes=3).fit(X, y)
    ledger = model.privacy_ledger_
    assert ledger.noise == "secure"
    (mech,) = ledger.mechanisms
    assert mech.kind == "discrete_gaussian" and mech.sampling == "poisson"
    assert "grid C/" in mech.note and "rounded continuous Gaussian" in mech.note
    line, slack = ledger.budget
    assert (line.group, slack.group) == ("optimisation", "lattice_rounding")
    assert slack.accountant == "closeness" and "rho(s)" in slack.dp_event
    assert line.epsilon_target + slack.epsilon_target == pytest.approx(1.0, rel=1e-12)
    assert line.delta + slack.delta == pytest.approx(ledger.delta, rel=1e-12)
    assert ledger.epsilon_achieved <= ledger.epsilon_target
    assert np.isfinite(model.history_).all() and model.history_[-1] < model.history_[0]
    fast = DPCoordinateDescentClassifier(solver="dp_sgd", epsilon=1.0, batch_size=50,
                                         passes=3, random_state=0).fit(X, y)
    assert fast.privacy_ledger_.noise == "fast"


def test_secure_objective_matches_fast_over_runs():
    """Final objectives of 20 secure runs and 20 fast seeds of the same
    calibrated DP-SGD (ε = 0.5: the noise lifts the objective from 0.165 to
    about 0.29): the two-sample Kolmogorov-Smirnov test does not reject equal
    laws at level 1e-4 (the secure runs draw from the OS: a false failure has
    probability 1e-4), and both stay well above the noiseless run's."""
    X, y = _problem()
    datafit, penalty = make_problem("logistic", "none", 0.0)
    n, p, b, passes, clip = *X.shape, 20, 2, 0.5
    fast = calibrate_dp_sgd(n, b, passes, clip, 0.5, 1e-6)
    lattice = secure_dp_sgd(n, b, passes, clip, 0.5, 1e-6, p)
    kwargs = dict(step=1.0, clip=clip, passes=passes, batch_size=b)
    f = [dp_sgd(X, y, datafit, penalty, noise_scale=fast.noise_scales, seed=k,
                **kwargs).objective[-1] for k in range(20)]
    s = [dp_sgd(X, y, datafit, penalty, noise_scale=0.0, seed=None, secure=lattice,
                **kwargs).objective[-1] for _ in range(20)]
    noiseless = dp_sgd(X, y, datafit, penalty, noise_scale=0.0, seed=0, **kwargs).objective[-1]
    assert stats.ks_2samp(f, s).pvalue >= 1e-4, (np.mean(f), np.mean(s))
    assert np.median(s) > noiseless + 0.05 and np.median(f) > noiseless + 0.05


@pytest.mark.parametrize("mode", ["fast", "secure"])
def test_audit_one_step(mode):
    """The empirical audit (privacy.audit, 10⁶ runs per side) of one full-batch
    step on D = {x*, x₀} against D' = {0, x₀} (replace_special; x*'s clipped
    gradient C·e₁), on the released sum's first coordinate: below the claimed
    ε at the calibrated noise, caught at half of it, for the fast Gaussian and
    for the secure lattice (exact discrete Gaussian from a keyed stream).
    The audit's bounds hold with probability 95 % each."""
    n, d, clip, epsilon, delta = 2, 5, 1.0, 2.0, 1e-5
    kw = dict(relation="replace_special")
    if mode == "fast":
        cal = calibrate_dp_sgd(n, n, 1, clip, epsilon, delta, **kw)
        sigma, shift = float(cal.noise_scales), clip
    else:
        lattice = secure_dp_sgd(n, n, 1, clip, epsilon, delta, d, **kw)
        sigma, shift = lattice.integer_scale, lattice.resolution   # in grid steps
        assert lattice.calibration.ledger.noise == "secure"
    for factor, passes in ((1.0, True), (0.5, False)):
        state = _state(7)

        def sample(rng, neighbour, size, factor=factor, state=state):
            centre = 0.0 if neighbour else shift
            if mode == "fast":
                return centre + factor * sigma * rng.standard_normal(size)
            k = np.empty(size, dtype=np.int64)
            exact.fill_discrete_gaussian(state, factor * sigma, k)
            return centre + k.astype(float)

        res = audit.audit_scores(sample, delta=delta, n_runs=1_000_000, seed=0,
                                 epsilon_claimed=epsilon)
        assert (res.epsilon_lb < epsilon) == passes, (factor, res.epsilon_lb)

"""Empirical privacy audit of the calibrations.

Each audit runs a mechanism 10^6 times per dataset on a worst-case
neighbouring pair with a fixed seed and turns the outputs into a 95 %
Clopper–Pearson lower bound on ε. Correctly calibrated mechanisms must stay
below their claimed ε; deliberately under-noised ones (half the noise) must
be caught (lower bound above the claimed ε).

Margins, measured over seeds 0–29 with these settings (ε = 1):

================================  ===================  ===================
mechanism                         calibrated           half noise
================================  ===================  ===================
Gaussian (δ = 1e-5)               0.63 – 0.78          1.49 – 1.73
Laplace                           0.988 – 0.997        1.98 – 2.00
DP-CD step (δ = 1e-5)             0.62 – 0.80          1.50 – 1.77
RNM monotone, b = Δ/ε             0.79 – 0.81          1.63 – 1.77
RNM |·| non-monotone, b = 2Δ/ε    0.76 – 0.78          1.65 – 1.70 (b=Δ/ε)
================================  ===================  ===================

The Laplace audit is tight (its tail likelihood ratio is exactly e^ε), so its
calibrated bound sits just under ε by construction; it can only exceed ε with
the ≤ 5 % probability the confidence statement allows.
"""

import numpy as np
import pytest
from scipy import stats

import dp_accounting
from dp_accounting.pld import PLDAccountant

from dpcd.privacy import audit, calibrate_dp_cd
from dpcd.privacy.gcd import calibrate_dp_gcd

EPS = 1.0
DELTA = 1e-5
N_RUNS = 1_000_000


# --------------------------------------------------------------------------
# Statistics
# --------------------------------------------------------------------------


@pytest.mark.parametrize("k,n", [(0, 50), (3, 50), (25, 50), (50, 50), (170, 1000)])
def test_clopper_pearson_matches_scipy_exact_interval(k, n):
    lo, hi = audit.clopper_pearson(k, n, alpha=0.05)
    ci = stats.binomtest(k, n).proportion_ci(confidence_level=0.95, method="exact")
    assert lo == pytest.approx(ci.low, abs=1e-12)
    assert hi == pytest.approx(ci.high, abs=1e-12)


def test_clopper_pearson_vectorised_and_validated():
    lo, hi = audit.clopper_pearson(np.array([0, 5, 10]), 10)
    assert lo[0] == 0.0 and hi[-1] == 1.0 and np.all(lo < hi)
    with pytest.raises(ValueError):
        audit.clopper_pearson(11, 10)
    with pytest.raises(ValueError):
        audit.clopper_pearson(1, 10, alpha=0.0)


def _randomized_response(rng, eps, neighbour, size):
    # P[1 | D'] = e^ε/(1+e^ε), P[1 | D] = 1/(1+e^ε): exactly ε-DP, and the
    # test "output = 1" attains ε, so any excess is a statistical error.
    p = np.exp(eps) / (1 + np.exp(eps)) if neighbour else 1 / (1 + np.exp(eps))
    return (rng.random(size) < p).astype(float)


def test_lower_bound_is_valid_on_a_tight_mechanism():
    """Over many repetitions the bound exceeds the true ε at most ~α of the time."""
    rng = np.random.default_rng(12345)
    reps, size = 400, 500
    bounds = np.array([
        audit.epsilon_lower_bound(
            _randomized_response(rng, EPS, False, size),
            _randomized_response(rng, EPS, True, size),
        ).epsilon_lb
        for _ in range(reps)
    ])
    assert np.mean(bounds > EPS) <= 0.05
    # ...and the bound is informative, not trivially zero.
    assert np.median(bounds) > 0.3


def test_selected_threshold_audit_is_valid_on_laplace():
    """Threshold chosen on separate runs: no multiplicity inflation."""
    bounds = np.array([
        audit.audit_laplace(EPS, n_runs=4000, seed=s).epsilon_lb for s in range(100)
    ])
    assert np.mean(bounds > EPS) <= 0.05
    assert np.median(bounds) > 0.5


def test_epsilon_lower_bound_bonferroni_and_direction():
    rng = np.random.default_rng(0)
    d = rng.laplace(0.0, 1.0, 200_000)
    dprime = 1.0 + rng.laplace(0.0, 1.0, 200_000)
    one = audit.epsilon_lower_bound(d, dprime, thresholds=1.5)
    assert one.n_tests == 4 and one.side == ">=" and one.positive == "D'"
    # Swapping the datasets finds the mirrored test with the same bound.
    swapped = audit.epsilon_lower_bound(dprime, d, thresholds=1.5)
    assert swapped.positive == "D" and swapped.epsilon_lb == pytest.approx(one.epsilon_lb)
    # Scanning a grid costs a Bonferroni factor but stays a valid bound.
    grid = audit.epsilon_lower_bound(d, dprime)
    assert grid.n_tests > 4 and grid.epsilon_lb <= EPS
    with pytest.raises(ValueError):
        audit.epsilon_lower_bound([], dprime)
    with pytest.raises(ValueError):
        audit.epsilon_lower_bound(d, dprime, delta=1.0)


def test_audit_is_deterministic_given_seed():
    a = audit.audit_gaussian(EPS, DELTA, n_runs=50_000, seed=7)
    b = audit.audit_gaussian(EPS, DELTA, n_runs=50_000, seed=7)
    c = audit.audit_gaussian(EPS, DELTA, n_runs=50_000, seed=8)
    assert a == b
    assert a != c


# --------------------------------------------------------------------------
# Mechanisms: calibrated stays below ε, half noise is caught
# --------------------------------------------------------------------------


def test_gaussian_mechanism_from_dp_accounting():
    ok = audit.audit_gaussian(EPS, DELTA, n_runs=N_RUNS, seed=0)
    assert ok.noise_scale == pytest.approx(dp_accounting.get_sigma_gaussian(EPS, DELTA))
    assert 0.3 < ok.epsilon_lb < EPS
    bad = audit.audit_gaussian(EPS, DELTA, noise_factor=0.5, n_runs=N_RUNS, seed=0)
    assert bad.epsilon_lb > EPS and bad.violates


def test_laplace_mechanism():
    ok = audit.audit_laplace(EPS, n_runs=N_RUNS, seed=0)
    # Tight: the bound is just below ε (power check), never above it.
    assert 0.95 * EPS < ok.epsilon_lb < EPS
    bad = audit.audit_laplace(EPS, noise_factor=0.5, n_runs=N_RUNS, seed=0)
    assert bad.epsilon_lb > 1.9 * EPS


def test_report_noisy_max_monotone_counts():
    # Count-like pair: one score goes up by Δ = 1, the other stays put.
    u, u_prime = [0.0, 4.0], [1.0, 4.0]
    ok = audit.audit_report_noisy_max(u, u_prime, noise_scale=1.0 / EPS, epsilon=EPS,
                                      n_runs=N_RUNS, seed=0)
    assert 0.5 < ok.epsilon_lb < EPS
    bad = audit.audit_report_noisy_max(u, u_prime, noise_scale=0.5 / EPS, epsilon=EPS,
                                       n_runs=N_RUNS, seed=0)
    assert bad.epsilon_lb > EPS


def test_report_noisy_max_absolute_non_monotone_needs_twice_the_scale():
    """DP-GCD's selection argmax_j |g_j + χ_j| with g_1 ↓ Δ and g_2 ↑ Δ.

    The gap between the two scores moves by 2Δ, so scale Δ/ε (enough for
    monotone counts) is not ε-DP: the audit catches it. Scale 2Δ/ε passes.
    Scores sit far from 0 so the absolute value never flips a sign.
    """
    u, u_prime = [20.0, 24.0], [19.0, 25.0]
    ok = audit.audit_report_noisy_max(u, u_prime, noise_scale=2.0 / EPS, epsilon=EPS,
                                      absolute=True, n_runs=N_RUNS, seed=0)
    assert 0.5 < ok.epsilon_lb < EPS
    bad = audit.audit_report_noisy_max(u, u_prime, noise_scale=1.0 / EPS, epsilon=EPS,
                                       absolute=True, n_runs=N_RUNS, seed=0)
    assert bad.epsilon_lb > EPS


def test_report_noisy_max_validates_scores():
    with pytest.raises(ValueError):
        audit.audit_report_noisy_max([1.0], [2.0], noise_scale=1.0)
    with pytest.raises(ValueError):
        audit.audit_report_noisy_max([1.0, 2.0], [1.0, 2.0, 3.0], noise_scale=1.0)


# --------------------------------------------------------------------------
# DP-CD
# --------------------------------------------------------------------------


def test_worst_case_pair_moves_clipped_gradient_by_sensitivity():
    n, clip = 10, 0.7
    X, y, Xp, yp, w = audit.worst_case_dp_cd_pair(n=n, p=3, j=1, clip=clip)
    g = np.clip(X[:, 1] * (X @ w - y), -clip, clip).mean()
    gp = np.clip(Xp[:, 1] * (Xp @ w - yp), -clip, clip).mean()
    assert g - gp == pytest.approx(2 * clip / n)
    assert np.array_equal(X[1:], Xp[1:]) and np.array_equal(y[1:], yp[1:])


def test_dp_cd_coordinate_step_matches_runs_helper():
    X, y, _, _, w = audit.worst_case_dp_cd_pair(n=8, p=2, j=0)
    noise = np.array([-0.3, 0.0, 0.4])
    one = audit.dp_cd_coordinate_step(X, y, w, 0, 1.0, 0.5, 0.1, noise)
    rng = np.random.default_rng(3)
    runs = audit._dp_cd_runs(X, y, w, [0], 1.0, 0.5, 0.1, 2.0, rng, 3)[:, 0]
    expected = audit.dp_cd_coordinate_step(
        X, y, w, 0, 1.0, 0.5, 0.1, 2.0 * np.random.default_rng(3).standard_normal(3))
    assert np.allclose(runs, expected)
    assert one.shape == (3,)


def test_dp_cd_step():
    ok = audit.audit_dp_cd_step(EPS, DELTA, n_runs=N_RUNS, seed=0)
    z = dp_accounting.get_sigma_gaussian(EPS, DELTA)
    assert ok.noise_scale == pytest.approx(z * 2 * 1.0 / 10)
    assert 0.3 < ok.epsilon_lb < EPS
    bad = audit.audit_dp_cd_step(EPS, DELTA, noise_factor=0.5, n_runs=N_RUNS, seed=0)
    assert bad.epsilon_lb > EPS


def test_dp_cd_ten_steps_pld_calibration():
    """K updates of one coordinate: the composition calibrated by PLD holds."""
    K, n, clip = 10, 5, 1.0
    z = dp_accounting.calibrate_dp_mechanism(
        PLDAccountant,
        lambda m: dp_accounting.SelfComposedDpEvent(dp_accounting.GaussianDpEvent(m), K),
        EPS, DELTA,
    )
    data = audit.worst_case_dp_cd_pair(n=n, p=1, j=0, clip=clip, background_scale=0.0)
    kw = dict(n_steps=K, l1=0.0, data=data, n_runs=N_RUNS // 2, seed=0)
    sigma = z * 2 * clip / n
    assert audit.audit_dp_cd_step(EPS, DELTA, noise_scale=sigma, **kw).epsilon_lb < EPS
    assert audit.audit_dp_cd_step(EPS, DELTA, noise_scale=sigma / 2, **kw).epsilon_lb > EPS
    # Calibrating each step as if it were the only release is caught too.
    single = audit.gaussian_noise_multiplier(EPS, DELTA) * 2 * clip / n
    assert audit.audit_dp_cd_step(EPS, DELTA, noise_scale=single, **kw).epsilon_lb > 2 * EPS


def test_dp_cd_step_requires_noise_for_several_steps():
    with pytest.raises(ValueError):
        audit.audit_dp_cd_step(EPS, DELTA, n_steps=2, n_runs=10)


@pytest.mark.parametrize(
    "p,passes,j,clips",
    [(1, 1, 0, [1.0]), (1, 10, 0, [1.0]), (3, 2, 2, [1.0, 0.5, 2.0])],
    ids=["one-release", "ten-passes", "p3-two-passes-coord2"],
)
def test_dpcd_calibrate_dp_cd(p, passes, j, clips):
    """Audit the project's own ``dpcd.privacy.calibrate_dp_cd``.

    All ``passes · p`` updates hit coordinate ``j`` and the replaced sample
    flips its clipped gradient each time: the fixed-coordinate case that the
    accounting (which takes no credit for the random choice of j) covers.
    With empty background rows and no L1 term the final θ_j is a sufficient
    statistic, so the audit is as tight as the Gaussian one. A missing factor
    2 in the sensitivity 2C_j/n, or a count of releases off by p, would show
    up as the half-noise case does.
    """
    n = 5  # any n works (Δ_j = 2C_j/n); small n keeps the K-step runs cheap
    cal = calibrate_dp_cd(n=n, p=p, passes=passes, clip=np.array(clips), epsilon=EPS, delta=DELTA)
    sigma = float(np.ravel(cal.noise_scales)[j])
    steps = passes * p
    data = audit.worst_case_dp_cd_pair(n=n, p=p, j=j, clip=clips[j], background_scale=0.0)
    kw = dict(clip=clips[j], j=j, l1=0.0, n_steps=steps, data=data,
              n_runs=N_RUNS // 2 if steps > 1 else N_RUNS, seed=0)
    ok = audit.audit_dp_cd_step(EPS, DELTA, noise_scale=sigma, **kw)
    assert 0.3 < ok.epsilon_lb < EPS
    bad = audit.audit_dp_cd_step(EPS, DELTA, noise_scale=sigma / 2, **kw)
    assert bad.epsilon_lb > EPS


@pytest.mark.parametrize("mode", ["correct", "paper"])
def test_dpcd_calibrate_dp_gcd_selection(mode):
    """Audit the report-noisy-max scales of ``calibrate_dp_gcd`` (one iteration).

    Two coordinates, n = 10, C = 1 (Δ = 0.2): the replaced sample lowers the
    mean gradient of coordinate 1 by Δ and raises coordinate 2 by Δ, within
    the clipped range [−1, 1]. The per-step ε′ is the claim. ``mode="paper"``
    (Theorem 4.2's λ′ = Δ/ε′) must be caught; ``"correct"`` (2Δ/ε′) must not.
    """
    cal = calibrate_dp_gcd(n=10, p=2, iterations=1, clip=np.array([1.0, 1.0]),
                    epsilon=2.0, delta=DELTA, mode=mode)
    eps_step = cal.extra["epsilon_per_step"]
    scales = np.asarray(cal.extra["selection_scales"])
    res = audit.audit_report_noisy_max([0.4, 0.8], [0.2, 1.0], noise_scale=scales,
                                       epsilon=eps_step, absolute=True,
                                       n_runs=N_RUNS, seed=0)
    if mode == "correct":
        assert res.epsilon_lb < eps_step
    else:
        assert res.epsilon_lb > eps_step


def _bound_sampler(probabilities_of):
    """The released grid index of the private feature bound on D or D' (one
    row's max_j |x_ij| moves from 2 to 1: the best candidates move from [2, 4)
    to [1, 4))."""
    from dpcd.privacy import bounds

    D, Dp = np.array([1.0, 2, 4, 4]), np.array([1.0, 1, 4, 4])

    def sample(rng, neighbour, size):
        p = probabilities_of(Dp if neighbour else D)
        return rng.choice(bounds.GRID.size, p=p, size=size).astype(float)
    return sample


def test_audit_private_feature_bound():
    """The exponential mechanism of dpcd.privacy.bounds stays below its claim;
    the same release without its randomisation (the grid's best utility) is caught."""
    from dpcd.privacy import bounds

    eps = 1.0
    ok = audit.audit_scores(_bound_sampler(lambda r: bounds.bound_probabilities(r, eps)),
                            n_runs=200_000, seed=0, epsilon_claimed=eps)
    assert ok.epsilon_lb <= eps

    def argmax(r):
        p = np.zeros(bounds.GRID.size)
        p[np.argmax(bounds.bound_probabilities(r, 1e6))] = 1.0
        return p
    bad = audit.audit_scores(_bound_sampler(argmax), n_runs=200_000, seed=0,
                             epsilon_claimed=eps)
    assert bad.epsilon_lb > eps

"""Private hyperparameter selection (dpcd.tuning): accounting against
dp-accounting, calibration, the distribution of K, score sensitivities on
neighbouring datasets, and an empirical audit with dpcd.privacy.audit."""

import math

import numpy as np
import pytest
from dp_accounting import NeighboringRelation, dp_event
from dp_accounting.rdp import rdp_privacy_accountant as rdp
from scipy import stats

from dpcd.privacy.audit import audit_scores
from dpcd.tuning import calibration, scores
from dpcd.tuning.draws import check_k_distribution, draw_k, k_pmf

DISTRIBUTIONS = [("poisson", None), ("geometric", None), ("logarithmic", None),
                 ("negative_binomial", 0.5), ("negative_binomial", 3.0)]


def _shape(name, shape):
    return check_k_distribution(name, 5.0, shape)[1]


def _independent_epsilon(steps, z_train, score_noise, z_score, mean, shape, delta):
    """RepeatAndSelectDpEvent built directly in dp_accounting (no dpcd helper)."""
    score = (dp_event.LaplaceDpEvent(z_score) if score_noise == "laplace"
             else dp_event.GaussianDpEvent(z_score))
    candidate = dp_event.ComposedDpEvent([
        dp_event.SelfComposedDpEvent(dp_event.GaussianDpEvent(z_train), steps), score])
    acc = rdp.RdpAccountant(neighboring_relation=NeighboringRelation.ADD_OR_REMOVE_ONE)
    acc.compose(dp_event.RepeatAndSelectDpEvent(candidate, mean, shape))
    return acc.get_epsilon(delta)


@pytest.mark.parametrize("name,shape", DISTRIBUTIONS)
@pytest.mark.parametrize("score_noise", ["laplace", "gaussian"])
def test_calibration_matches_an_independent_dp_accounting_computation(name, shape,
                                                                      score_noise):
    mean, shape = check_k_distribution(name, 5.0, shape)
    cal = calibration.calibrate_selection([("gaussian", 40)], 1.0, 1e-6, mean, shape, 0.2,
                                        score_noise)
    z_train = cal.train_multipliers[("gaussian", 40)]
    independent = _independent_epsilon(40, z_train, score_noise, cal.score_multiplier,
                                       mean, shape, 1e-6)
    assert cal.epsilon_achieved == pytest.approx(independent, rel=1e-12)
    # the target is met, and tightly: a little less training noise misses it
    assert cal.epsilon_achieved <= 1.0
    assert cal.epsilon_achieved >= 1.0 - 1e-4
    looser = _independent_epsilon(40, z_train * (1 - 1e-3), score_noise,
                                  cal.score_multiplier, mean, shape, 1e-6)
    assert looser > 1.0
    # the score's share: alone it spends at most (and about) f * epsilon
    assert 0.2 * (1 - 1e-4) <= cal.score_epsilon <= 0.2
    score_only = calibration.selection_epsilon([], (score_noise, 1),
                                             cal.score_multiplier * (1 - 1e-3),
                                             mean, shape, 1e-6)
    assert score_only > 0.2


def test_training_noise_is_the_calibrated_multiplier_of_its_per_candidate_target():
    """The training's z is what dpcd.privacy.accounting certifies for the
    per-candidate target (the same call an estimator fit makes)."""
    from dpcd.privacy import accounting

    cal = calibration.calibrate_selection([("gaussian", 30), ("gaussian", 90)], 2.0, 1e-5,
                                        10.0, 1.0, 0.1)
    for spec, z in cal.train_multipliers.items():
        z_ref, achieved, _ = accounting.calibrate_multiplier(spec, cal.train_epsilon, 1e-5,
                                                             "rdp", "replace_one")
        assert z == z_ref
        assert achieved <= cal.train_epsilon
    assert cal.epsilon_achieved <= 2.0
    more = calibration.calibrate_selection([("gaussian", 30), ("gaussian", 90)], 2.0 * 1.01,
                                         1e-5, 10.0, 1.0, 0.1)
    assert more.train_epsilon > cal.train_epsilon  # a larger budget buys less noise


def test_one_training_event_is_searched_on_its_multiplier():
    """One training event: its z searched directly (not through ε_t) is,
    within the RDP calibrations' tolerance, the calibrated multiplier of the
    per-candidate ε_t it spends, and meets the target tightly."""
    from dpcd.privacy import accounting

    spec = ("gaussian", 30)
    cal = calibration.calibrate_selection([spec], 2.0, 1e-5, 10.0, 1.0, 0.1)
    z = cal.train_multipliers[spec]
    z_ref, _, _ = accounting.calibrate_multiplier(spec, cal.train_epsilon, 1e-5, "rdp",
                                                  "replace_one")
    assert z == pytest.approx(z_ref, rel=2 * accounting.RDP_Z_TOLERANCE)
    assert 2.0 * (1 - 1e-5) <= cal.epsilon_achieved <= 2.0
    assert calibration.selection_epsilon([(spec, z * (1 - 1e-5))], cal.score_spec,
                                         cal.score_multiplier, 10.0, 1.0, 1e-5) > 2.0


def test_several_training_events_are_bounded_by_their_curves():
    """The grid's mixture: at least each event's own repeat-and-select ε, at
    most that of an event dominating both curves (their composition)."""
    a, b = (("gaussian", 10), 8.0), (("gaussian", 50), 12.0)
    args = (("laplace", 1), 20.0, 5.0, 1.0, 1e-5)
    both = calibration.selection_epsilon([a, b], *args)
    each = [calibration.selection_epsilon([t], *args) for t in (a, b)]
    assert both >= max(each) - 1e-12
    acc = rdp.RdpAccountant(neighboring_relation=NeighboringRelation.ADD_OR_REMOVE_ONE)
    dominating = dp_event.ComposedDpEvent([
        dp_event.SelfComposedDpEvent(dp_event.GaussianDpEvent(8.0), 10),
        dp_event.SelfComposedDpEvent(dp_event.GaussianDpEvent(12.0), 50),
        dp_event.LaplaceDpEvent(20.0)])
    acc.compose(dp_event.RepeatAndSelectDpEvent(dominating, 5.0, 1.0))
    assert both <= acc.get_epsilon(1e-5)


@pytest.mark.parametrize("name,shape", DISTRIBUTIONS)
def test_k_follows_its_distribution(name, shape):
    """Fixed seed, 40 000 draws: the sample mean within 4 standard errors of
    the requested mean, and a chi-square test of the pmf (bins with >= 20
    expected draws, the tail pooled) not rejected at level 1e-3."""
    mean, shape = check_k_distribution(name, 5.0, shape)
    rng = np.random.default_rng(2022)
    n = 40_000
    draws = np.array([draw_k(rng, mean, shape) for _ in range(n)])
    support = np.arange(0, 2000)
    pmf = k_pmf(support, mean, shape)
    assert pmf.sum() == pytest.approx(1.0, abs=1e-9)
    # the pmf's mean is the mean dp-accounting accounts for
    assert (support * pmf).sum() == pytest.approx(mean, rel=1e-6)
    sd = math.sqrt((support ** 2 * pmf).sum() - mean ** 2)
    assert abs(draws.mean() - mean) < 4 * sd / math.sqrt(n)
    if shape != math.inf:
        assert draws.min() >= 1  # truncated at 0
    expected = n * pmf
    keep = np.flatnonzero(expected >= 20)
    last = keep.max()
    observed = np.array([np.sum(draws == k) for k in keep[:-1]] + [np.sum(draws >= last)])
    exp = np.append(expected[keep[:-1]], expected[last:].sum())
    exp *= observed.sum() / exp.sum()  # bins below the first kept one hold ~nothing
    assert stats.chisquare(observed, exp).pvalue > 1e-3


def test_k_sampler_is_not_a_different_distribution():
    """The chi-square test above can fail: a geometric sampler of the wrong
    mean (6 instead of 5) is rejected."""
    rng = np.random.default_rng(2022)
    draws = np.array([draw_k(rng, 6.0, 1.0) for _ in range(40_000)])
    pmf = k_pmf(np.arange(1, 30), 5.0, 1.0)
    observed = np.array([np.sum(draws == k) for k in range(1, 29)] + [np.sum(draws >= 29)])
    exp = 40_000 * np.append(pmf[:-1], 1 - pmf[:-1].sum())
    assert stats.chisquare(observed, exp).pvalue < 1e-6


@pytest.mark.parametrize("bad,match", [
    (dict(distribution="zipf", mean=5.0), "k_distribution"),
    (dict(distribution="geometric", mean=0.0), "k_mean"),
    (dict(distribution="geometric", mean=-1.0), "k_mean"),
    (dict(distribution="poisson", mean=float("nan")), "k_mean"),
    (dict(distribution="negative_binomial", mean=5.0), "shape"),
    (dict(distribution="negative_binomial", mean=5.0, shape=0.0), "shape"),
    (dict(distribution="geometric", mean=5.0, shape=2.0), "shape"),
])
def test_bad_k_settings_are_refused_by_name(bad, match):
    with pytest.raises(ValueError, match=match):
        check_k_distribution(bad["distribution"], bad["mean"], bad.get("shape"))


@pytest.mark.parametrize("fraction", [0.0, 1.0, -0.1, 1.5, True])
def test_score_fraction_outside_the_unit_interval_is_refused(fraction):
    with pytest.raises(ValueError, match="score_fraction"):
        calibration.calibrate_selection([("gaussian", 5)], 1.0, 1e-5, 5.0, 1.0, fraction)


# ---------------------------------------------------------------- sensitivity
@pytest.mark.parametrize("metric,clip", [("loss", 0.7), ("squared_error", 2.0),
                                         ("accuracy", None)])
def test_score_sensitivity_on_replace_one_neighbours(metric, clip):
    """For a fixed model, replacing one record moves the score by at most the
    stated sensitivity; an extreme record reaches it, and would exceed it
    without the clipping."""
    select_by = "last_objective" if metric == "loss" else "validation"
    rng = np.random.default_rng(0)
    n = 50
    score = scores.ScoreMechanism(select_by, metric, "laplace", n, clip)

    def values(pred, y):
        if metric == "accuracy":
            return (np.sign(pred) == y).astype(float)
        r = pred - y
        return 0.5 * r * r if metric == "loss" else r * r

    w = rng.normal(size=3)
    X = rng.normal(size=(n, 3))
    y = np.sign(rng.normal(size=n)) if metric == "accuracy" else X @ w + 0.1 * rng.normal(size=n)
    base = score.value(values(X @ w, y), penalty=0.3)
    worst = 0.0
    for _ in range(200):
        i = rng.integers(n)
        X2, y2 = X.copy(), y.copy()
        X2[i] = rng.normal(size=3) * rng.choice([1.0, 100.0])
        y2[i] = -np.sign(X2[i] @ w) if metric == "accuracy" else rng.normal() * 100.0
        worst = max(worst, abs(score.value(values(X2 @ w, y2), penalty=0.3) - base))
    assert worst <= score.sensitivity * (1 + 1e-12)
    assert worst >= 0.5 * score.sensitivity
    if clip is not None:  # the clipping is what bounds it
        unclipped = scores.ScoreMechanism(select_by, metric, "laplace", n, 1e12)
        X2, y2 = X.copy(), y.copy()
        y2[0] = 1e3
        moved = abs(unclipped.value(values(X2 @ w, y2)) - unclipped.value(values(X @ w, y)))
        assert moved > score.sensitivity


def test_negative_losses_are_refused():
    score = scores.ScoreMechanism("last_objective", "loss", "laplace", 2, 1.0)
    with pytest.raises(ValueError, match=">= 0"):
        score.value([-1.0, 0.5])


# ---------------------------------------------------------------- audit
def _laplace_max(rng, shift, k, b):
    """Max of k iid shift + Laplace(b) per run (inverse CDF of the max)."""
    u = rng.random(k.shape) ** (1.0 / k)
    return shift + np.where(u < 0.5, b * np.log(2 * u), -b * np.log(2 * (1 - u)))


def test_audit_of_private_selection():
    """A small mechanism: K ~ geometric(mean 10) candidates, each a score of
    sensitivity 1 (0 on D, 1 on D') plus calibrated Laplace noise; the best
    noisy score is released.  The correct version's lower bound stays below
    its claim; the score without noise, or K fixed at its mean instead of
    random (same noise), is caught (lower bound above the claim)."""
    epsilon, delta, mean = 2.0, 1e-5, 10.0
    cal = calibration.calibrate_selection([], epsilon, delta, mean, 1.0, 0.999)
    z, claim = cal.score_multiplier, cal.epsilon_achieved
    assert claim <= epsilon

    def correct(rng, neighbour, size):
        return _laplace_max(rng, float(neighbour), rng.geometric(1.0 / mean, size), z)

    def fixed_k(rng, neighbour, size):
        return _laplace_max(rng, float(neighbour), np.full(size, int(mean)), z)

    def no_noise(rng, neighbour, size):
        return np.full(size, float(neighbour))

    runs = dict(delta=delta, n_runs=400_000, seed=1, epsilon_claimed=claim)
    ok = audit_scores(correct, **runs)
    assert not ok.violates and ok.epsilon_lb > 0.3  # the test has power, yet stays below
    assert audit_scores(fixed_k, **runs).violates
    assert audit_scores(no_noise, **runs).violates

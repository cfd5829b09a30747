"""Calibrations against independent dp_accounting computations and closed forms."""

import math

import dp_accounting
import numpy as np
import pytest
from dp_accounting import dp_event, gaussian_mechanism
from dp_accounting.pld import pld_privacy_accountant
from dp_accounting.rdp import rdp_privacy_accountant

from dpcd import privacy
from dpcd.privacy import accounting

Rel = dp_accounting.NeighboringRelation
N_CAL = 20640
DELTA_CAL = 1.0 / N_CAL**2


def rdp_eps(event, delta, rel=Rel.ADD_OR_REMOVE_ONE, count=1):
    acc = rdp_privacy_accountant.RdpAccountant(neighboring_relation=rel)
    return acc.compose(event, count).get_epsilon(delta)


def pld_eps(event, delta, rel=Rel.ADD_OR_REMOVE_ONE, count=1):
    acc = pld_privacy_accountant.PLDAccountant(rel, value_discretization_interval=1e-4)
    return acc.compose(event, count).get_epsilon(delta)


def assert_tight(eps, target, slack=0.01):
    assert eps <= target * (1 + 1e-9), (eps, target)
    assert eps >= (1 - slack) * target, (eps, target)


@pytest.mark.parametrize("accountant", ["rdp", "pld"])
@pytest.mark.parametrize("epsilon,passes", [(1.0, 10), (0.3, 2), (5.0, 50)])
def test_dp_cd_round_trip(accountant, epsilon, passes):
    p = 8
    cal = privacy.calibrate_dp_cd(N_CAL, p, passes, np.ones(p), epsilon, DELTA_CAL,
                                  accountant=accountant)
    assert cal.ledger.accountant == accountant
    steps = passes * p
    # Independent: compose via `count=` (not SelfComposed) in a fresh accountant.
    g = dp_event.GaussianDpEvent(cal.noise_multiplier)
    eps = (rdp_eps if accountant == "rdp" else pld_eps)(g, DELTA_CAL, count=steps)
    assert_tight(eps, epsilon)
    # The exact (analytic) Gaussian never exceeds the accountant's bound.
    exact = gaussian_mechanism.get_epsilon_gaussian(cal.noise_multiplier / math.sqrt(steps),
                                                    DELTA_CAL)
    assert exact <= epsilon * (1 + 1e-6)


def test_dp_cd_auto_is_tightest_and_noise_scales():
    p, clip = 5, np.array([1.0, 0.5, 2.0, 0.1, 3.0])
    cals = {a: privacy.calibrate_dp_cd(1000, p, 5, clip, 1.0, 1e-6, accountant=a)
            for a in ("rdp", "pld", "auto")}
    assert cals["auto"].noise_multiplier == min(cals["rdp"].noise_multiplier,
                                                cals["pld"].noise_multiplier)
    # RDP and PLD agree to within a few percent on a single Gaussian ledger.
    ratio = cals["pld"].noise_multiplier / cals["rdp"].noise_multiplier
    assert 0.85 < ratio <= 1.0
    cal = cals["auto"]
    np.testing.assert_allclose(cal.noise_scales, cal.noise_multiplier * 2 * clip / 1000)
    assert cal.steps == 25 and cal.ledger.mechanisms[0].count == 25


@pytest.mark.parametrize("epsilon", [0.1, 0.5, 1.0])
@pytest.mark.parametrize("passes", [1, 10, 50])
def test_dp_cd_below_theorem_3_1(epsilon, passes):
    p, n, delta = 8, N_CAL, DELTA_CAL
    clip = np.linspace(0.5, 2.0, p)
    cal = privacy.calibrate_dp_cd(n, p, passes, clip, epsilon, delta)
    sigma_thm = np.sqrt(12 * clip**2 * passes * p * np.log(1 / delta) / (n**2 * epsilon**2))
    assert np.all(cal.noise_scales <= sigma_thm)
    paper = privacy.calibrate_dp_cd(n, p, passes, clip, epsilon, delta, accountant="paper")
    np.testing.assert_allclose(paper.noise_scales, sigma_thm)
    assert paper.epsilon_achieved <= epsilon


def test_replace_one_normalisation_consistent_across_accountants():
    # dp_accounting's PLD under REPLACE_ONE doubles the shift of an unsampled
    # Gaussian while RDP does not; our sensitivity-normalised events must not.
    z = 20.0
    e_rdp = accounting.epsilon_of(("gaussian", 50), z, 1e-6, "rdp", "replace_one")
    e_pld = accounting.epsilon_of(("gaussian", 50), z, 1e-6, "pld", "replace_one")
    assert e_pld <= e_rdp < 1.2 * e_pld


@pytest.mark.parametrize("accountant", ["rdp", "pld"])
def test_dp_sgd_poisson_round_trip(accountant):
    n, batch, passes = 5000, 50, 5
    cal = privacy.calibrate_dp_sgd(n, batch, passes, 2.0, 1.0, 1e-5, accountant=accountant)
    assert cal.steps == math.ceil(passes * n / batch)
    assert cal.ledger.neighbouring == "add_or_remove_one"
    assert cal.noise_scales == pytest.approx(cal.noise_multiplier * 2.0)
    ev = dp_event.PoissonSampledDpEvent(batch / n, dp_event.GaussianDpEvent(cal.noise_multiplier))
    eps = (rdp_eps if accountant == "rdp" else pld_eps)(ev, 1e-5, count=cal.steps)
    assert_tight(eps, 1.0, slack=0.01 if accountant == "rdp" else 0.02)


def test_dp_sgd_without_replacement():
    n, batch = 2000, 40
    cal = privacy.calibrate_dp_sgd(n, batch, 2, 1.0, 2.0, 1e-5, sampling="without_replacement")
    assert cal.ledger.accountant == "rdp" and cal.ledger.neighbouring == "replace_one"
    assert cal.noise_scales == pytest.approx(cal.noise_multiplier * 2.0)  # sensitivity 2C
    ev = dp_event.SampledWithoutReplacementDpEvent(n, batch,
                                                   dp_event.GaussianDpEvent(cal.noise_multiplier))
    assert_tight(rdp_eps(ev, 1e-5, Rel.REPLACE_ONE, count=cal.steps), 2.0)
    with pytest.raises(ValueError, match="accountant"):
        privacy.calibrate_dp_sgd(n, batch, 2, 1.0, 2.0, 1e-5, sampling="without_replacement",
                                 accountant="pld")
    # Poisson under replace-one: the sampled event is PLD's alone
    # (tests/test_privacy_neighbouring.py); asked for RDP, the steps are accounted
    # as unsampled Gaussians of sensitivity 2C (no amplification), never less noise
    rdp_cal = privacy.calibrate_dp_sgd(n, batch, 2, 1.0, 2.0, 1e-5, relation="replace_one",
                                       accountant="rdp")
    unsampled = dp_event.GaussianDpEvent(rdp_cal.noise_multiplier)
    assert_tight(rdp_eps(unsampled, 1e-5, Rel.REPLACE_ONE, count=rdp_cal.steps), 2.0)
    assert rdp_cal.noise_scales == pytest.approx(rdp_cal.noise_multiplier * 2.0)
    pld_cal = privacy.calibrate_dp_sgd(n, batch, 2, 1.0, 2.0, 1e-5, relation="replace_one")
    assert rdp_cal.noise_scales > pld_cal.noise_scales
    with pytest.raises(ValueError, match="neighbouring"):
        privacy.calibrate_dp_sgd(n, batch, 2, 1.0, 2.0, 1e-5, sampling="without_replacement",
                                 relation="add_or_remove_one")


@pytest.mark.parametrize("variant", ["dual", "seq"])
@pytest.mark.parametrize("sampling", ["poisson", "without_replacement"])
def test_dp_scd_round_trip(variant, sampling):
    n, p, L, T = 3000, 20, 30, 200
    if variant == "seq" and sampling == "poisson":
        # Lemma 5 at the expected L does not bound Poisson batches: seq runs them
        # at L_max ("auto" by default), covered by
        # tests/test_dp_scd_release.py::test_seq_poisson_with_max_batch_size
        cal = privacy.calibrate_dp_scd(n, p, L, 1.5, 1.0, 1e-5, iterations=T, variant=variant,
                                       sampling=sampling, accountant="rdp")
        assert cal.extra["max_batch_size"] > L
        return
    cal = privacy.calibrate_dp_scd(n, p, L, 1.5, 1.0, 1e-5, iterations=T, variant=variant,
                                   sampling=sampling, accountant="rdp")
    sens = privacy.dp_scd_sensitivity(1.5, L, variant, cal.ledger.neighbouring)
    if variant == "dual":
        expected = math.sqrt(2) * 1.5 * (1 if sampling == "poisson" else 2)
    else:
        expected = 2 * 1.5 * math.sqrt(L * (L + 1))
    assert sens == pytest.approx(expected)
    assert cal.noise_scales == pytest.approx(cal.noise_multiplier * expected)
    assert cal.sampling == sampling and cal.sampling_rate == pytest.approx(L / n)
    g = dp_event.GaussianDpEvent(cal.noise_multiplier)
    if sampling == "poisson":
        assert cal.ledger.neighbouring == "replace_special"
        eps = rdp_eps(dp_event.PoissonSampledDpEvent(L / n, g), 1e-5, Rel.REPLACE_SPECIAL, T)
    else:
        assert cal.ledger.neighbouring == "replace_one"
        eps = rdp_eps(dp_event.SampledWithoutReplacementDpEvent(n, L, g), 1e-5,
                      Rel.REPLACE_ONE, T)
    assert_tight(eps, 1.0)


def test_dp_scd_primal_and_sampling_mismatch():
    cal = privacy.calibrate_dp_scd(500, 40, 4, 1.0, 1.0, 1e-5, passes=3, variant="primal",
                                   accountant="rdp")
    assert cal.sampling == "none" and cal.steps == 30 and cal.sampling_rate == 1.0
    assert cal.noise_scales == pytest.approx(cal.noise_multiplier * 2 * math.sqrt(20))
    assert_tight(rdp_eps(dp_event.GaussianDpEvent(cal.noise_multiplier), 1e-5, count=30), 1.0)
    with pytest.raises(ValueError, match="sampling"):
        privacy.calibrate_dp_scd(500, 40, 4, 1.0, 1.0, 1e-5, passes=3, variant="primal",
                                 sampling="poisson")
    dual = privacy.calibrate_dp_scd(500, 40, 4, 1.0, 1.0, 1e-5, passes=1)
    privacy.check_sampling(dual, "poisson")
    with pytest.raises(ValueError, match="sampling"):
        privacy.check_sampling(dual, "without_replacement")
    with pytest.raises(ValueError, match="iterations"):
        privacy.calibrate_dp_scd(500, 40, 4, 1.0, 1.0, 1e-5)


def test_dp_cd_p_budget_lines_add_up():
    cal = privacy.calibrate_dp_cd_p(N_CAL, 8, 10, np.ones(8), 1.0, DELTA_CAL,
                                    bounds=np.full(8, 3.0))
    led = cal.ledger
    assert [b.group for b in led.budget] == ["smoothness", "optimisation"]
    assert led.budget[0].epsilon_achieved == pytest.approx(0.1)
    assert led.budget[0].delta == 0.0
    assert sum(b.epsilon_achieved for b in led.budget) == pytest.approx(led.epsilon_achieved)
    assert_tight(led.epsilon_achieved, 1.0)
    direct = privacy.calibrate_dp_cd(N_CAL, 8, 10, np.ones(8), 0.9, DELTA_CAL)
    assert cal.noise_multiplier == direct.noise_multiplier
    np.testing.assert_allclose(cal.extra["smoothness_scales"], 8 * 3.0 / N_CAL / 0.1)


def test_calibration_is_cached():
    accounting._calibrate.cache_clear()
    privacy.calibrate_dp_cd(777, 3, 2, np.ones(3), 0.7, 1e-6)
    misses = accounting._calibrate.cache_info().misses
    for _ in range(50):
        privacy.calibrate_dp_cd(777, 3, 2, np.ones(3), 0.7, 1e-6)
    assert accounting._calibrate.cache_info().misses == misses


@pytest.mark.parametrize("kwargs,name", [
    (dict(epsilon=0.0), "epsilon"), (dict(epsilon=-1.0), "epsilon"),
    (dict(delta=0.0), "delta"), (dict(delta=1.0), "delta"), (dict(n=1), "n"),
    (dict(passes=0), "passes"),
])
def test_validation(kwargs, name):
    args = dict(n=100, p=3, passes=1, clip=np.ones(3), epsilon=1.0, delta=1e-5)
    args.update(kwargs)
    with pytest.raises(ValueError, match=name):
        privacy.calibrate_dp_cd(**args)


def test_validation_batch_size():
    with pytest.raises(ValueError, match="batch_size"):
        privacy.calibrate_dp_sgd(100, 101, 1, 1.0, 1.0, 1e-5)
    with pytest.raises(ValueError, match="batch_size"):
        privacy.calibrate_dp_scd(100, 3, 101, 1.0, 1.0, 1e-5, iterations=5)


@pytest.mark.parametrize("slope", [-1.0, -2.5])
@pytest.mark.parametrize("start", [0.3, 1.0, 40.0])
def test_search_lands_just_above_the_root(slope, start):
    # log ε linear in log z with the slope of large-z Gaussians (-1) or of
    # amplification by sampling (steeper): the answer meets the target and is
    # within the tolerance above the root, in a few evaluations from any start
    root, rtol, seen = 2.0, 1e-3, []

    def gap(z):
        seen.append(z)
        return slope * math.log(z / root)

    z = accounting.search(gap, (start,), -1.0, rtol, 1e-3, 4.0)
    assert root <= z <= root * (1 + rtol)
    assert z in seen and len(seen) <= 8


def test_search_refuses_at_its_floor():
    with pytest.raises(ValueError, match="0.001"):
        accounting.search(lambda z: math.log(1e-5 / z), (1.0,), -1.0, 1e-3, 1e-3, 4.0)


@pytest.mark.parametrize("batch, epsilon", [(10, 0.5), (200, 2.0)])
def test_poisson_replace_one_meets_its_target_at_a_finer_discretisation(batch, epsilon,
                                                                         monkeypatch):
    # PLD alone accounts Poisson replace-one: the searched z meets the target
    # at the search's interval and, re-checked by dp_accounting at a tenth of
    # it, still does; a few PLD evaluations suffice
    n, delta = 20_000, 1e-5
    spec = ("poisson_gaussian", batch / n, math.ceil(3 * n / batch))
    evaluations = []
    real = accounting._poisson_pld_epsilon

    def counting(*args):
        evaluations.append(args)
        return real(*args)

    for fn in (accounting._tightest, accounting._calibrate, accounting._epsilon):
        fn.cache_clear()
    monkeypatch.setattr(accounting, "_poisson_pld_epsilon", counting)
    z, achieved, used = accounting.calibrate_multiplier(spec, epsilon, delta, "auto",
                                                        "replace_one")
    assert used == "pld" and achieved <= epsilon
    assert 1 <= len(evaluations) <= 6
    interval = accounting.pld_interval(spec, "replace_one") / 10
    acc = pld_privacy_accountant.PLDAccountant(Rel.REPLACE_ONE,
                                               value_discretization_interval=interval)
    event = dp_event.PoissonSampledDpEvent(batch / n, dp_event.GaussianDpEvent(z))
    fine = acc.compose(event, spec[2]).get_epsilon(delta)
    assert fine <= epsilon
    # and it is close to the answer: 1 % less noise misses the target
    assert accounting.epsilon_of(spec, 0.99 * z, delta, "pld", "replace_one") > epsilon


def test_the_former_search_agrees_where_pld_is_smooth():
    # the Brent path kept for events whose ε_PLD is not monotone gives, on a
    # smooth event, a z within the tolerance of the interpolating search's
    spec, delta = ("poisson_gaussian", 0.01, 300), 1e-5
    z, achieved, used = accounting.calibrate_multiplier(spec, 1.0, delta, "pld", "replace_one")
    brent = accounting._brent_pld(spec, 1.0, delta, "replace_one")
    assert accounting.epsilon_of(spec, brent, delta, "pld", "replace_one") <= 1.0
    assert abs(z / brent - 1) <= 2 * accounting.PLD_Z_TOLERANCE
    assert accounting._monotone([(0.1, 2.0), (0.3, 0.5), (0.2, 1.0)])
    assert not accounting._monotone([(0.1, 2.0), (0.2, 1.0), (0.3, 1.2)])


@pytest.mark.parametrize("q, steps, z, rel", [
    (1e-4, 200_000, 3.0, Rel.REPLACE_ONE),  # a sparse one-step PMF (7 points), composed densely
    (0.01, 50, 1.5, Rel.ADD_OR_REMOVE_ONE),  # a dense one (2239 points)
    (0.01, 3, 2.0, Rel.ADD_OR_REMOVE_ONE),  # sparse (916 points), 916^3 > 1000: densely
    (0.01, 1, 2.0, Rel.ADD_OR_REMOVE_ONE),  # sparse, not composed
    (0.01, 6, 400.0, Rel.REPLACE_SPECIAL),  # 3 points, 3^6 <= 1000: composed sparsely
    (0.01, 50, 0.8, Rel.REPLACE_ONE),  # dense, its deltas computed on the whole grid at once
])
def test_poisson_pld_epsilon_is_the_accountants(q, steps, z, rel):
    # the PLD ε of a Poisson-sampled Gaussian, composed without the
    # accountant's size**steps check, is the accountant's bit for bit
    interval, delta = 1e-3, 1e-5
    acc = pld_privacy_accountant.PLDAccountant(rel, value_discretization_interval=interval)
    event = dp_event.PoissonSampledDpEvent(q, dp_event.GaussianDpEvent(z))
    expected = acc.compose(event, steps).get_epsilon(delta)
    got = accounting._poisson_pld_epsilon(("poisson_gaussian", q, steps), z, delta, rel.name,
                                          interval)
    assert got == expected


@pytest.mark.parametrize("q, z, interval", [(2e-5, 0.6, 1.5e-4), (0.03, 3.4, 1e-3),
                                            (0.3, 0.8, 1e-3)])
def test_replace_one_losses_inverted_at_once_are_dp_accountings(q, z, interval):
    # the replace-one privacy loss inverted on the whole grid of losses at once
    # gives dp_accounting's point-by-point cut points and deltas, bit for bit
    from dp_accounting.pld import privacy_loss_mechanism as plm

    kwargs = dict(sensitivity=1, pessimistic_estimate=True, log_mass_truncation_bound=-50,
                  sampling_prob=q, adjacency_type=plm.AdjacencyType.REPLACE)
    theirs, ours = plm.GaussianPrivacyLoss(z, **kwargs), accounting._replace_loss_class()(
        z, **kwargs)
    bounds = theirs.connect_dots_bounds()
    losses = np.arange(math.floor(bounds.epsilon_lower / interval) - 2,
                       math.ceil(bounds.epsilon_upper / interval) + 3) * interval
    assert 0.0 in losses
    cuts = np.array([theirs.inverse_privacy_loss(e) for e in losses])
    assert np.array_equal(ours.inverse_privacy_losses(losses), cuts)
    assert np.array_equal(ours.get_delta_for_epsilon(losses),
                          theirs.get_delta_for_epsilon(losses))

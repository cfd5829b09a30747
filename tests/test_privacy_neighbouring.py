"""The ``neighbouring`` setting: every solver calibrated under one chosen relation.

Each calibration is re-checked against an independent dp_accounting
computation of the same event (built here from the noise the solver adds and
one record's contribution, not from the calibration's multiplier), and the
unit dp_accounting's PLD accountant gives a Poisson-sampled Gaussian under
REPLACE_ONE is checked against the hockey-stick divergence of the neighbouring
output distributions, integrated numerically. See docs/method/neighbouring.md.
"""

import math

import dp_accounting
import numpy as np
import pytest
from dp_accounting import dp_event
from dp_accounting.pld import pld_privacy_accountant
from dp_accounting.rdp import rdp_privacy_accountant
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy import integrate, optimize, stats

from dpcd import algorithms, privacy
from dpcd.estimators import DPCoordinateDescentRegressor
from dpcd.problems import make_problem
from dpcd.solvers.dp_sgd import _clipped_derivative

Rel = dp_accounting.NeighboringRelation
RELATIONS = ("replace_one", "add_or_remove_one", "replace_special")


def pld_eps(event, delta, relation, count):
    acc = pld_privacy_accountant.PLDAccountant(getattr(Rel, relation.upper()),
                                               value_discretization_interval=1e-4)
    return acc.compose(event, count).get_epsilon(delta)


def hockey_stick(p, q, eps, scale):
    """∫ max(0, p(x) − e^ε q(x)) dx, numerically."""
    def f(x):
        return max(0.0, p(x) - math.exp(eps) * q(x))
    return integrate.quad(f, -40 * scale, 40 * scale, points=[-scale, 0.0, scale],
                          limit=500, epsabs=1e-12)[0]


@pytest.mark.parametrize("q", [0.05, 0.5, 1.0])
def test_pld_replace_one_unit_is_one_records_contribution(q):
    # Replace-one, one record's clipped gradient a (|a| <= C) replaced by b:
    # the sums differ by up to 2C, and with Poisson sampling the outputs are
    # q N(a, s^2) + (1-q) N(0, s^2) against q N(b, s^2) + (1-q) N(0, s^2),
    # worst at a = -C, b = +C. PLD's REPLACE_ONE event Gaussian(s/C) is that
    # pair: its multiplier is relative to C, half the sensitivity.
    C, s = 1.0, 1.3
    norm = stats.norm(scale=s).pdf
    p = lambda x: q * norm(x + C) + (1 - q) * norm(x)  # noqa: E731
    r = lambda x: q * norm(x - C) + (1 - q) * norm(x)  # noqa: E731
    event = dp_event.PoissonSampledDpEvent(q, dp_event.GaussianDpEvent(s / C))
    acc = pld_privacy_accountant.PLDAccountant(Rel.REPLACE_ONE, value_discretization_interval=1e-4)
    acc.compose(event)
    for eps in (0.1, 0.5, 1.0):
        exact = max(hockey_stick(p, r, eps, s), hockey_stick(r, p, eps, s))
        pld = acc.get_delta(eps)
        assert exact * (1 - 1e-6) <= pld <= exact * 1.02 + 1e-7, (eps, exact, pld)
    # Scaling the noise by the sensitivity 2C instead would claim the pair at
    # half the distance: a delta far below the truth.
    half = pld_privacy_accountant.PLDAccountant(Rel.REPLACE_ONE, value_discretization_interval=1e-4)
    half.compose(dp_event.PoissonSampledDpEvent(q, dp_event.GaussianDpEvent(s / C * 2)))
    assert half.get_delta(0.5) < 0.7 * max(hockey_stick(p, r, 0.5, s), hockey_stick(r, p, 0.5, s))


@pytest.mark.parametrize("relation", RELATIONS)
@pytest.mark.parametrize("n,batch,passes", [(5000, 50, 3), (3000, 1, 2)])
def test_dp_sgd_calibration_per_relation(relation, n, batch, passes):
    clip, delta = 2.0, 1e-5
    cal = privacy.calibrate_dp_sgd(n, batch, passes, clip, 1.0, delta, relation=relation)
    mech = cal.ledger.mechanisms[0]
    assert cal.ledger.neighbouring == relation and mech.relation == relation
    assert mech.sensitivity == (2 * clip if relation == "replace_one" else clip)
    assert mech.noise_scale == pytest.approx(mech.noise_multiplier * mech.sensitivity)
    # The event the noise stands for, from the noise itself: one record's
    # clipped gradient lies within C of 0 under every relation.
    event = dp_event.PoissonSampledDpEvent(batch / n, dp_event.GaussianDpEvent(cal.noise_scales / clip))
    eps = pld_eps(event, delta, relation, cal.steps)
    assert 0.97 <= eps <= 1.0 + 1e-9, eps


def test_replace_one_costs_dp_sgd_more_noise_than_add_or_remove():
    n, batch, delta = 5000, 50, 1e-5
    noise = {rel: privacy.calibrate_dp_sgd(n, batch, 3, 1.0, 1.0, delta, relation=rel).noise_scales
             for rel in RELATIONS}
    assert noise["replace_special"] == noise["add_or_remove_one"]
    assert noise["replace_one"] > 1.05 * noise["add_or_remove_one"]
    # and the add-or-remove noise is not replace-one private at the target
    event = dp_event.PoissonSampledDpEvent(batch / n, dp_event.GaussianDpEvent(
        noise["add_or_remove_one"]))
    assert pld_eps(event, delta, "replace_one", math.ceil(3 * n / batch)) > 1.1


@pytest.mark.parametrize("relation", ["replace_one", "replace_special"])
def test_dual_dp_scd_calibration_per_relation(relation):
    n, p, L, clip, delta = 4000, 10, 40, 1.5, 1e-5
    cal = privacy.calibrate_dp_scd(n, p, L, clip, 1.0, delta, iterations=300, variant="dual",
                                   sampling="poisson", relation=relation)
    assert cal.ledger.neighbouring == relation
    radius = math.sqrt(2) * clip  # one record's [alpha; v] contribution, Lemma 1
    assert cal.ledger.mechanisms[0].sensitivity == pytest.approx(
        radius * (2 if relation == "replace_one" else 1))
    event = dp_event.PoissonSampledDpEvent(L / n, dp_event.GaussianDpEvent(cal.noise_scales / radius))
    assert 0.97 <= pld_eps(event, delta, relation, 300) <= 1.0 + 1e-9


def test_seq_dp_scd_samples_poisson_under_every_relation():
    # Poisson batches at a stated L_max are proven under the zero record and
    # replace-one (docs/method/dp_scd_release.md, sections 5 and 8)
    assert algorithms.get("seq_dp_scd").privacy.sampling == "poisson"
    assert algorithms.get("dp_scd").privacy.sampling == "poisson"
    n, p, L, clip, delta = 4000, 10, 20, 1.0, 1e-5
    cal = privacy.calibrate_dp_scd(n, p, L, clip, 1.0, delta, iterations=200, variant="seq",
                                   relation="replace_one")
    L_max = cal.extra["max_batch_size"]
    radius = privacy.dp_scd_sensitivity(clip, L_max, "seq", "replace_one")  # S(L_max)
    assert cal.ledger.mechanisms[0].sensitivity == pytest.approx(2 * radius)
    event = dp_event.PoissonSampledDpEvent(L / n, dp_event.GaussianDpEvent(
        cal.noise_scales / radius))
    assert 0.97 <= pld_eps(event, delta - cal.extra["delta_tail"], "replace_one", 200) <= 1.0 + 1e-9
    # the opt-in without replacement keeps its RDP accounting (and its caveat)
    wor = privacy.calibrate_dp_scd(n, p, L, clip, 1.0, delta, iterations=200, variant="seq",
                                   sampling="without_replacement", relation="replace_one")
    sens = privacy.dp_scd_sensitivity(clip, L, "seq", "replace_one")
    acc = rdp_privacy_accountant.RdpAccountant(neighboring_relation=Rel.REPLACE_ONE)
    acc.compose(dp_event.SampledWithoutReplacementDpEvent(
        n, L, dp_event.GaussianDpEvent(wor.noise_scales / sens)), 200)
    assert 0.99 <= acc.get_epsilon(delta) <= 1.0 + 1e-9
    assert wor.ledger.caveats == ("release_model_unproven",)


def _replace_pair_hockey_stick(q, h, m, gamma):
    """H_gamma(P_u || P_u') for P_u = (1-q) N(0, I_2) + q N(u, I_2) with
    u = (-h, m), u' = (h, m): conditioning on the second coordinate (the same law
    under both) leaves a 1-D pair with sampling rate p(y), integrated exactly
    (the 1-D privacy loss is monotone, so one root gives the optimal test)."""
    def one_d(p):
        if p == 0.0:
            return 0.0
        a = lambda x: np.logaddexp(np.log1p(-p) - x * x / 2, np.log(p) - (x + h) ** 2 / 2)
        b = lambda x: np.logaddexp(np.log1p(-p) - x * x / 2, np.log(p) - (x - h) ** 2 / 2)
        loss = lambda x: a(x) - b(x) - math.log(gamma)
        if loss(-40.0) <= 0:
            return 0.0
        x = optimize.brentq(loss, -40.0, 40.0, xtol=1e-13)
        cdf = stats.norm.cdf
        return max(0.0, (1 - p) * cdf(x) + p * cdf(x + h)
                   - gamma * ((1 - p) * cdf(x) + p * cdf(x - h)))

    def integrand(y):
        marg = (1 - q) * stats.norm.pdf(y) + q * stats.norm.pdf(y - m)
        return marg * one_d(q * stats.norm.pdf(y - m) / marg)

    return integrate.quad(integrand, -12, 12 + m, epsabs=1e-13, epsrel=1e-10, limit=200)[0]


@pytest.mark.parametrize("q, r", [(0.05, 0.5), (0.05, 2.0), (0.3, 1.0)])
@pytest.mark.parametrize("eps", [0.2, 1.0])
def test_two_shift_pair_is_dominated_by_the_antipodal_pair(q, r, eps):
    """The lemma of docs/method/dp_scd_release.md, section 8 (the premise of
    dp_accounting's Poisson REPLACE_ONE pair for vector releases, DP-SGD's as well
    as DP-SCD's): two shifts of norm r at an angle are never more distinguishable
    than the antipodal pair dp_accounting accounts, checked by integrating the
    hockey-stick divergence (not proven here for non-antipodal shifts)."""
    gamma = math.exp(eps)
    antipodal = _replace_pair_hockey_stick(q, r, 0.0, gamma)
    event = dp_event.PoissonSampledDpEvent(q, dp_event.GaussianDpEvent(1.0 / r))
    acc = pld_privacy_accountant.PLDAccountant(
        neighboring_relation=dp_accounting.NeighboringRelation.REPLACE_ONE,
        value_discretization_interval=1e-4)
    assert acc.compose(event).get_delta(eps) == pytest.approx(antipodal, rel=1e-2, abs=1e-9)
    for angle in np.linspace(0.1, 0.9, 5) * math.pi / 2:
        h, m = r * math.cos(angle), r * math.sin(angle)
        assert _replace_pair_hockey_stick(q, h, m, gamma) <= antipodal * (1 + 1e-7) + 1e-12


@pytest.mark.parametrize("call, solver", [
    (lambda r: privacy.calibrate_dp_cd(1000, 5, 2, np.ones(5), 1.0, 1e-6, relation=r), "dp_cd"),
    (lambda r: privacy.calibrate_dp_cd_p(1000, 5, 2, np.ones(5), 1.0, 1e-6, relation=r),
     "dp_cd_p"),
    (lambda r: privacy.calibrate_dp_gcd(1000, 5, 3, 1.0, 1.0, 1e-6, relation=r), "dp_gcd"),
    (lambda r: privacy.calibrate_dp_scd(1000, 5, 2, 1.0, 1.0, 1e-6, passes=1, variant="primal",
                                        relation=r), "primal_dp_scd"),
])
@pytest.mark.parametrize("relation", ["add_or_remove_one", "replace_special"])
def test_public_n_solvers_refuse_other_relations(call, solver, relation):
    with pytest.raises(ValueError, match=f"neighbouring: {solver} .* got '{relation}'"):
        call(relation)
    assert call("paper").ledger.neighbouring == "replace_one"


def test_refusals_name_the_setting():
    with pytest.raises(ValueError, match="neighbouring: seq_dp_scd .*public N"):
        privacy.calibrate_dp_scd(1000, 5, 10, 1.0, 1.0, 1e-6, passes=1, variant="seq",
                                 sampling="poisson", relation="add_or_remove_one")
    with pytest.raises(ValueError, match="neighbouring: seq_dp_scd .*replace_one only"):
        privacy.calibrate_dp_scd(1000, 5, 10, 1.0, 1.0, 1e-6, passes=1, variant="seq",
                                 sampling="without_replacement", relation="replace_special")
    with pytest.raises(ValueError, match="neighbouring: dp_scd .*public N"):
        privacy.calibrate_dp_scd(1000, 5, 10, 1.0, 1.0, 1e-6, passes=1, variant="dual",
                                 relation="add_or_remove_one")
    with pytest.raises(ValueError, match="neighbouring must be one of"):
        algorithms.get("dp_sgd").check_neighbouring("swap_two")
    algorithms.get("cd").check_neighbouring("add_or_remove_one")  # non-private: nothing to refuse
    with pytest.raises(ValueError, match="neighbouring: dp_cd"):
        algorithms.get("dp_cd").check_neighbouring("add_or_remove_one")


def test_paper_protocol_is_each_solvers_former_default():
    # neighbouring="paper" reproduces the calibrations as they were before the
    # setting existed: DP-SGD add-or-remove-one, dual DP-SCD the zero record.
    sgd = privacy.calibrate_dp_sgd(3000, 30, 2, 1.0, 1.0, 1e-6, relation="paper")
    assert sgd.ledger.neighbouring == "add_or_remove_one"
    assert sgd.noise_scales == privacy.calibrate_dp_sgd(3000, 30, 2, 1.0, 1.0, 1e-6).noise_scales
    scd = privacy.calibrate_dp_scd(3000, 5, 30, 1.0, 1.0, 1e-6, passes=2, relation="paper")
    assert scd.ledger.neighbouring == "replace_special"


def clipped_sum(X, y, w, clip, code):
    """Sum of the per-sample gradients as DP-SGD's kernel clips them."""
    out = np.zeros(X.shape[1])
    for xi, yi in zip(X, y):
        out += _clipped_derivative(code, yi, float(xi @ w), float(np.linalg.norm(xi)), clip) * xi
    return out


finite = st.floats(-20, 20, allow_nan=False, allow_infinity=False)


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_dp_sgd_clipped_sum_sensitivity_per_relation(data):
    n, p = data.draw(st.integers(2, 8)), data.draw(st.integers(1, 4))
    X = data.draw(arrays(float, (n, p), elements=finite))
    y = data.draw(arrays(float, (n,), elements=st.sampled_from([-1.0, 1.0])))
    w = data.draw(arrays(float, (p,), elements=st.floats(-3, 3)))
    clip = data.draw(st.floats(1e-2, 10))
    k = data.draw(st.integers(0, n - 1))
    code = make_problem(data.draw(st.sampled_from(["logistic", "squares"])), "none", 0.0)[0].code
    f = clipped_sum(X, y, w, clip, code)
    neighbours = {
        "replace_one": (np.vstack([X[:k], data.draw(arrays(float, (1, p), elements=finite)),
                                   X[k + 1:]]),
                        np.concatenate([y[:k], [data.draw(st.sampled_from([-1.0, 1.0]))],
                                        y[k + 1:]])),
        "add_or_remove_one": (np.delete(X, k, axis=0), np.delete(y, k)),
        "replace_special": (np.vstack([X[:k], np.zeros((1, p)), X[k + 1:]]), y),
    }
    for relation, (Xp, yp) in neighbours.items():
        cal = privacy.calibrate_dp_sgd(100, 10, 1, clip, 1.0, 1e-5, relation=relation,
                                       accountant="pld" if relation == "replace_one" else "rdp")
        sens = cal.ledger.mechanisms[0].sensitivity
        assert np.linalg.norm(f - clipped_sum(Xp, yp, w, clip, code)) <= sens * (1 + 1e-9) + 1e-12


def test_dp_sgd_replace_one_sensitivity_is_attained():
    # x = e_1 with label +1 and the same record with label -1: squares'
    # gradients 2(0 - y) x are clipped to -C e_1 and +C e_1, 2C apart.
    clip, w = 0.5, np.zeros(2)
    code = make_problem("squares", "none", 0.0)[0].code
    X = np.array([[1.0, 0.0], [0.0, 1.0]])
    f = clipped_sum(X, np.array([1.0, 0.3]), w, clip, code)
    fp = clipped_sum(X, np.array([-1.0, 0.3]), w, clip, code)
    cal = privacy.calibrate_dp_sgd(100, 10, 1, clip, 1.0, 1e-5, relation="replace_one")
    assert np.linalg.norm(f - fp) == pytest.approx(cal.ledger.mechanisms[0].sensitivity)


def test_estimators_default_to_replace_one_and_refuse_what_a_solver_cannot_do():
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(200, 4)), rng.normal(size=200)
    # a given clip: clip="auto" sets the threshold from the noise, so both
    # relations would end at the same noise scale
    model = DPCoordinateDescentRegressor(solver="dp_sgd", random_state=0, clip=1.0).fit(X, y)
    assert model.privacy_ledger_.neighbouring == "replace_one"
    paper = DPCoordinateDescentRegressor(solver="dp_sgd", random_state=0, clip=1.0,
                                         neighbouring="paper").fit(X, y)
    assert paper.privacy_ledger_.neighbouring == "add_or_remove_one"
    assert model.privacy_ledger_.mechanisms[0].noise_scale > \
        paper.privacy_ledger_.mechanisms[0].noise_scale
    with pytest.raises(ValueError, match="neighbouring: dp_cd"):
        DPCoordinateDescentRegressor(neighbouring="add_or_remove_one").fit(X, y)
    with pytest.raises(ValueError, match="neighbouring must be one of"):
        DPCoordinateDescentRegressor(solver="dp_sgd", neighbouring="swap_two").fit(X, y)


def test_replace_one_above_plds_limit_forgoes_amplification():
    # PLD (the only accountant of Poisson replace-one) stops at epsilon 20; above
    # it the steps are accounted as unsampled Gaussians of sensitivity 2C.
    clip, steps = 1.0, 150
    cal = privacy.calibrate_dp_sgd(500, 10, 3, clip, 1e5, 1e-3, relation="replace_one")
    assert cal.steps == steps and "without amplification" in cal.ledger.mechanisms[0].note
    acc = rdp_privacy_accountant.RdpAccountant(neighboring_relation=Rel.ADD_OR_REMOVE_ONE)
    acc.compose(dp_event.GaussianDpEvent(cal.noise_scales / (2 * clip)), steps)
    assert acc.get_epsilon(1e-3) <= 1e5 * (1 + 1e-9)


@pytest.mark.parametrize("solver", ["dp_cd", "dp_cd_p", "dp_gcd", "dp_sgd", "dp_scd",
                                    "seq_dp_scd", "primal_dp_scd"])
def test_a_specs_relations_are_its_calibrations(solver):
    """What a spec refuses before anything runs is what its calibration
    refuses, and its paper's relation is the one its calibration takes for
    "paper" (the spec carries its mechanism's :class:`privacy.Relations`)."""
    from dpcd.algorithms import Budget
    from dpcd.algorithms.problem import Probe

    spec = algorithms.get(solver)
    config = {"passes": 2, "clip": 1.0, "step": 1.0, "batch_size": 2}
    for relation in ("paper", *privacy.calibrate.accounting.RELATIONS):
        try:
            spec.check_neighbouring(relation)
        except ValueError:
            with pytest.raises(ValueError, match="neighbouring: .* is calibrated under"):
                spec.privacy.calibrate(Probe(1000, 4), config,
                                       Budget(1.0, 1e-6, "auto", relation))
            continue
        ledger = spec.privacy.calibrate(Probe(1000, 4), config,
                                        Budget(1.0, 1e-6, "auto", relation)).ledger
        assert ledger.neighbouring == (spec.paper_relation() if relation == "paper" else relation)

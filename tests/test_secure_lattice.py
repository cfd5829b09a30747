"""The lattice-Gaussian accounting of secure vector releases (DP-SGD, DP-SCD):
the closeness bound ρ(s) against exact sums, the grid's sensitivity, the
calibration against dp_accounting and the noise within 1 % of the fast path's.
"""
import math

import mpmath
import numpy as np
import pytest
from dp_accounting import dp_event
from dp_accounting.pld import pld_privacy_accountant
from dp_accounting.rdp import rdp_privacy_accountant

from dpcd.privacy import accounting, calibrate_dp_sgd, secure, secure_dp_sgd

K = secure.LATTICE_TAIL


@pytest.mark.parametrize("s", [2, 8, 32])
def test_closeness_bound_against_exact_sums(s):
    """|ln p_D(k)/p_R(k)| ≤ ρ(s) at every |k| ≤ K·s, and both laws' mass beyond
    K·s is at most τ: p_D by its exact normalised sum, p_R = P(k − 1/2 ≤
    N(0, s²) < k + 1/2) by erfc, at 60 digits (no randomness)."""
    mpmath.mp.dps = 60
    s2 = mpmath.mpf(s) ** 2
    top = int(K * s)
    weights = [mpmath.exp(-mpmath.mpf(k) ** 2 / (2 * s2)) for k in range(0, top + 2 * s + 40)]
    Z = weights[0] + 2 * mpmath.fsum(weights[1:])   # the tail beyond is below 1e-60 relative
    rho = secure.lattice_closeness(s)
    root = mpmath.sqrt(2) * s
    worst = mpmath.mpf(0)
    for k in range(0, top + 1):
        p_d = weights[k] / Z
        p_r = (mpmath.erfc((k - mpmath.mpf(1) / 2) / root)
               - mpmath.erfc((k + mpmath.mpf(1) / 2) / root)) / 2
        worst = max(worst, abs(mpmath.log(p_d / p_r)))
    assert worst <= rho, (worst, rho)
    assert worst >= rho / 20   # the bound is not vacuous at small s
    tail_d = 2 * mpmath.fsum(weights[top + 1:]) / Z
    tail_r = mpmath.erfc((top + mpmath.mpf(1) / 2) / root)
    log_tau = secure.lattice_log_tail(s)
    assert mpmath.log(tail_d) <= log_tau and mpmath.log(tail_r) <= log_tau


def test_lattice_sensitivity_charges_the_rounding():
    """Δ = m·u + r·(⌈√d/2⌉ + 1), ⌈√d/2⌉ exact at the squares' edges, and a
    rounded vector of norm C moves by at most √d/2 steps (random directions)."""
    for d, half in ((1, 1), (4, 1), (5, 2), (16, 2), (17, 3), (105, 6), (10 ** 6, 500),
                    (10 ** 6 + 1, 501)):
        assert secure.lattice_sensitivity(1024, 1, d) == 1024 + half + 1
        assert secure.lattice_sensitivity(1024, 2, d, records=2) == 2048 + 2 * (half + 1)
    rng = np.random.default_rng(0)
    m, d = 2 ** 10, 105
    for _ in range(200):
        v = rng.standard_normal(d)
        v *= 1.0 / np.linalg.norm(v)          # ||v|| = C = 1
        q = secure.round_to_grid(v, 1.0 / m)
        assert np.linalg.norm(q) <= m + math.sqrt(d) / 2


def _epsilon(event, delta, accountant, relation):
    rel = accounting.neighboring_relation(relation)
    acc = (rdp_privacy_accountant.RdpAccountant(neighboring_relation=rel)
           if accountant == "rdp" else pld_privacy_accountant.PLDAccountant(
               neighboring_relation=rel, value_discretization_interval=1e-4))
    return acc.compose(event).get_epsilon(delta)


@pytest.mark.parametrize("n, batch, passes, epsilon, delta, relation, accountant", [
    (2000, 1, 1, 1.0, 1e-5, "add_or_remove_one", "auto"),
    (5000, 50, 5, 0.5, 1e-6, "add_or_remove_one", "rdp"),
    (2000, 20, 3, 2.0, 1e-5, "replace_one", "auto"),
    (2000, 20, 3, 2.0, 1e-5, "replace_one", "rdp"),
])
def test_secure_dp_sgd_calibration_against_dp_accounting(n, batch, passes, epsilon, delta,
                                                          relation, accountant):
    """The continuous event at the secure multiplier z = s/Δ, accounted by
    dp_accounting itself (PLD at a 10x finer interval, or RDP), meets
    (ε − 2a, δ_c); 2a ≤ 10⁻⁴ε; the lines add up to (ε, δ); and the secure
    noise (in units of C) is at most 1 % above the fast calibration's of the
    same event with the same accountant (`auto`: the tightest)."""
    dim, clip = 30, 0.7
    sec = secure_dp_sgd(n, batch, passes, clip, epsilon, delta, dim, accountant=accountant,
                        relation=relation)
    fast = calibrate_dp_sgd(n, batch, passes, clip, epsilon, delta, accountant=accountant,
                            relation=relation)
    ledger = sec.calibration.ledger
    line, slack = ledger.budget
    assert ledger.noise == "secure" and slack.group == "lattice_rounding"
    assert 2 * sec.slack <= secure.LATTICE_SHARE * epsilon
    assert slack.epsilon_achieved == pytest.approx(2 * sec.slack)
    assert line.epsilon_target + slack.epsilon_target == pytest.approx(epsilon, rel=1e-12)
    assert line.delta + slack.delta == pytest.approx(delta, rel=1e-12)
    assert line.delta <= delta * math.exp(-sec.slack) * (1 - secure.LATTICE_TAIL_DELTA)
    assert ledger.epsilon_achieved <= epsilon
    # s = zΔ ≥ 2^24 and the slack a bounds N·ρ(s)
    steps = math.ceil(passes * n / batch)
    assert sec.integer_scale >= secure.LATTICE_MIN_SCALE
    assert steps * dim * secure.lattice_closeness(sec.integer_scale) <= sec.slack
    # the continuous event at z = s / Δ, accounted afresh
    z = sec.integer_scale / sec.sensitivity
    q = batch / n
    if line.dp_event.startswith("SelfComposedDpEvent(event=GaussianDpEvent"):
        event = dp_event.SelfComposedDpEvent(dp_event.GaussianDpEvent(z), steps)
        rel = "ADD_OR_REMOVE_ONE"   # replace-one sensitivity 2C normalised (accounting.py)
    else:
        event = dp_event.SelfComposedDpEvent(
            dp_event.PoissonSampledDpEvent(q, dp_event.GaussianDpEvent(z)), steps)
        rel = accounting.RELATIONS[relation]
    eps_c = _epsilon(event, line.delta, line.accountant, rel)
    assert eps_c <= epsilon - 2 * sec.slack
    # ≤ 1 % above the fast path's noise of the same event (std on the sums)
    ratio = float(sec.calibration.noise_scales) / float(fast.noise_scales)
    assert 1.0 <= ratio <= 1.01, ratio
    assert sec.grid * sec.resolution == pytest.approx(clip)


def test_secure_dp_sgd_refuses_sampling_without_replacement():
    with pytest.raises(ValueError, match="Poisson"):
        secure_dp_sgd(1000, 10, 1, 1.0, 1.0, 1e-5, 5, sampling="without_replacement")

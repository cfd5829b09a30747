"""Secure mode of the DP-SCD variants: updates rounded to the grid C/m, exact
discrete Gaussian noise on α_B (θ_B) and v, batches from the keystream,
accounted by the shared lattice Gaussian (:func:`dpcd.privacy.secure.secure_lattice`).

Kernel-level checks use streams keyed by a fixed key
(``keystream.state_from_key``); fits draw their keys from the OS, so the
statistical checks state their false-failure probability.
"""
import math
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from dpcd.estimators import DPCoordinateDescentClassifier, DPCoordinateDescentRegressor
from dpcd.privacy import accounting, keystream, secure
from dpcd.privacy.scd import _units, calibrate_dp_scd, dp_scd_sensitivity, secure_dp_scd
from dpcd.problems import make_problem
from dpcd.problems._jit import LOGISTIC, SQUARES
from dpcd.solvers.dp_scd import _dual_kernel, _primal_kernel, dp_scd

sys.path.insert(0, str(Path(__file__).parent))
from dp_scd_audit import audit_dp_scd  # noqa: E402  (runs the kernel)

LAM = 0.1
# a discrete Gaussian of scale 2^-10 is 0 but with probability 2e^{-2^19}:
# the kernels' secure updates without noise
NO_NOISE = 2.0 ** -10


def _state(seed):
    return keystream.state_from_key(int(seed).to_bytes(32, "little"))


def _dual_update(X, y, code, clip, m, sequential, key):
    """The secure [α; v] update (the kernel's state: grid steps C/m) of one batch holding every
    record (drawn without replacement: the order the key gives), no noise."""
    n, p = X.shape
    alpha, v = np.zeros(n), np.zeros(p)
    _dual_kernel(np.ascontiguousarray(X), y, alpha, v, code, LAM, LAM, clip, 0.0, n, 1,
                 sequential, 1, np.random.default_rng(0), np.uint64(0), np.empty(2),
                 np.empty(64), np.empty(n, np.int64), np.zeros(p), np.arange(n, dtype=np.int64),
                 np.zeros(1, np.int64), np.einsum("ij,ij->i", X, X), np.empty((0, p)),
                 np.empty(0, np.int64), np.empty(1), _state(key), clip / m, NO_NOISE,
                 np.empty(n + p, np.int64), np.empty(n))
    return np.concatenate([alpha, v])


def _primal_update(X, y, code, clip, m, L, key):
    n, p = X.shape
    theta, v = np.zeros(p), np.zeros(n)
    _primal_kernel(np.asfortranarray(X), y, theta, v, code, LAM, LAM, clip, 0.0, L, 1,
                   np.random.default_rng(0), np.uint64(0), np.empty(2), np.empty(64),
                   np.arange(p, dtype=np.int64), np.empty(n), np.empty(p),
                   np.einsum("ij,ij->j", X, X), np.empty(0, np.int64), np.empty(1),
                   _state(key), clip / m, NO_NOISE, np.empty(n + p, np.int64))
    return np.concatenate([theta, v])


def _unit_rows(rng, n, p):
    X = rng.standard_normal((n, p))
    return X / np.linalg.norm(X, axis=1, keepdims=True)


@pytest.mark.parametrize("code", [SQUARES, LOGISTIC])
@pytest.mark.parametrize("sequential", [False, True])
def test_rounded_updates_move_by_at_most_the_charged_sensitivity(code, sequential):
    """Neighbouring datasets (record 0 replaced by the zero record or by another
    unit record), one batch of every record, a coarse grid (m = 4, where the
    rounding is felt): the integer updates are integers and move by at most the
    Δ the ledger charges, lattice_sensitivity(m, units, p + 1, records), with
    Lemma 1 (dual, one record) or Lemma 5 (seq, 2n records) as units."""
    rng = np.random.default_rng(1)
    n, p, clip, m = 6, 5, 0.7, 4
    worst, bound = {}, {}
    for relation in ("replace_special", "replace_one"):
        units = dp_scd_sensitivity(1.0, n, "seq" if sequential else "dual", relation)
        records = (2 * n if sequential else 1) * (2 if relation == "replace_one" else 1)
        bound[relation] = secure.lattice_sensitivity(m, units, p + 1, records)
        worst[relation] = 0.0
        for trial in range(30):
            X = _unit_rows(rng, n, p)
            y = np.sign(rng.standard_normal(n)) * (3.0 if code == SQUARES else 1.0)
            Xp, yp = X.copy(), y.copy()
            if relation == "replace_special":
                Xp[0] = 0.0
            else:
                Xp[0], yp[0] = _unit_rows(rng, 1, p)[0], -y[0]
            a = _dual_update(X, y, code, clip, m, sequential, trial)
            b = _dual_update(Xp, yp, code, clip, m, sequential, trial)
            steps = np.concatenate([a, b])  # the kernel's state: grid steps
            np.testing.assert_array_equal(steps, np.round(steps))
            worst[relation] = max(worst[relation], np.linalg.norm(a - b))
        assert 0 < worst[relation] <= bound[relation], (relation, worst, bound)
    # the zero record moves its own update only (dual): m·√2 plus the rounding
    if not sequential:
        assert worst["replace_special"] <= m * math.sqrt(2.0) + math.sqrt(p + 1) / 2


@pytest.mark.parametrize("code", [SQUARES, LOGISTIC])
def test_rounded_primal_updates_move_by_at_most_the_charged_sensitivity(code):
    """Primal (Lemma 4, replace-one, columns of norm <= 1 on both datasets): L
    coordinates' rounded updates move by at most lattice_sensitivity(m, S(L)/C,
    n + 1, 2L) grid steps."""
    rng = np.random.default_rng(2)
    n, p, L, clip, m = 8, 4, 3, 0.5, 4
    bound = secure.lattice_sensitivity(m, dp_scd_sensitivity(1.0, L, "primal", ""), n + 1,
                                       2 * L)
    worst = 0.0
    for trial in range(30):
        X = _unit_rows(rng, n, p) / np.sqrt(n)
        y = np.sign(rng.standard_normal(n)) * (3.0 if code == SQUARES else 1.0)
        Xp, yp = X.copy(), y.copy()
        Xp[0], yp[0] = _unit_rows(rng, 1, p)[0] / np.sqrt(n), -y[0]
        a = _primal_update(X, y, code, clip, m, L, trial)
        b = _primal_update(Xp, yp, code, clip, m, L, trial)
        worst = max(worst, np.linalg.norm(a - b))  # grid steps
    assert 0 < worst <= bound, (worst, bound)


def test_primal_noise_on_v_is_fresh_per_entry_across_the_fill_chunks():
    """Primal's noise on v is drawn a chunk at a time (_NOISE_CHUNK): with zero
    updates (X = 0) v after one iteration is its noise alone, n = 3 chunks + 5
    entries. Every entry is an integer, no chunk repeats another, and the
    sample variance matches the scale (s = 5: Var N_Z(0, s²) = s² within
    e^{-2π²s²}) by a χ² test at level 10⁻⁶ (false failure 10⁻⁶)."""
    from dpcd.solvers.dp_scd import _NOISE_CHUNK
    n, p, s = 3 * _NOISE_CHUNK + 5, 2, 5.0
    X, y = np.zeros((n, p), order="F"), np.zeros(n)
    theta, v = np.zeros(p), np.zeros(n)
    _primal_kernel(X, y, theta, v, SQUARES, LAM, LAM, 1.0, 0.0, 1, 1,
                   np.random.default_rng(0), np.uint64(0), np.empty(2), np.empty(64),
                   np.arange(p, dtype=np.int64), np.empty(n), np.empty(p), np.zeros(p),
                   np.empty(0, np.int64), np.empty(1), _state(7), 2.0 ** -20, s,
                   np.empty(n + p, np.int64))
    np.testing.assert_array_equal(v, np.round(v))
    chunks = v[:3 * _NOISE_CHUNK].reshape(3, _NOISE_CHUNK)
    assert not any(np.array_equal(chunks[a], chunks[b]) for a, b in ((0, 1), (0, 2), (1, 2)))
    stat = float(np.sum(v * v)) / s ** 2   # known mean 0: χ²(n)
    assert min(stats.chi2.cdf(stat, n), stats.chi2.sf(stat, n)) > 0.5e-6, stat / n


@pytest.mark.parametrize("variant, batch_size, relation, epsilon", [
    ("dual", 40, "replace_special", 1.0), ("dual", 40, "replace_one", 4.0),
    ("seq", 5, "replace_special", 1.0),
    ("seq", 5, "replace_one", 1.0), ("primal", 2, "replace_one", 1.0)])
def test_secure_noise_within_one_percent_of_fast_auto(variant, batch_size, relation,
                                                      epsilon):
    """The secure noise (s grid steps of C/m) is at least the fast "auto"
    calibration's of the same event and at most 1 % above it; the continuous
    event, recomputed with dp_accounting at the calibrated multiplier, meets
    (ε − 2a, δ_c), and the ledger adds up to at most (ε, δ)."""
    n, p, delta = 2000, 7, 1e-5
    kw = dict(passes=3, variant=variant, relation=relation)
    fast = calibrate_dp_scd(n, p, batch_size, 0.5, epsilon, delta, **kw)
    sec = secure_dp_scd(n, p, batch_size, 0.5, epsilon, delta, **kw)
    ratio = sec.calibration.noise_scales / fast.noise_scales
    assert 1.0 <= ratio <= 1.01, ratio
    np.testing.assert_allclose(sec.calibration.noise_scales, sec.integer_scale * sec.grid,
                               rtol=1e-12)
    ledger = sec.calibration.ledger
    line, slack = ledger.budget[0], ledger.budget[1]
    assert ledger.noise == "secure" and slack.group == "lattice_rounding"
    assert ledger.mechanisms[0].kind == "discrete_gaussian"
    assert ledger.mechanisms[0].released == "theta"
    assert sec.resolution & (sec.resolution - 1) == 0  # a power of two
    # dp_accounting's ε of the continuous event at z = s/Δ meets (ε_c, δ_c − tail)
    cal = sec.calibration
    sens_batch = cal.extra.get("max_batch_size", batch_size)
    units, spec = _units(n, p, batch_size, cal.steps, epsilon, variant, cal.sampling,
                         relation, sens_batch, 0.5)
    z = sec.integer_scale / sec.sensitivity
    eps_c = accounting.epsilon_of(spec, z, line.delta, ledger.accountant, relation)
    assert eps_c <= line.epsilon_target * (1 + 1e-9) < epsilon
    assert sec.sensitivity == secure.lattice_sensitivity(
        sec.resolution, units, (n if variant == "primal" else p) + 1,
        {"dual": 1, "seq": 2 * sens_batch, "primal": 2 * batch_size}[variant]
        * round(units / {"dual": math.sqrt(2), "seq": dp_scd_sensitivity(1, sens_batch, "seq", ""),
                         "primal": dp_scd_sensitivity(1, batch_size, "primal", "")}[variant]))
    a = slack.epsilon_achieved / 2
    draws = cal.steps * ((batch_size + n) if variant == "primal" else (n + p))
    assert a >= draws * secure.lattice_closeness(sec.integer_scale)
    assert 2 * a <= 1e-4 * epsilon
    assert ledger.epsilon_achieved <= epsilon
    assert sum(b.delta for b in ledger.budget) <= delta * (1 + 1e-12)


@pytest.mark.filterwarnings("ignore::dpcd.DefaultsWarning")
@pytest.mark.parametrize("cls, solver", [
    (DPCoordinateDescentRegressor, "dp_scd"), (DPCoordinateDescentClassifier, "seq_dp_scd"),
    (DPCoordinateDescentClassifier, "primal_dp_scd")])
def test_default_fit_is_secure_and_its_ledger_complete(cls, solver):
    """A fit with no random_state runs the secure mode (its ledger: discrete
    Gaussian, the lattice_rounding line, ε and δ within the target); a given
    random_state is the fast mode."""
    rng = np.random.default_rng(3)
    X = rng.standard_normal((400, 5))
    y = X @ np.arange(1.0, 6.0) + 0.1 * rng.standard_normal(400)
    target = y if cls is DPCoordinateDescentRegressor else y > 0
    kw = dict(solver=solver, epsilon=2.0, batch_size=1 if solver == "primal_dp_scd" else 10,
              passes=2, clip=1.0, penalty="l2", alpha=0.1)
    sec = cls(**kw).fit(X, target)
    fast = cls(random_state=0, **kw).fit(X, target)
    ledger = sec.privacy_ledger_
    assert ledger.noise == "secure" and fast.privacy_ledger_.noise == "fast"
    assert [b.group for b in ledger.budget][:2] == ["optimisation", "lattice_rounding"]
    assert ledger.mechanisms[0].kind == "discrete_gaussian"
    assert ledger.epsilon_achieved <= 2.0
    assert sum(b.delta for b in ledger.budget) <= ledger.delta * (1 + 1e-12)
    assert np.all(np.isfinite(sec.coef_)) and np.all(np.isfinite(sec.history_))
    with pytest.raises(ValueError, match="random_state must be None"):
        cls(random_state=0, noise="secure", **kw).fit(X, target)


@pytest.mark.parametrize("variant", ["dual", "seq", "primal"])
def test_secure_runs_agree_with_fast_runs_in_law(variant):
    """θ₀ of 150 secure and 150 fast runs of a tiny problem (noise within 0.01 %
    of each other, the rounding C/m with m ≥ 2²⁰ far below it): a two-sample
    Kolmogorov-Smirnov test at level 10⁻⁴ does not tell them apart (false
    failure probability 10⁻⁴ if the laws are equal; the fast runs are seeded,
    the secure ones keyed by the OS). The means agree within 4 standard errors."""
    rng = np.random.default_rng(5)
    n, p, L = 60, 3, 1 if variant == "primal" else 6
    X = _unit_rows(rng, n, p)
    y = X @ np.array([1.0, -2.0, 0.5]) + 0.1 * rng.standard_normal(n)
    if variant == "primal":
        X = np.asfortranarray(X / np.sqrt(n))
    datafit, penalty = make_problem("squares", "l2", 0.5)
    kw = dict(passes=2, variant=variant, sampling="none" if variant == "primal" else "poisson")
    fast = calibrate_dp_scd(n, p, L, 0.5, 4.0, 1e-4, **kw)
    sec = secure_dp_scd(n, p, L, 0.5, 4.0, 1e-4, **kw)
    run = dict(clip=0.5, passes=2, batch_size=L, variant=variant, sampling=kw["sampling"])
    a = np.array([dp_scd(X, y, datafit, penalty, noise_scale=fast.noise_scales, seed=r,
                         **run).w[0] for r in range(150)])
    b = np.array([dp_scd(X, y, datafit, penalty, noise_scale=0.0, seed=None, secure=sec,
                         **run).w[0] for _ in range(150)])
    assert stats.ks_2samp(a, b).pvalue > 1e-4
    se = math.sqrt(a.var() / a.size + b.var() / b.size)
    assert abs(a.mean() - b.mean()) <= 4 * se
    assert a.std() > 0 and b.std() > 0


def test_audit_secure_dual_theta_stays_below_the_claim():
    """The fast twin's audit (tests/test_dp_scd_release.py: N = 20, L = 1, four
    Poisson iterations, record 0 pushed to +C against the zero record) on the
    secure mode: θ₁'s lower bound stays below the claim; at a tenth of the
    calibrated noise the audit catches the run (95 % Clopper-Pearson bounds)."""
    res = audit_dp_scd(release="theta", passes=0.2, n_runs=2000, noise="secure")
    assert res.epsilon_lb < res.epsilon_claimed <= 1.0
    weak = audit_dp_scd(release="theta", passes=0.2, n_runs=2000, noise="secure",
                        noise_factor=0.1)
    assert weak.epsilon_lb > weak.epsilon_claimed

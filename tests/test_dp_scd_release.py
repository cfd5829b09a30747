"""DP-SCD: the sampling the kernels perform is the sampling accounted, and only θ is
released (issue 30, findings 1-2; docs/method/dp_scd_release.md).

Every ε here is recomputed with dp_accounting directly from the noise the
kernel adds and the batch sizes it actually draws, with Lemma 5 / Lemma 1
written out in the test, not read from dpcd.
"""
import copy
import json
import math
from pathlib import Path

import numpy as np
import pytest
import yaml
from dp_accounting import dp_event
from dp_accounting.pld import pld_privacy_accountant
from dp_accounting.rdp import rdp_privacy_accountant
from dp_accounting.privacy_accountant import NeighboringRelation as Rel
from scipy import stats

from dpcd import privacy
from dpcd.estimators import DPCoordinateDescentClassifier, DPCoordinateDescentRegressor
from dpcd.privacy.ledger import Ledger
from dpcd.problems import make_problem
from dpcd.solvers.dp_scd import dp_scd
from dp_scd_audit import audit_dp_scd  # tests/dp_scd_audit.py: runs the kernel

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = ROOT / "workflow" / "schemas" / "config.schema.yaml"


def _lemma5(clip, b):
    """Lemma 5 (seqDP-SCD) for a batch of b records: 2C sqrt(b(b+1))."""
    return 2.0 * clip * math.sqrt(b * (b + 1.0))


def _unit_rows(X):
    return X / np.linalg.norm(X, axis=1, keepdims=True)


def _data(n, p, seed=0):
    rng = np.random.default_rng(seed)
    return _unit_rows(rng.standard_normal((n, p))), rng.standard_normal(n)


# ------------------------------------------------------------ finding 1: seqDP-SCD
@pytest.mark.parametrize("n,L,passes,eps", [(600, 5, 3, 1.0), (600, 50, 5, 0.5),
                                            (2000, 200, 2, 2.0)])
def test_seq_epsilon_recomputed_over_the_batches_drawn(n, L, passes, eps):
    """Default seqDP-SCD under replace-one: Poisson batches at L_max = "auto"; the
    kernel's batches stay below L_max, and the ledger's epsilon, recomputed with
    dp_accounting's PLD (Poisson-sampled Gaussian, REPLACE_ONE, unit Lemma 5 at
    L_max: the shift from the state without the record) at delta minus the
    binomial tail of a larger batch (recomputed with scipy), meets the target."""
    p, C, delta = 4, 0.3, 1e-4
    cal = privacy.calibrate_dp_scd(n, p, L, C, eps, delta, passes=passes, variant="seq",
                                   relation="replace_one")
    assert cal.sampling == "poisson" and cal.ledger.neighbouring == "replace_one"
    assert cal.ledger.caveats == ()
    L_max = cal.extra["max_batch_size"]
    tail = cal.steps * stats.binom.sf(L_max - 1, n - 1, L / n)
    assert tail <= 0.01 * delta and cal.extra["delta_tail"] == pytest.approx(tail, rel=1e-9)
    X, y = _data(n, p)
    datafit, penalty = make_problem("squares", "l2", 0.1)
    res = dp_scd(X, y, datafit, penalty, clip=C, noise_scale=cal.noise_scales,
                 passes=passes, batch_size=L, seed=3, variant="seq", sampling=cal.sampling)
    drawn = res.extra["batch_sizes"]
    assert drawn.shape == (cal.steps,) and drawn.max() <= L_max
    z = cal.noise_scales / _lemma5(C, L_max)
    acc = pld_privacy_accountant.PLDAccountant(neighboring_relation=Rel.REPLACE_ONE,
                                               value_discretization_interval=1e-3)
    acc.compose(dp_event.PoissonSampledDpEvent(L / n, dp_event.GaussianDpEvent(z)), cal.steps)
    assert acc.get_epsilon(delta - tail) <= eps * (1 + 1e-3)


def test_seq_kernel_batches_are_l_distinct_records():
    """One iteration, no noise, records on distinct axes: exactly L dual variables
    move (no record drawn twice), for many seeds; and every batch of a longer run
    holds L records."""
    n, L = 40, 7
    X = np.eye(n)
    y = np.arange(1.0, n + 1)
    datafit, penalty = make_problem("squares", "l2", 0.1)
    for seed in range(30):
        res = dp_scd(X, y, datafit, penalty, clip=np.inf, noise_scale=0.0, passes=L / n,
                     batch_size=L, seed=seed, variant="seq", sampling="without_replacement")
        assert res.extra["n_iter"] == 1
        assert np.count_nonzero(res.extra["alpha"]) == L
    res = dp_scd(X, y, datafit, penalty, clip=np.inf, noise_scale=0.0, passes=5,
                 batch_size=L, seed=1, variant="seq", sampling="without_replacement")
    assert np.all(res.extra["batch_sizes"] == L)


def test_seq_poisson_defaults_to_auto_max_batch_size():
    auto = privacy.calibrate_dp_scd(1000, 5, 10, 1.0, 1.0, 1e-5, passes=2, variant="seq",
                                    max_batch_size="auto")
    default = privacy.calibrate_dp_scd(1000, 5, 10, 1.0, 1.0, 1e-5, passes=2, variant="seq")
    assert default.sampling == "poisson" and default.extra == auto.extra
    assert default.noise_scales == auto.noise_scales
    with pytest.raises(ValueError, match="max_batch_size must be in"):
        privacy.calibrate_dp_scd(1000, 5, 10, 1.0, 1.0, 1e-5, passes=2, variant="seq",
                                 sampling="poisson", max_batch_size=9)
    with pytest.raises(ValueError, match="max_batch_size: only seqDP-SCD"):
        privacy.calibrate_dp_scd(1000, 5, 10, 1.0, 1.0, 1e-5, passes=2, variant="dual",
                                 max_batch_size=20)


@pytest.mark.parametrize("relation", ["replace_special", "replace_one"])
@pytest.mark.parametrize("max_batch", ["auto", 50])
def test_seq_poisson_with_max_batch_size(max_batch, relation):
    """Poisson batches at a stated L_max: Lemma 5 at L_max, the binomial tail of a
    larger batch (recomputed here) charged to delta, epsilon recomputed with the
    PLD and RDP accountants at delta - tail (PLD only under replace-one, whose unit
    is the shift S(L_max), half the sensitivity); the kernel's batches stay below
    L_max."""
    n, p, L, passes, C, eps, delta = 2000, 4, 20, 3, 0.2, 1.0, 1e-4
    cal = privacy.calibrate_dp_scd(n, p, L, C, eps, delta, passes=passes, variant="seq",
                                   sampling="poisson", max_batch_size=max_batch,
                                   relation=relation)
    T = cal.steps
    L_max = cal.extra["max_batch_size"]
    tail = T * stats.binom.sf(L_max - 1, n - 1, L / n)
    assert cal.extra["delta_tail"] == pytest.approx(tail, rel=1e-9)
    if max_batch == "auto":  # the smallest L_max with a tail <= 1 % of delta
        assert tail <= 0.01 * delta < T * stats.binom.sf(L_max - 2, n - 1, L / n)
    else:
        assert L_max == 50
    led = cal.ledger
    assert led.neighbouring == relation and led.delta == delta
    lines = {b.group: b for b in led.budget}
    assert lines["optimisation"].delta + lines["batch_size_tail"].delta == pytest.approx(delta)
    replace_one = relation == "replace_one"
    assert led.mechanisms[0].sensitivity == pytest.approx(_lemma5(C, L_max) * (1 + replace_one))
    z = cal.noise_scales / _lemma5(C, L_max)
    event = dp_event.PoissonSampledDpEvent(L / n, dp_event.GaussianDpEvent(z))
    rel = Rel.REPLACE_ONE if replace_one else Rel.REPLACE_SPECIAL
    accountants = [pld_privacy_accountant.PLDAccountant(neighboring_relation=rel,
                                                        value_discretization_interval=1e-4)]
    if not replace_one:
        accountants.append(rdp_privacy_accountant.RdpAccountant(neighboring_relation=rel))
    best = min(a.compose(event, T).get_epsilon(delta - tail) for a in accountants)
    assert best <= eps * (1 + 1e-3)
    X, y = _data(n, p)
    datafit, penalty = make_problem("squares", "l2", 0.1)
    res = dp_scd(X, y, datafit, penalty, clip=C, noise_scale=cal.noise_scales, passes=passes,
                 batch_size=L, seed=2, variant="seq", sampling="poisson")
    assert res.extra["batch_sizes"].max() <= L_max


def _config():
    return yaml.safe_load(open(ROOT / "config" / "paper" / "dpscd_aaai21_quick.yaml"))


def test_schema_defaults_seq_to_poisson_at_auto_max_batch_size():
    from snakemake.exceptions import WorkflowError
    from snakemake.utils import validate

    for name in ("dpscd_aaai21.yaml", "dpscd_aaai21_quick.yaml"):
        config = yaml.safe_load(open(ROOT / "config" / "paper" / name))
        for exp in config["experiments"].values():
            assert "sampling" not in exp["solvers"]["seq_dp_scd"]  # Poisson, the default
        validate(config, str(SCHEMA))
    config = _config()
    seq = config["experiments"]["adult_svm"]["solvers"]["seq_dp_scd"]
    seq["sampling"] = "poisson"
    validate(copy.deepcopy(config), str(SCHEMA))
    seq["max_batch_size"] = 0
    with pytest.raises(WorkflowError) as err:
        validate(copy.deepcopy(config), str(SCHEMA))
    assert "max_batch_size" in str(err.value)


def test_estimator_seq_samples_poisson_at_auto_max_batch_size():
    X, y = _data(300, 3)
    est = DPCoordinateDescentRegressor(solver="seq_dp_scd", epsilon=1.0, batch_size=10,
                                       penalty="l2", alpha=0.1, random_state=0).fit(X, y)
    led = est.privacy_ledger_
    mech = led.mechanisms[0]
    assert mech.sampling == "poisson" and mech.released == "theta"
    assert led.neighbouring == "replace_one" and led.caveats == ()
    assert {b.group for b in led.budget} == {"optimisation", "batch_size_tail"}


# ------------------------------------------------------------ finding 2: release model
def test_dual_update_ignores_the_poisson_batch_size():
    """sigma' of Equation 8 is L, not the drawn |B|: whether a (zero) record is also
    sampled moves no other update of the batch, which the proof needs.  Each dual
    variable's move in one Poisson iteration (no noise, squares) equals the closed
    form with L, for batches drawn larger and smaller than L."""
    n, p, L, lam = 200, 3, 10, 0.05
    X, y = _data(n, p, seed=4)
    datafit, penalty = make_problem("squares", "l2", 2 * lam)  # the kernel's lambda
    sizes = set()
    for seed in range(20):
        res = dp_scd(X, y, datafit, penalty, clip=np.inf, noise_scale=0.0, passes=L / n,
                     batch_size=L, seed=seed)
        b = int(res.extra["batch_sizes"][0])
        sizes.add(b)
        moved = np.flatnonzero(res.extra["alpha"])
        assert moved.size == b
        # alpha = v = 0 before the step: zeta_j = y_j / (1 + L ||x_j||^2 / (lambda n))
        expected = y[moved] / (1.0 + L / (lam * n))
        np.testing.assert_allclose(res.extra["alpha"][moved], expected, rtol=1e-12)
    assert min(sizes) < L < max(sizes)


@pytest.mark.parametrize("variant,sampling", [("dual", "poisson"), ("dual", "without_replacement"),
                                              ("seq", "without_replacement"),
                                              ("primal", "none")])
def test_every_dp_scd_ledger_says_released_theta(variant, sampling):
    cal = privacy.calibrate_dp_scd(500, 6, 3, 1.0, 1.0, 1e-5, passes=2, variant=variant,
                                   sampling=sampling)
    mech = cal.ledger.mechanisms[0]
    assert mech.released == "theta"
    assert cal.ledger.flat_params()["privacy.mechanism.0.released"] == "theta"
    back = Ledger.from_json(cal.ledger.to_json())
    assert back == cal.ledger
    # a ledger written before the field existed reads back (released empty)
    old = json.loads(cal.ledger.to_json())
    del old["mechanisms"][0]["released"]
    assert Ledger.from_dict(old).mechanisms[0].released == ""
    assert "privacy.mechanism.0.released" not in Ledger.from_dict(old).flat_params()


def test_alpha_is_not_public():
    """A private run returns no dual variables (only on request, for audits), and the
    fitted estimators keep no per-record array (the dual variables are one per record)."""
    n = 120
    X, y = _data(n, 3)
    datafit, penalty = make_problem("squares", "l2", 0.1)
    kw = dict(clip=0.5, noise_scale=0.3, passes=2, batch_size=10, seed=0)
    for variant, sampling in (("dual", "poisson"), ("seq", "without_replacement")):
        res = dp_scd(X, y, datafit, penalty, variant=variant, sampling=sampling, **kw)
        assert "alpha" not in res.extra
        assert set(res.extra) == {"v", "batch_sizes", "n_iter", "lam", "variant", "sampling"}
        assert "alpha" in dp_scd(X, y, datafit, penalty, variant=variant, sampling=sampling,
                                 return_dual=True, **kw).extra
    labels = np.where(y > 0, 1, 0)
    for cls, target in ((DPCoordinateDescentRegressor, y),
                        (DPCoordinateDescentClassifier, labels)):
        for solver in ("dp_scd", "seq_dp_scd"):
            est = cls(solver=solver, epsilon=1.0, batch_size=10, penalty="l2", alpha=0.1,
                      random_state=0).fit(X, target)
            for name, value in vars(est).items():
                if name.endswith("_") and isinstance(value, np.ndarray):
                    assert n not in value.shape, name


def test_audit_theta_stays_below_the_claim_and_alpha_is_caught():
    """The project's audit on a tiny dual DP-SCD instance (4 Poisson iterations,
    q = 0.05): the released theta's lower bound stays below the claimed epsilon;
    releasing the un-noised dual variables as well (they show when the record was
    sampled) is caught, its lower bound above the claim."""
    theta = audit_dp_scd(release="theta", passes=0.2, n_runs=5000)
    assert theta.epsilon_lb < theta.epsilon_claimed <= 1.0
    alpha = audit_dp_scd(release="alpha", passes=0.2, n_runs=5000)
    assert alpha.epsilon_lb > alpha.epsilon_claimed


@pytest.mark.parametrize("variant", ["dual", "seq"])
def test_audit_replace_one_theta_stays_below_the_claim(variant):
    """Section 8: the same audit on a replace-one pair whose two records push every
    update to +C and -C (antipodal shifts, the worst case of the replace-one pair):
    the released theta's lower bound stays below the claim, for dual and seq
    (Poisson batches at L_max = "auto"); releasing alpha too is caught."""
    theta = audit_dp_scd(release="theta", passes=0.2, n_runs=5000, relation="replace_one",
                         variant=variant)
    assert theta.epsilon_lb < theta.epsilon_claimed <= 1.0
    if variant == "dual":
        alpha = audit_dp_scd(release="alpha", passes=0.2, n_runs=5000,
                             relation="replace_one")
        assert alpha.epsilon_lb > alpha.epsilon_claimed


@pytest.mark.parametrize("relation", ["replace_special", "replace_one"])
@pytest.mark.parametrize("variant, sampling, max_batch_size", [
    ("dual", "poisson", None), ("dual", "without_replacement", None),
    ("seq", "without_replacement", None), ("seq", "poisson", "auto")])
def test_fixed_size_batches_carry_the_unproven_release_caveat(variant, sampling,
                                                              max_batch_size, relation):
    """Sections 6 and 8: with alpha internal, theta-only release is proved for
    Poisson batches (zero record and replace-one); a fixed-size-batch ledger (an
    explicit opt-in, replace-one only) says its epsilon is not a proven bound."""
    if sampling == "without_replacement":
        if relation != "replace_one":
            with pytest.raises(ValueError, match="neighbouring: .*replace_one only"):
                privacy.calibrate_dp_scd(2000, 5, 20, 1.0, 1.0, 1e-5, passes=2,
                                         variant=variant, sampling=sampling, relation=relation)
            return
    cal = privacy.calibrate_dp_scd(2000, 5, 20, 1.0, 1.0, 1e-5, passes=2, variant=variant,
                                   sampling=sampling, relation=relation,
                                   max_batch_size=max_batch_size)
    unproven = sampling == "without_replacement"
    assert ("release_model_unproven" in cal.ledger.caveats) == unproven
    assert (cal.ledger.flat_tags().get("privacy.release_model_unproven") == "true") == unproven

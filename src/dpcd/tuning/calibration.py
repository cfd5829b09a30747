"""The noise of a private search: repeat-and-select calibrated to (ε, δ).

Data-free, like :mod:`dpcd.privacy.calibrate`: from the candidates' training
events (:mod:`dpcd.tuning.candidates`), the score mechanism
(:mod:`dpcd.tuning.scores`) and the law of K (:mod:`dpcd.tuning.draws`), it
finds the noise of both parts for a target (ε, δ) through ``dp_accounting``,
whose RDP accountant implements Papernot & Steinke's bounds (arXiv
2110.03620, Theorems 2 and 6) as ``RepeatAndSelectDpEvent(event, mean,
shape)``.

Calibration
-----------
The target (ε, δ) is split by ``score_fraction`` f: the score's noise is the
smallest whose repeat-and-select release *alone* would cost f·ε at δ; the
training's noise is then found numerically so that the whole
repeat-and-select release meets ε, never above: with one training event, a
search on its noise multiplier (the per-candidate ε is the training's own
there); with several, a search over the per-candidate ε at δ, each
configuration calibrated through
:func:`dpcd.privacy.accounting.calibrate_multiplier`.  Configurations of a grid
may have different training events (e.g. different passes); the candidate,
a data-independent mixture of them, has at each Rényi order at most the
largest of their Rényi divergences (quasi-convexity, van Erven & Harremoës
2014, Thm 13), and that per-order maximum is what repeat-and-select is
applied to.  With one training event this is exactly ``dp_accounting``'s
``RepeatAndSelectDpEvent`` (tested).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np

from dpcd.privacy import accounting, cache
from dpcd.privacy.validation import check_delta, check_epsilon
from dpcd.tuning.candidates import candidate_spec, lattice_slack
from dpcd.tuning.scores import SCORE_NOISES


# ------------------------------------------------------------------ accounting
def _composed(train_spec, train_z, score_spec, score_z):
    from dp_accounting import dp_event

    events = [accounting.make_event(score_spec, score_z)]
    if train_spec is not None:
        events.insert(0, accounting.make_event(train_spec, train_z))
    return dp_event.ComposedDpEvent(events)


def candidate_event(train_spec, train_z, score_spec, score_z):
    """A candidate's ``dp_accounting`` event: training, then its score."""
    return _composed(train_spec, train_z, score_spec, score_z)


def selection_event(train_spec, train_z, score_spec, score_z, mean, shape):
    """``RepeatAndSelectDpEvent(candidate_event, mean, shape)``."""
    from dp_accounting import dp_event

    return dp_event.RepeatAndSelectDpEvent(
        candidate_event(train_spec, train_z, score_spec, score_z), float(mean), float(shape))


def _rdp_relation(train_spec, relation):
    """Name of the accountant relation for a candidate with ``train_spec``."""
    if train_spec is None:
        return "ADD_OR_REMOVE_ONE"  # sensitivity-normalised score only
    return accounting.accountant_relation(train_spec, relation, "rdp")


def selection_epsilon(trainings, score_spec, score_z, mean, shape, delta,
                      relation="replace_one") -> float:
    """ε at ``delta`` of repeat-and-select over candidates whose training is
    one of ``trainings`` (pairs (spec, z), drawn independently of the data).

    One pair: ``dp_accounting``'s RDP accountant on
    ``RepeatAndSelectDpEvent``.  Several: the per-order maximum of the
    candidates' RDP curves (see module docstring), then dp_accounting's
    repeat-and-select bound and RDP-to-(ε, δ) conversion on it.
    """
    trainings = list(dict.fromkeys((s, float(z)) for s, z in trainings)) or [(None, 0.0)]
    return _selection_epsilon(tuple(trainings), score_spec, float(score_z), float(mean),
                              float(shape), float(delta), relation)


def _accountant(train_spec, relation):
    return accounting.new_accountant("rdp", _rdp_relation(train_spec, relation))


def _selection_epsilon(trainings, score_spec, score_z, mean, shape, delta, relation):
    from dp_accounting.rdp import rdp_privacy_accountant as rdp

    if len(trainings) == 1:
        spec, z = trainings[0]
        acc = _accountant(spec, relation)
        acc.compose(selection_event(spec, z, score_spec, score_z, mean, shape))
        return float(acc.get_epsilon(delta))
    curves = []
    for spec, z in trainings:
        acc = _accountant(spec, relation)
        acc.compose(candidate_event(spec, z, score_spec, score_z))
        # dp_accounting keeps the composed curve at its default orders
        curves.append(np.asarray(acc._rdp, dtype=float))
        orders = np.asarray(acc._orders, dtype=float)
    worst = np.max(curves, axis=0)
    out = rdp._compute_rdp_repeat_and_select(orders, worst, mean, shape)
    return float(rdp.compute_epsilon(orders, out, delta)[0])


@dataclass(frozen=True)
class SelectionCalibration:
    """Noise of private selection meeting a target (ε, δ).

    Attributes
    ----------
    train_epsilon : float
        Per-candidate training target (at ``delta``, RDP accountant) each
        configuration is calibrated to; the training noise follows.
    train_multipliers : dict
        Training spec -> noise multiplier.
    score_multiplier : float
        Score noise scale / score sensitivity.
    score_epsilon : float
        ε of the score's repeat-and-select release alone (≤ f·ε).
    epsilon_achieved : float
        ε at ``delta`` of the whole release (≤ ``epsilon``).
    epsilon, delta, mean, shape, score_fraction : float
    relation : str
    lattice : dict or None
        Secure lattice trainings (:func:`lattice_bound`): the cut ``k_max``,
        the slack, and the rounded continuous search's ``rdp_epsilon`` at
        ``rdp_delta``; ``epsilon_achieved`` and ``delta`` are then the
        secure search's.
    """

    train_epsilon: float
    train_multipliers: dict
    score_multiplier: float
    score_epsilon: float
    epsilon_achieved: float
    epsilon: float
    delta: float
    mean: float
    shape: float
    score_fraction: float
    relation: str
    score_spec: tuple = field(default=("laplace", 1))
    lattice: dict | None = None

    def trainings(self):
        return list(self.train_multipliers.items())


def check_score_fraction(score_fraction) -> float:
    """``score_fraction`` as a float in (0, 1), or a ``ValueError`` naming it."""
    ok = isinstance(score_fraction, (int, float, np.number)) and \
        not isinstance(score_fraction, bool) and 0 < score_fraction < 1
    if not ok:
        raise ValueError(f"score_fraction must be a number in (0, 1), got {score_fraction!r}")
    return float(score_fraction)


def _bisect(feasible, lo, hi, iterations=60):
    """Largest x in [lo, hi] (log scale) with ``feasible(x)``; ``feasible(lo)``
    holds and ``feasible(hi)`` does not.  Returns the feasible end."""
    for _ in range(iterations):
        mid = math.sqrt(lo * hi)
        if feasible(mid):
            lo = mid
        else:
            hi = mid
        if hi / lo < 1 + 1e-7:
            break
    return lo


def calibrate_selection(train_specs, epsilon, delta, mean, shape, score_fraction,
                        score_noise="laplace", relation="replace_one",
                        trainings_at=None) -> SelectionCalibration:
    """Calibrate private selection to (``epsilon``, ``delta``).

    Parameters
    ----------
    train_specs : sequence of tuple
        Accounting specs (:mod:`dpcd.privacy.accounting`) of the
        configurations' trainings; empty for candidates without training
        noise (a score-only mechanism, as in the audit).
    epsilon, delta : float
        Target of the whole release (all candidates, selection included).
    mean, shape : float
        Distribution of K (:func:`dpcd.tuning.draws.check_k_distribution`).
    score_fraction : float in (0, 1)
        f: the score's noise alone would spend f·ε under repeat-and-select.
    score_noise : {"laplace", "gaussian"}
    relation : str
        Neighbouring relation of the trainings.
    trainings_at : callable, optional
        ``trainings_at(eps_t) -> {spec: z}``: the trainings' own calibrations
        at per-candidate ε ``eps_t``, for trainings whose event changes with
        their budget (DP-CD-P: its smoothness release spends a fraction of
        ``eps_t``, so its spec does); ``train_specs`` are then those at
        ``epsilon``. Default: each of ``train_specs`` calibrated by
        :func:`dpcd.privacy.accounting.calibrate_multiplier` at ``eps_t``.

    Returns
    -------
    SelectionCalibration
    """
    epsilon, delta = check_epsilon(epsilon), check_delta(delta)
    f = check_score_fraction(score_fraction)
    if score_noise not in SCORE_NOISES:
        raise ValueError(f"score_noise must be one of {', '.join(SCORE_NOISES)}, "
                         f"got {score_noise!r}")
    specs = tuple(dict.fromkeys(tuple(s) for s in train_specs))
    for spec in specs:
        if "rdp" not in accounting.supported_accountants(spec, relation):
            raise ValueError(f"neighbouring: training event {spec} under {relation} has no "
                             "RDP accountant, which repeat-and-select needs")
    score_spec = (score_noise, 1)

    def score_eps(z):
        return selection_epsilon([], score_spec, z, mean, shape, delta, relation)

    # score: smallest multiplier with eps <= f * epsilon (largest 1/z feasible)
    target = f * epsilon
    hi_inv = 1.0
    while score_eps(1.0 / hi_inv) <= target:
        hi_inv *= 2.0
        if hi_inv > 1e6:
            raise ValueError(f"epsilon={epsilon}: the score needs almost no noise; refusing")
    lo_inv = hi_inv
    while score_eps(1.0 / lo_inv) > target:
        lo_inv /= 2.0
        if lo_inv < 1e-9:
            raise ValueError(f"score_fraction={f}: the score cannot meet {target:g} "
                             f"with k_mean={mean}")
    z_score = 1.0 / _bisect(lambda inv: score_eps(1.0 / inv) <= target, lo_inv, hi_inv)
    s_eps = score_eps(z_score)

    if not specs:
        return SelectionCalibration(0.0, {}, z_score, s_eps, s_eps, epsilon, delta, mean,
                                    shape, f, relation, score_spec)
    if trainings_at is None:
        # a function of these inputs alone, the same in every selection seed's
        # job of a grid: computed once per cache (DPCD_CALIBRATION_CACHE)
        inputs = {"specs": [list(s) for s in specs], "epsilon": epsilon, "delta": delta,
                  "mean": mean, "shape": shape, "score_fraction": f,
                  "score_noise": score_noise, "relation": relation}
        eps_t, zs, achieved = cache.cached("calibrate_selection", inputs, lambda: _to_json(
            *_train_search(specs, epsilon, delta, mean, shape, f, relation, score_spec,
                           z_score, None)))
        zs = {_as_tuple(s): z for s, z in zs}
    else:
        eps_t, zs, achieved = _train_search(specs, epsilon, delta, mean, shape, f, relation,
                                            score_spec, z_score, trainings_at)
    return SelectionCalibration(eps_t, zs, z_score, s_eps, achieved, epsilon, delta, mean,
                                shape, f, relation, score_spec)


def _as_tuple(value):
    """A spec read back from JSON: its lists as the tuples they were."""
    return tuple(_as_tuple(v) for v in value) if isinstance(value, list) else value


def _to_json(eps_t, zs, achieved):
    return [eps_t, [[list(s), z] for s, z in zs.items()], achieved]


def _train_search(specs, epsilon, delta, mean, shape, f, relation, score_spec, z_score,
                  trainings_at):
    """The per-candidate training epsilon (largest with the whole release at
    most ``epsilon``), the trainings' multipliers there and the total."""
    def multipliers(eps_t):
        if trainings_at is not None:
            zs = trainings_at(eps_t)
            for spec in zs:
                if "rdp" not in accounting.supported_accountants(spec, relation):
                    raise ValueError(f"neighbouring: training event {spec} under {relation} "
                                     "has no RDP accountant, which repeat-and-select needs")
            return zs
        return {s: accounting.calibrate_multiplier(s, eps_t, delta, "rdp", relation)[0]
                for s in specs}

    def total(eps_t):
        return selection_epsilon(list(multipliers(eps_t).items()), score_spec, z_score,
                                 mean, shape, delta, relation)

    if trainings_at is None and len(specs) == 1:
        found = _multiplier_search(specs[0], epsilon, delta, mean, shape, f, relation,
                                   score_spec, z_score)
        if found is not None:
            return found
    # total(eps_t) >= eps_t (repeat-and-select only adds): eps_t < epsilon
    lo, hi = 1e-3 * epsilon, epsilon
    if total(lo) > epsilon:
        raise ValueError(f"score_fraction={f}, k_mean={mean}: the target epsilon={epsilon} "
                         "leaves no budget for training; lower score_fraction or k_mean")
    if total(hi) <= epsilon:
        eps_t = hi
    else:  # Brent on log eps_t, then the feasible side
        from scipy import optimize

        def gap(log_e):
            return total(math.exp(log_e)) - epsilon

        root = optimize.brentq(gap, math.log(lo), math.log(hi), xtol=1e-7)
        eps_t = next((math.exp(x) for x in (root, root - 1e-7, root - 1e-6)
                      if total(math.exp(x)) <= epsilon),
                     _bisect(lambda e: total(e) <= epsilon, lo, math.exp(root)))
    zs = multipliers(eps_t)
    achieved = total(eps_t)
    if achieved > epsilon:  # unreachable: bisection keeps the feasible end
        raise RuntimeError(f"selection calibration overshoot: {achieved} > {epsilon}")
    return eps_t, zs, achieved


def _multiplier_search(spec, epsilon, delta, mean, shape, f, relation, score_spec, z_score):
    """:func:`_train_search` of one training event, searched on its noise
    multiplier: the smallest z (within the RDP calibrations' tolerance) whose
    repeat-and-select release meets ``epsilon``, by
    :func:`dpcd.privacy.accounting.search` (a few evaluations of the release,
    where the search over ε_t ran a calibration for each of its dozens);
    ε_t is the training's own ε at that z; None if that is above ``epsilon``
    (the release is never cheaper than its training: the search over ε_t
    then decides)."""
    def total(z):
        return selection_epsilon([(spec, z)], score_spec, z_score, mean, shape, delta,
                                 relation)

    def gap(z):
        return min(max(math.log(max(total(z), 1e-300) / epsilon), -700.0), 700.0)

    start = accounting.initial_guess(spec, (1.0 - f) * epsilon, delta)
    z = accounting.search(gap, (max(start, 2 * accounting.Z_FLOOR["rdp"]),), -1.0,
                          accounting.RDP_Z_TOLERANCE, accounting.Z_FLOOR["rdp"],
                          accounting.MAX_STEP["rdp"])
    eps_t = accounting.epsilon_of(spec, z, delta, "rdp", relation)
    if eps_t < 1e-3 * epsilon:
        raise ValueError(f"score_fraction={f}, k_mean={mean}: the target epsilon={epsilon} "
                         "leaves no budget for training; lower score_fraction or k_mean")
    if eps_t > epsilon:
        return None
    achieved = total(z)
    if achieved > epsilon:  # unreachable: the search returns a z that meets it
        raise RuntimeError(f"selection calibration overshoot: {achieved} > {epsilon}")
    return eps_t, {spec: z}, achieved


# ------------------------------------------------------------------ over a grid's candidates
def aligned(cal, zs_at, k_mean, shape):
    """``cal`` with each training's noise multiplier the one its own calibration
    gives at ``cal.train_epsilon`` (``zs_at(eps) -> {spec: z}``; DP-GCD searches
    its ε′ itself, a few 1e-9 from the selection's search) and the total
    recomputed from them; ``train_epsilon`` lowered by 1e-6 (then 1e-5, ...)
    until the total meets the target. Never more than the target: what runs is
    what is accounted."""
    eps_t = cal.train_epsilon
    for attempt in range(6):
        zs = zs_at(eps_t)
        total = selection_epsilon(list(zs.items()), cal.score_spec, cal.score_multiplier,
                                  k_mean, shape, cal.delta, cal.relation)
        if total <= cal.epsilon:
            return replace(cal, train_epsilon=eps_t, train_multipliers=zs,
                           epsilon_achieved=total)
        eps_t *= 1.0 - 1e-6 * 10**attempt
    raise RuntimeError(f"the trainings' own calibrations overshoot the target {cal.epsilon}")


def calibrate_candidates(ledger_of, keys, n_samples, epsilon, delta, k_mean, shape,
                         score_fraction, score_noise, check_relation=None):
    """The selection's calibration over the candidates ``keys`` (every
    configuration of the grid, drawn or not: the mixture), for the workflow
    and the estimator alike.

    ``ledger_of(key, eps)`` is a configuration's calibrated training ledger at
    ``eps``; its event is read by :func:`candidate_spec`. DP-CD-P's event
    changes with its budget (its smoothness release spends a fraction of it):
    the selection then searches the trainings' own calibrations. The
    candidates must share one neighbouring relation (``check_relation(rel)``
    may refuse it further).

    Returns
    -------
    cal : SelectionCalibration
        :func:`aligned` with the trainings' own multipliers.
    specs : dict
        key -> (spec, z) of each training at ``cal.train_epsilon``.
    private_smoothness : bool
        Whether the candidates release their own smoothness constants.
    """
    def specs_at(eps):
        out, relations = {}, set()
        for key in keys:
            ledger = ledger_of(key, eps)
            out[key] = candidate_spec(ledger, n_samples)
            relations.add(ledger.neighbouring)
        return out, relations

    def zs_at(eps_t):  # the trainings' own calibrations (DP-GCD: its eps'; DP-CD-P: its split)
        zs = {}
        for spec, z in specs_at(eps_t)[0].values():
            zs[spec] = min(z, zs.get(spec, math.inf))
        return zs

    def slack_at(eps_t):  # the largest lattice slack a of the trainings at eps_t
        return max(lattice_slack(ledger_of(key, eps_t)) for key in keys)

    specs, relations = specs_at(epsilon)
    private_smoothness = any(s[0] == "smoothness_gaussian" for s, _ in specs.values())
    if len(relations) != 1:
        raise ValueError(f"neighbouring: the grid mixes relations {sorted(relations)}")
    relation = relations.pop()
    if check_relation is not None:
        check_relation(relation)

    def calibrated(eps, dlt):
        cal = calibrate_selection(
            [s for s, _ in specs.values()], eps, dlt, k_mean, shape, score_fraction,
            score_noise, relation, trainings_at=zs_at if private_smoothness else None)
        return aligned(cal, zs_at, k_mean, shape)

    cal = calibrated(epsilon, delta)
    slack = slack_at(cal.train_epsilon)
    if slack > 0:  # secure lattice trainings: the search's closeness (lattice_bound)
        cal = lattice_bound(calibrated, slack_at, slack, epsilon, delta, k_mean, shape)
    if private_smoothness:
        specs = specs_at(cal.train_epsilon)[0]
    return cal, specs, private_smoothness


# A secure search over lattice trainings (lattice_bound): the rounded
# continuous search is calibrated at delta * e^{-k0 a} * (1 - LATTICE_DELTA),
# and P(K > k0) plus the draws' tails, times 1 + e^{eps + 1}, fit in
# LATTICE_DELTA * delta.
LATTICE_DELTA = 1e-6
# The first calibration's slack, times this, bounds the second's (checked).
_SLACK_MARGIN = 1.01


def lattice_bound(calibrated, slack_at, slack, epsilon, delta, mean, shape):
    """Repeat-and-select over secure lattice trainings (docs/secure_noise.md,
    "Private search").

    A lattice candidate's law is within ``e^{±a}`` pointwise of the rounded
    continuous run's off its tails (:func:`dpcd.privacy.secure.secure_lattice`),
    whose event the selection accounts; given ``K = k`` the k independent
    candidates are within ``e^{±k a}`` off ``k N τ``, and the selection is a
    post-processing. With ``K`` cut at ``k₀``, for every output set ``S``:
    ``P_D(S) ≤ e^{k₀ a} P_R(S) + P(K > k₀) + E[K] N τ`` and the same with D
    and R swapped, so if the rounded search is ``(ε_R, δ_R)``-DP the secure
    one is ``(ε_R + 2 k₀ a, e^{k₀ a} δ_R + (1 + e^{ε_R + k₀ a})(P(K > k₀) +
    E[K] N τ))``-DP.  ``N τ`` is bounded from the slack alone (``N ≤ a/ρ(s)``
    with ``s`` at most the sampler's range, ``τ`` at ``s ≥ 1``).

    ``calibrated(eps, delta)`` is the selection's calibration of the
    continuous events, ``slack_at(eps_t)`` the largest ``a`` of the trainings
    at the per-candidate ``eps_t``, ``slack`` that at the calibration for
    ``(epsilon, delta)``. Returns the calibration at the reduced target,
    its ``epsilon``, ``delta`` and ``epsilon_achieved`` those of the secure
    search, and ``lattice`` the record of the bound.
    """
    from dpcd.privacy import secure
    from dpcd.privacy.exact import MAX_SCALE  # numba's import: only for secure runs
    from dpcd.tuning.draws import k_cut, k_tail

    bar = _SLACK_MARGIN * slack
    margin = 1.0 + math.exp(min(epsilon + 1.0, 700.0))
    k0 = k_cut(mean, shape, 0.5 * LATTICE_DELTA * delta / margin)
    if k0 * bar > 1.0:
        raise ValueError(f"noise='secure': the lattice slack {slack:.3g} of each candidate, "
                         f"over up to {k0} candidates, exceeds the bound's range; lower "
                         "k_mean")
    eps_1 = epsilon - 2.0 * k0 * bar
    delta_1 = delta * math.exp(-k0 * bar) * (1.0 - LATTICE_DELTA)
    if eps_1 <= 0:
        raise ValueError(f"noise='secure': the lattice slack over {k0} candidates leaves "
                         "no budget")
    cal = calibrated(eps_1, delta_1)
    a = slack_at(cal.train_epsilon)
    if a > bar:
        raise RuntimeError(f"noise='secure': the trainings' slack {a:.3g} exceeds {bar:.3g}")
    eps_r = cal.epsilon_achieved
    tail = k_tail(k0, mean, shape)
    # E[K]·N·τ, N ≤ a/ρ(MAX_SCALE), τ ≤ τ(1)
    log_draws = (math.log(mean) + math.log(max(a, 1e-300))
                 - math.log(secure.lattice_closeness(MAX_SCALE))
                 + secure.lattice_log_tail(1.0))
    spent = math.exp(k0 * a) * delta_1 + (1.0 + math.exp(min(eps_r + k0 * a, 700.0))) * (
        tail + math.exp(log_draws))
    total = eps_r + 2.0 * k0 * a
    if total > epsilon or spent > delta:
        raise RuntimeError(f"noise='secure': the lattice bound ({total}, {spent}) misses "
                           f"the target ({epsilon}, {delta})")
    record = {"k_max": int(k0), "slack": float(a), "rdp_epsilon": float(eps_r),
              "rdp_delta": float(delta_1), "k_tail": float(tail),
              "log_draw_tails": float(log_draws), "delta_spent": float(spent)}
    return replace(cal, epsilon=float(epsilon), delta=float(delta), epsilon_achieved=total,
                   lattice=record)


__all__ = ["LATTICE_DELTA", "SelectionCalibration", "aligned", "calibrate_candidates",
           "calibrate_selection", "candidate_event", "check_score_fraction", "lattice_bound",
           "selection_epsilon", "selection_event"]

"""Private hyperparameter selection (Papernot & Steinke, ICLR 2022).

Run a random number K of private *candidates* and release only the best: each
candidate trains a model with hyperparameters drawn at random (independently
of the data) and releases a noisy *score* of it; the candidate with the best
noisy score is released (model and score), every other output is discarded.
If K follows a truncated negative binomial (TNB) or Poisson distribution,
the whole release is Rényi-DP with the bounds of Papernot & Steinke
(arXiv 2110.03620, Theorems 2 and 6), which ``dp_accounting``'s RDP
accountant implements as ``RepeatAndSelectDpEvent(event, mean, shape)``.

What goes out with a release
----------------------------
The released model, its noisy score and its ledger, which records the law
of K (distribution, mean, shape) and the calibration, never K itself, the
configurations drawn, the other candidates or the seed the noise came from.
The bound covers the best candidate with K as internal randomness; given
K = k the output is a best-of-k mechanism whose loss grows with k, so
publishing K turns the mixture's guarantee into the average of the
best-of-k's (docs/method/private_tuning.md, "What a release carries").

This module is data-free, like :mod:`dpcd.privacy.calibrate`: it knows the
distributions of K, the score mechanisms and their sensitivities, the
candidate's event, and calibrates the noise of both parts to a target
(ε, δ).  Running candidates is :mod:`dpcd.sweep.private_search`.

Distributions of K (``dp_accounting``'s parametrisation)
--------------------------------------------------------
``shape`` η and ``mean`` μ ≥ 1 fix the distribution:

* ``"poisson"`` (η = ∞): K ~ Poisson(μ); K = 0 is possible and then nothing
  is released (Theorem 6 accounts for it).
* ``"negative_binomial"`` (0 < η < ∞): P(K = k) ∝ C(k+η−1, k) (1−γ)^k for
  k ≥ 1, with γ set by μ (dp_accounting's ``_gamma_truncated_negative_binomial``).
* ``"geometric"`` (η = 1): P(K = k) = γ (1−γ)^(k−1), γ = 1/μ.
* ``"logarithmic"`` (η = 0): P(K = k) ∝ (1−γ)^k / k.

Scores and their sensitivities
------------------------------
* ``"last_objective"``: the training objective of the candidate's final
  model with each sample's loss clipped to a public bound B,
  ``(1/n) Σ min(ℓ_i(w), B) + R(w)``.  Losses are ≥ 0, so each clipped
  term lies in [0, B] and replacing one record moves the mean by ≤ B/n;
  R(w) is a function of the candidate's released model only.  Lower is better.
  Under add-or-remove-one, n is a public constant fixed when the mechanism
  is built (as DP-SGD's sampling rate b/n): the clipped *sum* (sensitivity
  B) gets noise of scale z·B and is divided by that n, so a neighbour with
  one record more or less is scored with the same n and the same noise
  (not with its own n, which would make the noise scale a function of the
  data).
* ``"validation"``: a metric on a validation set of ``n_val`` records
  disjoint from the training records: accuracy (each term in {0, 1},
  sensitivity 1/n_val; higher is better) or the squared error clipped to B
  (sensitivity B/n_val; lower is better).

B is a public setting (:func:`default_score_clip` when not given: the loss
of the zero model on a unit label, chosen without looking at the data);
if a caller set it from the data it says so (``clip_from_data``) and the
ledger records the non-private input ``score_clip``.

Calibration
-----------
The target (ε, δ) is split by ``score_fraction`` f: the score's noise is the
smallest whose repeat-and-select release *alone* would cost f·ε at δ; the
training's noise is then found numerically (bisection over the training's
per-candidate ε at δ, each configuration calibrated through
:func:`dpcd.privacy.accounting.calibrate_multiplier`) so that the whole
repeat-and-select release meets ε, never above.  Configurations of a grid
may have different training events (e.g. different passes); the candidate,
a data-independent mixture of them, has at each Rényi order at most the
largest of their Rényi divergences (quasi-convexity, van Erven & Harremoës
2014, Thm 13), and that per-order maximum is what repeat-and-select is
applied to.  With one training event this is exactly ``dp_accounting``'s
``RepeatAndSelectDpEvent`` (tested).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from dpcd.privacy import accounting, cache
from dpcd.privacy.ledger import BudgetLine, Ledger, Mechanism
from dpcd.privacy.validation import check_delta, check_epsilon

# name -> dp_accounting shape (None: the user states it, 0 < shape < inf)
DISTRIBUTIONS = {"poisson": math.inf, "geometric": 1.0, "logarithmic": 0.0,
                 "negative_binomial": None}
SELECT_BY = ("last_objective", "validation")
METRICS = ("loss", "accuracy", "squared_error")
SCORE_NOISES = ("laplace", "gaussian")


# ------------------------------------------------------------------ K
def check_k_distribution(distribution: str, mean: float, shape=None) -> tuple[float, float]:
    """Validate the distribution of K and return (mean, dp_accounting shape).

    Raises ``ValueError`` naming the setting: unknown ``k_distribution``,
    ``k_mean`` not a finite number >= 1 (dp_accounting's theorems need
    μ ≥ 1), ``shape`` given with a named distribution that fixes it, or
    missing / outside (0, ∞) for ``"negative_binomial"``.
    """
    if distribution not in DISTRIBUTIONS:
        raise ValueError(f"k_distribution must be one of {', '.join(DISTRIBUTIONS)}, "
                         f"got {distribution!r}")
    if isinstance(mean, bool) or not isinstance(mean, (int, float, np.number)) \
            or not math.isfinite(mean) or mean < 1:
        raise ValueError(f"k_mean must be a finite number >= 1 (the mean number of "
                         f"candidates), got {mean!r}")
    fixed = DISTRIBUTIONS[distribution]
    if fixed is not None:
        if shape is not None and float(shape) != fixed:
            raise ValueError(f"shape: k_distribution={distribution!r} has shape {fixed}, "
                             f"got shape={shape!r}")
        return float(mean), fixed
    if shape is None or isinstance(shape, bool) or not math.isfinite(float(shape)) \
            or not 0 < float(shape):
        raise ValueError("shape must be a finite number > 0 for "
                         f"k_distribution='negative_binomial', got {shape!r}")
    return float(mean), float(shape)


def k_gamma(mean: float, shape: float) -> float:
    """γ of the truncated negative binomial with ``mean`` and ``shape``
    (dp_accounting's own inversion, so sampler and accountant agree)."""
    from dp_accounting.rdp import rdp_privacy_accountant as rdp

    return float(rdp._gamma_truncated_negative_binomial(shape, mean))


def k_pmf(k, mean: float, shape: float) -> np.ndarray:
    """P(K = k) for integer ``k`` >= 0 (see the module docstring)."""
    from scipy import stats

    k = np.asarray(k)
    if shape == math.inf:
        return stats.poisson.pmf(k, mean)
    gamma = k_gamma(mean, shape)
    if shape == 0:
        return np.where(k >= 1, stats.logser.pmf(np.maximum(k, 1), 1 - gamma), 0.0)
    nb = stats.nbinom(shape, gamma)  # counts failures, P(0) = gamma**shape
    return np.where(k >= 1, nb.pmf(k) / (1 - nb.pmf(0)), 0.0)


def draw_k(rng: np.random.Generator, mean: float, shape: float) -> int:
    """One draw of K from its distribution with generator ``rng``.

    The truncation at 0 of the negative binomial is drawn by rejection, which
    samples exactly the conditional law P(K = k | K >= 1).
    """
    if shape == math.inf:
        return int(rng.poisson(mean))
    gamma = k_gamma(mean, shape)
    if shape == 0:
        return int(rng.logseries(1 - gamma))
    while True:
        k = int(rng.negative_binomial(shape, gamma))
        if k >= 1:
            return k


# ------------------------------------------------------------------ scores
def default_score_clip(select_by: str, loss: str) -> float:
    """Public B used when none is stated: the loss of the zero model on a
    unit label (log 2 for the logistic loss, 1 for the hinge loss, 1/2 for
    ½ r², 1 for the squared error of a validation score); a constant, never
    read off the data."""
    if select_by == "validation":
        return 1.0
    return {"logistic": math.log(2.0), "hinge": 1.0, "squares": 0.5}[loss]


@dataclass(frozen=True)
class ScoreMechanism:
    """How a candidate's score is computed and noised.

    Attributes
    ----------
    select_by : {"last_objective", "validation"}
    metric : {"loss", "accuracy", "squared_error"}
        ``"loss"``: mean clipped training loss (+ penalty); the others are
        validation metrics.
    noise : {"laplace", "gaussian"}
    n : int
        The public n the score averages over (training or validation
        records).  Under replace-one it is the number of records scored;
        under add-or-remove-one it is fixed here and a neighbour of another
        size is divided by it too (module docstring).
    clip : float or None
        B (None for accuracy).
    clip_from_data : bool
        Whether B was set from the data (then a non-private input).
    relation : str
        The neighbouring relation the score is private under.
    """

    select_by: str
    metric: str
    noise: str
    n: int
    clip: float | None = None
    clip_from_data: bool = False
    relation: str = "replace_one"

    def __post_init__(self):
        if self.select_by not in SELECT_BY:
            raise ValueError(f"select_by must be one of {', '.join(SELECT_BY)}, "
                             f"got {self.select_by!r}")
        allowed = ("loss",) if self.select_by == "last_objective" else METRICS[1:]
        if self.metric not in allowed:
            raise ValueError(f"metric must be one of {allowed} with select_by="
                             f"{self.select_by!r}, got {self.metric!r}")
        if self.noise not in SCORE_NOISES:
            raise ValueError(f"score_noise must be one of {', '.join(SCORE_NOISES)}, "
                             f"got {self.noise!r}")
        if isinstance(self.n, bool) or int(self.n) != self.n or self.n < 1:
            raise ValueError(f"n (records of the score) must be an integer >= 1, got {self.n!r}")
        if self.metric != "accuracy":
            if self.clip is None or not math.isfinite(self.clip) or self.clip <= 0:
                raise ValueError(f"score_clip must be a finite number > 0, got {self.clip!r}")
        if self.relation == "add_or_remove_one" and self.metric != "loss":
            # the validation rows are a random split of the n records: adding one
            # reshuffles every record's side, which the composition does not cover
            raise ValueError("select_by='validation' needs a fixed n (replace_one or "
                             "replace_special): under neighbouring='add_or_remove_one' "
                             "the random split of the records changes with n")

    @property
    def sensitivity(self) -> float:
        """Sensitivity of the score: B/n (or 1/n for accuracy) with the public n;
        under add-or-remove-one, the clipped sum's B divided by that n."""
        return (1.0 if self.metric == "accuracy" else float(self.clip)) / self.n

    @property
    def higher_is_better(self) -> bool:
        return self.metric == "accuracy"

    def value(self, losses, penalty: float = 0.0) -> float:
        """The exact score from per-record ``losses`` (for accuracy: 1 if the
        record is classified correctly, else 0), before noise."""
        losses = np.asarray(losses, dtype=float)
        fixed_n = self.relation != "add_or_remove_one"
        if losses.ndim != 1 or (fixed_n and losses.shape != (self.n,)):
            raise ValueError(f"need {self.n} per-record values, got shape {losses.shape}")
        if self.metric == "accuracy":
            return float(np.mean(losses))
        if np.any(losses < 0) or not np.all(np.isfinite(np.minimum(losses, self.clip))):
            raise ValueError("per-record losses must be >= 0 (clipping to [0, B] "
                             "is what bounds the sensitivity)")
        # the clipped sum over the public n (the records' own count under a fixed n)
        return float(np.sum(np.minimum(losses, self.clip)) / self.n) + float(penalty)

    def noisy(self, value: float, multiplier: float, rng: np.random.Generator) -> float:
        """``value`` plus noise of scale ``multiplier · sensitivity``."""
        scale = multiplier * self.sensitivity
        if self.noise == "laplace":
            return float(value + rng.laplace(0.0, scale))
        return float(value + rng.normal(0.0, scale))


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
        Distribution of K (:func:`check_k_distribution`).
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

    # total(eps_t) >= eps_t (repeat-and-select only adds): eps_t < epsilon
    lo, hi = 1e-3 * epsilon, epsilon
    if total(lo) > epsilon:
        raise ValueError(f"score_fraction={f}, k_mean={mean}: the target epsilon={epsilon} "
                         "leaves no budget for training; lower score_fraction or k_mean")
    if total(hi) <= epsilon:
        eps_t = hi
    else:  # Brent on log eps_t (as accounting._calibrate), then the feasible side
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


def selection_ledger(calibration: SelectionCalibration, score: ScoreMechanism,
                     training: Ledger, distribution: str,
                     algorithm: str | None = None) -> Ledger:
    """The released candidate's ledger: its training mechanisms, the score,
    and one budget line for the whole repeat-and-select release.

    ``training`` is the released candidate's own training ledger (its
    mechanisms; its budget is superseded by the selection's).  The law of K,
    the split and the score mechanism are recorded in the selection
    mechanism's ``note``; K itself is not (module docstring).
    """
    cal = calibration
    note = (f"repeat_and_select: K drawn from {distribution}(mean={cal.mean:g}, "
            f"shape={cal.shape:g}); score_fraction={cal.score_fraction:g} "
            f"(score alone eps={cal.score_epsilon:.6g}); training per-candidate "
            f"eps={cal.train_epsilon:.6g} at delta; select_by={score.select_by}, "
            f"metric={score.metric}, score_clip={score.clip}, "
            f"clip_from_data={score.clip_from_data}")
    record = selection_record(cal, score, distribution)
    # DP-CD-P: the candidate's own smoothness release (and feature bound) spent
    # smoothness_fraction of its training budget train_epsilon, pure DP,
    # composed in RDP with its steps and the score (not added up)
    pure = [b.epsilon_achieved for b in training.budget if b.group in ("smoothness", "bounds")]
    if pure:
        record.update(smoothness_epsilon=float(sum(pure)),
                      smoothness_fraction=float(sum(pure)) / cal.train_epsilon,
                      smoothness_fraction_of="train_epsilon")
        note += (f"; smoothness: each candidate's own release, pure eps={sum(pure):.6g} = "
                 f"smoothness_fraction {sum(pure) / cal.train_epsilon:.6g} of its training "
                 "budget train_epsilon, composed in RDP with its steps and score")
    score_mech = Mechanism(
        name=f"score_{score.metric}", kind=score.noise, sensitivity=score.sensitivity,
        sensitivity_norm="l1" if score.noise == "laplace" else "l2",
        noise_multiplier=cal.score_multiplier,
        noise_scale=cal.score_multiplier * score.sensitivity, count=1,
        relation=training.neighbouring, group="selection", note=note)
    specs = cal.trainings()
    event = repr(selection_event(specs[0][0], specs[0][1], cal.score_spec,
                                 cal.score_multiplier, cal.mean, cal.shape)) \
        if len(specs) == 1 else f"max over {len(specs)} training events: {specs!r}; " \
        f"RepeatAndSelect(mean={cal.mean}, shape={cal.shape})"
    line = BudgetLine(group="selection", accountant="rdp", epsilon_target=cal.epsilon,
                      epsilon_achieved=cal.epsilon_achieved, delta=cal.delta, dp_event=event)
    nonprivate = [x for x in training.nonprivate_inputs if x != "hyperparameter_selection"]
    if score.clip_from_data:
        nonprivate.append("score_clip")
    return Ledger(algorithm=algorithm or f"private_search({training.algorithm})",
                  neighbouring=training.neighbouring, accountant="rdp",
                  epsilon_target=cal.epsilon, epsilon_achieved=cal.epsilon_achieved,
                  delta=cal.delta, mechanisms=[*training.mechanisms, score_mech],
                  budget=[line], nonprivate_inputs=nonprivate, caveats=training.caveats,
                  noise=training.noise, selection=record)


def selection_record(calibration: SelectionCalibration, score: ScoreMechanism | None,
                     distribution: str) -> dict:
    """The ledger's ``selection`` entry: the law of K (never K), the split, the score."""
    cal = calibration
    out = {"k_distribution": distribution, "k_mean": cal.mean,
           "k_shape": cal.shape if math.isfinite(cal.shape) else "inf",
           "score_fraction": cal.score_fraction, "score_epsilon": cal.score_epsilon,
           "train_epsilon": cal.train_epsilon, "train_delta": cal.delta,
           "score_multiplier": cal.score_multiplier,
           "n_training_events": len(cal.train_multipliers)}
    if score is not None:
        out.update(select_by=score.select_by, score_metric=score.metric,
                   score_noise=score.noise, score_sensitivity=score.sensitivity,
                   score_n=score.n, score_clip=score.clip,
                   score_clip_from_data=score.clip_from_data, score_relation=score.relation)
    return out


__all__ = ["DISTRIBUTIONS", "SELECT_BY", "ScoreMechanism", "SelectionCalibration",
           "calibrate_selection", "candidate_event", "check_k_distribution",
           "check_score_fraction", "default_score_clip", "draw_k", "k_gamma", "k_pmf",
           "selection_epsilon", "selection_event", "selection_ledger",
           "selection_record"]

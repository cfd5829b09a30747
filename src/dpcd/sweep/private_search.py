"""Private hyperparameter search: K private candidates, the best one released.

:func:`private_search` is the library entry point a sweep stage (one
experiment: its grid, data, target (ε, δ) and settings) or the
:class:`dpcd.PrivateSearch` meta-estimator calls.  It

1. draws K from its distribution and K configurations uniformly (with
   replacement) from the grid, from a ``SeedSequence`` of the seed and the
   search's settings only: the data never enters these draws;
2. calibrates training and score noise for the whole release
   (:func:`dpcd.privacy.selection.calibrate_selection`);
3. runs each candidate as an independent release: a dpcd estimator with the
   configuration, fitted at the calibrated per-candidate budget with its own
   stream (:func:`dpcd.sweep.grid.run_entropy` of the seed, the candidate's
   index and its configuration), then its score with noise from a second
   stream of that candidate;
4. releases the candidate with the best noisy score: its model, its noisy
   score and the ledger of the whole release.  The other candidates' models
   and scores, K, the configurations drawn and the seed of the released
   model's noise are discarded (releasing any of them is not covered:
   :mod:`dpcd.privacy.selection`, "What goes out with a release").

Which trainings can be candidates: the rule the workflow's ``search:
private`` applies, :func:`dpcd.sweep.candidate.candidate_spec`, on each
configuration's training calibrated under the RDP accountant from its
settings and the data's shape (:func:`calibrated_ledger`): ``dp_cd``,
``primal_dp_scd``, ``dp_sgd`` (replace-one: unsampled Gaussians of
sensitivity 2C, no amplification; Poisson batches under add-or-remove-one
or the zero record), ``dp_scd`` (without replacement, or Poisson under the
zero record), ``dp_gcd`` (its correct selection scale: T pairs of an
ε′-DP randomized response and an ε′-DP Laplace entry) and ``dp_cd_p`` (each
candidate's own smoothness release, and feature bound without public
``bounds``, composed in RDP with its steps).  ``seq_dp_scd`` is refused with
the reason (:data:`dpcd.plan.PRIVATE_REFUSED`).  Each calibration is aligned on the
trainings' own (:func:`dpcd.sweep.candidate.aligned`) and after each fit the
candidate's ledger is read again by the same rule and checked against the
accounted event (noise multiplier never below), so a mismatch refuses
rather than under-reports.
"""

from __future__ import annotations

import itertools
import math
import warnings
from dataclasses import dataclass, replace
from types import SimpleNamespace

import numpy as np
from sklearn.base import clone, is_classifier

from dpcd import algorithms
from dpcd.algorithms import Budget
from dpcd.leak import PrivacyLeakWarning
from dpcd.plan import PRIVATE_CANDIDATES, PRIVATE_REFUSED
from dpcd.privacy import calibrate as cal_mod
from dpcd.privacy import selection
from dpcd.privacy.ledger import Ledger
from dpcd.problems import make_problem
from dpcd.sweep.candidate import calibrate_candidates, candidate_spec, check_trained
from dpcd.sweep.grid import expand_grid
from dpcd.streams import run_entropy

#: The solvers that can be candidates (the workflow's list, dpcd.plan); which
#: of their settings can is decided per configuration by candidate_spec.
SUPPORTED_SOLVERS = PRIVATE_CANDIDATES


@dataclass(frozen=True)
class SearchSettings:
    """Settings of a private search (the workflow's ``search_private``).

    Attributes
    ----------
    k_mean : float
        Mean number of candidates (>= 1).
    k_distribution : {"poisson", "geometric", "logarithmic", "negative_binomial"}
    shape : float, optional
        The negative binomial's shape (0 < shape < ∞); fixed by the others.
    score_fraction : float in (0, 1)
        Share of the target the score's noise alone would spend.
    select_by : {"last_objective", "validation"}
    score_noise : {"laplace", "gaussian"}
    score_clip : float, optional
        B (public); None: :func:`dpcd.privacy.selection.default_score_clip`.
    score_clip_from_data : bool
        Say True if B was chosen by looking at this data (recorded as the
        non-private input ``score_clip``).
    validation_fraction : float in (0, 1)
        ``select_by="validation"``: share of the records held out for the
        score (drawn at random, independently of the data).
    """

    k_mean: float = 10.0
    k_distribution: str = "geometric"
    shape: float | None = None
    score_fraction: float = 0.1
    select_by: str = "last_objective"
    score_noise: str = "laplace"
    score_clip: float | None = None
    score_clip_from_data: bool = False
    validation_fraction: float = 0.2

    def checked(self) -> "SearchSettings":
        """A copy with the shape resolved; ``ValueError`` naming a bad setting."""
        mean, shape = selection.check_k_distribution(self.k_distribution, self.k_mean,
                                                      self.shape)
        selection.check_score_fraction(self.score_fraction)
        if self.select_by not in selection.SELECT_BY:
            raise ValueError(f"select_by must be one of {', '.join(selection.SELECT_BY)}, "
                             f"got {self.select_by!r}")
        if self.score_noise not in selection.SCORE_NOISES:
            raise ValueError(f"score_noise must be one of "
                             f"{', '.join(selection.SCORE_NOISES)}, got {self.score_noise!r}")
        if self.score_clip is not None and not (
                isinstance(self.score_clip, (int, float)) and 0 < self.score_clip < math.inf):
            raise ValueError(f"score_clip must be a finite number > 0 or None, "
                             f"got {self.score_clip!r}")
        if not 0 < self.validation_fraction < 1:
            raise ValueError(f"validation_fraction must be in (0, 1), "
                             f"got {self.validation_fraction!r}")
        return replace(self, k_mean=mean, shape=shape)


def grid_configurations(param_grid) -> list[dict]:
    """Every configuration of ``param_grid`` (dict of lists of values, or of
    ``{"geomspace": [start, stop, num]}`` entries), in a fixed order.

    A grid with a single configuration is refused: there is nothing to select.
    """
    if not isinstance(param_grid, dict) or not param_grid:
        raise ValueError(f"param_grid must be a non-empty dict of lists, got {param_grid!r}")
    keys = sorted(param_grid)
    # lists as given (strings too, e.g. penalty); geomspace entries as the sweep's grids
    values = [expand_grid(param_grid[k]) if isinstance(param_grid[k], dict)
              else [v.item() if isinstance(v, np.generic) else v for v in param_grid[k]]
              for k in keys]
    configs = [dict(zip(keys, combo)) for combo in itertools.product(*values)]
    if len(configs) < 2:
        raise ValueError(f"param_grid has {len(configs)} configuration: private search "
                         "needs at least 2 to select from")
    return configs


def _identity(settings, epsilon, delta, n_configs):
    return {"stream": "private_search", "epsilon": float(epsilon), "delta": float(delta),
            "k_mean": settings.k_mean, "shape": settings.shape,
            "k_distribution": settings.k_distribution,
            "score_fraction": settings.score_fraction, "select_by": settings.select_by,
            "n_configurations": n_configs}


def draw_search(configs, settings, seed, epsilon, delta):
    """K and the K configurations of a search, from ``seed`` and the settings only.

    Returns
    -------
    k : int
    drawn : list of dict
        Configurations, uniform with replacement over ``configs``.
    """
    settings = settings.checked()
    seq = np.random.SeedSequence(run_entropy(seed, _identity(settings, epsilon, delta,
                                                              len(configs))))
    k_ss, config_ss = seq.spawn(2)
    k = selection.draw_k(np.random.default_rng(k_ss), settings.k_mean, settings.shape)
    picks = np.random.default_rng(config_ss).integers(len(configs), size=k)
    return k, [dict(configs[i]) for i in picks]


def candidate_entropy(seed, settings, epsilon, delta, n_configs, index, config):
    """Entropy of candidate ``index``: its own release (:func:`run_entropy` of
    the seed, the search and the candidate's index and configuration), so two
    candidates never share a stream, even with the same configuration."""
    return run_entropy(seed, {**_identity(settings, epsilon, delta, n_configs),
                              "stream": "candidate", "index": int(index), **config})


def validation_split(n, settings, seed, epsilon, delta):
    """(train rows, validation rows): a random split drawn from the seed only."""
    seq = np.random.SeedSequence(run_entropy(seed, {**_identity(settings, epsilon, delta, 0),
                                                    "stream": "private_search_split"}))
    perm = np.random.default_rng(seq).permutation(n)
    n_val = int(round(settings.validation_fraction * n))
    if not 1 <= n_val < n:
        raise ValueError(f"validation_fraction={settings.validation_fraction} leaves "
                         f"{n_val} of {n} records for validation")
    return np.sort(perm[n_val:]), np.sort(perm[:n_val])


def _relation(estimator):
    rel = estimator.neighbouring
    if rel == "paper":
        rel = cal_mod.paper_relation(estimator.solver, cal_mod.PRIVATE_SAMPLING.get(
            estimator.solver, "none"))
    return rel


def calibrated_ledger(estimator, n_samples, n_features, epsilon, delta):
    """The ledger of ``estimator``'s training calibrated at (``epsilon``,
    ``delta``) under the RDP accountant, from its settings and the data's
    shape only (no record is read): its algorithm's own ``calibrate`` on a
    probe of unit smoothness constants (the noise multipliers do not depend
    on them: thresholds and noise scale together); for ``dp_cd_p``, the
    release of its ``n_features`` constants (and of a feature bound when
    ``bounds`` is None) at the estimator's ``smoothness_fraction``.
    ``ValueError`` for a solver without a calibration of its own, naming the
    reason."""
    solver = estimator.solver
    if solver not in algorithms.names(private=True):
        raise ValueError(f"solver={solver!r} is not a private solver")
    spec = algorithms.get(solver)
    if solver in PRIVATE_REFUSED or spec.calibrate is None:
        raise ValueError(f"solver={solver!r} cannot be a private-search candidate: "
                         f"{PRIVATE_REFUSED.get(solver, 'it has no calibration of its own')}")
    if getattr(estimator, "noise", "fast") != "fast":
        raise ValueError("noise: private search runs with noise='fast' only")
    relation = _relation(estimator)
    spec.check_neighbouring(relation)
    config = {**estimator._config(spec, epsilon), "passes": estimator.passes}
    p = n_features + bool(estimator.fit_intercept)
    _, penalty = make_problem(estimator._loss, "l2" if spec.record_norm else estimator.penalty,
                              estimator._internal_alpha(), estimator.l1_ratio)
    probe = SimpleNamespace(n_samples=n_samples, n_features=p, smoothness=np.ones(p),
                            penalty=penalty)
    extra = {}
    if spec.smoothness == "private":  # each fit releases its own constants (not the
        # intercept's, public), after a private feature bound without public bounds
        config["smoothness_fraction"] = float(estimator.smoothness_fraction)
        extra = {"smoothness_count": n_features, "private_bound": estimator.bounds is None}
    try:
        return spec.calibrate(probe, config, Budget(epsilon, delta, "rdp", relation),
                              **extra).ledger
    except ValueError as err:
        raise ValueError(f"solver={solver!r} cannot be a private-search candidate with "
                         f"neighbouring={relation!r}: {err}") from err


def training_spec(estimator, n_samples, n_features, epsilon=1.0, delta=None):
    """Accounting spec of ``estimator``'s training and its relation, by the
    rule the workflow applies (:func:`dpcd.sweep.candidate.candidate_spec` on
    :func:`calibrated_ledger`); ``ValueError`` with the reason for trainings
    repeat-and-select cannot compose."""
    delta = 1.0 / n_samples ** 2 if delta is None else delta
    ledger = calibrated_ledger(estimator, n_samples, n_features, epsilon, delta)
    return candidate_spec(ledger, n_samples)[0], ledger.neighbouring


def _penalty(est, w):
    alpha, kind = float(est.alpha), est.penalty
    if kind == "none":
        return 0.0
    l1, l2 = float(np.abs(w).sum()), 0.5 * float(w @ w)
    if kind == "l1":
        return alpha * l1
    if kind == "l2":
        return alpha * l2
    r = float(est.l1_ratio)
    return alpha * (r * l1 + (1 - r) * l2)


def candidate_values(est, X, y, metric):
    """Per-record values of the score of fitted ``est`` on (X, y), and the
    penalty term (last objective only): the loss dpcd's estimator minimises
    (½ r² for the regressor, logistic for the classifier), 0/1 correctness
    (accuracy) or the squared error."""
    if metric == "accuracy":
        return (est.predict(X) == y).astype(float), 0.0
    if is_classifier(est):
        margin = est.decision_function(X) * np.where(y == est.classes_[1], 1.0, -1.0)
        losses = (np.maximum(0.0, 1.0 - margin) if est.loss == "hinge"
                  else np.logaddexp(0.0, -margin))
    else:
        r = est.predict(X) - y
        losses = r * r if metric == "squared_error" else 0.5 * r * r
    if metric != "loss":
        return losses, 0.0
    w = np.append(np.ravel(est.coef_), np.ravel(est.intercept_)[:1]) if est.fit_intercept \
        else np.ravel(est.coef_)
    return losses, _penalty(est, w)


@dataclass(frozen=True)
class SearchResult:
    """What a private search releases, and nothing else.

    Attributes
    ----------
    estimator : estimator or None
        The best candidate's fitted model; None when K = 0 (Poisson).  Its
        ``random_state`` is the template's, not the seed its noise came from,
        and it has no ``history_`` (the exact training objective is the
        selection score before clipping and noise).
    params : dict or None
    noisy_score : float or None
        The released candidate's noisy score.
    ledger : Ledger
        The whole release: the released candidate's training mechanisms, the
        score and one ``selection`` budget line (repeat-and-select, RDP),
        with the law of K but not K.
    calibration : dpcd.privacy.selection.SelectionCalibration
    score : dpcd.privacy.selection.ScoreMechanism
    """

    estimator: object
    params: dict | None
    noisy_score: float | None
    ledger: Ledger
    calibration: object
    score: object


def private_search(estimator, param_grid, X, y, epsilon, delta=None, settings=None,
                   seed=0) -> SearchResult:
    """Run a private hyperparameter search (see the module docstring).

    Parameters
    ----------
    estimator : DPCoordinateDescentRegressor or DPCoordinateDescentClassifier
        Template; its ``epsilon``, ``delta``, ``accountant`` and
        ``random_state`` are set by the search.
    param_grid : dict
        Hyperparameters to draw from (:func:`grid_configurations`).
    X, y : arrays
    epsilon : float
        Target ε of the whole release.
    delta : float, optional
        Target δ; None: ``1 / n_samples**2``.
    settings : SearchSettings, optional
    seed : int
        Seed of every draw (K, configurations, split, candidates' streams).

    Returns
    -------
    SearchResult
    """
    settings = (settings or SearchSettings()).checked()
    X = np.asarray(X, dtype=float) if not hasattr(X, "tocsc") else X
    y = np.asarray(y)
    n, p = X.shape
    delta = 1.0 / n ** 2 if delta is None else float(delta)
    configs = grid_configurations(param_grid)
    _, drawn = draw_search(configs, settings, seed, epsilon, delta)

    if settings.select_by == "validation":
        train, val = validation_split(n, settings, seed, epsilon, delta)
        X_fit, y_fit, X_score, y_score = X[train], y[train], X[val], y[val]
        metric = "accuracy" if is_classifier(estimator) else "squared_error"
    else:
        X_fit = X_score = X
        y_fit = y_score = y
        metric = "loss"
    loss = ("squares" if not is_classifier(estimator)
            else "hinge" if estimator.loss == "hinge" else "logistic")
    clip = None if metric == "accuracy" else (
        settings.score_clip if settings.score_clip is not None
        else selection.default_score_clip(settings.select_by, loss))

    def score_under(relation):  # n public: the records scored, fixed from here on
        return selection.ScoreMechanism(settings.select_by, metric, settings.score_noise,
                                        len(y_score), clip, settings.score_clip_from_data,
                                        relation)

    # every configuration's training event, whether drawn or not (the mixture)
    by_key = {tuple(sorted(config.items())): config for config in configs}
    calibration, specs, _ = calibrate_candidates(
        lambda key, eps: calibrated_ledger(clone(estimator).set_params(**by_key[key]),
                                           X_fit.shape[0], p, eps, delta),
        list(by_key), X_fit.shape[0], epsilon, delta, settings.k_mean, settings.shape,
        settings.score_fraction, settings.score_noise, score_under)
    relation = calibration.relation
    score = score_under(relation)

    best = None
    for index, config in enumerate(drawn):
        fit_ss, score_ss = np.random.SeedSequence(candidate_entropy(
            seed, settings, epsilon, delta, len(configs), index, config)).spawn(2)
        est = clone(estimator).set_params(
            **config, epsilon=calibration.train_epsilon, delta=delta, accountant="rdp",
            random_state=int.from_bytes(fit_ss.generate_state(2).tobytes(), "little"))
        with warnings.catch_warnings():  # named once, by the caller, from the ledger
            warnings.simplefilter("ignore", PrivacyLeakWarning)
            est.fit(X_fit, y_fit)
        spec = specs[tuple(sorted(config.items()))][0]
        check_trained(est.privacy_ledger_, X_fit.shape[0], spec,
                      calibration.train_multipliers[spec])
        values, penalty = candidate_values(est, X_score, y_score, metric)
        noisy = score.noisy(score.value(values, penalty), calibration.score_multiplier,
                            np.random.default_rng(score_ss))
        better = best is None or (noisy > best[0] if score.higher_is_better
                                  else noisy < best[0])
        if better:
            best = (noisy, est, config)

    if best is None:  # K = 0 (Poisson): nothing is released
        empty = Ledger(algorithm=f"private_search({estimator.solver})", neighbouring=relation,
                       accountant="rdp", epsilon_target=float(epsilon), delta=float(delta),
                       epsilon_achieved=calibration.epsilon_achieved,
                       selection=selection.selection_record(calibration, score,
                                                            settings.k_distribution))
        return SearchResult(None, None, None, empty, calibration, score)
    noisy, est, config = best
    ledger = selection.selection_ledger(calibration, score, est.privacy_ledger_,
                                        settings.k_distribution)
    # the release keeps neither its noise's seed (fast noise assumes it secret)
    # nor the exact training objective (the score before clipping and noise)
    est.set_params(random_state=estimator.random_state)
    del est.history_
    return SearchResult(est, dict(config), noisy, ledger, calibration, score)


__all__ = ["SUPPORTED_SOLVERS", "SearchResult", "SearchSettings", "candidate_entropy",
           "candidate_values",
           "calibrated_ledger", "draw_search", "grid_configurations", "private_search",
           "training_spec",
           "validation_split"]

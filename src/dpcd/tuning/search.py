"""Private hyperparameter search: K private candidates, the best one released.

:func:`private_search` is the library entry point a sweep stage (one
experiment: its grid, data, target (ε, δ) and settings) or the
:class:`dpcd.PrivateSearch` meta-estimator calls.  It

1. draws K from its distribution and K configurations uniformly (with
   replacement) from the grid, from a ``SeedSequence`` of the seed and the
   search's settings only: the data never enters these draws;
2. calibrates training and score noise for the whole release
   (:func:`dpcd.tuning.calibration.calibrate_selection`);
3. runs each candidate as an independent release: a dpcd estimator with the
   configuration, fitted at the calibrated per-candidate budget with its own
   stream (:func:`dpcd.streams.run_entropy` of the seed, the candidate's
   index and its configuration), then its score with noise from a second
   stream of that candidate;
4. releases the candidate with the best noisy score: its model, its noisy
   score and the ledger of the whole release.  The other candidates' models
   and scores, K, the configurations drawn and the seed of the released
   model's noise are discarded (releasing any of them is not covered:
   :mod:`dpcd.tuning.release`, "What goes out with a release").

Which trainings can be candidates: the rule the workflow's ``search:
private`` applies, :func:`dpcd.tuning.candidates.candidate_spec`, on each
configuration's training calibrated under the RDP accountant from its
settings and the data's shape
(:func:`dpcd.tuning.candidates.calibrated_ledger`): ``dp_cd``,
``primal_dp_scd``, ``dp_sgd`` (replace-one: unsampled Gaussians of
sensitivity 2C, no amplification; Poisson batches under add-or-remove-one
or the zero record), ``dp_scd`` (without replacement, or Poisson under the
zero record), ``dp_gcd`` (its correct selection scale: T pairs of an
ε′-DP randomized response and an ε′-DP Laplace entry) and ``dp_cd_p`` (each
candidate's own smoothness release, and feature bound without public
``bounds``, composed in RDP with its steps).  ``seq_dp_scd`` is refused with
the reason (:func:`dpcd.tuning.candidates.refusal`).  Each calibration is aligned on
the trainings' own (:func:`dpcd.tuning.calibration.aligned`) and after each fit the
candidate's ledger is read again by the same rule and checked against the
accounted event (noise multiplier never below), so a mismatch refuses
rather than under-reports.
"""

from __future__ import annotations

import secrets
import warnings

import numpy as np
from sklearn.base import clone, is_classifier

from dpcd import privacy
from dpcd.leak import DefaultsWarning, PrivacyLeakWarning
from dpcd.privacy.validation import check_choice
from dpcd.tuning.calibration import calibrate_candidates
from dpcd.tuning.candidates import calibrated_ledger, check_trained
from dpcd.tuning.draws import candidate_entropy, draw_search, grid_configurations, validation_split
from dpcd.tuning.release import (
    SearchResult,
    nothing_released,
    released_estimator,
    selection_ledger,
)
from dpcd.tuning.scores import ScoreMechanism, candidate_values, default_score_clip
from dpcd.tuning.settings import SearchSettings


def private_search(estimator, param_grid, X, y, epsilon, delta=None, settings=None,
                   seed=0, noise="fast") -> SearchResult:
    """Run a private hyperparameter search (see the module docstring).

    Parameters
    ----------
    estimator : DPCoordinateDescentRegressor or DPCoordinateDescentClassifier
        Template; its ``epsilon``, ``delta``, ``accountant`` and
        ``random_state`` are set by the search.
    param_grid : dict
        Hyperparameters to draw from (:func:`dpcd.tuning.draws.grid_configurations`).
    X, y : arrays
    epsilon : float
        Target ε of the whole release.
    delta : float, optional
        Target δ; None: ``1 / n_samples**2``.
    settings : SearchSettings, optional
    seed : int
        Seed of every draw (K, configurations, split, candidates' streams);
        with ``noise="secure"`` only of the data-independent ones (the
        configurations and the split), and it must come from the OS and
        never be recorded.
    noise : {"fast", "secure"}
        ``"secure"``: the candidates fit in the secure mode (the selection
        calibrated on their secure ledgers, a lattice training's closeness
        included: :func:`dpcd.tuning.calibration.lattice_bound`), K is drawn
        exactly from the keystream (:mod:`dpcd.tuning.exact_k`), each score is rounded to a
        grid and gets exact integer noise
        (:meth:`dpcd.tuning.scores.ScoreMechanism.secure_noisy`), and exact
        ties of the noisy scores are broken uniformly at random
        (docs/secure_noise.md, "Private search").

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
    secure_mode = check_choice(noise, "noise", privacy.secure.NOISE_MODES) == "secure"
    _, drawn = draw_search(configs, settings, seed, epsilon, delta, exact_k=secure_mode)

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
        else default_score_clip(settings.select_by, loss))

    def score_under(relation):  # n public: the records scored, fixed from here on
        return ScoreMechanism(settings.select_by, metric, settings.score_noise, len(y_score),
                              clip, settings.score_clip_from_data, relation)

    # every configuration's training event, whether drawn or not (the mixture)
    by_key = {tuple(sorted(config.items())): config for config in configs}
    calibration, specs, _ = calibrate_candidates(
        lambda key, eps: calibrated_ledger(clone(estimator).set_params(**by_key[key]),
                                           X_fit.shape[0], p, eps, delta, noise=noise),
        list(by_key), X_fit.shape[0], epsilon, delta, settings.k_mean, settings.shape,
        settings.score_fraction, settings.score_noise, score_under)
    relation = calibration.relation
    score = score_under(relation)

    best, ties = None, 1
    for index, config in enumerate(drawn):
        fit_ss, score_ss = np.random.SeedSequence(candidate_entropy(
            seed, settings, epsilon, delta, len(configs), index, config)).spawn(2)
        est = clone(estimator).set_params(
            **config, epsilon=calibration.train_epsilon, delta=delta, accountant="rdp",
            **({"random_state": None, "noise": "secure"} if secure_mode else
               {"random_state": int.from_bytes(fit_ss.generate_state(2).tobytes(), "little")}))
        with warnings.catch_warnings():  # named once, by the caller, from the ledger
            warnings.simplefilter("ignore", PrivacyLeakWarning)
            warnings.simplefilter("ignore", DefaultsWarning)  # candidates, not the release
            est.fit(X_fit, y_fit)
        spec = specs[tuple(sorted(config.items()))][0]
        check_trained(est.privacy_ledger_, X_fit.shape[0], spec,
                      calibration.train_multipliers[spec])
        values, penalty = candidate_values(est, X_score, y_score, metric)
        if secure_mode:
            noisy = score.secure_noisy(values, penalty, calibration.score_multiplier)
        else:
            noisy = score.noisy(score.value(values, penalty), calibration.score_multiplier,
                                np.random.default_rng(score_ss))
        better, ties = keeps(noisy, None if best is None else best[0], ties,
                             score.higher_is_better, uniform_ties=secure_mode)
        if better:
            best = (noisy, est, config)

    if best is None:  # K = 0 (Poisson): nothing is released
        empty = nothing_released(calibration, score, settings.k_distribution,
                                 f"private_search({estimator.solver})", epsilon, delta)
        return SearchResult(None, None, None, empty, calibration, score)
    noisy, est, config = best
    ledger = selection_ledger(calibration, score, est.privacy_ledger_, settings.k_distribution,
                              noise=noise)
    est = released_estimator(est, estimator)
    return SearchResult(est, dict(config), noisy, ledger, calibration, score)


def keeps(noisy, best, ties, higher_is_better, uniform_ties=False):
    """Whether a candidate's ``noisy`` score replaces the ``best`` so far
    (None: it is the first), and the new count of candidates tied at the best.

    ``uniform_ties`` (the secure mode): the i-th candidate tied exactly with
    the best replaces it with probability 1/i (from the OS's secure source),
    so the kept one is uniform among the tied ones; otherwise the first stays.
    """
    if best is None or (noisy > best if higher_is_better else noisy < best):
        return True, 1
    if uniform_ties and noisy == best:
        ties += 1
        return secrets.randbelow(ties) == 0, ties
    return False, ties


__all__ = ["keeps", "private_search"]

"""``PrivateSearch``: hyperparameter tuning that pays for itself, as a scikit-learn meta-estimator.

Like ``GridSearchCV`` over a dpcd estimator, except that the tuning is part
of the private release (Papernot & Steinke, ICLR 2022): a random number K of
candidates with hyperparameters drawn at random from ``param_grid``, each a
private fit with a private score, and only the best is kept.  The (ε, δ) of
``privacy_ledger_`` covers the released model *and* the choice of its
hyperparameters; ``hyperparameter_selection`` is not among its non-private
inputs.  See :mod:`dpcd.tuning.search` and
:mod:`dpcd.tuning`, and docs/method/private_tuning.md.
"""

import numpy as np
from sklearn.base import BaseEstimator, MetaEstimatorMixin, clone
from sklearn.exceptions import NotFittedError
from sklearn.utils import get_tags
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted, validate_data

from dpcd import privacy
from dpcd.estimators.linear import _seed_of
from dpcd.leak import warn_nonprivate
from dpcd.tuning.candidates import secure_refusal
from dpcd.tuning.draws import grid_configurations
from dpcd.tuning.search import private_search
from dpcd.tuning.settings import SearchSettings


def _released(name):
    """``available_if`` check: the wrapped estimator has method ``name``."""
    return lambda self: hasattr(self.estimator, name)


class PrivateSearch(MetaEstimatorMixin, BaseEstimator):
    """Private hyperparameter search over a dpcd estimator.

    Parameters
    ----------
    estimator : DPCoordinateDescentRegressor or DPCoordinateDescentClassifier
        Template of the candidates: the trainings the workflow's ``search:
        private`` takes (:func:`dpcd.tuning.candidates.candidate_spec`):
        solver ``dp_cd_p`` (the default: each candidate releases its own
        smoothness constants, and its own feature bound when ``bounds`` is
        None, with ``smoothness_fraction`` of its training budget, composed in
        RDP with its steps), ``dp_cd``, ``dp_gcd`` or ``primal_dp_scd``;
        ``dp_sgd`` (under replace-one as unsampled Gaussians of sensitivity
        2C, or ``"add_or_remove_one"`` / ``"replace_special"``); ``dp_scd``
        under ``"replace_special"``.  Its ``epsilon``, ``delta``,
        ``accountant`` and ``random_state`` are set by the search (and
        ``noise``: see ``random_state``).
    param_grid : dict of lists
        Hyperparameters to draw from, uniformly, independently of the data
        (at least 2 configurations).
    epsilon : float, default=1.0
        Target ε of the whole release: every candidate and the selection.
    delta : float, optional
        Target δ; None: ``1 / n_samples**2``.
    k_mean : float, default=10
        Mean number of candidates (>= 1).
    k_distribution : {"geometric", "poisson", "logarithmic", "negative_binomial"}
        Distribution of K (dp_accounting's); ``"poisson"`` may draw K = 0, and
        then nothing is released (``best_estimator_`` is None).
    shape : float, optional
        Shape of the truncated negative binomial (0 < shape < ∞).
    score_fraction : float in (0, 1), default=0.1
        Share of ε the score's noise alone would spend; the training's noise
        is calibrated to the rest.
    select_by : {"last_objective", "validation"}, default="last_objective"
        Score: the training objective with each loss clipped to
        ``score_clip`` (sensitivity B/n), or a validation metric on
        ``validation_fraction`` of the records (accuracy, 1/n_val; clipped
        squared error, B/n_val).
    score_noise : {"laplace", "gaussian"}, default="laplace"
    score_clip : float, optional
        Public B; None: the zero model's loss on a unit label (log 2 for the
        logistic loss, 1/2 for ½ r², 1 for a squared error).
    score_clip_from_data : bool, default=False
        Say True if ``score_clip`` was chosen by looking at this data (the
        ledger then lists the non-private input ``score_clip``).
    validation_fraction : float in (0, 1), default=0.2
    random_state : int, RandomState instance or None
        None (the default): the secure mode when every configuration's
        training has one (docs/secure_noise.md, "Private search"): the
        candidates fit with ``noise="secure"``, K is drawn exactly
        (every law), each score is rounded to a grid and gets exact integer
        noise, exact ties are broken uniformly, and the seeds come from the
        OS and are never recorded; the ledger's ``noise`` says ``secure``.
        An int (or instance): seed of K, the draws, the split and every
        candidate's streams, in the fast mode: a reproducible run for
        research, not for release.

    Attributes
    ----------
    best_estimator_ : estimator or None
        The released model (None if K = 0).  Its own ``privacy_ledger_`` is
        the candidate's training at the per-candidate budget; the release's
        account is ``privacy_ledger_`` below.  Its ``random_state`` is this
        search's ``random_state`` as given, not the seed its noise was drawn
        from, and it has no ``history_``: the exact training objective is the
        selection score before clipping and noise.
    best_params_ : dict or None
    best_score_ : float or None
        The released candidate's noisy score (private).
    privacy_ledger_ : dpcd.privacy.Ledger
        The whole release (``ledger_`` is the same object): the law of K, not K.
    calibration_ : dpcd.tuning.calibration.SelectionCalibration

    Notes
    -----
    What the search releases is the attributes above, and nothing else: the
    number of candidates K, the configurations drawn, the other candidates
    and their scores are not kept.  The guarantee covers the best candidate
    with K hidden; publishing K breaks it (docs/method/private_tuning.md,
    "What a release carries").

    References
    ----------
    N. Papernot, T. Steinke. "Hyperparameter Tuning with Renyi Differential
    Privacy", ICLR 2022. https://arxiv.org/abs/2110.03620
    """

    def __init__(self, estimator, param_grid, epsilon=1.0, delta=None, k_mean=10.0,
                 k_distribution="geometric", shape=None, score_fraction=0.1,
                 select_by="last_objective", score_noise="laplace", score_clip=None,
                 score_clip_from_data=False, validation_fraction=0.2, random_state=None):
        self.estimator = estimator
        self.param_grid = param_grid
        self.epsilon = epsilon
        self.delta = delta
        self.k_mean = k_mean
        self.k_distribution = k_distribution
        self.shape = shape
        self.score_fraction = score_fraction
        self.select_by = select_by
        self.score_noise = score_noise
        self.score_clip = score_clip
        self.score_clip_from_data = score_clip_from_data
        self.validation_fraction = validation_fraction
        self.random_state = random_state

    def fit(self, X, y):
        """Run the private search and keep the best candidate.

        Parameters
        ----------
        X : array-like, shape (n_samples, n_features)
        y : array-like, shape (n_samples,)

        Returns
        -------
        self : PrivateSearch
        """
        settings = SearchSettings(
            k_mean=self.k_mean, k_distribution=self.k_distribution, shape=self.shape,
            score_fraction=self.score_fraction, select_by=self.select_by,
            score_noise=self.score_noise, score_clip=self.score_clip,
            score_clip_from_data=bool(self.score_clip_from_data),
            validation_fraction=self.validation_fraction).checked()  # before the data
        X, y = validate_data(self, X, y, dtype=np.float64, ensure_min_samples=2,
                             y_numeric=not self._is_classifier())
        noise = self._noise(*X.shape)
        # secure: the draws' seed from the OS, held only while the fit runs
        seed = (privacy.secure.secure_entropy() if noise == "secure"
                else _seed_of(self.random_state))
        result = private_search(self.estimator, self.param_grid, X, y, self.epsilon,
                                self.delta, settings, seed, noise=noise)
        self.best_estimator_ = result.estimator
        if result.estimator is not None:  # the user's, not the noise's seed
            result.estimator.set_params(random_state=self.random_state)
        self.best_params_ = result.params
        self.best_score_ = result.noisy_score
        self.privacy_ledger_ = self.ledger_ = result.ledger
        self.calibration_ = result.calibration
        if result.estimator is not None and hasattr(result.estimator, "classes_"):
            self.classes_ = result.estimator.classes_
        warn_nonprivate(result.ledger.nonprivate_inputs)
        return self

    def _noise(self, n_samples, n_features):
        """The search's noise mode: secure when ``random_state`` is None, the
        template's ``noise`` is not ``"fast"`` and every configuration's
        training is a secure candidate
        (:func:`dpcd.tuning.candidates.secure_refusal`); else fast (and with
        the template's ``noise="secure"``, refused with the reason)."""
        wanted = getattr(self.estimator, "noise", "auto")
        if wanted == "fast" or self.random_state is not None:
            return "fast"  # a template noise="secure" refuses the seeded candidates
        delta = 1.0 / n_samples ** 2 if self.delta is None else self.delta
        reasons = sorted({reason for config in grid_configurations(self.param_grid)
                          if (reason := secure_refusal(clone(self.estimator).set_params(
                              **config), n_samples, n_features, self.epsilon, delta))})
        if not reasons:
            return "secure"
        if wanted == "secure":
            raise ValueError(f"noise='secure' in a private search: {reasons[0]}")
        return "fast"

    def _is_classifier(self):
        return get_tags(self.estimator).estimator_type == "classifier"

    def _best(self):
        check_is_fitted(self)
        if self.best_estimator_ is None:
            raise NotFittedError("the private search drew K = 0 candidates (Poisson): "
                                 "no model was released")
        return self.best_estimator_

    @available_if(_released("predict"))
    def predict(self, X):
        """``best_estimator_.predict(X)``."""
        return self._best().predict(X)

    @available_if(_released("decision_function"))
    def decision_function(self, X):
        """``best_estimator_.decision_function(X)``."""
        return self._best().decision_function(X)

    @available_if(_released("predict_proba"))
    def predict_proba(self, X):
        """``best_estimator_.predict_proba(X)``."""
        return self._best().predict_proba(X)

    def score(self, X, y):
        """``best_estimator_.score(X, y)`` (an evaluation, not part of the release)."""
        return self._best().score(X, y)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        sub = get_tags(self.estimator)
        tags.estimator_type = sub.estimator_type
        tags.classifier_tags = sub.classifier_tags
        tags.regressor_tags = sub.regressor_tags
        return tags


__all__ = ["PrivateSearch"]

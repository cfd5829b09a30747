"""What a spec needs from an estimator's data before its run: the problem
(smoothness constants, bounds, record norms) and the configuration in the
units the run takes (relative clipping thresholds).

A spec's ``prepare(spec, X, y, fit) -> Prepared`` (:class:`Fit`,
:class:`Prepared`) is the estimators' one step that depends on the algorithm:
:func:`smooth` (the default) for the algorithms that step with smoothness
constants, :func:`unit_records` for those whose calibration assumes records
(or columns) of norm at most 1 (DP-SCD).
"""
import numbers
from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np

from dpcd import privacy
from dpcd.algorithms.problem import SweepProblem
from dpcd.lazy import issparse
from dpcd.privacy.bounds import FACTOR, private_feature_bound, secure_feature_bound
from dpcd.privacy.smoothness import (DEFAULT_FLOOR, estimate_mean_smoothness,
                                      pooled_smoothness)


@dataclass(frozen=True)
class Fit:
    """An estimator's fit as a spec's prepare reads it (every value checked,
    but for those prepare checks itself: ``bounds``, ``normalize_rows``).

    Attributes
    ----------
    loss, penalty : str
        The datafit and penalty names (:func:`dpcd.problems.make_problem`).
    alpha : float
        Regularisation strength as the user gave it (scikit-learn's scale).
    alpha_scale : float
        What turns it into :mod:`dpcd.problems`' scale (the squares datafit
        is twice scikit-learn's: 2 for the regressor).
    l1_ratio : float
    fit_intercept : bool
        Append a constant feature equal to 1 (its coefficient the intercept).
    config : dict
        The run's hyperparameters and ``passes``; ``clip`` as the user gave it
        (relative, for a spec with ``relative_clip``).
    epsilon : float
        The fit's whole budget (a private smoothness release takes its share).
    bounds : float, array or None
        The user's public bound on ``|x_ij|``.
    normalize_rows : bool
        Scale records to the norm the calibration assumes (DP-SCD).
    smoothness_fraction : float
        Share of ``epsilon`` for privately released smoothness constants.
    noise : {"fast", "secure"}
    auto : frozenset of str
        Hyperparameters the user left at ``"auto"`` (their nominal values are
        in ``config``; :mod:`dpcd.algorithms.defaults`).
    streams : callable
        ``streams() -> (solver, smoothness)``: the fit's two
        ``numpy.random.SeedSequence`` streams, drawn when first asked for
        (after prepare's own checks).
    """

    loss: str
    penalty: str
    alpha: float
    alpha_scale: float
    l1_ratio: float
    fit_intercept: bool
    config: dict
    epsilon: float
    bounds: object = None
    normalize_rows: bool = True
    smoothness_fraction: float = 0.1
    noise: str = "fast"
    streams: Callable = None
    auto: frozenset = frozenset()

    @property
    def problem_alpha(self):
        """``alpha`` on the scale of :mod:`dpcd.problems` (:func:`problem_alpha`)."""
        return problem_alpha(self.alpha, self.alpha_scale)


@dataclass
class Prepared:
    """What the estimator hands to the spec's run, and how it reads the result.

    Attributes
    ----------
    problem : SweepProblem
    config : dict
        The run's configuration, thresholds in the units the run takes.
    private_smoothness : dict, optional
        The privately released constants and their ledger (``run``'s argument).
    scale : float
        The coefficients are the run's ``w`` times ``scale``.
    attributes : dict
        Fitted attributes the estimator sets (e.g. ``row_scale_``).
    """

    problem: SweepProblem
    config: dict
    private_smoothness: Optional[dict] = None
    scale: float = 1.0
    attributes: dict = field(default_factory=dict)


def problem_alpha(alpha, scale):
    """``alpha`` times ``scale`` (a bad value as given:
    :func:`dpcd.problems.make_problem` names it)."""
    if isinstance(alpha, numbers.Real) and not isinstance(alpha, bool):
        return float(alpha) * scale
    return alpha


def smooth(spec, X, y, fit):
    """Prepare an algorithm that steps with smoothness constants.

    Exact coordinate constants M_j (sparse X without densifying), or, with
    ``spec.preparation.smoothness == "private"``, constants released with
    ``smoothness_fraction`` of epsilon (DP-CD Appendix F); the global beta
    for ``"global"``. An all-zero column (M_j = 0) is neither refused nor
    named: its constant comes from the public bound, or (exact constants, a
    non-private path anyway) from the largest constant. The intercept's
    constant feature has a constant known without the data. With
    ``spec.preparation.relative_clip``, ``clip`` is scaled by :func:`clip_unit`.
    """
    from dpcd.problems import make_problem  # numba's: loaded when a spec runs

    n_samples, n_features = X.shape
    datafit, penalty = make_problem(fit.loss, fit.penalty, fit.problem_alpha, fit.l1_ratio)
    config = dict(fit.config)
    spec.check_problem(fit.loss, fit.penalty)
    if spec.check is not None:
        spec.check(config, {"loss": fit.loss, "penalty": fit.penalty,
                            "n_samples": n_samples, "n_features": n_features})
    bound = check_bounds(fit.bounds, n_features)
    if issparse(X):  # M_j = c * ||X_j||^2 / n without densifying
        per_entry = datafit.per_sample_smoothness(np.ones((1, 1)))[0, 0]
        smoothness = per_entry * np.asarray(X.multiply(X).sum(axis=0)).ravel() / n_samples
    else:
        smoothness = datafit.coordinate_smoothness(X)
    zero = smoothness <= 0
    if zero.any():
        fill = (datafit.per_sample_smoothness(bound[None, :])[0] if bound is not None
                else np.full(n_features, smoothness.max() if (~zero).any() else 1.0))
        smoothness = np.where(zero, fill, smoothness)
    if fit.fit_intercept:
        # constant feature 1: M_j = per-sample constant, known without the data
        ones = np.ones((n_samples, 1))
        if issparse(X):
            import scipy.sparse as sp

            X = sp.hstack([X, sp.csc_matrix(ones)], format="csc")
        else:
            X = np.hstack([X, ones])
        smoothness = np.append(smoothness, datafit.per_sample_smoothness(
            np.ones((1, 1)))[0, 0])
    estimate = None
    used = smoothness  # the constants that set steps and thresholds
    if spec.preparation.smoothness == "private":
        _, smooth_ss = fit.streams()
        estimate = private_smoothness(X[:, :n_features], datafit, fit,
                                      np.random.default_rng(smooth_ss), bound)
        if fit.fit_intercept:  # the constant feature's M_j is public
            estimate["smoothness"] = np.append(estimate["smoothness"], smoothness[-1])
        used = estimate["smoothness"]
    if spec.preparation.relative_clip:
        config["clip"] = config["clip"] * clip_unit(datafit, used, fit.loss)
    problem = SweepProblem(
        X=X, y=y, datafit=datafit, penalty=penalty, smoothness=smoothness,
        global_smoothness=(datafit.global_smoothness(X) if spec.preparation.smoothness == "global"
                           else np.nan),
        max_abs=(abs(X).max(axis=0).toarray().ravel() if issparse(X)
                 else np.abs(X).max(axis=0)),
    )
    return Prepared(problem, config, estimate)


def unit_records(spec, X, y, fit):
    """Prepare an algorithm whose calibration assumes records (``record_norm
    == "rows"``) or, primal, columns (``"columns"``) of norm <= 1 (DP-SCD):
    the L2 penalty only, each row (intercept column included) scaled to norm
    ``row_scale_`` (1, or ``1 / sqrt(n_samples)`` for columns) when
    ``normalize_rows``. Primal fits ``w / row_scale_``, so its penalty is
    ``alpha row_scale_^2`` and its coefficients are scaled back."""
    n_samples, n_features = X.shape
    spec.check_problem(fit.loss, fit.penalty)
    if not isinstance(fit.normalize_rows, (bool, np.bool_)):
        raise ValueError(f"normalize_rows must be True or False, got {fit.normalize_rows!r}")
    if not (isinstance(fit.alpha, numbers.Real) and fit.alpha > 0):
        raise ValueError(f"alpha must be > 0 for {spec.name}, got {fit.alpha!r}")
    primal = spec.preparation.record_norm == "columns"
    row_scale = 1.0 / np.sqrt(n_samples) if primal else 1.0
    # primal fits theta' = w / row_scale on rows of norm row_scale: the
    # penalty (alpha/2)||w||^2 is (alpha row_scale^2 / 2)||theta'||^2
    from dpcd.problems import make_problem

    datafit, penalty = make_problem(fit.loss, "l2", fit.problem_alpha * row_scale ** 2)
    config = dict(fit.config)
    size = n_features + bool(fit.fit_intercept) if primal else n_samples
    if config.get("batch_size", 1) > size:
        raise ValueError(f"batch_size must be <= {'n_features' if primal else 'n_samples'}"
                         f" = {size} for {spec.name}, got {config['batch_size']!r}")
    if fit.fit_intercept:
        X = np.hstack([X, np.ones((n_samples, 1))])
    if fit.normalize_rows:
        X = normalise_rows(X, row_scale)
    problem = SweepProblem(
        X=X, y=y, datafit=datafit, penalty=penalty,
        smoothness=np.full(X.shape[1], np.nan), global_smoothness=np.nan,
        max_abs=np.abs(X).max(axis=0),
    )
    return Prepared(problem, config, scale=row_scale, attributes={"row_scale_": row_scale})


def normalise_rows(X, row_scale):
    """Rows of ``X`` scaled to norm ``row_scale`` (zero rows stay zero)."""
    norms = np.sqrt(np.einsum("ij,ij->i", X, X))
    norms[norms == 0] = 1.0
    return X * (row_scale / norms)[:, None]


def check_bounds(bounds, n_features):
    """The public bound on |x_ij| as an array of shape (n_features,), or None."""
    if bounds is None:
        return None
    bound = np.asarray(bounds, dtype=float)
    bound = np.broadcast_to(bound, (n_features,)) if bound.ndim == 0 else bound
    if bound.shape != (n_features,) or not np.all(np.isfinite(bound) & (bound > 0)):
        raise ValueError(
            f"bounds must be a number > 0 or an array of shape ({n_features},) of "
            f"numbers > 0, got {bounds!r}"
        )
    return bound


def clip_unit(datafit, smoothness, loss):
    """Overall threshold that makes ``clip`` relative: ``clip * unit`` gives
    coordinate thresholds ``C_j = clip * g * sqrt(M_j / c)`` (``c`` the
    loss's per-sample constant of a unit feature, ``g`` its gradient scale:
    1 for the logistic loss, 2 for squares at a unit residual), that is
    ``clip * g`` times the root mean square of feature j."""
    c = datafit.per_sample_smoothness(np.ones((1, 1)))[0, 0]
    g = 2.0 if loss == "squares" else 1.0
    return float(np.sqrt(g * g / c * np.sum(smoothness)))


# Share of the smoothness budget that releases a feature bound when none is
# given (the constants get the rest): the release is sharp at little epsilon
# (its utility moves by whole records), the constants' noise is not
# (docs/defaults.md has the measurements).
BOUND_SHARE = 0.25
# |x| <= GAUSSIAN_BOUND covers 99.7 % of a standardised Gaussian feature.
GAUSSIAN_BOUND = 3.0


def gaussian_bound(released, n_features):
    """The bound on ``|x_ij|`` that clips the smoothness constants, from the
    released one (:data:`dpcd.privacy.bounds.FACTOR` times a median ``m`` of
    the rows' ``max_j |x_ij|``): ``GAUSSIAN_BOUND * m / m_p`` with ``m_p``
    that median for ``n_features`` independent standard Gaussian features.

    Standardised Gaussian features get 3 whatever their number (``2 m``
    grows like ``sqrt(2 log p)``: 5.7 at p = 100, so that the constants,
    whose noise grows like the bound squared, were released with 3.6 times
    the noise); heavier tails get a proportionally larger bound. Never
    tighter than ``2 m`` up to p = 4 features, where a single large entry
    decides a row's maximum. Post-processing of the release: free.
    """
    from scipy.stats import norm

    m_p = float(norm.ppf(0.5 * (1.0 + 0.5 ** (1.0 / n_features))))
    return GAUSSIAN_BOUND * (released / FACTOR) / m_p


def private_smoothness(X, datafit, fit, rng, bound):
    """Release the M_j privately with ``smoothness_fraction * epsilon`` (App. F).

    Without a public ``bound``, :data:`BOUND_SHARE` of that share first
    releases one (:func:`dpcd.privacy.bounds.private_feature_bound`, or in the
    secure noise mode :func:`~dpcd.privacy.bounds.secure_feature_bound`),
    rescaled by :func:`gaussian_bound`. With ``step`` left at ``"auto"``
    one constant is released, the coordinates' mean
    (:func:`dpcd.privacy.smoothness.estimate_mean_smoothness`: one Laplace
    release where Appendix F makes p, ``sqrt(2p)`` times less noise in the
    mean than pooling those p), raised by two standard errors of its noise
    (:func:`dpcd.privacy.smoothness.pooled_smoothness`, post-processing) and
    used for every coordinate: the defaults assume standardised features,
    whose constants are equal (a warning says when they do not look so).
    """
    eps_smooth, _ = privacy.split_smoothness_budget(fit.epsilon, fit.smoothness_fraction)
    ledgers = []
    if bound is None:
        eps_bound = BOUND_SHARE * eps_smooth
        eps_smooth = eps_smooth - eps_bound
        b, ledger = (secure_feature_bound(X, eps_bound) if fit.noise == "secure"
                     else private_feature_bound(X, eps_bound, rng))
        bound = np.full(X.shape[1], gaussian_bound(b, X.shape[1]))
        ledgers.append(ledger)
    if "step" in fit.auto:  # one constant, their mean, raised by its noise
        mean, ledger = estimate_mean_smoothness(datafit, X, eps_smooth, rng, bound, fit.noise)
        mech = ledger.mechanisms[0]
        mean = pooled_smoothness([mean], mech.noise_scale,
                                 np.asarray(mech.sensitivity) * X.shape[0])[0]
        bounds = datafit.per_sample_smoothness(bound[None, :])[0]
        M = np.clip(np.full(X.shape[1], mean), DEFAULT_FLOOR * bounds, bounds)
    else:
        M, ledger = privacy.estimate_smoothness(datafit, X, eps_smooth, rng,
                                                feature_bound=bound, noise=fit.noise)
    ledger = privacy.Ledger.combine(ledgers + [ledger], algorithm=ledger.algorithm)
    return {"smoothness": M, "smoothness_fraction": fit.smoothness_fraction,
            "ledger": ledger.to_dict()}

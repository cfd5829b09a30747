"""Private coordinate-wise smoothness constants (DP-CD Appendix F).

The smoothness constant of f along coordinate j is the mean of the
per-sample constants, M_j = (1/n) Σ_i M_j^(i).  With each M_j^(i) clipped to
[0, b_j] (b_j a public bound), we release

    M_j^priv = (1/n) Σ_i clip(M_j^(i), 0, b_j) + Lap(λ_j),   j = 1..p.

Sensitivity.  Under replace-one, one record moves the j-th mean by at most
b_j/n (both values lie in [0, b_j]), so the vector of means has
per-coordinate sensitivity Δ_j = b_j/n and the p Laplace releases with
λ_j = p·b_j/(n·ε′) are ε′/p-DP each, ε′-DP together (basic composition of
pure DP).  The paper's eq. (126) writes λ_j = 2·b_j·p/(n·ε′), i.e. the
sensitivity 2·b_j/n of values clipped to [−b_j, b_j]; that is twice the noise
needed for non-negative constants and is available as
``sensitivity="paper"``.

Post-processing (free): estimates are clamped to [floor·b_j, b_j]; the
upper clamp because the true mean is at most b_j, the lower one because step
sizes 1/M_j need M_j > 0.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from dpcd.lazy import issparse
from dpcd.privacy.ledger import BudgetLine, Ledger, Mechanism
from dpcd.privacy.secure import (
    NOISE_MODES,
    RESOLUTION,
    check_grid,
    laplace_scale,
    secure_laplace_release,
)
from dpcd.privacy.validation import check_choice, check_clip, check_epsilon, check_n

SENSITIVITIES = ("replace_one", "paper")

# Estimates are floored at this fraction of b_j (post-processing).
DEFAULT_FLOOR = 1e-2


def smoothness_sensitivity(n: int, bounds, sensitivity: str = "replace_one") -> np.ndarray:
    """Per-coordinate sensitivity of the clipped smoothness means.

    ``b_j/n`` for values clipped to [0, b_j] under replace-one (default), or
    the paper's ``2 b_j/n``.
    """
    check_choice(sensitivity, "sensitivity", SENSITIVITIES)
    bounds = check_clip(bounds, name="bounds")
    factor = 1.0 if sensitivity == "replace_one" else 2.0
    return factor * bounds / n


def smoothness_ledger(n: int, bounds, epsilon: float,
                      sensitivity: str = "replace_one") -> Ledger:
    """Ledger of the Appendix F release, without touching data.

    Each of the p coordinates gets a Laplace release with noise multiplier
    ``p/ε′`` (scale ``p·Δ_j/ε′``); the ledger line is pure ε′-DP (δ = 0).
    """
    n = check_n(n)
    epsilon = check_epsilon(epsilon)
    delta_j = np.atleast_1d(smoothness_sensitivity(n, bounds, sensitivity))
    p = delta_j.size
    z = p / epsilon
    mech = Mechanism(
        name="smoothness_means",
        kind="laplace",
        sensitivity=delta_j.tolist(),
        sensitivity_norm="l1",
        noise_multiplier=z,
        noise_scale=(z * delta_j).tolist(),
        count=p,
        group="smoothness",
        note=f"DP-CD Appendix F, sensitivity={sensitivity}, basic composition of pure DP",
    )
    line = BudgetLine(group="smoothness", accountant="pure", epsilon_target=epsilon,
                      epsilon_achieved=epsilon, delta=0.0,
                      dp_event=f"SelfComposed(Laplace({z:.6g}), {p})")
    return Ledger(algorithm="private_smoothness", neighbouring="replace_one",
                  accountant="pure", epsilon_target=epsilon, epsilon_achieved=epsilon,
                  delta=0.0, mechanisms=[mech], budget=[line])


def private_smoothness(per_sample, bounds, epsilon, rng, sensitivity="replace_one",
                       floor=DEFAULT_FLOOR, noise="fast"):
    """Release ε′-DP coordinate-wise smoothness constants (Appendix F, eq. 126).

    Parameters
    ----------
    per_sample : array_like or scipy sparse matrix, shape (n, p)
        Per-sample coordinate smoothness constants M_j^(i) (for linear models
        a loss constant times x_ij²). Sparse input stays sparse: an unstored
        entry is 0, which clipping to [0, b_j] leaves at 0.
    bounds : array_like, shape (p,) or scalar
        Public bounds b_j > 0; values are clipped to [0, b_j].
    epsilon : float
        ε′ spent on this release (pure DP).
    rng : numpy.random.Generator
        Source of the Laplace noise.
    sensitivity : {"replace_one", "paper"}
        ``b_j/n`` (default, see module docstring) or the paper's ``2 b_j/n``.
    floor : float
        Estimates are clamped to [floor·b_j, b_j] (post-processing).
    noise : {"fast", "secure"}
        ``"secure"``: means rounded to the grid ``Δ_j/m`` plus exact discrete
        Laplace noise (:func:`dpcd.privacy.secure.secure_laplace_release`);
        ``rng`` is then unused.

    Returns
    -------
    M_private : numpy.ndarray, shape (p,)
    ledger : Ledger
        One pure-DP budget line, group ``"smoothness"``.
    """
    sparse = issparse(per_sample)
    if sparse:
        import scipy.sparse as sp

        per_sample = sp.coo_matrix(per_sample, dtype=float)
    else:
        per_sample = np.asarray(per_sample, dtype=float)
    if per_sample.ndim != 2:
        raise ValueError(f"per_sample must have shape (n, p), got {per_sample.shape}")
    n, p = per_sample.shape
    check_n(n)
    if not np.all(np.isfinite(per_sample.data if sparse else per_sample)):
        raise ValueError("per_sample must be finite")
    if not isinstance(rng, np.random.Generator):
        raise ValueError("rng must be a numpy.random.Generator")
    if not 0 < floor <= 1:
        raise ValueError(f"floor must be in (0, 1], got {floor}")
    bounds = check_clip(bounds, p, name="bounds")
    ledger = smoothness_ledger(n, bounds, epsilon, sensitivity)
    scales = np.asarray(ledger.mechanisms[0].noise_scale)
    if sparse:  # duplicates of a COO entry are summed before clipping
        per_sample.sum_duplicates()
        clipped = np.clip(per_sample.data, 0.0, bounds[per_sample.col])
        means = np.bincount(per_sample.col, weights=clipped, minlength=p) / n
    else:
        means = np.clip(per_sample, 0.0, bounds).mean(axis=0)
    if noise == "secure":
        check_grid(n)
        mech = ledger.mechanisms[0]
        noisy, charged = secure_laplace_release(means, mech.sensitivity,
                                                mech.noise_multiplier)
        mech = dataclasses.replace(
            mech, kind="discrete_laplace", sensitivity=charged.tolist(),
            noise_scale=(laplace_scale(mech.noise_multiplier, RESOLUTION + 1)
                         / (RESOLUTION + 1) * charged).tolist(),
            note=f"{mech.note}; rounded to the grid Δ_j/{RESOLUTION}, sensitivity "
                 f"Δ_j + grid, exact discrete Laplace of scale "
                 f"{laplace_scale(mech.noise_multiplier, RESOLUTION + 1):.6g} grid steps "
                 "(its Renyi divergences at most the continuous Laplace's)")
        ledger = dataclasses.replace(ledger, mechanisms=[mech], noise="secure")
    else:
        check_choice(noise, "noise", NOISE_MODES)
        noisy = means + rng.laplace(0.0, scales)
    return np.clip(noisy, floor * bounds, bounds), ledger


def pooled_smoothness(M, noise_scales, bounds, floor=DEFAULT_FLOOR, margin=2.0):
    """Released constants turned into step denominators noise cannot make too
    small (post-processing, free).

    A constant released too small gives a step too large (beyond twice
    ``1 / M_j`` coordinate descent diverges); one released too large only
    slows it down. So the released ``M_j`` (Laplace noise of variance
    ``v_j = 2 lambda_j^2``) are shrunk towards their inverse-variance
    weighted mean as an empirical-Bayes (James-Stein) estimator would, by the
    weight ``s^2 / (s^2 + v_j)`` with ``s^2`` the spread of the releases in
    excess of their noise (0 when the features are standardised: the mean
    alone), and raised by ``margin`` standard errors of that estimate;
    clamped to ``[floor b_j, b_j]`` as the release is.

    Parameters
    ----------
    M : array_like, shape (p,)
        The released constants.
    noise_scales : float or array_like, shape (p,)
        Their Laplace scales lambda_j (the ledger's).
    bounds : float or array_like, shape (p,)
        Their bounds b_j.
    floor, margin : float

    Returns
    -------
    numpy.ndarray, shape (p,)
    """
    M = np.asarray(M, dtype=float)
    var = 2.0 * np.broadcast_to(np.asarray(noise_scales, dtype=float), M.shape) ** 2
    bounds = np.broadcast_to(np.asarray(bounds, dtype=float), M.shape)
    weights = 1.0 / var
    mean = np.sum(weights * M) / np.sum(weights)
    spread = max(0.0, float(np.var(M)) - float(np.mean(var)))
    keep = spread / (spread + var)
    shrunk = mean + keep * (M - mean)
    se = np.sqrt(keep * var + (1.0 - keep) ** 2 / np.sum(weights))
    return np.clip(shrunk + margin * se, floor * bounds, bounds)


def estimate_smoothness(datafit, X, epsilon, rng, feature_bound=None, noise="fast"):
    """Private smoothness constants of a linear model's datafit (Section 5.2).

    The per-sample constants are ``datafit.per_sample_smoothness(X)`` (a loss
    constant times x_ij²); their bounds b_j follow from a bound on |x_ij|.

    Parameters
    ----------
    datafit : object from :mod:`dpcd.problems`
    X : ndarray or scipy sparse matrix, shape (n_samples, n_features)
        Sparse X is never densified.
    epsilon : float
        ε′ spent on this release.
    rng : numpy.random.Generator
    feature_bound : float or array_like, shape (n_features,), optional
        Public bound on |x_ij|. None takes the paper's crude bound, twice the
        largest |x_ij| of each feature (Section 6.1; an all-zero feature takes
        the largest of them): it is read off the data, so the ledger records
        ``smoothness_bounds_from_data``.
    noise : {"fast", "secure"}
        Sampler mode (see :func:`private_smoothness`).

    Returns
    -------
    M_private : numpy.ndarray, shape (n_features,)
    ledger : Ledger
    """
    sparse = issparse(X)
    if sparse:
        import scipy.sparse as sp

        X = sp.csc_matrix(X, dtype=float)
    else:
        X = np.asarray(X, dtype=float)
    from_data = feature_bound is None
    if from_data:
        feature_bound = 2.0 * (abs(X).max(axis=0).toarray().ravel() if sparse
                               else np.abs(X).max(axis=0))
        # an all-zero column has bound 0, which no release can use: it takes
        # the largest bound (also read off the data), so its estimate is
        # released like the others' and nothing refuses it by name
        if not np.any(feature_bound > 0):
            raise ValueError("X is all zero: no smoothness bound can be read off it; "
                             "pass a public feature_bound")
        feature_bound = np.where(feature_bound > 0, feature_bound, feature_bound.max())
    feature_bound = check_clip(feature_bound, X.shape[1], name="feature_bound")
    bounds = datafit.per_sample_smoothness(feature_bound[None, :])[0]
    if sparse:  # M_j^(i) = c x_ij^2 (c from a unit entry): zero where x_ij is
        c = datafit.per_sample_smoothness(np.ones((1, 1)))[0, 0]
        per_sample = X.multiply(X) * c
    else:
        per_sample = datafit.per_sample_smoothness(X)
    M, ledger = private_smoothness(per_sample, bounds, epsilon, rng, noise=noise)
    if from_data:
        ledger = ledger.add_nonprivate_input("smoothness_bounds_from_data")
    return M, ledger


def estimate_mean_smoothness(datafit, X, epsilon, rng, feature_bound, noise="fast"):
    """The mean of the coordinate constants, ``(1/p) Σ_j M_j``, released once.

    Each record contributes ``r_i = min((1/p) Σ_j M_j^(i), b̄)``, in
    ``[0, b̄]`` with ``b̄ = (1/p) Σ_j b_j``, so their mean is the release of
    :func:`private_smoothness` for one coordinate of bound ``b̄``:
    sensitivity ``b̄/n`` under replace-one, ``Lap(b̄/(n ε′))``, one pure
    ε′-DP line of the same form (count 1). Clipping a record's mean rather
    than each of its constants at ``b_j`` leaves the rows whose mean is
    within the bound unbiased: standardised one-hot features, whose rare
    categories exceed a bound of a few units, lose most of their constants
    to entry-wise clipping (Adult: 0.11 for 0.25, steps twice too large).
    Appendix F's p releases at
    ``ε′/p`` each give a mean with ``sqrt(2p)`` times this noise
    (:func:`pooled_smoothness`'s): where the features are standardised,
    every ``M_j`` is that mean and its noise is what the steps pay for.

    Parameters
    ----------
    datafit : object from :mod:`dpcd.problems`
    X : ndarray, shape (n_samples, n_features)
    epsilon : float
        ε′ spent (pure DP).
    rng : numpy.random.Generator
    feature_bound : float or array_like, shape (n_features,)
        Public (or privately released) bound on ``|x_ij|``.
    noise : {"fast", "secure"}

    Returns
    -------
    mean : float
        Clamped to ``[floor b̄, b̄]`` (post-processing).
    ledger : Ledger
    """
    n, p = X.shape
    feature_bound = check_clip(feature_bound, p, name="feature_bound")
    bounds = datafit.per_sample_smoothness(feature_bound[None, :])[0]
    if issparse(X):  # M_j^(i) = c x_ij^2: zero where x_ij is
        import scipy.sparse as sp

        X = sp.coo_matrix(X, dtype=float)
        X.sum_duplicates()
        c = datafit.per_sample_smoothness(np.ones((1, 1)))[0, 0]
        records = np.bincount(X.row, weights=c * X.data ** 2, minlength=n) / p
    else:
        records = datafit.per_sample_smoothness(np.asarray(X, dtype=float)).mean(axis=1)
    records = np.minimum(records, bounds.mean())  # a record's mean, clipped whole
    M, ledger = private_smoothness(records[:, None], bounds.mean(), epsilon, rng,
                                   noise=noise)
    return float(M[0]), ledger

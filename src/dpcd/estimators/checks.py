"""Warnings where a fit's defaults cannot be trusted, as diffprivlib warns.

Three checks, none of which reads the data beyond what the fit already
releases or declares non-private, so a warning costs no privacy:

* **noise**: the calibrated noise (the spec's ``prediction_noise``,
  :mod:`dpcd.algorithms.defaults`) is too large for the data and budget:
  with ``clip="auto"`` the noise rule had to cut a relative threshold
  (DP-CD, DP-GCD: nominally the gradients' own scale) to under
  :data:`SHRINK_WARNING` of its nominal value (the fit then stays near the
  intercept); with a given ``clip``, the noise exceeds the rule's target.
* **features**: the smoothness constants the fit uses (exact ones, already
  a non-private input, or the released private ones) or DP-SGD's ``beta``
  (non-private input) say the features are far from standardised, which the
  default steps and thresholds assume.
* **target** (regressor): the released intercept says the target is far
  from centred and scaled.

Each message names the setting to change.
"""
import warnings

import numpy as np

from dpcd.leak import DefaultsWarning

# Warn when the noise rule cuts the threshold below this share of nominal.
SHRINK_WARNING = 0.25
# A standardised feature's mean square is 1 (at most 1 once clipped): warn
# outside [1 / SCALE_WARNING, SCALE_WARNING].
SCALE_WARNING = 10.0
# A standardised target's mean is 0: warn when |intercept_| exceeds this.
INTERCEPT_WARNING = 1.0


def _warn(message):
    warnings.warn(message, DefaultsWarning, stacklevel=4)


def check_noise(spec, config, nominal_clip, noise, tau, auto_clip, n_samples, epsilon):
    """Warn when the calibrated noise dominates (see the module docstring).

    ``noise``: the prediction noise at ``nominal_clip`` (the nominal threshold
    with ``clip="auto"``, the user's otherwise); ``config``: the run's.
    """
    what = (f"n * epsilon = {n_samples * epsilon:.3g} with solver={spec.name!r} and "
            f"passes={config['passes']}")
    if auto_clip:
        # a relative threshold's nominal value is the gradients' own scale (an
        # absolute one's, DP-SGD's and DP-SCD's, is not: no verdict from it)
        share = config["clip"] / nominal_clip
        if spec.preparation.relative_clip and share < SHRINK_WARNING:
            _warn(f"{what}: the noise would dominate, so clip='auto' cut the clipping "
                  f"threshold to {share:.2g} of its nominal value and the model stays "
                  "near the intercept (about the mean or majority class). Give more "
                  "data or a larger epsilon, fewer passes (`passes`), or tune with "
                  "dpcd.PrivateSearch.")
    elif noise > tau:
        _warn(f"{what}: at clip={config['clip']:.3g} (in the run's units) the "
              f"calibrated noise moves a standardised prediction by about {noise:.2g}, "
              f"more than {tau:g}; the model may do worse than the intercept alone. "
              "Leave clip='auto' (its noise rule), or lower `clip` or `passes`.")


def check_feature_scale(prepared, spec, datafit, fit_intercept):
    """Warn when the features are far from standardised, from what the fit
    already uses: the coordinate constants (exact, or released: their mean),
    or DP-SGD's global beta (nothing for DP-SCD, whose rows are normalised)."""
    if spec.preparation.smoothness is None:
        return
    c = datafit.per_sample_smoothness(np.ones((1, 1)))[0, 0]
    if spec.preparation.smoothness == "global":
        p = prepared.problem.n_features
        beta = prepared.problem.global_smoothness
        if beta is None or not np.isfinite(beta):
            return
        ratio = beta / c
        if ratio > SCALE_WARNING * p or ratio < 1.0 / SCALE_WARNING:
            _warn(f"features do not look standardised (the largest eigenvalue of "
                  f"X^T X / n is {ratio:.3g}; standardised features give 1 to "
                  f"{p}): the default `step` and `clip` assume standardised features. "
                  "Standardise them (e.g. sklearn's StandardScaler) or set `step` "
                  "and `clip`.")
        return
    if prepared.private_smoothness is not None:
        M = np.asarray(prepared.private_smoothness["smoothness"], dtype=float)
        M = M[:-1] if fit_intercept else M
        if M.size == 0:
            return
        # released constants are noisy one by one: judge their mean, moved
        # towards c by three standard deviations of its noise (Laplace,
        # variance 2 lambda_j^2), so that noise alone never warns
        lam = np.concatenate([np.atleast_1d(np.asarray(m["noise_scale"], dtype=float))
                              for m in prepared.private_smoothness["ledger"]["mechanisms"]
                              if m["name"] == "smoothness_means"])
        slack = 3.0 * np.sqrt(2.0 * np.sum(lam ** 2)) / max(lam.size, 1)
        mean = M.mean()
        squares = np.array([max(mean - slack, c) if mean > c else min(mean + slack, c)])
        source = "released"
    else:
        M = np.asarray(prepared.problem.smoothness, dtype=float)
        M = M[:-1] if fit_intercept else M
        if M.size == 0:
            return
        squares = M
        source = "exact"
    squares = squares / c
    worst = squares[np.argmax(np.abs(np.log(squares)))]
    if worst > SCALE_WARNING or worst < 1.0 / SCALE_WARNING:
        _warn(f"features do not look standardised (a mean square of {worst:.3g}, from "
              f"the {source} smoothness constants; standardised features give 1): the "
              "default `step` and `clip` assume standardised features. Standardise "
              "them (e.g. sklearn's StandardScaler) or set `bounds`, `step` and `clip`.")


def check_target_scale(intercept):
    """Warn when the released intercept says the target is not standardised."""
    if abs(intercept) > INTERCEPT_WARNING:
        _warn(f"intercept_ = {intercept:.3g}: the default `clip` assumes a standardised "
              "target (mean 0, variance 1). Standardise y (and invert the predictions) "
              "or set `clip`.")


__all__ = ["DefaultsWarning", "check_feature_scale", "check_noise", "check_target_scale"]

"""Argument checks shared by the calibrations and ``dpcd budget``.

Each check raises ``ValueError`` with one line naming the argument, which the
``dpcd`` dispatcher turns into a one-line error and exit code 2.
"""

import math

import numpy as np


def check_epsilon(epsilon, name="epsilon"):
    """Return ``epsilon`` as float; it must be finite and > 0."""
    value = _float(epsilon)
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be a finite number > 0, got {epsilon!r}")
    return value


def check_delta(delta, name="delta"):
    """Return ``delta`` as float; it must lie in the open interval (0, 1)."""
    value = _float(delta)
    if not 0 < value < 1:
        raise ValueError(f"{name} must be in (0, 1), got {delta!r}")
    return value


def delta_or_default(delta, n_samples):
    """``delta``, or 1/n² (the papers' choice) when None."""
    return 1.0 / n_samples**2 if delta is None else float(delta)


def _float(value):
    """``value`` as float, or NaN (which every check rejects) if it is no number."""
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def check_n(n):
    """Return ``n`` as int; a private mean needs at least two records."""
    if int(n) != n or n < 2:
        raise ValueError(f"n must be an integer >= 2, got {n}")
    return int(n)


def check_positive_int(value, name):
    """Return ``value`` as int; it must be an integer >= 1."""
    if value is None or int(value) != value or value < 1:
        raise ValueError(f"{name} must be an integer >= 1, got {value}")
    return int(value)


def check_passes(passes):
    """Return ``passes`` as float; it must be finite and > 0."""
    if passes is None or not (math.isfinite(float(passes)) and passes > 0):
        raise ValueError(f"passes must be a number > 0, got {passes}")
    return float(passes)


def check_batch_size(batch_size, n):
    """Return ``batch_size`` as int in [1, n]."""
    batch_size = check_positive_int(batch_size, "batch_size")
    if batch_size > n:
        raise ValueError(f"batch_size must be <= n = {n}, got {batch_size}")
    return batch_size


def check_clip(clip, p=None, name="clip"):
    """Return clipping thresholds as a float array of shape (p,), all > 0.

    A scalar is broadcast to ``p`` coordinates (or kept 0-d when ``p`` is None).
    """
    arr = np.asarray(clip, dtype=float)
    if arr.ndim == 0 and p is not None:
        arr = np.full(p, float(arr))
    if p is not None and arr.shape != (p,):
        raise ValueError(f"{name} must be a scalar or have shape ({p},), got shape {arr.shape}")
    if arr.size == 0 or not np.all(np.isfinite(arr)) or np.any(arr <= 0):
        raise ValueError(f"{name} must be finite and > 0")
    return arr


def check_choice(value, name, choices):
    """Return ``value`` if it is one of ``choices``."""
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(choices)}; got {value!r}")
    return value

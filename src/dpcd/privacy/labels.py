"""A private count of the positive labels, for a classifier's intercept.

Where a default fit falls back to the zero model (its run can carry no
signal worth its noise: :mod:`dpcd.algorithms.defaults`), a classifier
predicts the majority class only if its intercept learns which class that
is. This module releases the count ``c = #{i : y_i = +1}`` of ``n`` labels
in ``{-1, +1}``:

* sensitivity 1: replacing one record changes ``c`` by at most 1, and ``n``
  is public under replace-one (the relation these fallbacks run under);
* fast mode: ``c + Lap(1/ε)`` from a seeded generator, ε-DP (the Laplace
  mechanism, an idealised floating-point sampler);
* secure mode: ``(m c + k)/m`` with ``m`` = :data:`dpcd.privacy.secure.RESOLUTION`
  and ``k`` an exact discrete Laplace of scale ``t`` =
  :func:`dpcd.privacy.secure.laplace_scale` ``(1/ε, m)`` steps (pmf ∝
  ``exp(-|k|/t)``, :func:`dpcd.privacy.secure.discrete_laplace`). ``m c``
  is an integer (no rounding) and moves by at most ``m`` steps between
  neighbours, so the release is ``m/t``-DP with ``t ≥ m/ε``: ε-DP exactly.
  At that scale its Rényi divergences are also at most the continuous
  ``Laplace(1/ε)``'s, so a private search may compose it as that event
  (on the integers themselves, ``m = 1``, no scale within 1 % does so).

The intercept is the logit of the released fraction (:func:`intercept`),
post-processing.
"""

from __future__ import annotations

import math

import numpy as np

from dpcd.privacy.ledger import BudgetLine, Ledger, Mechanism
from dpcd.privacy.validation import check_epsilon, check_n

RELATION = "replace_one"


def positive_count(y) -> int:
    """``#{i : y_i > 0}``: the statistic released (labels in {-1, +1})."""
    return int(np.count_nonzero(np.asarray(y) > 0))


def count_sensitivity(y, y_neighbour) -> int:
    """``|c(y) - c(y')|`` for two label vectors (what the release's
    sensitivity, 1, bounds on replace-one neighbours)."""
    return abs(positive_count(y) - positive_count(y_neighbour))


def release_positive_count(y, epsilon, noise="fast", rng=None):
    """The ε-DP count of positive labels and its ledger.

    Parameters
    ----------
    y : array_like of {-1, +1}, shape (n,)
    epsilon : float
        ε spent (pure DP).
    noise : {"fast", "secure"}
    rng : numpy.random.Generator
        The fast mode's generator (unused in secure mode, which keys its own
        stream from the OS).

    Returns
    -------
    count : float
        The noisy count (on the grid ``1/RESOLUTION`` in secure mode); may
        fall outside [0, n].
    ledger : Ledger
        One pure-DP line, group ``"labels"``.
    """
    epsilon = check_epsilon(epsilon)
    n = check_n(len(y))
    scale = 1.0 / epsilon
    if noise == "secure":
        from dpcd.privacy import secure

        steps = secure.RESOLUTION
        k = int(secure.discrete_laplace(secure.laplace_scale(scale, steps), 1)[0])
        noisy = (positive_count(y) * steps + k) / steps
    elif noise == "fast":
        if not isinstance(rng, np.random.Generator):
            raise ValueError("rng must be a numpy.random.Generator in fast mode")
        noisy = positive_count(y) + float(rng.laplace(0.0, scale))
    else:
        raise ValueError(f"noise must be 'fast' or 'secure', got {noise!r}")
    return noisy, count_ledger(n, epsilon, noise)


def count_ledger(n, epsilon, noise="fast"):
    """Ledger of :func:`release_positive_count`, without touching data."""
    n, epsilon = check_n(n), check_epsilon(epsilon)
    z = 1.0 / epsilon  # scale over the sensitivity, 1
    scale = z
    if noise == "secure":  # in counts: the discrete scale over the grid's steps
        from dpcd.privacy import secure

        scale = secure.laplace_scale(z, secure.RESOLUTION) / secure.RESOLUTION
    mech = Mechanism(
        name="positive_label_count", kind="discrete_laplace" if noise == "secure" else "laplace",
        sensitivity=1.0, sensitivity_norm="l1", noise_multiplier=z, noise_scale=scale, count=1,
        relation=RELATION, group="labels",
        note=f"count of positive labels among n={n} (replace-one: sensitivity 1), for the "
             "intercept of a classifier whose default falls back to the zero model")
    line = BudgetLine(group="labels", accountant="pure", epsilon_target=epsilon,
                      epsilon_achieved=epsilon, delta=0.0,
                      dp_event=f"SelfComposed(Laplace({z:.6g}), 1)")
    return Ledger(algorithm="positive_label_count", neighbouring=RELATION, accountant="pure",
                  epsilon_target=epsilon, epsilon_achieved=epsilon, delta=0.0,
                  mechanisms=[mech], budget=[line], noise=noise)


def intercept(count, n):
    """The logit of the released fraction of positives, ``(c + 1) / (n + 2)``
    kept in ``[1/(n + 2), (n + 1)/(n + 2)]`` (post-processing): its sign is
    the released majority."""
    fraction = min(max((float(count) + 1.0) / (n + 2.0), 1.0 / (n + 2.0)),
                   (n + 1.0) / (n + 2.0))
    return math.log(fraction / (1.0 - fraction))

"""A private bound on the features, for fits given no public one.

DP-CD's privacy does not rest on a bound on the data (its gradients are
clipped), but its steps, clipping thresholds and the private smoothness
constants of Appendix F are set relative to one.  When the user states none,
the estimators release one privately:

    b = 2 m,  m a median (q-quantile, q = 1/2) of r_i = max_j |x_ij|,

m chosen by the exponential mechanism among the public candidates
``GRID = 2**(k/4)``, k = -80..80 (2^-20 to 2^20, steps of 19 %), with utility
``u(θ) = -|#{i : r_i <= θ} - q n|``.  Under replace-one, one record moves the
count by at most 1 and leaves n unchanged; under add-or-remove, count - q n
moves by -(1 - q) or by q.  Either way the sensitivity is 1, and the
release with probabilities ∝ exp(ε u / (2 Δ)) is ε-DP (McSherry and Talwar
2007), a pure-DP budget line of the ledger (group ``"bounds"``).  Rows whose
entries exceed b are not refused: everything downstream clips.

Why twice the median and not a high quantile: every candidate above the
largest r_i has the same utility -(1 - q) n, so at small ε n the many such
candidates of a wide public grid take most of the probability when q is near
1 (measured: ε = 0.05, n = 2000, q = 0.95 released 2^20 for standard normal
data); at q = 1/2 they are damped by exp(-ε n / 4).  The factor 2 is public
post-processing.  At small ε n even q = 1/2 leaves mass on the flat tails
(n = 200, ε = 0.05: a bound of 2^20 in 4 of 10 seeds, then steps so small
that the classifier predicts one class), so the candidates carry a public
base measure, log-normal around 1 with a standard deviation of 4 octaves:
probabilities ∝ μ(θ) exp(ε u(θ) / (2 Δ)), still ε-DP since μ does not
depend on the data; with little data the release falls back towards 1, the
scale of standardised features.

Secure mode (:func:`secure_feature_bound`): the same law, drawn exactly
from the keyed stream (:mod:`dpcd.privacy.keystream`) by rejection.  The
base measure is a discrete Gaussian over the grid's index k (θ = 2^(k/4)),
of standard deviation 4 × PRIOR_OCTAVES = 16 steps, restricted to
-80..80: exactly μ above, drawn by :func:`dpcd.privacy.exact.discrete_gaussian`.
A proposal k is accepted with probability exp(-a m_k), m_k = |2 c_k - n| -
min_k' |2 c_k' - n| (an integer: the utility's gap to the grid's best, in
half-counts), a = ε/4 (the utility is m/2, Δ = 1), as the event
{G ≥ m_k} of an exact geometric G of parameter p (P(G ≥ m) = (1 - p)^m).
Accepted draws have probabilities ∝ μ(θ) exp(-a m_θ), the exponential
mechanism's (the best utility only normalises).  p is 1 - e^(-a) computed
in floating point and lowered by a relative 2^-40, far beyond the error of
``expm1``: 1 - p ≥ e^(-a), so the mechanism run is the exponential
mechanism at some ε' ≤ ε, and the ledger's ε line bounds it.  The release
is a grid point, a function of the integer k only.  The secure mode takes
the median (q = 1/2), whose utility is an integer number of half-counts.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from dpcd.lazy import issparse
from dpcd.privacy.ledger import BudgetLine, Ledger, Mechanism
from dpcd.privacy.validation import check_epsilon, check_n

GRID_STEPS = 80  # the grid's indices k run from -GRID_STEPS to GRID_STEPS
GRID = 2.0 ** (np.arange(-GRID_STEPS, GRID_STEPS + 1) / 4.0)
DEFAULT_QUANTILE = 0.5
FACTOR = 2.0  # b = FACTOR * the released quantile
# Public base measure over GRID: log-normal around 1 (standardised data), with
# a standard deviation of PRIOR_OCTAVES powers of 2
PRIOR_OCTAVES = 4.0
LOG_PRIOR = -0.5 * (np.log2(GRID) / PRIOR_OCTAVES) ** 2
RELATIONS = ("replace_one", "add_or_remove_one")


def quantile_sensitivity(relation: str, quantile: float) -> float:
    """Sensitivity of the utility ``-|count - q n|`` under ``relation``: 1."""
    if relation not in RELATIONS:
        raise ValueError(f"relation must be one of {RELATIONS}, got {relation!r}")
    return 1.0


def bound_probabilities(row_max, epsilon, quantile=DEFAULT_QUANTILE,
                        relation="replace_one"):
    """Probabilities of the exponential mechanism over :data:`GRID`.

    Parameters
    ----------
    row_max : array_like, shape (n,)
        ``max_j |x_ij|`` of each record.
    epsilon : float
    quantile : float in (0, 1)
    relation : {"replace_one", "add_or_remove_one"}

    Returns
    -------
    probabilities : numpy.ndarray, shape (len(GRID),)
    """
    row_max = np.sort(np.asarray(row_max, dtype=float))
    counts = np.searchsorted(row_max, GRID, side="right")
    utility = -np.abs(counts - quantile * row_max.size)
    logits = epsilon * utility / (2.0 * quantile_sensitivity(relation, quantile))
    logits = logits + LOG_PRIOR
    weights = np.exp(logits - logits.max())
    return weights / weights.sum()


def private_feature_bound(X, epsilon, rng, quantile=DEFAULT_QUANTILE,
                          relation="replace_one"):
    """Release an ε-DP common bound b on |x_ij| (see the module docstring).

    The bound is :data:`FACTOR` times the released quantile.

    Parameters
    ----------
    X : ndarray or scipy sparse matrix, shape (n_samples, n_features)
    epsilon : float
        ε spent (pure DP).
    rng : numpy.random.Generator
    quantile : float in (0, 1)
        Target fraction of the rows with ``max_j |x_ij| <= b``.
    relation : {"replace_one", "add_or_remove_one"}

    Returns
    -------
    bound : float
    ledger : Ledger
        One pure-DP budget line, group ``"bounds"``.
    """
    epsilon = check_epsilon(epsilon)
    n = check_n(X.shape[0])
    if not 0 < quantile < 1:
        raise ValueError(f"quantile must be in (0, 1), got {quantile!r}")
    if not isinstance(rng, np.random.Generator):
        raise ValueError("rng must be a numpy.random.Generator")
    row_max = (abs(X).max(axis=1).toarray().ravel() if issparse(X)
               else np.abs(np.asarray(X, dtype=float)).max(axis=1))
    probabilities = bound_probabilities(row_max, epsilon, quantile, relation)
    bound = FACTOR * float(GRID[rng.choice(GRID.size, p=probabilities)])
    return bound, feature_bound_ledger(n, epsilon, quantile, relation)


def secure_feature_bound(X, epsilon, relation="replace_one", state=None):
    """:func:`private_feature_bound` in the secure mode (the median; see the
    module docstring): exact draws from a keyed stream, no seed recorded.

    Parameters
    ----------
    X : ndarray or scipy sparse matrix, shape (n_samples, n_features)
    epsilon : float
        ε spent (pure DP).
    relation : {"replace_one", "add_or_remove_one"}
    state : ndarray, optional
        A :mod:`dpcd.privacy.keystream` state (tests); None: a fresh one
        keyed from the OS, dropped after the draw.

    Returns
    -------
    bound : float
    ledger : Ledger
        As :func:`private_feature_bound`'s, marked secure.
    """
    from dpcd.privacy import exact, keystream

    epsilon = check_epsilon(epsilon)
    n = check_n(X.shape[0])
    row_max = np.sort(abs(X).max(axis=1).toarray().ravel() if issparse(X)
                      else np.abs(np.asarray(X, dtype=float)).max(axis=1))
    gaps = np.abs(2 * np.searchsorted(row_max, GRID, side="right") - n)
    gaps = gaps - gaps.min()  # m_k, integers >= 0
    p = -np.expm1(-epsilon / 4.0) * (1.0 - 2.0 ** -40)  # 1 - p >= e^(-eps/4)
    if state is None:
        state = keystream.new_state()
    sigma = 4.0 * PRIOR_OCTAVES
    while True:
        k = int(exact.discrete_gaussian(state, sigma))
        if abs(k) > GRID_STEPS:
            continue
        m = int(gaps[k + GRID_STEPS])
        if m == 0 or exact.geometric(state, p) >= m:
            break
    ledger = feature_bound_ledger(n, epsilon, DEFAULT_QUANTILE, relation)
    mech = dataclasses.replace(ledger.mechanisms[0], kind="exponential",
                               note=ledger.mechanisms[0].note + "; secure: exact rejection "
                               "sampling from a keyed stream")
    ledger = dataclasses.replace(ledger, mechanisms=[mech], noise="secure")
    return FACTOR * float(GRID[k + GRID_STEPS]), ledger


def feature_bound_ledger(n, epsilon, quantile=DEFAULT_QUANTILE, relation="replace_one"):
    """Ledger of :func:`private_feature_bound`'s release, without touching data:
    one pure ``epsilon``-DP line, group ``"bounds"``."""
    epsilon = check_epsilon(epsilon)
    n = check_n(n)
    sensitivity = quantile_sensitivity(relation, quantile)
    mech = Mechanism(
        name="feature_bound", kind="exponential", sensitivity=sensitivity,
        sensitivity_norm="l1", noise_multiplier=2.0 / epsilon,
        noise_scale=2.0 * sensitivity / epsilon, count=1, relation=relation,
        group="bounds",
        note=f"exponential mechanism, {quantile}-quantile of max_j |x_ij| over "
             f"{GRID.size} public candidates 2^(k/4), times {FACTOR}, n={n}",
    )
    line = BudgetLine(group="bounds", accountant="pure", epsilon_target=epsilon,
                      epsilon_achieved=epsilon, delta=0.0,
                      dp_event=f"ExponentialMechanism(eps={epsilon:.6g})")
    return Ledger(algorithm="private_feature_bound", neighbouring=relation,
                  accountant="pure", epsilon_target=epsilon,
                  epsilon_achieved=epsilon, delta=0.0, mechanisms=[mech],
                  budget=[line])

"""Empirical privacy audit: statistical lower bounds on ε.

An (ε, δ)-DP mechanism ``M`` satisfies, for neighbouring datasets ``D, D'``
and every set of outputs ``S``,

    P[M(D') ∈ S] ≤ e^ε P[M(D) ∈ S] + δ        (and with D, D' swapped).

Running ``M`` many times on a worst-case pair and counting how often the
output lands in a set ``S`` gives Clopper–Pearson confidence bounds on both
probabilities; plugging the pessimistic ends into the inequality gives

    ε_lb = log((TPR_lo − δ) / FPR_hi),

a lower bound on the true ε that holds with probability ≥ 1 − α (Jagielski
et al., 2020; Nasr et al., 2021). If ``ε_lb`` exceeds the ε a mechanism
claims, the claim is false (up to the α chance of a statistical fluke). The
converse does not hold: an audit that stays below ε shows only that this test
did not find a violation.

The sets ``S`` are thresholds on a scalar statistic of the output (the output
itself for scalar mechanisms, an indicator for report-noisy-max). The
threshold and direction are chosen on a separate *selection* sample and the
bound is computed on fresh *evaluation* runs, so the 95 % statement is not
spoiled by picking the luckiest threshold. :func:`epsilon_lower_bound` on its
own scans a grid and pays for it with a Bonferroni correction instead.

All audits are seeded (``numpy.random.SeedSequence(seed)``): the same seed
gives the same bound bit for bit.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
from scipy import stats

__all__ = [
    "AuditResult",
    "clopper_pearson",
    "epsilon_lower_bound",
    "gaussian_noise_multiplier",
    "audit_scores",
    "audit_gaussian",
    "audit_laplace",
    "audit_report_noisy_max",
    "dp_cd_coordinate_step",
    "worst_case_dp_cd_pair",
    "audit_dp_cd_step",
]

# Which dataset the membership test calls "positive" (guesses when s ∈ S).
_DPRIME, _D = "D'", "D"


@dataclass(frozen=True)
class AuditResult:
    """Outcome of one membership-test audit.

    Attributes
    ----------
    epsilon_lb : float
        Lower bound on ε, valid with probability ≥ 1 − ``alpha`` (clipped at
        0, since a negative bound says nothing).
    threshold : float
        Threshold ``t`` of the test set ``S``.
    fpr_hi : float
        Clopper–Pearson upper bound on ``P[s ∈ S | negative dataset]``.
    tpr_lo : float
        Clopper–Pearson lower bound on ``P[s ∈ S | positive dataset]``.
    n : int
        Evaluation runs per dataset.
    side : str
        ``">="`` if ``S = {s >= t}``, ``"<"`` if ``S = {s < t}``.
    positive : str
        ``"D'"`` or ``"D"``: the dataset the test guesses when ``s ∈ S``.
    delta : float
        δ subtracted from the true-positive rate.
    alpha : float
        Confidence level is ``1 − alpha`` (after any Bonferroni correction).
    n_tests : int
        Number of tests the bound was maximised over (Bonferroni factor).
    epsilon_claimed : float or None
        The ε the audited mechanism claims, if the audit knows it.
    noise_scale : float or None
        Noise scale used by the audited mechanism (σ or Laplace b).
    """

    epsilon_lb: float
    threshold: float
    fpr_hi: float
    tpr_lo: float
    n: int
    side: str = ">="
    positive: str = _DPRIME
    delta: float = 0.0
    alpha: float = 0.05
    n_tests: int = 1
    epsilon_claimed: float | None = None
    noise_scale: float | None = None

    @property
    def violates(self) -> bool:
        """True if the lower bound exceeds the claimed ε."""
        return self.epsilon_claimed is not None and self.epsilon_lb > self.epsilon_claimed


def clopper_pearson(k, n, alpha: float = 0.05):
    """Two-sided Clopper–Pearson interval for a binomial proportion.

    Parameters
    ----------
    k : int or array_like of int
        Number of successes.
    n : int
        Number of trials.
    alpha : float, default 0.05
        The interval has coverage ≥ ``1 − alpha``; each end is a one-sided
        bound at level ``1 − alpha/2``.

    Returns
    -------
    lo, hi : float or ndarray
        Lower and upper ends (``lo = 0`` when ``k = 0``, ``hi = 1`` when
        ``k = n``).
    """
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    k = np.asarray(k, dtype=float)
    if np.any((k < 0) | (k > n)):
        raise ValueError("k must lie in [0, n]")
    with np.errstate(invalid="ignore", divide="ignore"):
        lo = stats.beta.ppf(alpha / 2, k, n - k + 1)
        hi = stats.beta.ppf(1 - alpha / 2, k + 1, n - k)
    lo = np.where(k == 0, 0.0, lo)
    hi = np.where(k == n, 1.0, hi)
    if lo.ndim == 0:
        return float(lo), float(hi)
    return lo, hi


def _counts_at_least(scores: np.ndarray, thresholds: np.ndarray) -> np.ndarray:
    """Number of ``scores >= t`` for each ``t`` (one sort, no n×m matrix)."""
    s = np.sort(scores)
    return s.size - np.searchsorted(s, thresholds, side="left")


def _bounds(scores_d, scores_dprime, thresholds, delta, alpha_each):
    """ε bounds for every (threshold, side, positive) test, shape (m, 4).

    Columns: (>=, D'), (>=, D), (<, D'), (<, D). Also returns the matching
    (tpr_lo, fpr_hi) arrays.
    """
    n_d, n_dp = scores_d.size, scores_dprime.size
    ge_d = _counts_at_least(scores_d, thresholds)
    ge_dp = _counts_at_least(scores_dprime, thresholds)
    lo_d, hi_d = clopper_pearson(ge_d, n_d, alpha_each)
    lo_dp, hi_dp = clopper_pearson(ge_dp, n_dp, alpha_each)
    lt_lo_d, lt_hi_d = clopper_pearson(n_d - ge_d, n_d, alpha_each)
    lt_lo_dp, lt_hi_dp = clopper_pearson(n_dp - ge_dp, n_dp, alpha_each)
    tpr_lo = np.stack([lo_dp, lo_d, lt_lo_dp, lt_lo_d], axis=1)
    fpr_hi = np.stack([hi_d, hi_dp, lt_hi_d, lt_hi_dp], axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        eps = np.log(np.maximum(tpr_lo - delta, 0.0) / fpr_hi)
    eps = np.nan_to_num(eps, nan=-np.inf)
    return eps, tpr_lo, fpr_hi


_TESTS = ((">=", _DPRIME), (">=", _D), ("<", _DPRIME), ("<", _D))


def _default_thresholds(scores_d, scores_dprime, max_unique: int = 64):
    """Candidate thresholds: midpoints for discrete scores, tail quantiles else.

    The informative tests of a noise-addition mechanism sit in the tails, so
    quantile levels are spaced geometrically towards both ends.
    """
    pooled = np.concatenate([scores_d, scores_dprime])
    uniq = np.unique(pooled)
    if uniq.size <= max_unique:
        # s >= midpoint separates each pair of adjacent values.
        return (uniq[:-1] + uniq[1:]) / 2 if uniq.size > 1 else uniq
    tail = np.geomspace(max(1.0 / pooled.size, 1e-6), 0.5, 60)
    levels = np.unique(np.concatenate([tail, 1.0 - tail]))
    return np.unique(np.quantile(pooled, levels))


def epsilon_lower_bound(
    scores_d,
    scores_dprime,
    delta: float = 0.0,
    alpha: float = 0.05,
    thresholds=None,
) -> AuditResult:
    """Best ε lower bound over threshold tests on one sample.

    For each threshold ``t``, each set ``S ∈ {s >= t, s < t}`` and each choice
    of positive dataset, the bound ``log((TPR_lo − δ) / FPR_hi)`` is computed
    from Clopper–Pearson ends; the largest is returned. Every test's
    interval is taken at level ``alpha / (2 · n_tests)`` per end (Bonferroni
    over all tests and both ends), so the returned maximum is still a valid
    lower bound with probability ≥ ``1 − alpha``.

    Parameters
    ----------
    scores_d, scores_dprime : array_like, shape (n,) and (n',)
        Scalar statistic of the mechanism's output on ``D`` and ``D'``.
    delta : float, default 0
        The mechanism's δ.
    alpha : float, default 0.05
        One minus the confidence level.
    thresholds : float or array_like, optional
        Thresholds to try; a single threshold means a single (pre-registered)
        threshold, with 4 tests (2 sides × 2 directions). Default: a tail-heavy
        grid of quantiles of the pooled scores (or midpoints between values if
        the scores are discrete).

    Returns
    -------
    AuditResult
    """
    scores_d = np.asarray(scores_d, dtype=float).ravel()
    scores_dprime = np.asarray(scores_dprime, dtype=float).ravel()
    if scores_d.size == 0 or scores_dprime.size == 0:
        raise ValueError("need at least one score per dataset")
    if not 0 <= delta < 1:
        raise ValueError(f"delta must be in [0, 1), got {delta}")
    if thresholds is None:
        thresholds = _default_thresholds(scores_d, scores_dprime)
    thresholds = np.atleast_1d(np.asarray(thresholds, dtype=float))
    n_tests = 4 * thresholds.size
    # Each test uses two one-sided bounds; clopper_pearson(alpha') gives
    # one-sided bounds at alpha'/2, so alpha' = alpha / n_tests makes the
    # union over 2 · n_tests one-sided statements cost at most alpha.
    eps, tpr_lo, fpr_hi = _bounds(
        scores_d, scores_dprime, thresholds, delta, alpha / n_tests
    )
    i, c = np.unravel_index(np.argmax(eps), eps.shape)
    side, positive = _TESTS[c]
    n = int(min(scores_d.size, scores_dprime.size))
    return AuditResult(
        epsilon_lb=float(max(eps[i, c], 0.0)),
        threshold=float(thresholds[i]),
        fpr_hi=float(fpr_hi[i, c]),
        tpr_lo=float(tpr_lo[i, c]),
        n=n,
        side=side,
        positive=positive,
        delta=float(delta),
        alpha=float(alpha),
        n_tests=int(n_tests),
    )


def _evaluate_test(scores_d, scores_dprime, threshold, side, positive, delta, alpha):
    """ε bound of one pre-registered test (no multiplicity correction)."""
    eps, tpr_lo, fpr_hi = _bounds(
        np.asarray(scores_d, float), np.asarray(scores_dprime, float),
        np.array([threshold]), delta, alpha,
    )
    c = _TESTS.index((side, positive))
    return float(eps[0, c]), float(tpr_lo[0, c]), float(fpr_hi[0, c])


Sampler = Callable[[np.random.Generator, bool, int], np.ndarray]


def audit_scores(
    sample: Sampler,
    delta: float = 0.0,
    n_runs: int = 1_000_000,
    n_select: int | None = None,
    alpha: float = 0.05,
    seed: int = 0,
    thresholds=None,
    epsilon_claimed: float | None = None,
    noise_scale: float | None = None,
) -> AuditResult:
    """Select a test on one batch of runs, bound ε on a fresh batch.

    Parameters
    ----------
    sample : callable ``(rng, neighbour, size) -> ndarray``
        Runs the mechanism ``size`` times on ``D'`` if ``neighbour`` else on
        ``D`` with generator ``rng`` and returns the scalar statistic.
    delta : float, default 0
        The mechanism's δ.
    n_runs : int, default 1_000_000
        Evaluation runs per dataset.
    n_select : int, optional
        Selection runs per dataset (default ``n_runs // 4``).
    alpha : float, default 0.05
        The bound holds with probability ≥ ``1 − alpha`` (the test is fixed
        before the evaluation runs are drawn, so no correction is needed).
    seed : int, default 0
        Seed of the ``SeedSequence`` split into four independent streams
        (selection/evaluation × D/D').
    thresholds : array_like, optional
        Candidate thresholds for the selection step.
    epsilon_claimed, noise_scale : float, optional
        Recorded in the result.

    Returns
    -------
    AuditResult
    """
    if n_runs < 1:
        raise ValueError(f"n_runs must be positive, got {n_runs}")
    n_select = max(n_runs // 4, 1) if n_select is None else n_select
    sel_d, sel_dp, ev_d, ev_dp = (
        np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(4)
    )
    # Selection maximises the Clopper–Pearson bound (not the point estimate),
    # which steers it away from deep-tail thresholds with a handful of hits.
    chosen = epsilon_lower_bound(
        sample(sel_d, False, n_select),
        sample(sel_dp, True, n_select),
        delta=delta, alpha=alpha, thresholds=thresholds,
    )
    eps, tpr_lo, fpr_hi = _evaluate_test(
        sample(ev_d, False, n_runs), sample(ev_dp, True, n_runs),
        chosen.threshold, chosen.side, chosen.positive, delta, alpha,
    )
    return AuditResult(
        epsilon_lb=max(eps, 0.0),
        threshold=chosen.threshold,
        fpr_hi=fpr_hi,
        tpr_lo=tpr_lo,
        n=int(n_runs),
        side=chosen.side,
        positive=chosen.positive,
        delta=float(delta),
        alpha=float(alpha),
        n_tests=1,
        epsilon_claimed=epsilon_claimed,
        noise_scale=noise_scale,
    )


def gaussian_noise_multiplier(epsilon: float, delta: float) -> float:
    """Noise multiplier ``σ/Δ`` of one Gaussian release at (ε, δ).

    Uses the exact (analytic) Gaussian mechanism of Balle & Wang (2018) as
    implemented by ``dp_accounting.get_sigma_gaussian``; it is the smallest σ
    that is (ε, δ)-DP, so an audit of it is as tight as audits get.
    """
    import dp_accounting

    if epsilon <= 0:
        raise ValueError(f"epsilon must be > 0, got {epsilon}")
    if not 0 < delta < 1:
        raise ValueError(f"delta must be in (0, 1), got {delta}")
    return float(dp_accounting.get_sigma_gaussian(epsilon, delta))


def audit_gaussian(
    epsilon: float = 1.0,
    delta: float = 1e-5,
    sensitivity: float = 1.0,
    noise_scale: float | None = None,
    noise_factor: float = 1.0,
    n_runs: int = 1_000_000,
    n_select: int | None = None,
    alpha: float = 0.05,
    seed: int = 0,
) -> AuditResult:
    """Audit the Gaussian mechanism on its worst-case pair ``f(D)=0, f(D')=Δ``.

    Parameters
    ----------
    epsilon, delta : float
        The claimed guarantee.
    sensitivity : float, default 1
        Δ, the distance between ``f(D)`` and ``f(D')``.
    noise_scale : float, optional
        σ to audit (e.g. from a calibration under test). Default:
        ``Δ · gaussian_noise_multiplier(ε, δ)``.
    noise_factor : float, default 1
        Multiplies σ; ``0.5`` is the deliberately under-noised variant.
    n_runs, n_select, alpha, seed
        See :func:`audit_scores`.

    Returns
    -------
    AuditResult
    """
    if noise_scale is None:
        noise_scale = sensitivity * gaussian_noise_multiplier(epsilon, delta)
    sigma = float(noise_scale) * noise_factor

    def sample(rng, neighbour, size):
        return (sensitivity if neighbour else 0.0) + sigma * rng.standard_normal(size)

    return audit_scores(
        sample, delta=delta, n_runs=n_runs, n_select=n_select, alpha=alpha,
        seed=seed, epsilon_claimed=epsilon, noise_scale=sigma,
    )


def audit_laplace(
    epsilon: float = 1.0,
    sensitivity: float = 1.0,
    noise_scale: float | None = None,
    noise_factor: float = 1.0,
    n_runs: int = 1_000_000,
    n_select: int | None = None,
    alpha: float = 0.05,
    seed: int = 0,
) -> AuditResult:
    """Audit the Laplace mechanism (ε-DP at scale ``Δ/ε``), δ = 0.

    The worst-case pair is ``f(D)=0, f(D')=Δ``; for thresholds beyond Δ the
    likelihood ratio is exactly ``e^{Δ/b}``, so the audit is tight.

    Parameters
    ----------
    epsilon : float
        The claimed ε.
    sensitivity : float, default 1
        Δ.
    noise_scale : float, optional
        Laplace scale ``b`` to audit; default ``Δ/ε``.
    noise_factor : float, default 1
        Multiplies ``b``; ``0.5`` is the under-noised variant.
    n_runs, n_select, alpha, seed
        See :func:`audit_scores`.

    Returns
    -------
    AuditResult
    """
    if noise_scale is None:
        noise_scale = sensitivity / epsilon
    b = float(noise_scale) * noise_factor

    def sample(rng, neighbour, size):
        return (sensitivity if neighbour else 0.0) + rng.laplace(0.0, b, size)

    return audit_scores(
        sample, delta=0.0, n_runs=n_runs, n_select=n_select, alpha=alpha,
        seed=seed, epsilon_claimed=epsilon, noise_scale=b,
    )


def audit_report_noisy_max(
    scores_d,
    scores_dprime,
    noise_scale: float,
    epsilon: float | None = None,
    absolute: bool = False,
    target: int = 0,
    n_runs: int = 1_000_000,
    n_select: int | None = None,
    alpha: float = 0.05,
    seed: int = 0,
) -> AuditResult:
    """Audit report-noisy-max with Laplace noise on a given pair of score vectors.

    The mechanism releases ``argmax_j (u_j + χ_j)`` (or ``argmax_j |u_j + χ_j|``
    when ``absolute``, the DP-GCD selection rule) with ``χ_j ~ Lap(b)``. The
    statistic is the indicator ``[output == target]``, so the membership test
    is "did the mechanism pick ``target``" (or its complement).

    Monotone pairs (all scores move the same way by ≤ Δ, as for counts) are
    ε-DP at ``b = Δ/ε``; pairs where one score goes up and another down by Δ
    need ``b = 2Δ/ε``: the gap between two scores moves by 2Δ, and in the
    tail the probability of the lower one winning then changes by ``e^{2Δ/b}``.

    Parameters
    ----------
    scores_d, scores_dprime : array_like, shape (k,)
        Scores ``u(D)`` and ``u(D')``.
    noise_scale : float or array_like, shape (k,)
        Laplace scale ``b`` (one per score, or shared). The result records
        the largest.
    epsilon : float, optional
        The claimed ε, recorded in the result.
    absolute : bool, default False
        Select on ``|u_j + χ_j|`` (DP-GCD) instead of ``u_j + χ_j``.
    target : int, default 0
        Index whose selection is the membership statistic.
    n_runs, n_select, alpha, seed
        See :func:`audit_scores`.

    Returns
    -------
    AuditResult
    """
    u = np.asarray(scores_d, dtype=float)
    u_prime = np.asarray(scores_dprime, dtype=float)
    if u.ndim != 1 or u.shape != u_prime.shape or u.size < 2:
        raise ValueError("scores must be two 1-D arrays of the same length >= 2")
    b = np.broadcast_to(np.asarray(noise_scale, dtype=float), u.shape)
    if np.any(b <= 0):
        raise ValueError("noise_scale must be positive")

    def sample(rng, neighbour, size):
        noisy = (u_prime if neighbour else u) + rng.laplace(0.0, b, (size, u.size))
        if absolute:
            noisy = np.abs(noisy)
        return (np.argmax(noisy, axis=1) == target).astype(float)

    return audit_scores(
        sample, delta=0.0, n_runs=n_runs, n_select=n_select, alpha=alpha,
        seed=seed, thresholds=np.array([0.5]), epsilon_claimed=epsilon,
        noise_scale=float(b.max()),
    )


def _soft_threshold(x, tau):
    return np.sign(x) * np.maximum(np.abs(x) - tau, 0.0)


def dp_cd_coordinate_step(X, y, w, j, clip, step, l1, noise):
    """One DP-CD proximal coordinate update of least squares + L1, in numpy.

    ``θ_j⁺ = prox_{γ λ|·|}(w_j − γ (ḡ_j + η))`` where ``ḡ_j`` is the mean of the
    per-sample coordinate gradients ``x_ij (x_i·w − y_i)`` clipped to
    ``[−C_j, C_j]`` (Mangold et al., 2022, Algorithm 1 with clipping).

    Parameters
    ----------
    X : ndarray, shape (n, p)
    y : ndarray, shape (n,)
    w : ndarray, shape (p,)
        Current iterate θ.
    j : int
        Coordinate to update.
    clip : float
        ``C_j``.
    step : float
        ``γ_j``.
    l1 : float
        L1 penalty λ (``ψ_j = λ|·|``).
    noise : float or ndarray
        Draw(s) of η; an array gives one update per draw (vectorised runs).

    Returns
    -------
    float or ndarray
        The updated coordinate θ_j⁺, one per noise draw.
    """
    residual = X @ w - y
    grad = np.clip(X[:, j] * residual, -clip, clip).mean()
    return _soft_threshold(w[j] - step * (grad + np.asarray(noise)), step * l1)


def worst_case_dp_cd_pair(
    n: int = 10,
    p: int = 3,
    j: int = 0,
    clip: float = 1.0,
    background_scale: float = 0.5,
    seed: int = 0,
):
    """A least-squares dataset and a replace-one neighbour, worst case for ``j``.

    Row 0 of ``D`` has a coordinate-``j`` gradient far above ``C_j`` (label
    ``−1000 C_j`` on the feature vector ``e_j``) and row 0 of ``D'`` (same
    features, opposite label) one far below ``−C_j``, so after clipping the
    mean coordinate gradient moves by exactly ``2 C_j / n``, the sensitivity
    DP-CD calibrates to, at every iterate a run can plausibly reach. The other
    rows are shared uniform samples in ``[−background_scale, background_scale]``;
    ``background_scale=0`` makes them empty, so that over several steps the
    two runs differ by a pure shift and the audit of the composition is tight.

    Returns
    -------
    X, y, X_prime, y_prime, w : ndarrays
        ``w`` is the starting point (zeros).
    """
    rng = np.random.default_rng(seed)
    X = rng.uniform(-background_scale, background_scale, (n, p))
    y = rng.uniform(-background_scale, background_scale, n)
    X[0] = 0.0
    X[0, j] = 1.0
    # Coordinate gradient of row 0 is (w_j - y_0): clipped to +C_j (resp.
    # -C_j) as long as |w_j| < 999 C_j.
    y[0] = -1000.0 * clip
    X_prime, y_prime = X.copy(), y.copy()
    y_prime[0] = 1000.0 * clip
    return X, y, X_prime, y_prime, np.zeros(p)


def _dp_cd_runs(X, y, w0, coords, clip, step, l1, sigma, rng, size):
    """``size`` independent DP-CD runs over the coordinate sequence ``coords``.

    Residuals ``Xw − y`` are maintained per run, so a coordinate update costs
    O(n) per run as in the solvers. Returns the final iterates, shape
    (size, p).
    """
    W = np.tile(np.asarray(w0, dtype=float), (size, 1))
    # All runs share the starting residual: keep one row (broadcast) until
    # the noise makes them differ, and skip the update after the last step,
    # so a single-step audit costs O(size), not O(size · n).
    R = (X @ np.asarray(w0, dtype=float) - y)[None, :]
    coords = list(coords)
    for t, j in enumerate(coords):
        grad = np.clip(X[:, j] * R, -clip, clip).mean(axis=1)
        eta = sigma * rng.standard_normal(size)
        new = _soft_threshold(W[:, j] - step * (grad + eta), step * l1)
        if t + 1 < len(coords):
            R = R + np.outer(new - W[:, j], X[:, j])
        W[:, j] = new
    return W


def audit_dp_cd_step(
    epsilon: float = 1.0,
    delta: float = 1e-5,
    n: int = 10,
    p: int = 3,
    j: int = 0,
    clip: float = 1.0,
    step: float = 1.0,
    l1: float = 0.01,
    noise_scale: float | None = None,
    noise_factor: float = 1.0,
    n_steps: int = 1,
    n_runs: int = 1_000_000,
    n_select: int | None = None,
    alpha: float = 0.05,
    seed: int = 0,
    data=None,
) -> AuditResult:
    """Audit full DP-CD coordinate updates on a worst-case neighbour pair.

    Each update clips per-sample coordinate gradients of least squares to
    ``[−C_j, C_j]``, averages, adds ``N(0, σ_j²)`` and takes an L1 proximal
    step (:func:`dp_cd_coordinate_step`); the released statistic is the final
    θ_j. The coordinate is fixed to ``j`` at every step: DP-CD draws it
    independently of the data and its accounting takes no credit for the
    draw, so conditioning on it is the case the accountant covers. With
    ``n_steps = K`` the audit covers the K-fold composition (use
    ``background_scale=0`` data and ``l1=0`` for a tight audit: θ_j is then
    a sufficient statistic).

    Parameters
    ----------
    epsilon, delta : float
        The claimed guarantee for the whole sequence of ``n_steps`` releases.
    n, p, j, clip : int, int, int, float
        Size of the pair built by :func:`worst_case_dp_cd_pair`, updated
        coordinate and clipping threshold ``C_j``.
    step, l1 : float
        Step size γ_j and L1 penalty λ of the proximal update.
    noise_scale : float, optional
        σ_j to audit (e.g. ``Calibration.noise_scales[j]``). Default (one
        step only) ``z · 2C_j/n`` with ``z = gaussian_noise_multiplier(ε, δ)``.
    noise_factor : float, default 1
        Multiplies σ_j; ``0.5`` is the under-noised variant.
    n_steps : int, default 1
        Number of updates of coordinate ``j``.
    n_runs, n_select, alpha, seed
        See :func:`audit_scores`.
    data : tuple, optional
        ``(X, y, X_prime, y_prime, w)`` to use instead of the built pair.

    Returns
    -------
    AuditResult
    """
    if data is None:
        data = worst_case_dp_cd_pair(n=n, p=p, j=j, clip=clip)
    X, y, X_prime, y_prime, w = data
    n = X.shape[0]
    if noise_scale is None:
        if n_steps != 1:
            raise ValueError("pass noise_scale for n_steps > 1 (calibrate the composition)")
        noise_scale = gaussian_noise_multiplier(epsilon, delta) * 2.0 * clip / n
    sigma = float(noise_scale) * noise_factor
    coords = [j] * int(n_steps)

    def sample(rng, neighbour, size):
        Xs, ys = (X_prime, y_prime) if neighbour else (X, y)
        return _dp_cd_runs(Xs, ys, w, coords, clip, step, l1, sigma, rng, size)[:, j]

    return audit_scores(
        sample, delta=delta, n_runs=n_runs, n_select=n_select, alpha=alpha,
        seed=seed, epsilon_claimed=epsilon, noise_scale=sigma,
    )

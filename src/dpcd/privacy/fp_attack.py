"""Floating-point attacks on the fast mode's noise (Mironov, CCS 2012).

A float that carries Laplace or Gaussian noise is not a draw from the real
distribution. Only some floats can come out of the sampler, and which ones
depends on the value the noise was added to. An attacker knows the two
candidate inputs (dataset D and its neighbour D') and sees one released
float ``y``. The attacker asks: could ``y`` have come from D? If not, the
input was D'. When that test fires on a large share of the releases from D'
and never on those from D, the ε-DP claim is false, whatever ε it states.

Two distinguishers:

* :func:`laplace_reachable` rebuilds, bit for bit, the set of floats that
  numpy's inverse-CDF Laplace (``Generator.laplace``, used by the fast
  smoothness release) can output from a given input. numpy draws one
  double ``U = k·2⁻⁵³`` and returns ``loc ± scale·log(2U)`` with libm's
  ``log``; numba calls the same ``log``. The output never decreases as
  ``k`` grows, so a binary search over the 2⁵³ values of ``k`` decides
  membership exactly.
* :func:`off_grid` is a low-bit test that needs no knowledge of the sampler.
  Take a release ``fl(g' + v)``, with ``v`` any float noise. If it lies
  within ``|g'|/2`` of 0, the addition is exact (Sterbenz's lemma), and the
  result is a multiple of ``ulp(g')/2``. Releases of size ``|g'|/2`` or more
  are multiples of it anyway. So let D's statistic be exactly 0, so that
  its release is the noise itself with all its low bits, and let D''s
  statistic be ``g' ≠ 0``. Then a release that is not a multiple of
  ``ulp(g')/2`` cannot come from D'. The same holds for iterates that only
  ever add such releases to multiples of ``ulp(g')/2``, as DP-CD without a
  penalty does. This breaks fast DP-CD whatever normal sampler it uses.

The bound on ε is the usual hypothesis-test audit (:mod:`dpcd.privacy.audit`).
The test set ``S`` is fixed before any run. ``TPR_lo`` and ``FPR_hi`` are
one-sided Clopper–Pearson bounds at level α/2 each, so
``ε ≥ log((TPR_lo − δ)/FPR_hi)`` with probability ≥ 1 − α. With ``n`` runs
per side and no false positive, ``FPR_hi = 1 − (α/2)^{1/n}``, about
``3.7/n`` at α = 0.05. So 10⁶ runs can show at most ε ≈ 12.5.

:func:`attack_smoothness` runs the Laplace attack on DP-CD-P's smoothness
release (:func:`dpcd.privacy.smoothness.private_smoothness`), in the fast or
the secure mode, through its public signature. :func:`attack_off_grid`
attacks any release given as a callable. Releases that run a solver, such
as DP-CD's, are built with the tests (``tests/dp_cd_fp_attack.py``), since
this package audits mechanisms and runs no solver.
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np
from numba import njit

from dpcd.privacy.audit import AuditResult, clopper_pearson
from dpcd.privacy.smoothness import private_smoothness

__all__ = ["FLOOR", "attack_off_grid", "attack_smoothness", "epsilon_bound",
           "laplace_reachable", "numpy_laplace", "off_grid", "smoothness_pair"]

# numpy's next_double is (next_uint64 >> 11)·2⁻⁵³, so U = k·2⁻⁵³ with
# 0 < k < 2⁵³ (numpy's laplace draws again on U = 0).
_K_MAX = 2 ** 53 - 1
_ULP_U = 2.0 ** -53

# The smoothness release clamps its estimates to [floor·b, b]. A small floor
# leaves more of the releases unclamped; any floor in (0, 1] is a public choice.
FLOOR = 2.0 ** -20


@njit(cache=True)
def _laplace_at(k, loc, scale):
    """numpy's ``random_laplace`` for the uniform ``U = k·2⁻⁵³``, the same operations."""
    u = k * _ULP_U
    if u >= 0.5:
        return loc - scale * math.log(2.0 - u - u)
    return loc + scale * math.log(u + u)


@njit(cache=True)
def numpy_laplace(u, loc, scale):
    """numpy's ``Generator.laplace(loc, scale)`` rebuilt from its uniforms ``u``.

    When ``u`` are the generator's ``random()`` draws, the result is the same
    as numpy's, bit for bit (tested). numpy's vectorised ``np.log`` is not
    libm's ``log``, and would differ in the last bit.
    """
    out = np.empty(u.shape[0])
    for i in range(u.shape[0]):
        out[i] = _laplace_at(u[i] / _ULP_U, loc, scale)
    return out


@njit(cache=True)
def _reachable(y, loc, scale, k_max):
    out = np.zeros(y.shape[0], dtype=np.bool_)
    for i in range(y.shape[0]):
        # the smallest k whose output reaches y[i]: reachable iff it equals y[i]
        if not _laplace_at(k_max, loc, scale) >= y[i]:  # also catches NaN
            continue
        lo, hi = 1, k_max
        while lo < hi:
            mid = (lo + hi) // 2
            if _laplace_at(mid, loc, scale) >= y[i]:
                hi = mid
            else:
                lo = mid + 1
        out[i] = _laplace_at(lo, loc, scale) == y[i]
    return out


def laplace_reachable(y, loc: float, scale: float) -> np.ndarray:
    """Whether each float of ``y`` is an output of numpy's ``laplace(loc, scale)``.

    The answer is exact, with no sampling. The sampler's output never
    decreases as its uniform ``U = k·2⁻⁵³`` grows, so a binary search over
    ``k ∈ [1, 2⁵³)`` finds the smallest ``k`` whose output reaches ``y``,
    and checks that it equals ``y``.

    Parameters
    ----------
    y : array_like of float
    loc, scale : float
        The input the noise is added to, and the Laplace scale.

    Returns
    -------
    ndarray of bool, shape of ``y``
    """
    y = np.asarray(y, dtype=np.float64)
    return _reachable(y.ravel(), float(loc), float(scale), _K_MAX).reshape(y.shape)


def off_grid(y, reference: float) -> np.ndarray:
    """Whether ``y`` is not a multiple of ``ulp(reference)/2``.

    No release ``fl(reference + v)`` (``v`` any float) is such a value; see
    the module docstring. When a statistic is exactly 0, its release is the
    noise itself, which usually is.

    Parameters
    ----------
    y : array_like of float
    reference : float
        The neighbour's statistic ``g' ≠ 0``.

    Returns
    -------
    ndarray of bool
    """
    reference = float(reference)
    if reference == 0 or not np.isfinite(reference):
        raise ValueError(f"reference must be finite and non-zero, got {reference!r}")
    quantum = np.spacing(abs(reference)) / 2
    return np.fmod(np.asarray(y, dtype=np.float64), quantum) != 0  # fmod is exact


def epsilon_bound(hits_positive: int, hits_negative: int, n_runs: int, delta: float = 0.0,
                  alpha: float = 0.05, epsilon_claimed: float | None = None,
                  noise_scale: float | None = None, positive: str = "D'") -> AuditResult:
    """The ε lower bound of one test fixed in advance, from its hit counts.

    ``TPR_lo`` and ``FPR_hi`` are one-sided Clopper–Pearson bounds at level
    ``alpha/2`` each, so ``ε ≥ log((TPR_lo − δ)/FPR_hi)`` holds with
    probability ≥ 1 − ``alpha``.

    Parameters
    ----------
    hits_positive : int
        Runs on the dataset the test points to (``positive``) where it fired.
    hits_negative : int
        Runs on the other dataset where it fired.
    n_runs : int
        Runs per dataset.
    delta : float
        The mechanism's claimed δ.
    alpha : float
        One minus the confidence level.
    epsilon_claimed, noise_scale : float, optional
        Recorded in the result.
    positive : {"D'", "D"}
        Name of the dataset the test points to.

    Returns
    -------
    AuditResult
        ``threshold`` is nan: the test set is the distinguisher, not a threshold.
    """
    tpr_lo, _ = clopper_pearson(hits_positive, n_runs, alpha)
    _, fpr_hi = clopper_pearson(hits_negative, n_runs, alpha)
    with np.errstate(divide="ignore"):
        eps = float(np.log(max(tpr_lo - delta, 0.0) / fpr_hi))
    return AuditResult(epsilon_lb=max(eps, 0.0), threshold=float("nan"), fpr_hi=fpr_hi,
                       tpr_lo=tpr_lo, n=int(n_runs), side="in S", positive=positive,
                       delta=float(delta), alpha=float(alpha), n_tests=1,
                       epsilon_claimed=epsilon_claimed, noise_scale=noise_scale)


def smoothness_pair(n: int = 8, bound: float = 1.0):
    """The pair of datasets the Laplace attack uses, for one coordinate.

    In D every per-sample constant is 0. Its mean is exactly 0, so its
    release is the noise itself, bit for bit. D' replaces one record by
    ``bound``; its mean is ``bound/n``, the sensitivity. Both means are
    exact in any order of summation when ``n`` is a power of 2.

    Returns
    -------
    column_d, column_dprime : ndarray, shape (n,)
    mean_d, mean_dprime : float
    """
    column_d = np.zeros(n)
    column_dprime = column_d.copy()
    column_dprime[0] = bound
    return column_d, column_dprime, 0.0, bound / n


def _smoothness_runs(per_sample_column, bound, size, rng, noise, chunk):
    """``size`` releases of one coordinate at ε = 1, ``chunk`` per call.

    One call with ``p`` identical columns and ``ε′ = p`` puts the noise
    multiplier ``p/ε′ = 1`` on every coordinate. So each column is an
    independent run of the one-coordinate release at ε = 1. The floats are
    those of ``p`` calls with ``p = 1`` that draw in turn from one generator
    (tested).
    """
    out = np.empty(size)
    for start in range(0, size, chunk):
        m = min(chunk, size - start)
        per_sample = np.repeat(per_sample_column[:, None], m, axis=1)
        out[start:start + m] = private_smoothness(per_sample, bound, float(m), rng,
                                                  floor=FLOOR, noise=noise)[0]
    return out


def attack_smoothness(noise: str = "fast", n_runs: int = 1_000_000, seed: int = 0,
                      n: int = 8, bound: float = 1.0, alpha: float = 0.05,
                      chunk: int = 100_000) -> AuditResult:
    """Mironov's attack on the private smoothness release, at a claimed ε = 1.

    The release is :func:`~dpcd.privacy.smoothness.private_smoothness` of
    one coordinate, on the pair :func:`smoothness_pair`, with Laplace scale
    ``b/n``. The test set is ``S = {y strictly inside the clamp range, not an
    output of numpy's laplace(0, b/n)}``. In the fast mode it never fires on
    D, whose release is the noise itself. It fires on D' whenever
    ``fl(b/n + noise)`` is not one of the noise's own floats. numpy's outputs
    are sparse among the floats below ``b/n``: their uniforms are spaced
    2⁻⁵³ apart, and the floats there are much closer. So a shifted output
    rarely lands on one. Of the releases from D', 18 % are clamped (noise
    below ``−b/n``), and about a fifth of the others are also noise values.
    The test fires on about 65 %.

    Parameters
    ----------
    noise : {"fast", "secure"}
        The release's noise mode. The secure mode runs as it is: its
        randomness cannot be seeded.
    n_runs : int
        Releases per dataset.
    seed : int
        Seeds the fast mode's generators (``SeedSequence(seed)``, one stream
        per dataset).
    n, bound : int, float
        Records and the public bound ``b``. The sensitivity and the Laplace
        scale are both ``b/n``.
    alpha : float
        One minus the confidence level.
    chunk : int
        Releases per call.

    Returns
    -------
    AuditResult
        ``positive`` is ``"D'"``, ``epsilon_claimed`` 1.
    """
    column_d, column_dprime, mean_d, _ = smoothness_pair(n, bound)
    scale = bound / n
    rngs = [np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(2)]
    hits = []
    for column, rng in zip((column_d, column_dprime), rngs):
        y = _smoothness_runs(column, bound, n_runs, rng, noise, chunk)
        inside = (y > FLOOR * bound) & (y < bound)
        hits.append(int(np.count_nonzero(inside & ~laplace_reachable(y, mean_d, scale))))
    return epsilon_bound(hits[1], hits[0], n_runs, alpha=alpha, epsilon_claimed=1.0,
                         noise_scale=scale, positive="D'")


def attack_off_grid(release: Callable[[bool, int], np.ndarray], reference: float,
                    n_runs: int, delta: float, epsilon_claimed: float, alpha: float = 0.05,
                    seed: int = 0) -> AuditResult:
    """The low-bit attack on releases whose statistic is 0 on D and ``reference`` on D'.

    The test set is ``S = {some released float is off_grid(·, reference)}``.
    The test points to D. It never fires on D' when each released float is
    ``reference`` plus float noise (see the module docstring), or a sum of
    such releases, as DP-CD's iterates are without a penalty, with step 1
    and a start at 0 (``tests/dp_cd_fp_attack.py`` builds that case).

    Parameters
    ----------
    release : callable ``(neighbour, seed) -> ndarray``
        One run on D' if ``neighbour``, else on D, with its randomness seeded
        by the integer ``seed``. A secure release ignores the seed.
    reference : float
        D''s statistic.
    n_runs : int
        Runs per dataset.
    delta, epsilon_claimed : float
        The release's claimed guarantee.
    alpha : float
        One minus the confidence level.
    seed : int
        Draws the runs' seeds.

    Returns
    -------
    AuditResult
        ``positive`` is ``"D"``.
    """
    seeds = np.random.default_rng(seed).integers(0, 2 ** 63, size=(2, n_runs))
    hits = [sum(bool(np.any(off_grid(release(neighbour, int(s)), reference)))
                for s in seeds[int(neighbour)])
            for neighbour in (False, True)]
    return epsilon_bound(hits[0], hits[1], n_runs, delta=delta, alpha=alpha,
                         epsilon_claimed=epsilon_claimed, positive="D")

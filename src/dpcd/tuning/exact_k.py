"""Exact draws of a private search's K on the keystream (the secure mode).

Each law is drawn exactly for the floats the accountant is given (the mean
μ of the Poisson law, ``γ`` of :func:`dpcd.tuning.draws.k_gamma` for the
others), from :mod:`dpcd.privacy.exact`'s uniform integers, Bernoulli and
geometric draws only: no float arithmetic touches a random value.

* geometric (η = 1): ``K = 1 + G``, ``P(G ≥ m) = (1 − γ)^m``.
* Poisson (η = ∞): the sum of ``2^j`` draws of Poisson(λ), ``λ = μ·2^{-j} <
  1`` (a power-of-two scaling, exact), each by von Neumann's rejection
  (Flajolet, Pelletier, Soria, "On Buffon machines and numbers", SODA
  2011): ``N`` counts the successes before the first failure of
  Bernoulli(λ) trials, ``P(N = n) = (1 − λ)λ^n``, kept with probability
  ``1/n!`` (uniform integers below 2, …, n all 0), so
  ``P(K = n) ∝ λ^n/n!``.
* logarithmic (η = 0): ``G`` geometric(γ), kept when ``G ≥ 1`` with
  probability ``1/G`` (a uniform integer below ``G`` is 0), so
  ``P(K = k) ∝ (1 − γ)^k/k``.
* truncated negative binomial (0 < η < ∞): the proposal is the sum of
  ``r = ⌈η⌉`` geometrics, ``P(k) ∝ C(k + r − 1, k)(1 − γ)^k``, kept when
  ``k ≥ 1`` with probability ``∏_{i ≤ k} (η + i − 1)/(r + i − 1)`` (each
  factor is ``1 − (1 − f)/(r + i − 1)`` with ``f = η − r + 1 ∈ (0, 1]``:
  a uniform integer below ``r + i − 1`` is nonzero, or else Bernoulli(f)),
  so ``P(K = k) ∝ C(k + η − 1, k)(1 − γ)^k`` for ``k ≥ 1``.

Every loop is a rejection with a positive acceptance probability, so it ends
with probability 1; none is capped (a cap would change the law).
"""

import numpy as np
from numba import njit

from dpcd.privacy.exact import bernoulli, geometric, uniform_below


@njit(cache=True)
def _poisson_below_one(state, lam):
    """One Poisson(``lam``) draw, ``0 < lam < 1`` (von Neumann's rejection)."""
    while True:
        n = 0
        while bernoulli(state, lam):
            n += 1
        i = 2
        while i <= n and uniform_below(state, i) == 0:
            i += 1
        if i > n:
            return n


@njit(cache=True)
def poisson(state, lam, pieces):
    """The sum of ``pieces`` Poisson(``lam``) draws: Poisson(``pieces·lam``)."""
    k = 0
    for _ in range(pieces):
        k += _poisson_below_one(state, lam)
    return k


@njit(cache=True)
def logarithmic(state, gamma):
    """``P(K = k) ∝ (1 − γ)^k/k``, ``k ≥ 1``."""
    while True:
        g = geometric(state, gamma)
        if g >= 1 and uniform_below(state, g) == 0:
            return g


@njit(cache=True)
def negative_binomial(state, gamma, r, frac):
    """``P(K = k) ∝ C(k + η − 1, k)(1 − γ)^k``, ``k ≥ 1``, for ``η = r − 1 + frac``."""
    while True:
        k = 0
        for _ in range(r):
            k += geometric(state, gamma)
        if k < 1:
            continue
        i = 1
        while i <= k and (uniform_below(state, r + i - 1) != 0 or bernoulli(state, frac)):
            i += 1
        if i > k:
            return k


@njit(cache=True)
def fill(state, law, gamma, lam, pieces, r, frac, out):
    """``out[:]`` i.i.d. draws of one law (0 geometric, 1 Poisson, 2
    logarithmic, 3 negative binomial), with the parameters of :func:`draw`."""
    for i in range(out.size):
        if law == 0:
            out[i] = 1 + geometric(state, gamma)
        elif law == 1:
            out[i] = poisson(state, lam, pieces)
        elif law == 2:
            out[i] = logarithmic(state, gamma)
        else:
            out[i] = negative_binomial(state, gamma, r, frac)


__all__ = ["fill", "logarithmic", "negative_binomial", "poisson"]

"""Exact samplers for numba kernels, on the ChaCha20 keystream.

Every function here is ``@njit(cache=True, fastmath=False)``, callable from
a kernel and from Python, and draws from a :mod:`dpcd.privacy.keystream`
state. (The explicit ``fastmath=False`` matters: numba compiles a function
first called from a kernel compiled with ``fastmath``, as the DP-SCD
kernels are, with the kernel's flags, and reuses that version everywhere;
the error bounds below assume IEEE arithmetic, without reassociation or
contraction.) Each
float parameter is read as the exact real number it represents, and each
sampler's output has exactly the stated law (given a uniform keystream).

How exactness and speed go together
-----------------------------------
Every random decision is a comparison of a uniform real ``U ∈ [0, 1)``
with a threshold: ``U``'s binary expansion is a keystream word's top 53
bits, extended with further words only when needed. The 53 bits put ``U``
in an interval ``[a, a + 2⁻⁵³)``. The threshold is computed in float64
with a proven error bound ``E``:

* if ``U``'s interval lies entirely on one side of ``[θ − E, θ + E]``, the
  comparison is decided exactly, in the kernel;
* otherwise (probability about ``2E``: below 10⁻⁶ per draw for the discrete
  Gaussian at every scale, and for the discrete Laplace up to t = 10⁶) the
  kernel calls, through ``numba.objmode``, an exact path in
  Python: it extends ``U`` word by word and compares with the threshold
  computed by :mod:`decimal` (whose ``exp`` and ``ln`` are correctly
  rounded) at growing precision, as intervals with rational ends
  (:mod:`fractions`) that are certain to contain the true values. It
  decides exactly, and terminates with probability 1.

Both paths decide the same real predicate, so every output is exact. The
error bounds (derived in the comments at each check) assume the platform's
``exp``, ``log`` and ``log1p`` have a relative error below ``2⁻⁴⁸`` (glibc
documents at most 1 to 2 ulps, i.e. below ``2⁻⁵¹``), except the block
proposal's acceptance, whose exponential is a polynomial with its own proven
bound (tested against :mod:`decimal`): :func:`_exp_neg`, ``2⁻⁴⁵``, and, for a
batch's first decision on ``U``'s short prefix, :func:`_exp_neg_short`,
``2⁻³¹`` (its guard band is wider, but still far narrower than the prefix's
interval); every other float operation is an IEEE 754 operation rounded to nearest. Each bound is
applied with a safety factor of at least 2.

The samplers
------------
* :func:`uniform_below`: rejection on 64-bit words (no float).
* :func:`bernoulli`: ``U < p`` compared bit for bit with ``p``'s binary
  expansion (no float error at all).
* :func:`geometric`: inverse CDF, ``G = ⌊ln U / ln(1 − p)⌋``
  (``P(G ≥ m) = (1 − p)^m``), the floor decided as above.
* :func:`discrete_laplace` (pmf ``∝ exp(−|k|/t)``): one word gives a sign
  bit and ``U``; the magnitude is the inverse CDF of ``|X|``,
  ``P(|X| ≥ m) = 2q^m/(1 + q)`` for ``m ≥ 1`` with ``q = e^{−1/t}``, i.e.
  ``|X| = ⌊t·(ln(2/(1 + q)) − ln U)⌋``; a nonzero magnitude gets the sign.
* :func:`discrete_gaussian` (pmf ``∝ exp(−k²/(2σ²))``): Canonne, Kamath
  and Steinke (NeurIPS 2020), Algorithm 3: propose ``Y`` from the discrete
  Laplace of scale ``t = ⌊σ⌋ + 1`` and accept with probability
  ``exp(−(|Y| − σ²/t)²/(2σ²))`` (an exact Bernoulli as above). About 1.3
  proposals per draw at large σ. From σ = 2⁸ up the proposal has no
  logarithm (see ``BLOCK_SCALE``): ``|Y| = L·H + low`` with ``L ≥ t ln 2``,
  ``H`` geometric of ratio 1/2 (trailing zeros of keystream bits), ``low``
  uniform below ``L``, ``−0`` rejected, and ``e^{−low/t}`` and
  ``(2e^{−L/t})^H`` moved into the acceptance, whose ``exp`` is a
  polynomial (:func:`_exp_neg`) that vectorises; one keystream word per
  proposal, about 1.83 proposals per draw.

Parameters are restricted to ``2⁻¹⁰ ≤ t, σ ≤ 2⁴⁰`` (beyond, the float
checks lose their margin; no solver comes near).

The test hook: a state made by
:func:`dpcd.privacy.keystream.state_from_key` with ``guard=g`` widens every
guard band by ``2**g``, so that the exact path is taken (the tests check
that it agrees with the fast path draw for draw).
"""

from __future__ import annotations

import decimal
import math
from fractions import Fraction

import numpy as np
from numba import njit, objmode, types
from numba.cpython.unsafe.numbers import trailing_zeros
from numba.extending import intrinsic

from dpcd.privacy.keystream import GUARD, fill_u64, next_u64

# Parameter range of the scale samplers (see the module docstring).
MIN_SCALE = 2.0 ** -10
MAX_SCALE = 2.0 ** 40
# Smallest success probability of the geometric sampler.
MIN_P = 2.0 ** -40

_ULP53 = 2.0 ** -53
_LOG2 = math.log(2.0)


@njit(cache=True, fastmath=False, inline="always")
def _widen(state):
    """2**g for the state's guard hook g (1.0 in production)."""
    return 2.0 ** np.float64(state[GUARD])


@njit(cache=True, fastmath=False, inline="always")
def _prefix(word):
    """``U``'s first 53 bits: ``U ∈ [u·2⁻⁵³, (u + 1)·2⁻⁵³)`` (as an int64, whose
    conversion to float is one instruction where uint64's is not)."""
    return np.int64(word >> np.uint64(11))


# ---------------------------------------------------------------------------
# uniform integers and Bernoulli(p): exact in integer arithmetic


@njit(cache=True, fastmath=False)
def uniform_below(state, k):
    """A uniform integer on ``{0, …, k − 1}`` (``k ≥ 1``).

    Rejection: a 64-bit word ``x`` is kept when ``x ≥ 2⁶⁴ mod k``, which
    leaves a multiple of ``k`` equally likely values; the draw is ``x mod k``.
    """
    if k < 1:
        raise ValueError("uniform_below: k must be >= 1")
    kk = np.uint64(k)
    low = (np.uint64(0) - kk) % kk          # 2**64 mod k
    while True:
        x = next_u64(state)
        if x >= low:
            return np.int64(x % kk)


@njit(cache=True, fastmath=False)
def bernoulli(state, p):
    """``True`` with probability exactly ``p`` (``0 ≤ p ≤ 1``).

    Compares ``U`` with ``p`` 64 bits at a time: ``s = r·2⁶⁴`` is exact for
    a float ``r < 1``, as is its fractional part, so a word ``x`` below
    ``⌊s⌋`` means ``U < p``, above it ``U > p``, equal it moves on to the
    next 64 bits of both (probability 2⁻⁶⁴).
    """
    if not (p >= 0.0 and p <= 1.0):
        raise ValueError("bernoulli: p must be in [0, 1]")
    if p == 1.0:
        return True
    r = p
    while r > 0.0:
        s = r * 18446744073709551616.0      # r·2**64, exact
        top = np.floor(s)
        x = next_u64(state)
        if x < np.uint64(top):
            return True
        if x > np.uint64(top):
            return False
        r = s - top                          # exact
    return False


# ---------------------------------------------------------------------------
# the exact path (Python, through objmode; taken with probability ~1e-7)


def _dec_bounds(x: Fraction, prec: int):
    """Decimals ``lo ≤ x ≤ hi`` with ``prec`` digits."""
    num, den = decimal.Decimal(x.numerator), decimal.Decimal(x.denominator)
    lo = decimal.Context(prec=prec, rounding=decimal.ROUND_FLOOR).divide(num, den)
    hi = decimal.Context(prec=prec, rounding=decimal.ROUND_CEILING).divide(num, den)
    return lo, hi


def _widened(value: decimal.Decimal, prec: int, side: int) -> Fraction:
    """A correctly rounded result moved one relative ulp away, to ``side`` (±1)."""
    v = Fraction(value)
    return v + side * abs(v) * Fraction(1, 10 ** (prec - 1))


def _ln_bounds(x: Fraction, prec: int):
    """Rationals ``lo ≤ ln x ≤ hi`` (``x > 0``): decimal's ``ln`` is correctly rounded."""
    lo, hi = _dec_bounds(x, prec)
    ctx = decimal.Context(prec=prec)
    return _widened(ctx.ln(lo), prec, -1), _widened(ctx.ln(hi), prec, +1)


def _exp_bounds(x: Fraction, prec: int):
    """Rationals ``lo ≤ exp x ≤ hi``: decimal's ``exp`` is correctly rounded."""
    lo, hi = _dec_bounds(x, prec)
    ctx = decimal.Context(prec=prec)
    return _widened(ctx.exp(lo), prec, -1), _widened(ctx.exp(hi), prec, +1)


# How often each exact path ran in this process (read by the tests).
EXACT_PATH_CALLS = {"geometric": 0, "laplace": 0, "accept": 0}


class _Uniform:
    """``U = 0.b₁b₂…``: the bits drawn so far, extended from the stream on demand."""

    def __init__(self, state, prefix, n_bits):
        self.state, self.num, self.n_bits = state, int(prefix), n_bits

    def extend(self):
        self.num = (self.num << 64) | int(next_u64(self.state))
        self.n_bits += 64

    def positive(self):
        """Extend until ``U``'s interval excludes 0; return its lower end."""
        while self.num == 0:
            self.extend()
        return Fraction(self.num, 1 << self.n_bits)

    def below(self, log_threshold):
        """Whether ``U < exp(ℓ)``, where ``log_threshold(prec)`` bounds ℓ."""
        prec = 40
        while True:
            ell_lo, ell_hi = log_threshold(prec)
            a = Fraction(self.num, 1 << self.n_bits)
            b = Fraction(self.num + 1, 1 << self.n_bits)
            if _ln_bounds(b, prec)[1] <= ell_lo:
                return True                  # U < b ≤ exp(ℓ)
            if a > 0 and _ln_bounds(a, prec)[0] >= ell_hi:
                return False                 # U ≥ a ≥ exp(ℓ)
            self.extend()
            prec += 25


def _max_index(estimate, below):
    """The largest ``m ≥ 0`` with ``below(m)`` (decreasing thresholds), searched from ``estimate``."""
    m = max(0, int(estimate))
    while m > 0 and not below(m):
        m -= 1
    while below(m + 1):
        m += 1
    return m


def _exact_geometric(state, prefix, p):
    EXACT_PATH_CALLS["geometric"] += 1
    u = _Uniform(state, prefix, 53)
    a = u.positive()
    one_minus_p = 1 - Fraction(p)

    def below(m):                            # U < (1 − p)^m
        def ell(prec):
            lo, hi = _ln_bounds(one_minus_p, prec)
            return m * lo, m * hi
        return m <= 0 or u.below(ell)

    estimate = (math.log(a.numerator) - math.log(a.denominator)) / math.log1p(-p)
    return _checked(_max_index(estimate, below))


def _exact_laplace_magnitude(state, prefix, t):
    EXACT_PATH_CALLS["laplace"] += 1
    u = _Uniform(state, prefix, 53)
    a = u.positive()
    inv_t = 1 / Fraction(t)

    def below(m):                            # U < 2 q^m / (1 + q), q = exp(−1/t)
        def ell(prec):
            q_lo, q_hi = _exp_bounds(-inv_t, prec)
            l2_lo, l2_hi = _ln_bounds(Fraction(2), prec)
            return (l2_lo - m * inv_t - _ln_bounds(1 + q_hi, prec)[1],
                    l2_hi - m * inv_t - _ln_bounds(1 + q_lo, prec)[0])
        return m <= 0 or u.below(ell)

    c = _LOG2 - math.log1p(math.exp(-1.0 / t))
    estimate = t * (c - (math.log(a.numerator) - math.log(a.denominator)))
    return _checked(_max_index(estimate, below))


def _exact_accept(state, prefix, m, sigma, t, low=0, h=0, steps=0, n_bits=53):
    """``U < exp(−γ*)`` exactly, for ``U``'s ``n_bits``-bit prefix:
    ``γ* = (m − σ²/t)²/(2σ²) + low/t + h·(steps/t − ln 2)`` (the last two terms
    are the block proposal's; ``ln 2`` is bounded at each precision)."""
    EXACT_PATH_CALLS["accept"] += 1
    s = Fraction(sigma)
    gamma = ((int(m) - s * s / Fraction(t)) ** 2 / (2 * s * s) + int(low) / Fraction(t)
             + int(h) * int(steps) / Fraction(t))
    if gamma == 0 and h == 0:
        return True

    def ell(prec):
        ln2_lo, ln2_hi = _ln_bounds(Fraction(2), prec) if h else (0, 0)
        return -gamma + int(h) * ln2_lo, -gamma + int(h) * ln2_hi

    return _Uniform(state, prefix, n_bits).below(ell)


def _checked(m):
    if m >= 2 ** 62:
        raise OverflowError("exact sampler: draw beyond the int64 range")
    return m


# ---------------------------------------------------------------------------
# geometric, discrete Laplace, discrete Gaussian


@njit(cache=True, fastmath=False, inline="always")
def _floor_of(y, err):
    """``⌊y*⌋`` for every ``y*`` in ``(y − err, y + err)`` with ``y* > 0``, or −1 if not unique.

    ``err`` overestimates the error at least twofold, so the rounding of
    ``y ± err`` cannot cross ``y*``; ``y* > 0`` lets the low end be clamped.
    (Branch-free, so that the loops calling it vectorise.)
    """
    lo = max(y - err, 0.0)
    hi = min(y + err, 4.0e18)
    f = np.floor(lo)
    return np.int64(f) if f == np.floor(hi) and hi < 4.0e18 else np.int64(-1)


@njit(cache=True, fastmath=False, inline="always")
def _inv_bound(prefix):
    """An upper bound of ``1/prefix``: ``prefix < 2⁵³`` is exact as a float and
    the division errs by at most ``2⁻⁵³`` relative, which ``1 + 2⁻⁵⁰`` covers
    with the product's own rounding. (A coarser ``2⁻⁴³`` made the Laplace
    magnitude's guard band, and the exact path's share, 2.5 times wider at
    the scales of sampled vector releases, ``t ≈ 10⁸``-``10⁹``.)"""
    return (1.0 / np.float64(max(prefix, 1))) * (1.0 + 2.0 ** -50)


@njit(cache=True, fastmath=False)
def geometric(state, p):
    """Failures before the first success of Bernoulli(p) trials (``2⁻⁴⁰ ≤ p ≤ 1``).

    ``P(G ≥ m) = (1 − p)^m``, exactly for the real ``p``. (Below ``2⁻⁴⁰`` the
    draws could leave the int64 range.)
    """
    if not (p >= MIN_P and p <= 1.0):
        raise ValueError("geometric: p must be in [2**-40, 1]")
    if p == 1.0:
        return np.int64(0)
    log_q = np.log1p(-p)
    prefix = _prefix(next_u64(state))
    m = np.int64(-1)
    if prefix != 0:
        lg = np.log(np.float64(prefix) * _ULP53)
        y = lg / log_q
        # y* = ln U / ln(1 − p) with ln U ∈ [ln a, ln a + 1/prefix);
        # |lg − ln a| ≤ 2⁻⁴⁸|ln a|, log_q = ln(1 − p)(1 + ε), |ε| ≤ 2⁻⁴⁸:
        # |y − y*| ≤ |y|(2⁻⁴⁸ + 2⁻⁵²) + (2⁻⁴⁸|lg| + 1/prefix)/|log_q|, quartered here.
        err = _widen(state) * (abs(y) * 2.0 ** -44
                               + (abs(lg) * 2.0 ** -45 + 4.0 * _inv_bound(prefix)) / abs(log_q))
        m = _floor_of(y, err)
    if m < 0:
        with objmode(m="int64"):
            m = _exact_geometric(state, prefix, p)
    return m


@njit(cache=True, fastmath=False)
def _laplace_constant(t):
    """``ln(2/(1 + q))``, ``q = e^{−1/t}``, within ``2⁻⁴⁷`` (absolute).

    ``q``'s error is at most ``q·(2⁻⁵³/t + 2⁻⁴⁸) ≤ 1.02·2⁻⁴⁸`` (``q/t ≤ 1/e``),
    ``log1p``'s derivative is below 1 and its own error below ``2⁻⁴⁸·ln 2``.
    """
    if not (t >= MIN_SCALE and t <= MAX_SCALE):
        raise ValueError("discrete_laplace: the scale must be in [2**-10, 2**40]")
    return _LOG2 - np.log1p(np.exp(-1.0 / t))


@njit(cache=True, fastmath=False, inline="always")
def _laplace_magnitude(prefix, lg, t, c, widen):
    """The discrete Laplace magnitude for ``U``'s prefix, given ``lg = log(prefix·2⁻⁵³)``,
    or −1 if the floats cannot tell (always for prefix 0, where ``lg = −∞``)."""
    y = t * (c - lg)
    # y* = t(c* − ln U): |c − c*| ≤ 2⁻⁴⁷, |lg − ln a| ≤ 2⁻⁴⁸|ln a|,
    # 0 ≤ ln U − ln a < 1/prefix, two roundings:
    # |y − y*| ≤ t(2⁻⁴⁷ + 2⁻⁴⁸|lg| + 1/prefix) + 2⁻⁵²|y|, quartered here.
    err = widen * (t * (2.0 ** -44 * (2.0 + abs(lg)) + 2.0 * _inv_bound(prefix))
                   + abs(y) * 2.0 ** -50)
    return _floor_of(y, err)


@njit(cache=True, fastmath=False)
def _laplace_exact_path(state, prefix, t):
    with objmode(m="int64"):
        m = _exact_laplace_magnitude(state, prefix, t)
    return m


# Proposals handled per batch: the libm calls run in tight loops of their own.
_BATCH = 128
# Below this many draws, a fill draws one at a time (a batch's scratch arrays cost more).
_SMALL = 16


@njit(cache=True, fastmath=False, inline="always")
def _laplace_draw(state, t, c, widen):
    """One discrete Laplace draw, the checks of the fills one at a time."""
    word = next_u64(state)
    prefix = _prefix(word)
    m = _laplace_magnitude(prefix, np.log(np.float64(prefix) * _ULP53), t, c, widen)
    if m < 0:
        m = _laplace_exact_path(state, prefix, t)
    return -m if word & np.uint64(1) else m


@njit(cache=True, fastmath=False)
def fill_discrete_laplace(state, t, out):
    """Fill ``out`` (int64[:]) with i.i.d. :func:`discrete_laplace` draws (in batches)."""
    c = _laplace_constant(t)
    widen = _widen(state)
    if out.size < _SMALL:
        for i in range(out.size):
            out[i] = _laplace_draw(state, t, c, widen)
        return
    batch = min(_BATCH, out.size)
    words = np.empty(batch, dtype=np.uint64)
    lg = np.empty(batch)
    mag = np.empty(batch, dtype=np.int64)
    for start in range(0, out.size, batch):
        k = min(batch, out.size - start)
        fill_u64(state, words[:k])
        for j in range(k):
            lg[j] = np.log(np.float64(_prefix(words[j])) * _ULP53)
        for j in range(k):
            mag[j] = _laplace_magnitude(_prefix(words[j]), lg[j], t, c, widen)
        for j in range(k):
            m = mag[j]
            if m < 0:
                m = _laplace_exact_path(state, _prefix(words[j]), t)
            out[start + j] = -m if words[j] & np.uint64(1) else m


@njit(cache=True, fastmath=False)
def discrete_laplace(state, t):
    """A discrete Laplace draw: ``P(k) ∝ exp(−|k|/t)`` on the integers.

    ``t`` in ``[2⁻¹⁰, 2⁴⁰]``; one keystream word per draw (almost always).
    For many draws, :func:`fill_discrete_laplace` is faster.
    """
    return _laplace_draw(state, t, _laplace_constant(t), _widen(state))


@njit(cache=True, fastmath=False, inline="always")
def _acceptance_exponent(m, inv_sigma, sigma_over_t):
    """``v = m/σ − σ/t`` and ``γ = v²/2 = (m − σ²/t)²/(2σ²)``, in floats."""
    v = np.float64(m) * inv_sigma - sigma_over_t
    return v, 0.5 * v * v


@njit(cache=True, fastmath=False, inline="always")
def _accept_decision(prefix, m, v, gamma, theta, inv_sigma, widen):
    """Whether ``U < exp(−γ*)`` given ``theta = exp(−γ)`` (γ from
    :func:`_acceptance_exponent`): 1 or 0, or −1 if the floats cannot tell."""
    a = np.float64(prefix) * _ULP53
    # inv_sigma = (1/σ)(1 + ε), so m·inv_sigma and σ/t carry ≤ 2·2⁻⁵³
    # relative error each: |v − v*| ≤ ev = (m/σ + 1 + |v|)·2⁻⁵¹;
    # |γ − γ*| ≤ ev(|v| + ev) + 2⁻⁵²γ; exp adds 2⁻⁴⁸ relative:
    # θ = exp(−γ) is within θ·δ of θ*, δ ≤ 1.1(2⁻⁴⁸ + |γ − γ*|), halved here.
    ev = (np.float64(m) * inv_sigma + 1.0 + abs(v)) * 2.0 ** -51
    delta = widen * (2.0 ** -45 + 4.0 * ev * (abs(v) + 1.0) + gamma * 2.0 ** -49)
    # beyond γ = 700: exp(−γ*) < 2⁻¹⁰⁰⁰ ≤ a unless prefix = 0 (θ's bound no longer holds)
    far = gamma > 700.0
    below = (a + _ULP53 <= theta * (1.0 - delta)) and not far
    above = (a >= theta * (1.0 + delta) and not far) or (far and prefix != 0)
    return np.int64(1) if below else (np.int64(0) if above else np.int64(-1))


@njit(cache=True, fastmath=False)
def _accept_exact_path(state, prefix, m, sigma, t):
    with objmode(accept="int64"):
        accept = int(_exact_accept(state, prefix, m, sigma, t))
    return accept


# The discrete Gaussian's proposal at wide scales (σ ≥ BLOCK_SCALE), with no
# logarithm: the magnitude M = L·H + low, with L ≥ t·ln 2 an integer, H
# geometric of ratio 1/2 (the trailing zeros of keystream bits) and ``low``
# uniform on {0, …, L − 1}, a sign bit, and −0 rejected. Each integer y is so
# proposed with probability 2^{−H}/(4L); the acceptance
# exp(−(|y| − σ²/t)²/(2σ²) − low/t − H·(L/t − ln 2)) ≤ 1 makes the product
# proportional to exp(−y²/(2σ²)) again (the exponents' sum is −y²/(2σ²) + const).
# One keystream word and one exponential (a polynomial, see _exp_neg) per
# proposal, about 1.85 proposals per draw (the envelope is 2 ln 2 ≈ 1.39 times
# the one-word Laplace's). The word's bits: 0 the sign, 1-8 H (H ≥ 8 when all
# are 0: more words are read), 9-24 the uniform below j (Lemire's multiply and
# reject, the whole proposal rejected with probability below j/2¹⁶), the next e
# the rest of ``low`` (L = j·2^e, j ≤ 256), and the top 39 − e bits U's prefix
# for the acceptance, at every scale: at least 7 bits (e ≤ 32 as σ ≤ 2⁴⁰), and
# the rare prefix that the floats cannot decide on (about 2^{e − 39} of them) is
# extended by the next word (_block_settle).
BLOCK_SCALE = 2.0 ** 8
# The block length is j·2^e with j at most this (so L ≤ t·ln 2·(1 + 2⁻⁷) + 2^e).
_J_MAX = 256
# Largest γ the polynomial exponential takes: beyond, the acceptance
# e^{−γ*} < e^{−59} < 2⁻⁸⁵ is below every nonzero prefix.
_FAR = 60.0
_LN2_F = math.log(2.0)
_INV_LN2 = 1.0 / math.log(2.0)
# 2^-n for n = 0..127 (exact), and 1/i! for e^{-r}'s Taylor polynomial (degree 12).
_POW2 = 2.0 ** -np.arange(128.0)
_INV_FACT = np.array([1.0 / math.factorial(i) for i in range(13)])


@intrinsic
def _as_float(typingctx, bits):
    """The float64 whose IEEE 754 bits are the uint64 ``bits`` (a reinterpretation)."""
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], context.get_value_type(types.float64))
    return types.float64(types.uint64), codegen


@intrinsic
def _as_bits(typingctx, x):
    """The IEEE 754 bits of the float64 ``x``, as a uint64."""
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], context.get_value_type(types.uint64))
    return types.uint64(types.float64), codegen


_ONE_BITS = np.uint64(1023 << 52)        # 1.0's bits: the exponent field's bias
# x | _MAGIC read as a float is 2⁵² + x, for integers 0 ≤ x < 2⁵² (a conversion that
# vectorises, where int64's does not without AVX-512).
_MAGIC = np.uint64(0x4330000000000000)
_TWO52 = 2.0 ** 52


@njit(cache=True, fastmath=False, inline="always")
def _exp_neg(x):
    """``e^{−x}`` for ``0 ≤ x ≤ 60``, within a relative ``2⁻⁴⁵`` (vectorises).

    ``x = n·ln 2 + r``: ``n = ⌊x/ln 2 + 1/2⌋ ≤ 87``, ``|r| ≤ 0.35``; the float
    ``r`` is within ``2⁻⁴⁶·³`` of ``x − n ln 2`` (``n·fl(ln 2)`` errs by
    ``87·2⁻⁵⁴``, its rounding by ``2⁻⁵³·61``, the subtraction's by ``2⁻⁵⁴·⁵``);
    the Taylor polynomial of degree 12 at ``|r| ≤ 0.35`` errs by
    ``0.35¹³/13!·e^{0.35} < 2⁻⁵¹·⁴`` relative, Horner's 24 roundings by
    ``24·2⁻⁵³·e^{0.35}/e^{−0.35} < 2⁻⁴⁷·⁴``; the scaling by ``2⁻ⁿ`` is exact.
    (Below 2⁻⁴⁵·⁵ in all.)
    """
    n = np.floor(x * _INV_LN2 + 0.5)
    s = n * _LN2_F - x             # −r
    # unrolled, so that the callers' loops are the innermost and vectorise
    f = _INV_FACT
    p = f[11] + s * f[12]
    p = f[10] + s * p
    p = f[9] + s * p
    p = f[8] + s * p
    p = f[7] + s * p
    p = f[6] + s * p
    p = f[5] + s * p
    p = f[4] + s * p
    p = f[3] + s * p
    p = f[2] + s * p
    p = f[1] + s * p
    p = f[0] + s * p
    # times 2⁻ⁿ (exact): the float whose exponent field is 1023 − n, 0 ≤ n ≤ 87;
    # n + 2⁵²'s bits end with n's, so shifted by 52 they are n's exponent field
    # (bit operations, which vectorise where a table lookup does not)
    return p * _as_float(_ONE_BITS - (_as_bits(n + _TWO52) << np.uint64(52)))


@njit(cache=True, fastmath=False, inline="always")
def _exp_neg_short(x):
    """``e^{−x}`` for ``0 ≤ x ≤ 60``, within a relative ``2⁻³¹`` (vectorises): the
    batch's first decision, whose prefix of ``U`` has only ``39 − e`` bits anyway.

    As :func:`_exp_neg`, with the Taylor polynomial of degree 8, evaluated by
    Estrin's scheme (a shorter chain of dependent operations than Horner's):
    it errs by ``0.35⁹/9!·e^{0.35} < 2⁻³¹·⁷`` relative, its 16 roundings
    by below ``2⁻⁴⁸`` and ``r``'s error by ``2⁻⁴⁶·³`` (below 2⁻³¹·⁶ in all).
    """
    n = np.floor(x * _INV_LN2 + 0.5)
    s = n * _LN2_F - x             # −r
    f = _INV_FACT
    s2 = s * s
    s4 = s2 * s2
    p = (((f[0] + s * f[1]) + s2 * (f[2] + s * f[3]))
         + s4 * (((f[4] + s * f[5]) + s2 * (f[6] + s * f[7])) + s4 * f[8]))
    return p * _as_float(_ONE_BITS - (_as_bits(n + _TWO52) << np.uint64(52)))


@njit(cache=True, fastmath=False)
def _block_length(t):
    """``(L, j, e)``: the smallest ``L = j·2^e ≥ t·ln 2`` with ``j ≤ 256`` (``e`` minimal).

    ``y = fl(t·fl(ln 2))`` is within ``(1 + 2⁻⁵³)²`` of ``t ln 2``, so
    ``⌊y(1 + 2⁻⁵⁰)⌋ + 1 > y(1 + 2⁻⁵¹) ≥ t ln 2``.
    """
    lmin = np.int64(np.floor(t * _LN2_F * (1.0 + 2.0 ** -50))) + 1
    e = 0
    while (lmin + (1 << e) - 1) >> e > _J_MAX:
        e += 1
    j = (lmin + (1 << e) - 1) >> e
    return j << e, j, e


@njit(cache=True, fastmath=False, inline="always")
def _block_fields(word, j, e, reject):
    """``(H, low, valid)`` from a proposal's first word: ``H`` is 8 when bits 1-8
    are all 0 (then :func:`_more_zeros` adds to it); ``valid`` is False when
    Lemire's uniform below ``j`` rejects."""
    h = np.int64(trailing_zeros((word >> np.uint64(1)) & np.uint64(0xFF) | np.uint64(0x100)))
    x = ((word >> np.uint64(9)) & np.uint64(0xFFFF)) * np.uint64(j)
    low = np.int64(((x >> np.uint64(16)) << np.uint64(e))
                   | ((word >> np.uint64(25)) & ((np.uint64(1) << np.uint64(e)) - np.uint64(1))))
    return h, low, (x & np.uint64(0xFFFF)) >= np.uint64(reject)


@njit(cache=True, fastmath=False)
def _more_zeros(state):
    """Trailing zeros of the keystream from the next word on (``H``'s tail past 8)."""
    h = np.int64(0)
    w = next_u64(state)
    while w == np.uint64(0):
        h += np.int64(64)
        if h > 2 ** 20:                  # probability 2^(−2²⁰)
            raise OverflowError("exact sampler: draw beyond the int64 range")
        w = next_u64(state)
    return h + np.int64(trailing_zeros(w))


@njit(cache=True, fastmath=False, inline="always")
def _block_exponent(m, h, low, inv_sigma, sigma_over_t, gap):
    """``γ``, the float of ``γ* = (m − σ²/t)²/(2σ²) + low/t + h·(L/t − ln 2)``, and
    ``eg``, a bound of ``|γ − γ*|`` (``gap`` = ``fl(fl(L/t) − fl(ln 2))``, within
    ``2⁻⁵¹·⁸`` of ``L/t − ln 2``: the subtraction is exact, by Sterbenz)."""
    v = m * inv_sigma - sigma_over_t
    extra = low * inv_sigma + h * gap
    gamma = 0.5 * v * v + extra
    # t = σ, so σ/t = 1 exactly and inv_sigma = (1/σ)(1 + ε), |ε| ≤ 2⁻⁵³:
    # |v − v*| ≤ ev = (m/σ + 1 + |v|)·2⁻⁵¹; |v²/2 − v*²/2| ≤ ev(|v| + ev/2) + 2⁻⁵³γ;
    # low/t errs by 2.01·2⁻⁵³ relative, h·gap by h·2⁻⁵¹, the two sums by 2⁻⁵³ each:
    # |γ − γ*| ≤ eg = ev(|v| + 1) + 2⁻⁵⁰(γ + extra + h).
    ev = (m * inv_sigma + 1.0 + abs(v)) * 2.0 ** -51
    return gamma, ev * (abs(v) + 1.0) + (gamma + extra + h) * 2.0 ** -50


@njit(cache=True, fastmath=False, inline="always")
def _block_decision(a, ulp, gamma, eg, theta, widen, e_theta=2.0 ** -42):
    """Whether ``U < exp(−γ*)`` for ``U ∈ [a, a + ulp)`` (``a`` a multiple of
    ``ulp ≥ 2⁻⁵³``), given ``γ``, ``eg`` (:func:`_block_exponent`) and
    ``theta = _exp_neg(min(γ, 60))`` (``e_theta = 2⁻⁴²``), or
    ``theta = _exp_neg_short(min(γ, 60))`` (``e_theta = 2⁻²⁹``): 1 or 0, or −1
    if the floats cannot tell."""
    # Where γ ≤ 60, eg < 2⁻⁴⁰ (|v| ≤ 11, m/σ ≤ 12), and with the polynomial's
    # relative error p (2⁻⁴⁵·⁵ or 2⁻³¹·⁶, so p + 2⁻⁵⁰ ≤ e_theta/4):
    # e^{−γ*}/θ is within 1 ± (1.1·eg + p + 2⁻⁵⁰) ⊂ 1 ± δ/2; the two roundings of
    # θ(1 ∓ δ) are 2⁻⁵² more (within the slack e_theta/4). Beyond γ = 60:
    # γ* ≥ 59 and e^{−γ*} < 2⁻⁸⁵ ≤ a unless a = 0.
    delta = widen * (e_theta + 3.0 * eg)
    far = gamma > _FAR
    below = (a + ulp <= theta * (1.0 - delta)) & (not far)
    above = ((a >= theta * (1.0 + delta)) & (not far)) | (far & (a > 0.0))
    return 2 * np.int64(below) + np.int64(above) - 1


@njit(cache=True, fastmath=False)
def _block_exact_path(state, prefix, bits, m, sigma, t, low, h, steps):
    with objmode(accept="int64"):
        accept = int(_exact_accept(state, prefix, m, sigma, t, low, h, steps, bits))
    return accept


@njit(cache=True, fastmath=False)
def _block_settle(state, prefix, bits, m, h, low, sigma, t, inv_sigma, sigma_over_t, steps,
                  gap, widen):
    """The acceptance of a block proposal that ``U``'s ``bits``-bit prefix left
    undecided (1 or 0).

    ``U``'s expansion goes on with the top ``53 − bits`` bits of the next
    keystream word (fresh uniform bits, as the exact path's are), and the floats
    decide again on the 53-bit prefix; the exact path runs only if that is
    undecided too (probability about ``2⁻⁴¹`` instead of ``2^{−bits}``: the
    prefix has 23 bits at ``s = 2·10⁷``, and the exact path costs milliseconds).
    Under the test hook (``widen > 1``) the exact path takes the short prefix as
    it is, and reads what the fast path reads.
    """
    if widen == 1.0 and bits < 53:
        extra = 53 - bits
        prefix = (prefix << extra) | np.int64(next_u64(state) >> np.uint64(64 - extra))
        bits = 53
        gamma, eg = _block_exponent(np.float64(m), np.float64(h), np.float64(low), inv_sigma,
                                    sigma_over_t, gap)
        accept = _block_decision(np.float64(prefix) * _ULP53, _ULP53, gamma, eg,
                                 _exp_neg(min(gamma, _FAR)), widen)
        if accept >= 0:
            return accept
    return _block_exact_path(state, prefix, bits, m, sigma, t, low, h, steps)


@njit(cache=True, fastmath=False)
def _gaussian_constants(sigma):
    if not (sigma >= MIN_SCALE and sigma <= MAX_SCALE):
        raise ValueError("discrete_gaussian: sigma must be in [2**-10, 2**40]")
    # the proposal's scale: Canonne et al. take ⌊σ⌋ + 1 (their Laplace sampler needs a
    # rational); any t > 0 gives the same law, and t = σ accepts more (0.70 against
    # 0.54 proposals at σ = 1, 0.76 for both at large σ; the block proposal's
    # acceptance, about 0.55, is largest at t = σ too)
    t = sigma
    return t, _laplace_constant(t), 1.0 / sigma, sigma / t


@njit(cache=True, fastmath=False, inline="always")
def _block_draw(state, sigma, t, inv_sigma, sigma_over_t, steps, j, e, reject, gap, widen):
    """One discrete Gaussian draw by the block proposal, one proposal at a time."""
    bits = 39 - e
    while True:
        word = next_u64(state)
        prefix = np.int64(word >> np.uint64(25 + e))
        h, low, valid = _block_fields(word, j, e, reject)
        if h == 8:
            h += _more_zeros(state)
        negative = word & np.uint64(1)
        m = steps * h + low
        if not valid or (negative and m == 0):
            continue
        gamma, eg = _block_exponent(np.float64(m), np.float64(h), np.float64(low), inv_sigma,
                                    sigma_over_t, gap)
        accept = _block_decision(np.float64(prefix) * _POW2[bits], _POW2[bits], gamma, eg,
                                 _exp_neg(min(gamma, _FAR)), widen)
        if accept < 0:
            accept = _block_settle(state, prefix, bits, m, h, low, sigma, t, inv_sigma,
                                   sigma_over_t, steps, gap, widen)
        if accept == 1:
            return -m if negative else m


@njit(cache=True, fastmath=False, inline="always")
def _laplace_proposal_draw(state, sigma, t, c, inv_sigma, sigma_over_t, widen):
    """One discrete Gaussian draw by the discrete Laplace proposal, one proposal at a time."""
    while True:
        word = next_u64(state)
        accept_prefix = _prefix(next_u64(state))
        prefix = _prefix(word)
        m = _laplace_magnitude(prefix, np.log(np.float64(prefix) * _ULP53), t, c, widen)
        if m < 0:
            m = _laplace_exact_path(state, prefix, t)
        v, gamma = _acceptance_exponent(m, inv_sigma, sigma_over_t)
        accept = _accept_decision(accept_prefix, m, v, gamma, np.exp(-min(gamma, 745.0)),
                                  inv_sigma, widen)
        if accept < 0:
            accept = _accept_exact_path(state, accept_prefix, m, sigma, t)
        if accept == 1:
            return -m if word & np.uint64(1) else m


@njit(cache=True, fastmath=False)
def fill_discrete_gaussian(state, sigma, out):
    """Fill ``out`` (int64[:]) with i.i.d. :func:`discrete_gaussian` draws.

    Proposals are made in batches; the accepted ones fill ``out`` in order,
    and those left over when ``out`` is full are dropped (the stopping rule
    depends only on their number, so the law is intact). Below
    :data:`BLOCK_SCALE`, two keystream words per proposal (the discrete
    Laplace's, the acceptance's), about 1.3 proposals per draw; from it on,
    the block proposal, one word per proposal, about 1.85 proposals per draw.
    Fewer than ``_SMALL`` draws are made one at a time.
    """
    _fill_gaussian(state, sigma, out, sigma >= BLOCK_SCALE)


@njit(cache=True, fastmath=False)
def _fill_gaussian(state, sigma, out, blocks):
    """:func:`fill_discrete_gaussian` with the proposal chosen: the block
    proposal (``blocks``) or the discrete Laplace's."""
    if blocks:
        _fill_gaussian_blocks(state, sigma, out)
    else:
        _fill_gaussian_laplace(state, sigma, out)


@njit(cache=True, fastmath=False)
def _fill_gaussian_laplace(state, sigma, out):
    t, c, inv_sigma, sigma_over_t = _gaussian_constants(sigma)
    widen = _widen(state)
    if out.size < _SMALL:
        for i in range(out.size):
            out[i] = _laplace_proposal_draw(state, sigma, t, c, inv_sigma, sigma_over_t, widen)
        return
    batch = min(_BATCH, out.size + out.size // 2 + 1)
    words = np.empty(2 * batch, dtype=np.uint64)
    floats = np.empty((4, batch))
    lg, v, gamma, theta = floats[0], floats[1], floats[2], floats[3]
    ints = np.empty((3, batch), dtype=np.int64)
    mag, decision, draws = ints[0], ints[1], ints[2]
    i = 0
    while i < out.size:
        left = out.size - i
        k = min(batch, left + left // 2 + 1)
        fill_u64(state, words[:2 * k])
        # loops without branches or calls vectorise, libm's calls get loops of their
        # own, and the rare exact paths are taken in loops apart
        for j in range(k):
            lg[j] = np.log(np.float64(_prefix(words[2 * j])) * _ULP53)
        for j in range(k):
            mag[j] = _laplace_magnitude(_prefix(words[2 * j]), lg[j], t, c, widen)
        for j in range(k):
            if mag[j] < 0:
                mag[j] = _laplace_exact_path(state, _prefix(words[2 * j]), t)
        for j in range(k):
            v[j], gamma[j] = _acceptance_exponent(mag[j], inv_sigma, sigma_over_t)
        for j in range(k):
            theta[j] = np.exp(-min(gamma[j], 745.0))
        for j in range(k):
            decision[j] = _accept_decision(_prefix(words[2 * j + 1]), mag[j], v[j], gamma[j],
                                           theta[j], inv_sigma, widen)
        for j in range(k):
            if decision[j] < 0:
                decision[j] = _accept_exact_path(state, _prefix(words[2 * j + 1]), mag[j],
                                                 sigma, t)
        # the accepted proposals, in order
        n_accepted = 0
        for j in range(k):
            draws[n_accepted] = -mag[j] if words[2 * j] & np.uint64(1) else mag[j]
            n_accepted += decision[j]
        n_accepted = min(n_accepted, left)
        out[i:i + n_accepted] = draws[:n_accepted]
        i += n_accepted


@njit(cache=True, fastmath=False)
def _block_constants(t, inv_sigma):
    steps, j, e = _block_length(t)
    reject = (1 << 16) % j                # Lemire: 2¹⁶ mod j
    gap = np.float64(steps) * (1.0 / t) - _LN2_F
    return steps, j, e, reject, gap


# Proposals per batch of the block proposal.
_BLOCK_BATCH = 256
# The short exponential's share of the first decision's guard band (_block_decision).
_E_SHORT = 2.0 ** -29
# A bound of _block_exponent's eg wherever γ ≤ 60 (_block_first_decision).
_EG_MAX = 2.0 ** -40


@njit(cache=True, fastmath=False, inline="always")
def _block_first_decision(h, low, prefix, fsteps, inv_sigma, sigma_over_t, gap, ulp, widen):
    """A batch's decision for the proposal ``(H, low)`` on ``U``'s short prefix
    (``ulp`` its unit): 1 or 0, or −1 for :func:`_block_settle`; and ``m = L·H + low``
    as a float (exact: ``m < 2⁵³``, as ``H ≤ 8`` in the batch loop and ``L < 2⁴¹``).

    Integers below 2⁵² become floats by their bits (``x | _MAGIC`` is
    ``2⁵² + x``), which vectorises where int64's conversion does not (no
    AVX-512). The exponential is the short polynomial (the prefix has ``39 − e``
    bits, or the settle reads on), and ``eg`` its constant bound: where γ ≤ 60
    (the only case where :func:`_block_decision` reads it), ``v²/2 ≤ γ`` gives
    ``|v| ≤ 11`` and ``m/σ ≤ 12``, so ``H ≤ 12σ/L ≤ 18`` and ``extra ≤ γ``:
    ``eg ≤ 24·12·2⁻⁵¹ + 2⁻⁵⁰(60 + 60 + 18) < 2⁻⁴¹·⁹``.
    """
    hf = _as_float(np.uint64(h) | _MAGIC) - _TWO52
    lf = _as_float(np.uint64(low) | _MAGIC) - _TWO52
    pf = _as_float(prefix | _MAGIC) - _TWO52
    mf = hf * fsteps + lf
    gamma, _ = _block_exponent(mf, hf, lf, inv_sigma, sigma_over_t, gap)
    return _block_decision(pf * ulp, ulp, gamma, _EG_MAX, _exp_neg_short(min(gamma, _FAR)),
                           widen, _E_SHORT), mf


@njit(cache=True, fastmath=False)
def _first_decisions(words, decision, mags, k, j_max, e, reject, shift, fsteps, inv_sigma,
                     sigma_over_t, gap, ulp, widen):
    """``decision[j]``, the first decision of proposal ``j`` (word ``j``), for
    ``j < k`` (0 for a proposal rejected outright), and ``mags[j]``, its signed
    ``±m`` as a float.

    One loop without branches or calls, in a function of its own: so it
    vectorises (it did not inside the fill, with more arrays to write). The
    rare cases get loops apart.
    """
    for j in range(k):
        w = words[j]
        h, lo, ok = _block_fields(w, j_max, e, reject)
        # the block proposal proposes −0 too: rejected
        ok = ok & ((h != 0) | (lo != 0) | ((w & np.uint64(1)) == 0))
        d, mf = _block_first_decision(h, lo, w >> shift, fsteps, inv_sigma, sigma_over_t, gap,
                                      ulp, widen)
        decision[j] = d & -np.int64(ok)      # d, or 0 if not ok (a select)
        # the sign bit moved onto mf's (a select too)
        mags[j] = _as_float(_as_bits(mf) | (w << np.uint64(63)))


@njit(cache=True, fastmath=False)
def _fill_gaussian_blocks(state, sigma, out):
    t, c, inv_sigma, sigma_over_t = _gaussian_constants(sigma)
    steps, j_max, e, reject, gap = _block_constants(t, inv_sigma)
    widen = _widen(state)
    if out.size < _SMALL:
        for i in range(out.size):
            out[i] = _block_draw(state, sigma, t, inv_sigma, sigma_over_t, steps, j_max, e,
                                 reject, gap, widen)
        return
    bits = 39 - e                       # U's prefix: the word's top 39 − e bits
    shift = np.uint64(64 - bits)
    ulp = _POW2[bits]
    fsteps = np.float64(steps)
    batch = min(_BLOCK_BATCH, 2 * out.size + 4)
    words = np.empty(batch, dtype=np.uint64)
    ints = np.empty((3, batch), dtype=np.int64)
    decision, high, draws = ints[0], ints[1], ints[2]
    mags = np.empty(batch)
    i = 0
    while i < out.size:
        left = out.size - i
        k = min(batch, 2 * left + 4)
        fill_u64(state, words[:k])
        _first_decisions(words, decision, mags, k, j_max, e, reject, shift, fsteps, inv_sigma,
                         sigma_over_t, gap, ulp, widen)
        for j in range(k):                  # H past 8 (probability 2⁻⁸): H in `high`
            w = words[j]
            if (w >> np.uint64(1)) & np.uint64(0xFF) == np.uint64(0):
                h, lo, ok = _block_fields(w, j_max, e, reject)
                high[j] = h + _more_zeros(state)
                mags[j] = np.nan            # m = L·H + low, from `high`
                if ok:
                    decision[j] = _block_first_decision(
                        high[j], lo, words[j] >> shift, fsteps, inv_sigma,
                        sigma_over_t, gap, ulp, widen)[0]
        for j in range(k):
            if decision[j] < 0:
                w = words[j]
                h, lo, _ = _block_fields(w, j_max, e, reject)
                if h == 8:
                    h = high[j]
                decision[j] = _block_settle(state, np.int64(words[j] >> shift),
                                            bits, steps * h + lo, h, lo, sigma, t, inv_sigma,
                                            sigma_over_t, steps, gap, widen)
        # the accepted proposals, in order
        n_accepted = 0
        for j in range(k):
            x = mags[j]
            if x == x:
                draws[n_accepted] = np.int64(x)
            else:
                w = words[j]
                m = steps * high[j] + _block_fields(w, j_max, e, reject)[1]
                draws[n_accepted] = -m if w & np.uint64(1) else m
            n_accepted += decision[j]
        n_accepted = min(n_accepted, left)
        out[i:i + n_accepted] = draws[:n_accepted]
        i += n_accepted


@njit(cache=True, fastmath=False)
def discrete_gaussian(state, sigma):
    """A discrete Gaussian draw: ``P(k) ∝ exp(−k²/(2σ²))`` on the integers.

    ``σ`` in ``[2⁻¹⁰, 2⁴⁰]`` (Canonne, Kamath, Steinke 2020, Algorithm 3).
    For many draws, :func:`fill_discrete_gaussian` is faster.
    """
    t, c, inv_sigma, sigma_over_t = _gaussian_constants(sigma)
    widen = _widen(state)
    if sigma >= BLOCK_SCALE:
        steps, j, e, reject, gap = _block_constants(t, inv_sigma)
        return _block_draw(state, sigma, t, inv_sigma, sigma_over_t, steps, j, e, reject, gap,
                           widen)
    return _laplace_proposal_draw(state, sigma, t, c, inv_sigma, sigma_over_t, widen)


__all__ = ["MAX_SCALE", "MIN_P", "MIN_SCALE", "bernoulli", "discrete_gaussian",
           "discrete_laplace", "fill_discrete_gaussian", "fill_discrete_laplace", "geometric",
           "uniform_below"]

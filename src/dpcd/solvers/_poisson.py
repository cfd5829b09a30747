"""Poisson-subsampled batches of DP-SCD (dual and seqDP-SCD share them).

Each iteration includes every record independently with probability
``q = L/N``: what ``dpcd.privacy.calibrate_dp_scd`` accounts for (the
Poisson-subsampled Gaussian, RDP or PLD).  The (iteration, record) trials
are laid end to end, trial ``t N + i`` being record i at iteration t, and the
gaps between selected trials are i.i.d. Geometric(q): ``g = ceil(E / λ)``
with ``E`` standard exponential (numpy's Generator) and ``λ = −log(1 − q)``,
so ``P(g > k) = e^{−kλ} = (1 − q)^k`` and the selected set is exactly that of
independent Bernoulli(q) trials.  One draw per *selected* record, O(|B|) per
iteration instead of one uniform per record, and the batch comes out sorted,
so its rows are read in increasing address order.

:func:`poisson_batches` runs the same helpers from the seed as
:func:`dpcd.solvers.dp_scd.dp_scd` does, so that the tests can check the
batches the kernels draw (inclusion frequencies, batch sizes, independence).
"""
import numpy as np
from numba import njit

from dpcd.solvers.base import spawn_generators


@njit(inline="always")
def geometric_rate(q):
    """``(full, λ)``: whether every record is taken (``q >= 1``) and the rate
    ``λ = −log(1 − q)`` of the gaps."""
    full = q >= 1.0
    return full, 0.0 if full else -np.log1p(-q)


@njit(inline="always")
def first_trial(rng, full, lam):
    """Global index of the first selected trial (gap from trial −1)."""
    return 0 if full else int(np.ceil(rng.standard_exponential() / lam)) - 1


@njit(inline="always")
def poisson_batch(rng, full, lam, pos, t, n, idx):
    """Records of iteration ``t``: ``idx[:b]`` (increasing), given the next
    selected trial ``pos``; returns ``(b, next pos)``."""
    first = t * n
    b = 0
    while pos < first + n:
        idx[b] = pos - first
        b += 1
        pos += 1 if full else int(np.ceil(rng.standard_exponential() / lam))
    return b, pos


@njit(cache=True)
def _batches(rng, q, n, n_iter, idx, sizes):
    full, lam = geometric_rate(q)
    pos = first_trial(rng, full, lam) if n_iter > 0 else 0
    total = 0
    for t in range(n_iter):
        b, pos = poisson_batch(rng, full, lam, pos, t, n, idx[total:])
        sizes[t] = b
        total += b
    return total


def poisson_batches(seed, n_samples, batch_size, n_iter):
    """The batches a dual or seqDP-SCD run with ``sampling="poisson"`` and this
    seed draws (its sampling stream: the first of the seed's two spawned
    generators).  For tests: memory ``n_iter × n_samples`` integers.

    Returns
    -------
    sizes : int array, shape (n_iter,)
    records : list of int arrays
        The records of each iteration, increasing.
    """
    rng = spawn_generators(seed, 2)[0]
    sizes = np.zeros(n_iter, dtype=np.int64)
    idx = np.empty(n_iter * n_samples, dtype=np.int64)  # room for every trial
    total = _batches(rng, batch_size / n_samples, n_samples, n_iter, idx, sizes)
    return sizes, np.split(idx[:total], np.cumsum(sizes)[:-1])

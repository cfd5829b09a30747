"""DP-SGD runs that share a kernel call but none of their randomness.

A sweep runs many DP-SGD configurations of one replicate seed. Each run's
batches and noise come from its own streams (two keys from its own
``SeedSequence``, :func:`dpcd.streams.run_entropy`), so runs that differ
only in sigma are independent releases. They still share a kernel call (one
compilation check, one objective at w = 0), but no draw: each run pays for its
own batches and normals, where the common-random-numbers kernels of
:mod:`dpcd.solvers.dp_sgd` shared one draw among all K runs
(``bench/bench_dp_sgd_many.py``, columns "independent" and "together").

Both streams are counter-based SplitMix64 (:mod:`dpcd.solvers._normal`):

* sampling: the gaps between selected (step, sample) trials are i.i.d.
  Geometric(q), gap ``g = ceil(E / lam)`` with ``E = -log U``, ``lam =
  -log(1 - q)`` and ``U`` uniform on the open grid ``(m + 1/2) 2**-53``
  from output ``c`` of the sampling key (``P(g > k) = exp(-k lam) =
  (1 - q)^k``; ``E`` is cut at 36.7, mass 2**-53 left out per draw). The
  log is the normals' polynomial (fdlibm's, :mod:`dpcd.solvers._normal`),
  so that a run's next :data:`GAPS` gaps are drawn in one vectorised loop
  (a libm call per gap cost about 10 % of a step at 8 features, same-run
  A/B); it agrees with libm's to an ulp or so, so ``ceil`` can only differ
  where ``E / lam`` is within an ulp or two of an integer, a chance of about
  ``(E / lam) 2**-52`` a draw (1e-11 at n = 20 000; none in the test's
  400 000 draws);
* noise: the normals ``t p, ..., (t + 1) p - 1`` of the noise key at step ``t``.

Run k's result is the same bits whichever runs share its call and whichever
kernel runs it (tested). Two kernels, as for common random numbers: runs
outer (each run's iterate contiguous: a run alone, or wide data) and runs
inner (iterates stored (n_features, K); a step's noise, prox and gradient-sum
clearing vectorise across runs, and the K runs' dot products, each a short
dependent chain, overlap). bench/bench_dp_sgd_many.py, column "independent".

The runs-outer kernel (wide rows, large data: the
YearPredictionMSD shape) keeps each run's next :data:`AHEAD` selected trials
in a ring and prefetches their rows (and, on large data, labels, norms and
inclusion counts) well before use; the runs-inner one prefetches the next
row only (short rows, small data, where more hints cost more than they
save). Either way the gaps are drawn in order, one per trial, from a
counter-based stream: a run for e passes takes exactly the first e passes'
batches and noise of a longer one (``tests/test_prefix_runs.py``).
bench/bench_msd_shape.py times it on that shape against a floor.
"""
import time

import numpy as np
from numba import njit, uint64

from dpcd.solvers._normal import _minus_2_log, _pair, _splitmix, take_normals
from dpcd.solvers._prefetch import prefetch, prefetch_row
from dpcd.solvers._sgd_steps import (_add_clipped_gradient, _clipped_derivative, _objectives,
                                     _prox_form, _prox_step)

# normals each run's buffer holds (even): at 8 features one refill per 16 steps
BUFFER = 128
# runs per call: few enough that their iterates, gradients and noise buffers
# stay in cache
RUNS_PER_CALL = 64


def takes_inner(n_runs, n_features):
    """Whether a call of ``n_runs`` runs takes the runs-inner kernel (same bits
    either way): from 8 runs on data of at most 64 features. Outer/inner CPU
    time, logistic, n p = 200 000, one pass: 1.09 at 8 runs and 1.42 at 16 on
    8 features, 1.21 on 32 features, 1.18 on 64 and 0.96 on 128 (50 runs); 0.7
    at 4 runs on 8 features."""
    return n_runs >= 8 and n_features <= 64


# gaps each run draws at a time (one vectorised loop)
GAPS = 64


@njit(inline="always")
def gap(key, counter, lam):
    """Geometric gap number ``counter`` of the sampling stream ``key`` (a float)."""
    bits = _splitmix(key, uint64(counter)) >> uint64(11)
    u = (float(bits) + 0.5) * 2.0**-53
    return np.ceil(0.5 * _minus_2_log(u) / lam)


@njit(cache=True, error_model="numpy")
def fill_gaps(key, first, lam, out):
    """``out[j]`` = gap ``first + j`` of the sampling stream ``key``."""
    for j in range(out.shape[0]):
        out[j] = gap(key, first + j, lam)


@njit(inline="always")
def _next_gap(keys, lam, bufs, starts, k, counter):
    """Gap ``counter`` of run k's sampling stream, from its buffer ``bufs[k]``
    (gaps ``starts[k], ...``; counters only grow, one at a time), refilled
    when ``counter`` runs past it."""
    if counter - starts[k] >= bufs.shape[1]:
        starts[k] = counter
        fill_gaps(keys[k], counter, lam, bufs[k])
    return int(bufs[k, counter - starts[k]])


# selected trials each run draws ahead of use (a power of 2): their rows are
# prefetched while the current ones are processed
AHEAD = 8


@njit(inline="always")
def _first_trials(sample_keys, q, n_runs):
    """The runs-outer kernel's sampling state: whether every record is taken, the
    geometric rate, each run's ring of its next :data:`AHEAD` selected trials
    (global indices; ``heads[k]`` the current one), the gaps drawn so far per
    run, and the gap buffers with their first counters. The gaps are drawn in
    order, one per trial: a run's trials do not depend on how far ahead."""
    full = q >= 1.0
    lam = 0.0 if full else -np.log1p(-q)
    ring = np.empty((n_runs, AHEAD), dtype=np.int64)
    heads = np.zeros(n_runs, dtype=np.int64)
    drawn = np.full(n_runs, AHEAD, dtype=np.int64)
    gaps, gap_starts = np.empty((n_runs, GAPS)), np.full(n_runs, -GAPS, dtype=np.int64)
    for k in range(n_runs):
        last = -1  # trial 0 is gap 0 - 1, trial m + 1 is trial m + gap m + 1
        for m in range(AHEAD):
            last += 1 if full else _next_gap(sample_keys, lam, gaps, gap_starts, k, m)
            ring[k, m] = last
    return full, lam, ring, heads, drawn, gaps, gap_starts


@njit(inline="always")
def _first_trials_plain(sample_keys, q, n_runs):
    """:func:`_first_trials` without the ring: each run's next selected trial
    (``nxt``), its gaps drawn one at a time as the trials are taken."""
    full = q >= 1.0
    lam = 0.0 if full else -np.log1p(-q)
    nxt = np.empty(n_runs, dtype=np.int64)
    drawn = np.ones(n_runs, dtype=np.int64)
    gaps, gap_starts = np.empty((n_runs, GAPS)), np.full(n_runs, -GAPS, dtype=np.int64)
    for k in range(n_runs):
        nxt[k] = 0 if full else _next_gap(sample_keys, lam, gaps, gap_starts, k, 0) - 1
    return full, lam, nxt, drawn, gaps, gap_starts


@njit(inline="always")
def _next_row(X, pos, first, stop, n_samples):
    """Prefetch the row of trial ``pos`` if it is at the step after the current
    one (``first .. stop - 1``); later ones wait (no integer division). The
    runs-inner kernel's: its rows are short and its data small, and there the
    prefetches of :func:`_prefetch_trial` cost more than they save (at 8
    features, 16 runs, batch 1: 1.5x the time per step, same-process A/B)."""
    if pos < stop + n_samples:
        prefetch_row(X, pos - stop if pos >= stop else pos - first)


@njit(inline="always")
def _advance(full, lam, sample_keys, gaps, gap_starts, ring, heads, drawn, k):
    """Run k's next selected trial; its ring slot is refilled with the trial
    :data:`AHEAD` later, which is returned too (to prefetch its row)."""
    h = heads[k]
    newest = ring[k, (h - 1) & (AHEAD - 1)] + (
        1 if full else _next_gap(sample_keys, lam, gaps, gap_starts, k, drawn[k]))
    drawn[k] += 1
    ring[k, h] = newest
    h = (h + 1) & (AHEAD - 1)
    heads[k] = h
    return ring[k, h], newest


# from this many records, the runs-outer kernel prefetches a trial's label,
# norm and inclusion count (8 bytes each per record) with its row: their
# arrays outgrow the L2 cache. 347 786 x 90, 8 runs, CPU ns per entry-pass
# without / with them (same-process A/B, kernel only): 4.47 / 2.48 at batch
# 50, 3.88 / 2.07 at 2000; no change on 20 000 x 50 (below this size)
FAR = 1 << 17


@njit(inline="always")
def _prefetch_trial(X, y, row_norms, inclusions, pos, first, stop, n_samples):
    """Prefetch what trial ``pos`` reads (its row; its label, norm and
    inclusion count too from :data:`FAR` records) if it is in the current step
    (``first .. stop - 1``) or the next; later ones wait (no integer division)."""
    if pos < stop + n_samples:
        i = pos - stop if pos >= stop else pos - first
        prefetch_row(X, i)
        if y.shape[0] >= FAR:
            prefetch(y, i)
            prefetch(row_norms, i)
            prefetch(inclusions, i)


@njit(inline="always")
def _prefetch_step(X, y, row_norms, inclusions, ring, k, first, stop):
    """Prefetch run k's drawn trials of the current step: the rows its
    previous step prefetched may have left the cache while the other runs
    took their turns."""
    for m in range(AHEAD):
        pos = ring[k, m]
        if first <= pos < stop:
            _prefetch_trial(X, y, row_norms, inclusions, pos, first, stop, 0)


@njit(cache=True, error_model="numpy")
def _kernel(sparse, X, data, indices, indptr, y, W, datafit_code, penalty_code,
            penalty_params, steps, clips, noise_scales, batch_size, row_norms, q,
            n_steps, sample_keys, noise_keys, noise_bufs, grad, noise, inclusions,
            checkpoints, obj):
    """:func:`_outer_steps` compiled once for dense and once for sparse X: a
    ``sparse`` known at compile time takes its branches out of the loops over
    a batch (347 786 x 90 dense, one run: 363 -> 251 ns per sampled row at
    b = 2000, CPU time, same-process A/B; compilation of both kernels 9 -> 21
    CPU s, once per machine: they are cached)."""
    if sparse:
        _outer_steps(True, X, data, indices, indptr, y, W, datafit_code, penalty_code,
                     penalty_params, steps, clips, noise_scales, batch_size, row_norms, q,
                     n_steps, sample_keys, noise_keys, noise_bufs, grad, noise, inclusions,
                     checkpoints, obj)
    else:
        _outer_steps(False, X, data, indices, indptr, y, W, datafit_code, penalty_code,
                     penalty_params, steps, clips, noise_scales, batch_size, row_norms, q,
                     n_steps, sample_keys, noise_keys, noise_bufs, grad, noise, inclusions,
                     checkpoints, obj)


@njit(inline="always", error_model="numpy")
def _outer_steps(sparse, X, data, indices, indptr, y, W, datafit_code, penalty_code,
                 penalty_params, steps, clips, noise_scales, batch_size, row_norms, q,
                 n_steps, sample_keys, noise_keys, noise_bufs, grad, noise, inclusions,
                 checkpoints, obj):
    """Run DP-SGD on the K rows of ``W`` in place, run k with its own streams.

    Parameters as :func:`dpcd.solvers.dp_sgd._dp_sgd_kernel`, except:
    ``sample_keys``, ``noise_keys`` (uint64, shape (K,)) are the keys of each
    run's sampling and noise streams, ``noise_bufs`` (K, even) their buffers;
    ``grad`` (K, n_features) is zero on entry and on exit;
    ``inclusions`` counts selections summed over the call's runs.
    """
    n_samples = y.shape[0]
    n_runs, n_features = W.shape
    full, lam, ring, heads, drawn, gaps, gap_starts = _first_trials(sample_keys, q, n_runs)
    start = np.full(n_runs, -noise_bufs.shape[1], dtype=np.int64)  # buffers empty
    c = 0
    active = n_runs
    total = n_steps[0] if active > 0 else 0
    for t in range(total):
        while n_steps[active - 1] <= t:
            active -= 1
        first = t * n_samples
        stop = first + n_samples
        for k in range(active):
            w, g, scale = W[k], grad[k], noise_scales[k]
            if not sparse:
                _prefetch_step(X, y, row_norms, inclusions, ring, k, first, stop)
            start[k] = take_normals(noise_keys[k], noise_bufs[k], start[k],
                                    t * n_features, noise)
            pos = ring[k, heads[k]]
            # sum of clipped per-sample gradients over the run's batch
            while pos < stop:
                i = pos - first
                inclusions[i] += 1
                _add_clipped_gradient(sparse, X, data, indices, indptr, y, i, w, g,
                                      datafit_code, row_norms[i], clips[k])
                pos, newest = _advance(full, lam, sample_keys, gaps, gap_starts, ring, heads,
                                       drawn, k)
                if not sparse:
                    _prefetch_trial(X, y, row_norms, inclusions, newest, first, stop,
                                    n_samples)
            # the sum plus N(0, sigma^2 I), then the prox step, in one pass
            # that also clears the sum for the next step
            shrink, divide = _prox_form(penalty_code, penalty_params, steps[k])
            plain = batch_size == 1.0 and divide == 1.0
            for j in range(n_features):
                v = g[j] + scale * noise[j]
                g[j] = 0.0
                w[j] = _prox_step(w[j], v, steps[k], shrink, divide, batch_size, plain)
        while c < checkpoints.shape[0] and checkpoints[c] == t + 1:
            _objectives(sparse, X, data, indices, indptr, y, W, active, datafit_code,
                        penalty_code, penalty_params, obj[:, 1 + c])
            c += 1


# FMA contraction as in dpcd.solvers._normal.fill_normals: the same values
# (not inlined, so that the flag stays with the draws and off the updates)
@njit(cache=True, error_model="numpy", fastmath={"contract"})
def _step_noise(keys, active, first, N):
    """``N[j, k]`` = normal ``first + j`` of the stream ``keys[k]`` for the
    first ``active`` runs: pair by pair, each pair one loop across runs."""
    n = N.shape[0]
    for m in range(first >> 1, ((first + n - 1) >> 1) + 1):
        j = 2 * m - first  # normals 2m and 2m + 1 go to rows j and j + 1
        if j >= 0 and j + 1 < n:
            lo, hi = N[j], N[j + 1]
            for k in range(active):
                lo[k], hi[k] = _pair(keys[k], m)
        elif j >= 0:
            lo = N[j]
            for k in range(active):
                lo[k] = _pair(keys[k], m)[0]
        else:
            hi = N[j + 1]
            for k in range(active):
                hi[k] = _pair(keys[k], m)[1]


@njit(inline="always", error_model="numpy")
def _dot_column(X, i, WT, k):
    """``X[i] . WT[:, k]`` in the order of :func:`dpcd.solvers._sgd_steps._dot_row`
    (four partial sums j mod 4): the same bits as the run's contiguous iterate."""
    n_features = WT.shape[0]
    a0 = a1 = a2 = a3 = 0.0
    stop = n_features - n_features % 4
    for j in range(0, stop, 4):
        a0 += X[i, j] * WT[j, k]
        a1 += X[i, j + 1] * WT[j + 1, k]
        a2 += X[i, j + 2] * WT[j + 2, k]
        a3 += X[i, j + 3] * WT[j + 3, k]
    for j in range(stop, n_features):
        a0 += X[i, j] * WT[j, k]
    return (a0 + a1) + (a2 + a3)


@njit(cache=True, error_model="numpy")
def _kernel_runs_inner(sparse, X, data, indices, indptr, y, WT, datafit_code, penalty_code,
                       penalty_params, steps, clips, noise_scales, batch_size, row_norms, q,
                       n_steps, sample_keys, noise_keys, G, N, inclusions, checkpoints, obj):
    """:func:`_inner_steps`, compiled once for dense and once for sparse X."""
    if sparse:
        _inner_steps(True, X, data, indices, indptr, y, WT, datafit_code, penalty_code,
                     penalty_params, steps, clips, noise_scales, batch_size, row_norms, q,
                     n_steps, sample_keys, noise_keys, G, N, inclusions, checkpoints, obj)
    else:
        _inner_steps(False, X, data, indices, indptr, y, WT, datafit_code, penalty_code,
                     penalty_params, steps, clips, noise_scales, batch_size, row_norms, q,
                     n_steps, sample_keys, noise_keys, G, N, inclusions, checkpoints, obj)


@njit(inline="always", error_model="numpy")
def _inner_steps(sparse, X, data, indices, indptr, y, WT, datafit_code, penalty_code,
                 penalty_params, steps, clips, noise_scales, batch_size, row_norms, q,
                 n_steps, sample_keys, noise_keys, G, N, inclusions, checkpoints, obj):
    """:func:`_outer_steps` on transposed iterates ``WT`` (n_features, K), with the
    gradient sums ``G`` (same shape, zero on entry and exit) and a step's
    noise ``N`` (same shape) in that layout too: the same draws and the same
    arithmetic per run (the prox's divisions skipped only where they are by 1)."""
    n_samples = y.shape[0]
    n_features, n_runs = WT.shape
    shrink, divide = np.empty(n_runs), np.empty(n_runs)
    plain = batch_size == 1.0
    for k in range(n_runs):
        shrink[k], divide[k] = _prox_form(penalty_code, penalty_params, steps[k])
        plain = plain and divide[k] == 1.0
    full, lam, nxt, drawn, gaps, gap_starts = _first_trials_plain(sample_keys, q, n_runs)
    c = 0
    active = n_runs
    total = n_steps[0] if active > 0 else 0
    for t in range(total):
        while n_steps[active - 1] <= t:
            active -= 1
        first = t * n_samples
        stop = first + n_samples
        # each run's batch: scalar, but the runs' dependent chains overlap
        for k in range(active):
            pos = nxt[k]
            while pos < stop:
                i = pos - first
                inclusions[i] += 1
                if sparse:
                    pred = 0.0
                    for s in range(indptr[i], indptr[i + 1]):
                        pred += data[s] * WT[indices[s], k]
                else:
                    pred = _dot_column(X, i, WT, k)
                d = _clipped_derivative(datafit_code, y[i], pred, row_norms[i], clips[k])
                if sparse:
                    for s in range(indptr[i], indptr[i + 1]):
                        G[indices[s], k] += d * data[s]
                else:
                    for j in range(n_features):
                        G[j, k] += d * X[i, j]
                pos += 1 if full else _next_gap(sample_keys, lam, gaps, gap_starts, k,
                                                 drawn[k])
                drawn[k] += 1
                if not sparse:
                    _next_row(X, pos, first, stop, n_samples)
            nxt[k] = pos
        # noise, sum and prox across runs (vectorised), clearing the sums
        _step_noise(noise_keys, active, t * n_features, N)
        for j in range(n_features):
            w, g, z = WT[j], G[j], N[j]
            for k in range(active):
                w[k] = _prox_step(w[k], g[k] + noise_scales[k] * z[k], steps[k], shrink[k],
                                  divide[k], batch_size, plain)
                g[k] = 0.0
        while c < checkpoints.shape[0] and checkpoints[c] == t + 1:
            _objectives(sparse, X, data, indices, indptr, y,
                        np.ascontiguousarray(WT[:, :active].T), active, datafit_code,
                        penalty_code, penalty_params, obj[:, 1 + c])
            c += 1


def stream_keys(seed):
    """Sampling and noise keys of a run: ``SeedSequence(seed)`` spawned into two."""
    sample_seq, noise_seq = np.random.SeedSequence(seed).spawn(2)
    return (np.uint64(sample_seq.generate_state(1, np.uint64)[0]),
            np.uint64(noise_seq.generate_state(1, np.uint64)[0]))


def run_independent(design, y, n_features, dcode, pcode, pparams, etas, clips, noise_scales,
                    batch_size, row_norms, q, n_steps, checkpoints, seeds):
    """One kernel call on runs sorted by decreasing ``n_steps``, run k seeded
    by ``seeds[k]`` (the kernel :func:`takes_inner` picks); returns the
    iterates (K, n_features), objectives, inclusion counts (summed over the
    runs) and the kernel's seconds."""
    n_runs = n_steps.shape[0]
    obj = np.full((n_runs, checkpoints.shape[0] + 1), np.nan)
    # every run starts at w = 0: one evaluation serves all
    _objectives(*design, y, np.zeros((1, n_features)), 1, dcode, pcode, pparams, obj[:, 0])
    obj[:, 0] = obj[0, 0]
    keys = np.array([stream_keys(seed) for seed in seeds], dtype=np.uint64).reshape(n_runs, 2)
    sample_keys, noise_keys = keys[:, 0].copy(), keys[:, 1].copy()
    inner = takes_inner(n_runs, n_features)
    shape = (n_features, n_runs) if inner else (n_runs, n_features)
    W = np.zeros(shape)
    args = (*design, y, W, dcode, pcode, pparams, etas, clips, noise_scales, batch_size,
            row_norms, q)
    inclusions = np.zeros(y.shape[0], dtype=np.int64)
    if inner:
        kernel, work = _kernel_runs_inner, (np.zeros(shape), np.empty(shape))
    else:
        kernel = _kernel
        work = (np.empty((n_runs, BUFFER)), np.zeros(shape), np.empty(n_features))
    # compile (or load from cache) before the timer: a zero-step call
    kernel(*args, np.zeros(n_runs, np.int64), sample_keys, noise_keys, *work, inclusions,
           checkpoints, obj)
    # the timer covers the whole algorithm: sampling, noise and updates
    t0 = time.perf_counter()
    kernel(*args, n_steps, sample_keys, noise_keys, *work, inclusions, checkpoints, obj)
    elapsed = time.perf_counter() - t0
    return (W.T if inner else W), obj, inclusions, elapsed

"""DP-SGD runs that share a kernel call but none of their randomness.

A sweep runs many DP-SGD configurations of one replicate seed. Each run's
batches and noise come from its own streams (two keys from its own
``SeedSequence``, :func:`dpcd.sweep.grid.run_entropy`), so runs that differ
only in sigma are independent releases. They still share a kernel call (one
compilation check, one objective at w = 0), but no draw: each run pays for its
own batches and normals, so a run costs about what it costs alone
(``bench/bench_dp_sgd_many.py``, column "independent"), where the
common-random-numbers kernels of :mod:`dpcd.solvers.dp_sgd` shared one draw
among all K runs (3 to 7x less per run on the paper's shapes).

Both streams are counter-based SplitMix64 (:mod:`dpcd.solvers._normal`):

* sampling: the gaps between selected (step, sample) trials are i.i.d.
  Geometric(q), gap ``g = ceil(E / lam)`` with ``E = -log U``, ``lam =
  -log(1 - q)`` and ``U`` uniform on the open grid ``(m + 1/2) 2**-53``
  from output ``c`` of the sampling key (``P(g > k) = exp(-k lam) =
  (1 - q)^k``; ``E`` is cut at 36.7, mass 2**-53 left out per draw);
* noise: the normals ``t p, ..., (t + 1) p - 1`` of the noise key at step ``t``.

Run k's result is the same bits whichever runs share its call (tested).
"""
import numpy as np
from numba import njit, uint64

from dpcd.solvers._normal import _splitmix, take_normals
from dpcd.solvers._prefetch import prefetch_row
from dpcd.solvers.dp_sgd import _clipped_derivative, _objectives, _predict, _prox_update

# normals each run's buffer holds (even): at 8 features one refill per 16 steps
BUFFER = 128
# runs per call: few enough that their iterates, gradients and noise buffers
# stay in cache
RUNS_PER_CALL = 64


@njit(inline="always")
def gap(key, counter, lam):
    """Geometric gap number ``counter`` of the sampling stream ``key``."""
    bits = _splitmix(key, uint64(counter)) >> uint64(11)
    u = (float(bits) + 0.5) * 2.0**-53
    return int(np.ceil(-np.log(u) / lam))


@njit(cache=True, error_model="numpy")
def _kernel(sparse, X, data, indices, indptr, y, W, datafit_code, penalty_code,
            penalty_params, steps, clips, noise_scales, batch_size, row_norms, q,
            n_steps, sample_keys, noise_keys, noise_bufs, grad, noise, inclusions,
            checkpoints, obj):
    """Run DP-SGD on the K rows of ``W`` in place, run k with its own streams.

    Parameters as :func:`dpcd.solvers.dp_sgd._dp_sgd_kernel`, except:
    ``sample_keys``, ``noise_keys`` (uint64, shape (K,)) are the keys of each
    run's sampling and noise streams, ``noise_bufs`` (K, even) their buffers;
    ``inclusions`` counts selections summed over the call's runs.
    """
    n_samples = y.shape[0]
    n_runs, n_features = W.shape
    full = q >= 1.0
    lam = 0.0 if full else -np.log1p(-q)
    nxt = np.empty(n_runs, dtype=np.int64)  # global index of each run's next selected trial
    drawn = np.zeros(n_runs, dtype=np.int64)  # gaps drawn so far, per run
    start = np.full(n_runs, -noise_bufs.shape[1], dtype=np.int64)  # buffers empty
    for k in range(n_runs):
        nxt[k] = 0 if full else gap(sample_keys[k], 0, lam) - 1
        drawn[k] = 1
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
            start[k] = take_normals(noise_keys[k], noise_bufs[k], start[k],
                                    t * n_features, noise)
            for j in range(n_features):
                g[j] = 0.0
            pos = nxt[k]
            # sum of clipped per-sample gradients over the run's batch
            while pos < stop:
                i = pos - first
                inclusions[i] += 1
                pred = _predict(sparse, X, data, indices, indptr, i, w)
                d = _clipped_derivative(datafit_code, y[i], pred, row_norms[i], clips[k])
                if sparse:
                    for s in range(indptr[i], indptr[i + 1]):
                        g[indices[s]] += d * data[s]
                else:
                    for j in range(n_features):
                        g[j] += d * X[i, j]
                pos += 1 if full else gap(sample_keys[k], drawn[k], lam)
                drawn[k] += 1
                if not sparse:
                    prefetch_row(X, pos % n_samples)
            nxt[k] = pos
            # the sum plus N(0, sigma^2 I), then the prox step
            for j in range(n_features):
                g[j] = g[j] + scale * noise[j]
            _prox_update(w, g, steps[k], penalty_code, penalty_params, batch_size)
        while c < checkpoints.shape[0] and checkpoints[c] == t + 1:
            _objectives(sparse, X, data, indices, indptr, y, W, active, datafit_code,
                        penalty_code, penalty_params, obj[:, 1 + c])
            c += 1


def stream_keys(seed):
    """Sampling and noise keys of a run: ``SeedSequence(seed)`` spawned into two."""
    sample_seq, noise_seq = np.random.SeedSequence(seed).spawn(2)
    return (np.uint64(sample_seq.generate_state(1, np.uint64)[0]),
            np.uint64(noise_seq.generate_state(1, np.uint64)[0]))


def run_independent(design, y, n_features, dcode, pcode, pparams, etas, clips, noise_scales,
                    batch_size, row_norms, q, n_steps, checkpoints, seeds):
    """One call of :func:`_kernel` on runs sorted by decreasing ``n_steps``, run k
    seeded by ``seeds[k]``; returns the iterates, objectives, inclusion counts
    (summed over the runs) and the kernel's seconds."""
    import time

    n_runs = n_steps.shape[0]
    obj = np.full((n_runs, checkpoints.shape[0] + 1), np.nan)
    # every run starts at w = 0: one evaluation serves all
    _objectives(*design, y, np.zeros((1, n_features)), 1, dcode, pcode, pparams, obj[:, 0])
    obj[:, 0] = obj[0, 0]
    keys = np.array([stream_keys(seed) for seed in seeds], dtype=np.uint64).reshape(n_runs, 2)
    sample_keys, noise_keys = keys[:, 0].copy(), keys[:, 1].copy()
    W = np.zeros((n_runs, n_features))
    args = (*design, y, W, dcode, pcode, pparams, etas, clips, noise_scales, batch_size,
            row_norms, q)
    work = (np.empty((n_runs, BUFFER)), np.zeros((n_runs, n_features)), np.empty(n_features),
            np.zeros(y.shape[0], dtype=np.int64))
    # compile (or load from cache) before the timer: a zero-step call
    _kernel(*args, np.zeros(n_runs, np.int64), sample_keys, noise_keys, *work, checkpoints, obj)
    # the timer covers the whole algorithm: sampling, noise and updates
    t0 = time.perf_counter()
    _kernel(*args, n_steps, sample_keys, noise_keys, *work, checkpoints, obj)
    elapsed = time.perf_counter() - t0
    return W, obj, work[3], elapsed

"""DP-SGD in the secure noise mode: Poisson batches, integer sums, exact noise.

Everything random comes from a ChaCha20 keystream keyed by the OS
(:mod:`dpcd.privacy.keystream`), and every random decision is exact
(:mod:`dpcd.privacy.exact`):

* **batches**: the ``n_steps × n_samples`` Bernoulli(q) trials (step-major)
  are skipped over by exact geometric gaps (:func:`dpcd.privacy.exact.geometric`:
  failures before the first success of Bernoulli(q) trials, for the real
  number ``q`` the accountant is given), so the selected (step, record) pairs
  are exactly those of independent Bernoulli(q) trials, in O(selected) draws;
* **sums**: each selected record's clipped gradient (ℓ2 norm at most C) is
  rounded coordinatewise to the grid ``γ = C/m``, ``floor(g_j/γ + 1/2)``,
  and the integers are summed in float64, exactly: every partial sum and the
  noisy sum stay below ``2⁵³`` in magnitude (:func:`run_secure` checks
  ``n(m + 1) + K·s < 2⁵³``), and float64 loops vectorise where int64
  conversions do not (no AVX-512 here); the sum's sensitivity in grid steps
  is :func:`dpcd.privacy.secure.lattice_sensitivity`;
* **noise**: one discrete Gaussian integer per coordinate and step, of scale
  ``s`` grid steps (:func:`dpcd.privacy.exact.fill_discrete_gaussian`, a few
  thousand at a time);
* **update**: ``w <- prox(w - eta γ (sum + noise) / b)`` in floats, a
  post-processing of the released integers.

:func:`dpcd.privacy.secure.secure_lattice` accounts it (the rounded continuous
Gaussian, within ``e^{±a}``).
"""
import time

import numpy as np
from numba import njit

from dpcd.privacy import exact, keystream
from dpcd.solvers._sgd_steps import (_clipped_derivative, _objectives, _predict, _prox_form,
                                     _prox_step)

# discrete Gaussian draws per refill of the noise buffer (whole steps of them)
NOISE_DRAWS = 4096
# A noise draw beyond this many scales has probability below 2e-347 (secure.LATTICE_TAIL
# is the accounting's cut; the float sums only need to hold what can be drawn).
EXACT_TAIL = 40.0


@njit(inline="always")
def _next_selected(state, full, q, last):
    """The selected trial after ``last``: the next one when every record is
    taken, else ``last`` + 1 + a Geometric(q) number of failures."""
    if full:
        return last + 1
    return last + 1 + exact.geometric(state, q)


@njit(inline="always", error_model="numpy")
def _add_rounded_gradient(sparse, X, data, indices, indptr, y, i, w, qsum, datafit_code,
                          row_norm, clip, inv_grid):
    """qsum += record i's clipped gradient at w rounded to the grid, ``floor(g_j/γ + 1/2)``."""
    pred = _predict(sparse, X, data, indices, indptr, i, w)
    # the clipped derivative in grid steps: ||d x_i|| <= m (up to float error)
    d = _clipped_derivative(datafit_code, y[i], pred, row_norm, clip) * inv_grid
    if sparse:
        for s in range(indptr[i], indptr[i + 1]):
            qsum[indices[s]] += np.floor(d * data[s] + 0.5)
    else:
        for j in range(X.shape[1]):
            qsum[j] += np.floor(d * X[i, j] + 0.5)


@njit(cache=True, error_model="numpy")
def rounded_sum(sparse, X, data, indices, indptr, y, rows, w, datafit_code, row_norms, clip,
                grid, qsum):
    """``qsum`` += the rounded clipped gradients of ``rows`` at ``w``, as the
    kernel sums them (for tests of the sum's sensitivity)."""
    for i in rows:
        _add_rounded_gradient(sparse, X, data, indices, indptr, y, i, w, qsum, datafit_code,
                              row_norms[i], clip, 1.0 / grid)


@njit(cache=True, error_model="numpy")
def _secure_kernel(sparse, X, data, indices, indptr, y, W, datafit_code, penalty_code,
                   penalty_params, eta, clip, grid, batch_size, row_norms, q, n_steps,
                   state, scale, noise, qsum, inclusions, checkpoints, obj):
    """Run ``n_steps`` secure DP-SGD steps on ``W[0]`` in place.

    Parameters
    ----------
    sparse, X, data, indices, indptr, y, datafit_code, penalty_code, penalty_params,
    batch_size, row_norms, q, checkpoints
        As :func:`dpcd.solvers.dp_sgd._dp_sgd_kernel`'s.
    W : array, shape (1, n_features)
        The iterate (updated in place).
    eta, clip : float
        Step ``gamma / beta`` and ℓ2 clipping threshold C.
    grid : float
        ``C/m``.
    n_steps : int
    state : array of uint64
        The keystream (:func:`dpcd.privacy.keystream.new_state`).
    scale : float
        ``s``, the discrete Gaussian's scale in grid steps.
    noise : array of int64, shape (k n_features,)
        Work buffer of the noise, ``k`` steps of it.
    qsum : array, shape (n_features,)
        Work buffer of the integer sums (exact in float64), zero on entry and exit.
    inclusions : array of int64, shape (n_samples,)
        Incremented by the steps each record is selected in.
    obj : array, shape (1, n_ckpt + 1)
        Objectives at the checkpoints.
    """
    n_samples = y.shape[0]
    w = W[0]
    n_features = w.shape[0]
    inv_grid = 1.0 / grid
    full = q >= 1.0
    shrink, divide = _prox_form(penalty_code, penalty_params, eta)
    plain = batch_size == 1.0 and divide == 1.0
    per_fill = noise.shape[0] // n_features
    pos = _next_selected(state, full, q, -1) if n_steps > 0 else 0
    c = 0
    for t in range(n_steps):
        slot = t % per_fill
        if slot == 0:
            exact.fill_discrete_gaussian(state, scale, noise)
        offset = slot * n_features
        first = t * n_samples
        stop = first + n_samples
        while pos < stop:
            i = pos - first
            inclusions[i] += 1
            _add_rounded_gradient(sparse, X, data, indices, indptr, y, i, w, qsum,
                                  datafit_code, row_norms[i], clip, inv_grid)
            pos = _next_selected(state, full, q, pos)
        # release grid (sum + noise); the update is its post-processing
        for j in range(n_features):
            v = grid * (qsum[j] + np.float64(noise[offset + j]))
            qsum[j] = 0.0
            w[j] = _prox_step(w[j], v, eta, shrink, divide, batch_size, plain)
        while c < checkpoints.shape[0] and checkpoints[c] == t + 1:
            _objectives(sparse, X, data, indices, indptr, y, W, 1, datafit_code,
                        penalty_code, penalty_params, obj[:, 1 + c])
            c += 1


def run_secure(design, y, n_features, dcode, pcode, pparams, eta, clip, batch_size,
               row_norms, q, n_steps, checkpoints, lattice):
    """One secure run (``lattice``: a :class:`dpcd.privacy.secure.LatticeGaussian`
    whose grid is ``clip/m``); returns the iterate, its objectives, the
    inclusion counts and the kernel's seconds (which cover the sampling, the
    noise and the updates)."""
    if not np.isclose(lattice.grid * lattice.resolution, clip, rtol=1e-12):
        raise ValueError(f"the secure grid {lattice.grid!r} is not clip/m for clip={clip!r}")
    largest = y.shape[0] * (lattice.resolution + 1.0) + EXACT_TAIL * lattice.integer_scale
    if largest >= 2.0 ** 53:
        raise ValueError("noise='secure': the integer sums could exceed 2**53 (too many "
                         "records for the grid)")
    obj = np.full((1, checkpoints.shape[0] + 1), np.nan)
    W = np.zeros((1, n_features))
    _objectives(*design, y, W, 1, dcode, pcode, pparams, obj[:, 0])
    noise = np.empty(max(1, NOISE_DRAWS // n_features) * n_features, dtype=np.int64)
    qsum = np.zeros(n_features)
    inclusions = np.zeros(y.shape[0], dtype=np.int64)
    args = (*design, y, W, dcode, pcode, pparams, float(eta), float(clip),
            float(lattice.grid), float(batch_size), row_norms, float(q))
    scale = float(lattice.integer_scale)
    # compile (or load from cache) before the timer: a zero-step call
    _secure_kernel(*args, 0, keystream.new_state(), scale, noise, qsum, inclusions,
                   checkpoints[:0], obj)
    t0 = time.perf_counter()
    _secure_kernel(*args, int(n_steps), keystream.new_state(), scale, noise, qsum,
                   inclusions, checkpoints, obj)
    elapsed = time.perf_counter() - t0
    return W[0], obj[0], inclusions, elapsed

"""Accuracy of the vectorisable exp / log1p used inside the kernels."""
import numpy as np
from numba import njit

from dpcd.problems._jit import FAST, _datafit_value, _exp, _log1p_small, _loss_scalar


@njit(error_model="numpy")
def _exp_loop(x, out):
    for i in range(x.shape[0]):
        out[i] = _exp(x[i])


@njit(fastmath=FAST, error_model="numpy")
def _exp_loop_fast(x, out):
    for i in range(x.shape[0]):
        out[i] = _exp(x[i])


def test_exp_within_one_ulp():
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.uniform(-708, 709, 200_000), rng.uniform(-5, 5, 200_000),
                        [0.0, 1.0, -1.0, 709.0, -708.0]])
    out = np.empty_like(x)
    _exp_loop(x, out)
    ref = np.exp(x)
    assert np.max(np.abs(out - ref) / np.spacing(ref)) <= 1.0
    # inside reassociating loops the two-part ln 2 reduction may be merged
    _exp_loop_fast(x, out)
    assert np.max(np.abs(out - ref) / ref) <= 1e-12
    # clamped outside [-708, 709]: finite, positive, monotone limits
    _exp_loop(np.array([-1e4, 1e4]), out[:2])
    assert 0 < out[0] < 1e-307 and np.isfinite(out[1]) and out[1] > 1e307


def test_logistic_loss_accuracy():
    rng = np.random.default_rng(1)
    m = np.concatenate([rng.uniform(-50, 50, 20_000), rng.uniform(-1e3, 1e3, 1000)])
    ref = np.logaddexp(0.0, -m)
    got = np.array([_loss_scalar(1, t) for t in m])
    # exp is clamped at -708: losses below ~3e-308 are not resolved
    assert np.all(np.abs(got - ref) <= 1e-13 * ref + 1e-300)
    assert abs(_datafit_value(1, m) - ref.mean()) <= 1e-13 * ref.mean()
    t = np.linspace(0, 1, 1001)
    got = np.array([_log1p_small(v) for v in t])
    np.testing.assert_allclose(got, np.log1p(t), rtol=2e-16 * 4, atol=0)

"""The floating-point attack: the fast mode is broken, the secure mode is not.

The releases go through dpcd's public functions: ``private_smoothness``
(Laplace) and ``dp_cd`` with ``calibrate_dp_cd`` (Gaussian, in
``tests/dp_cd_fp_attack.py``). The fast mode
is seeded, so its bounds are fixed. The secure mode cannot be seeded, so
each test of it states its chance of failing by accident.
"""

import numpy as np
import pytest

from dp_cd_fp_attack import attack_dp_cd  # tests/dp_cd_fp_attack.py: runs the solver
from dpcd.privacy import fp_attack, private_smoothness

EPSILON, DELTA = 1.0, 1e-5


@pytest.mark.parametrize("loc, scale", [(0.0, 0.125), (0.3, 1.7)])
def test_numpy_laplace_is_rebuilt_bit_for_bit(loc, scale):
    drawn = np.random.default_rng(3).laplace(loc, scale, 1_000_000)
    rebuilt = fp_attack.numpy_laplace(np.random.default_rng(3).random(1_000_000), loc, scale)
    np.testing.assert_array_equal(drawn.view(np.int64), rebuilt.view(np.int64))


@pytest.mark.parametrize("k0", [1, 2 ** 40, 2 ** 52 - 3_000, 2 ** 53 - 6_001])
def test_laplace_reachable_matches_enumeration(k0):
    """Every float between the outputs of 6 000 consecutive uniforms is
    reachable exactly when one of them outputs it (the output is monotone)."""
    loc, scale = 0.125, 0.125
    outputs = np.array([fp_attack._laplace_at(k, loc, scale) for k in range(k0, k0 + 6_000)])
    lo, hi = outputs.min(), outputs.max()
    floats, x = [], lo
    while x <= hi and len(floats) < 200_000:
        floats.append(x)
        x = np.nextafter(x, np.inf)
    floats = np.array(floats)
    expected = np.isin(floats, outputs)
    np.testing.assert_array_equal(fp_attack.laplace_reachable(floats, loc, scale), expected)
    assert expected.any()


def test_off_grid_never_fires_on_a_float_added_to_the_reference():
    """fl(g' + v) is a multiple of ulp(g')/2 for any floats g' ≠ 0 and v, v
    drawn here over 60 binades."""
    rng = np.random.default_rng(0)
    for reference in (-0.5, 0.1, -4.0 / 2049, 3e-7):
        v = rng.standard_normal(200_000) * 2.0 ** rng.integers(-40, 20, 200_000)
        v = np.concatenate([v, -reference + v * 1e-9])  # cancellations near 0
        assert not fp_attack.off_grid(reference + v, reference).any()
        assert not fp_attack.off_grid(-(reference + v), reference).any()
    assert fp_attack.off_grid(np.array([2.0 ** -70, 0.0]), 0.5).tolist() == [True, False]


def test_one_call_with_many_columns_is_many_one_coordinate_releases():
    column = fp_attack.smoothness_pair()[1]
    batch = fp_attack._smoothness_runs(column, 1.0, 5, np.random.default_rng(1), "fast", 5)
    rng = np.random.default_rng(1)
    single = [private_smoothness(column[:, None], 1.0, 1.0, rng, floor=fp_attack.FLOOR)[0][0]
              for _ in range(5)]
    np.testing.assert_array_equal(batch, single)


def test_fast_smoothness_release_is_broken():
    """10⁶ runs per side: 12.08 seen (the most 10⁶ runs can show is about 12.5).
    Below 5 would need the test to fire on fewer than 0.06 % of the releases
    from D' instead of 65 %: for another seed, a chance far below 1e-100."""
    result = fp_attack.attack_smoothness("fast", n_runs=1_000_000, seed=0)
    assert result.fpr_hi < 4e-6  # no release from D was flagged
    assert result.epsilon_lb >= 5 * EPSILON


def test_secure_smoothness_release_holds():
    """10⁶ runs per side, 0.46 seen: the share of unclamped releases differs
    (the bound's standard error is about 0.0015). Bit leaks would show as
    they do in the fast mode, up to about 12.5 at this size. A false failure
    needs the bound more than 300 standard errors above its value."""
    result = fp_attack.attack_smoothness("secure", n_runs=1_000_000)
    assert result.epsilon_lb <= EPSILON


def test_fast_dp_cd_is_broken():
    """512 Gaussian updates claimed (1, 1e-5)-DP; 3 000 runs per side: 5.92 seen
    (a run costs about 0.5 ms of CPU). Below 5 would need the test to fire on
    fewer than 18 % of the runs on D instead of 46 %: for another seed, 28
    standard errors away, a chance far below 1e-100."""
    result = attack_dp_cd("fast", n_runs=3_000, seed=0)
    assert result.fpr_hi < 2e-3  # no run on D' was flagged
    assert result.epsilon_lb >= 5 * EPSILON


def test_secure_dp_cd_holds():
    """3 000 runs per side, as the fast test: 0 seen, the test firing on
    about 47 % of the runs on either side. A leak of low bits would show up
    to about 6.7 at this size. If both sides fire at the same rate, a false
    failure needs the two rates e apart, about 35 standard errors: a chance
    far below 1e-100."""
    result = attack_dp_cd("secure", n_runs=3_000)
    assert result.epsilon_lb <= EPSILON

"""DP-GCD: noisy-max scale, compositions, Theorem 4.2 as an upper bound."""

import math

import numpy as np
import pytest

from dpcd.privacy.gcd import (
    COMPOSITIONS,
    calibrate_dp_gcd,
    gcd_epsilon,
    noisy_max_win_probability,
    theorem_4_2_scales,
)

N, DELTA = 20640, 1.0 / 20640**2


def worst_log_ratio(scale, shifts=(0, 1, 2, 5, 10, 20), base=50.0):
    """max over two-score neighbours (scores move by <= 1 each) of |log P/P'|."""
    worst = 0.0
    for d in shifts:
        for g, gp in [((base, base + d), (base + 1, base + d - 1)),
                      ((0.0, d), (1.0, d - 1)), ((base, -base - d), (base + 1, -base - d + 1))]:
            p = noisy_max_win_probability(*g, scale, scale)
            q = noisy_max_win_probability(*gp, scale, scale)
            worst = max(worst, abs(math.log(p / q)), abs(math.log((1 - p) / (1 - q))))
    return worst


@pytest.mark.parametrize("eps_step", [0.5, 1.0])
def test_noisy_max_paper_scale_violates_and_correct_scale_holds(eps_step):
    # Sensitivity 1 per score: Lap(1/eps') is not eps'-DP for |g + noise| scores ...
    assert worst_log_ratio(1.0 / eps_step) > 1.5 * eps_step
    # ... Lap(2/eps') is.
    assert worst_log_ratio(2.0 / eps_step) <= eps_step


def test_win_probability_matches_monte_carlo():
    rng = np.random.default_rng(0)
    g1, g2, b1, b2 = 0.3, -0.8, 1.0, 0.5
    m = 400_000
    mc = np.mean(np.abs(g1 + rng.laplace(0, b1, m)) > np.abs(g2 + rng.laplace(0, b2, m)))
    assert noisy_max_win_probability(g1, g2, b1, b2) == pytest.approx(mc, abs=4e-3)


@pytest.mark.parametrize("composition", COMPOSITIONS)
def test_round_trip_each_composition(composition):
    cal = calibrate_dp_gcd(N, 8, 50, 1.0, 1.0, DELTA, composition=composition)
    eps_step = cal.extra["epsilon_per_step"]
    eps = gcd_epsilon(eps_step, 50, DELTA, composition)
    assert 0.99 <= eps <= 1.0
    assert cal.noise_multiplier == pytest.approx(1 / eps_step)


def test_auto_picks_largest_step_and_scales():
    clip = np.array([1.0, 2.0, 0.5])
    cal = calibrate_dp_gcd(1000, 3, 20, clip, 1.0, 1e-6)
    by = cal.extra["epsilon_per_step_by_composition"]
    assert cal.extra["epsilon_per_step"] == max(by.values())
    assert by["rdp"] >= by["zcdp"] >= by["advanced"] * 0.999  # zCDP conversion is looser
    e = cal.extra["epsilon_per_step"]
    sens = 2 * clip / 1000
    np.testing.assert_allclose(cal.noise_scales, sens / e)
    # Non-uniform Delta_j / sqrt(M_j): selection noise uses the score sensitivity.
    np.testing.assert_allclose(cal.extra["selection_scales"], 2 * sens.max() / e)
    paper = calibrate_dp_gcd(1000, 3, 20, clip, 1.0, 1e-6, mode="paper")
    np.testing.assert_allclose(paper.extra["selection_scales"], sens / paper.extra["epsilon_per_step"])
    assert [m.name for m in cal.ledger.mechanisms] == ["noisy_max_selection", "coordinate_gradient"]


def test_uniform_weights_give_textbook_factor_two():
    M = np.array([1.0, 4.0, 9.0])
    clip = np.sqrt(M)  # C_j proportional to sqrt(M_j)
    cal = calibrate_dp_gcd(500, 3, 10, clip, 1.0, 1e-6, smoothness=M)
    np.testing.assert_allclose(cal.extra["selection_scales"], 2 * cal.noise_scales)


@pytest.mark.parametrize("epsilon", [0.1, 0.5, 1.0])
@pytest.mark.parametrize("T", [1, 10, 200])
def test_paper_mode_below_theorem_4_2(epsilon, T):
    clip = np.array([0.5, 1.0, 3.0])
    cal = calibrate_dp_gcd(N, 3, T, clip, epsilon, DELTA, accountant="paper")
    assert cal.ledger.accountant == "advanced_composition"
    bound = theorem_4_2_scales(N, T, clip, epsilon, DELTA)
    assert np.all(cal.noise_scales <= bound)
    assert np.all(cal.extra["selection_scales"] <= bound)

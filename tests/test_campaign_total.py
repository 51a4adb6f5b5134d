"""The campaign total's remainder rule (dp_platform/campaign_total.py): post-processing only."""

from __future__ import annotations

import numpy as np
import pytest

from dp_platform.campaign_total import (
    days_estimate,
    remainder_answers,
    remainder_std,
    shrunk,
    total_additions,
)

pytestmark = pytest.mark.unit


def test_the_remainder_answer_is_linear_with_its_exact_standard_deviation():
    queries = np.array([[1.0, 1.0, 1.0], [0.0, 1.0, 2.0]])
    remainders = np.array([4.0, 5.0])  # two days released so far
    np.testing.assert_allclose(remainder_answers(queries, remainders), [9.0, 5.0])
    np.testing.assert_allclose(remainder_std(queries, 2.0, 2), [2.0 * np.sqrt(2), 2.0])


def test_shrinkage_keeps_what_stands_above_the_noise_and_drops_the_rest():
    std = np.full(5, 10.0)
    answers = np.array([-30.0, 0.0, 5.0, 20.0, 1e6])
    out = shrunk(answers, std)
    assert out[0] == 0.0 and out[1] == 0.0  # X_t ≥ 0: a negative answer adds nothing
    assert out[2] == 0.0  # below its sd: 1 − sd²/R² < 0
    assert out[3] == pytest.approx(20.0 * (1 - 100 / 400))
    assert out[4] == pytest.approx(1e6, rel=1e-9)


def test_shrinkage_lowers_the_expected_error_where_the_remainder_is_small_or_large():
    """Against adding R̃ in full and against adding nothing, over seeded draws: with a bias of
    −X, shrinkage is never far worse than the better of the two and beats adding in full when X
    is small against the noise."""
    rng = np.random.default_rng(3)
    sd = 10.0
    for x in (0.0, 5.0, 100.0):
        draws = x + rng.normal(0.0, sd, size=20_000)
        full = np.mean((draws - x) ** 2)
        none = x**2
        shrink = np.mean((shrunk(draws, np.full(draws.size, sd)) - x) ** 2)
        assert shrink <= 1.1 * min(full, none) + 0.35 * sd**2
        if x <= 5.0:
            assert shrink < full


def test_the_days_estimate_keeps_a_large_remainder_and_drops_noise():
    """total_additions: with every day far above its noise the total adds about q·X̃; with
    nothing clipped it adds little (the sum reads only the level, whose one-number rule keeps
    about 17 % of its noise's square at X = 0: E[(y − 1/y)²; y > 1] for y ~ N(0, 1)); a query
    ending on day 1, 2 or 3 uses the one-number rule."""
    queries = np.tril(np.ones((10, 10)))
    sigma = 5.0
    large = np.full(10, 1000.0)
    added = total_additions(queries, large, sigma)
    np.testing.assert_allclose(added[3:], queries[3:] @ large, rtol=1e-3)
    np.testing.assert_allclose(added[:3], shrunk(queries[:3] @ large, sigma * np.sqrt([1, 2, 3])))
    rng = np.random.default_rng(8)
    draws = rng.normal(0.0, sigma, size=(4000, 10))  # X = 0: what is added is noise only
    zero = total_additions(queries, draws, sigma)
    plain = draws @ queries.T
    assert np.mean(zero[:, -1] ** 2) < 0.25 * np.mean(plain[:, -1] ** 2)


def test_over_the_days_the_estimate_errs_less_than_the_raw_remainders():
    """Its total squared error over days 1..k is below X̃'s: checked for a flat, a small, a
    spiky and a zero X over seeded draws (sd of the mean error ≈ 1 %)."""
    rng = np.random.default_rng(9)
    sigma, k = 3.0, 12
    for truth in (np.full(k, 2.0), np.full(k, 0.5), np.r_[np.zeros(k - 1), 30.0], np.zeros(k)):
        noisy = truth + rng.normal(0.0, sigma, size=(5000, k))
        estimate = days_estimate(noisy, sigma)
        assert np.mean(((estimate - truth) ** 2).sum(1)) < np.mean(((noisy - truth) ** 2).sum(1))
    with pytest.raises(ValueError, match="k >= 4"):
        days_estimate(np.ones(3), sigma)


def test_a_steady_remainder_is_kept_in_a_long_sum_where_james_stein_on_the_days_took_40_percent():
    """Heavy users clipped every day: X_t = 50 a day against σ_R = 44, each day near its noise.
    The 31-day sum stands six sd clear; the level keeps it (≥ 95 % on average), where the days'
    own James–Stein factor — the rule before — kept about 60 %."""
    rng = np.random.default_rng(4)
    sigma, k = 44.0, 31
    truth = np.full(k, 50.0)
    noisy = truth + rng.normal(0.0, sigma, size=(4000, k))
    total = total_additions(np.ones((1, k)), noisy, sigma)[:, 0]
    before = np.maximum(0.0, 1.0 - (k - 2) * sigma**2 / (noisy**2).sum(1)) * noisy.sum(1)
    assert total.mean() >= 0.95 * truth.sum() and before.mean() <= 0.65 * truth.sum()
    assert np.mean((total - truth.sum()) ** 2) < 0.2 * np.mean((before - truth.sum()) ** 2)

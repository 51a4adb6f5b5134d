"""Noisy histograms: exact cost 1/(2σ²), one bin per user (L2 sensitivity 1), seeded draws."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from dp_platform.events.model import ConversionSet
from dp_platform.events.paper import spread
from dp_platform.mechanisms.adsbpc_plus_plan import PROFILE_BINS, profile_bins
from dp_platform.privacy.noise import SeededNoise
from dp_platform.privacy.noise_check import AllotmentExceeded
from dp_platform.privacy.noisy_histogram import (
    histogram_sigma,
    noisy_histogram,
    tail_counts,
)
from dp_platform.privacy.quantile import cap_histogram
from dp_research.evaluation.plus_data import prepare_plus
from tests.oracles import histogram_rho


@pytest.mark.parametrize("rho", [Fraction(1, 1000), Fraction(3, 100) / 31, Fraction(2)])
def test_sigma_costs_at_most_rho_and_barely_less(rho):
    sigma = histogram_sigma(rho)
    assert histogram_rho(sigma) <= rho
    assert histogram_rho(sigma) > rho * (1 - Fraction(1, 10**12))
    assert histogram_rho(2 * sigma) == histogram_rho(sigma) / 4  # 1/(2σ²), not 1/(2σ)


def test_noise_is_added_per_bin_from_the_given_source():
    counts = np.array([5, 0, 3])
    got = noisy_histogram(counts, 2.0, rho=histogram_rho(2.0), noise=SeededNoise(4))
    expected = counts + np.random.default_rng(4).normal(0.0, 2.0, size=3)
    np.testing.assert_array_equal(got, expected)
    with pytest.raises(ValueError):
        noisy_histogram(np.array([-1]), 1.0, rho=histogram_rho(1.0))
    with pytest.raises(AllotmentExceeded):  # an allotment below 1/(2σ²): nothing drawn
        noisy_histogram(counts, 2.0, rho=histogram_rho(2.0) / 2, noise=SeededNoise(4))
    assert tail_counts(np.array([1.0, 2.0, 3.0])).tolist() == [5.0, 3.0, 0.0]


def _with_user(base: ConversionSet, days: list[int]) -> ConversionSet:
    k = len(days)
    return ConversionSet(
        np.append(base.user, [base.n_users] * k),
        np.append(base.day, days),
        np.append(base.publisher, np.arange(k) % base.n_publishers),
        np.append(base.time_ms, np.arange(k)),
        base.n_users + 1,
        base.n_days,
        base.n_publishers,
        "t",
    )


@pytest.mark.parametrize("days", [[0], [1, 1, 1], [0, 0, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2]])
def test_adding_a_user_moves_one_bin_by_one_per_day(days):
    rng = np.random.default_rng(3)
    base = spread(rng.integers(1, 12, 200), days=3, publishers=3, rng=rng, name="t")
    h0, h1 = prepare_plus(base).histograms, prepare_plus(_with_user(base, days)).histograms
    for day in range(3):
        a, b = (cap_histogram(h, 6)[1:] for h in (h0[day], h1[day]))
        diff = b - a
        assert np.abs(diff).sum() == (1 if day in days else 0)  # L2 = L1 = 1 or 0
        assert np.all(diff >= 0)


def test_profile_bins_are_public_and_each_user_lands_in_one():
    values = np.array([1e-9, 0.0016, 0.5, 1.0, 16.0, 99.0])
    bins = profile_bins(values, 4)  # edges 16·PROFILE_EDGES
    assert bins.min() == 0 and bins.max() == PROFILE_BINS - 1
    assert np.all(np.diff(bins) >= 0)
    assert np.bincount(bins, minlength=PROFILE_BINS).sum() == values.size

"""Prepared data: every clipping read from the rank tensors equals the baselines' own clipping."""

from __future__ import annotations

import numpy as np
import pytest

from dp_platform.events.model import ConversionSet
from dp_research.baselines import Stream, prefix
from dp_research.baselines.contributions import clip_global, clip_per_day
from dp_research.evaluation.bounds import nonprivate_given_bounds
from dp_research.evaluation.datasets import to_conversions
from dp_research.evaluation.prepared import prepare

DAYS, PUBLISHERS, GS = 9, 4, 12


def small_set(seed: int = 5, users: int = 60) -> ConversionSet:
    """Heavy-tailed users, times drawn from a tiny grid so that ties (broken by row) occur."""
    rng = np.random.default_rng(seed)
    totals = rng.zipf(1.8, size=users).clip(max=40)
    user = np.repeat(np.arange(users, dtype=np.int32), totals)
    rng.shuffle(user)  # rows in no particular order
    size = len(user)
    return ConversionSet(
        user=user,
        day=rng.integers(0, DAYS, size=size, dtype=np.int16),
        publisher=rng.integers(0, PUBLISHERS, size=size, dtype=np.int32),
        time_ms=rng.integers(0, 4, size=size, dtype=np.int32),
        n_users=users,
        n_days=DAYS,
        n_publishers=PUBLISHERS,
        name="small",
    )


@pytest.fixture(scope="module")
def data():
    conversions = small_set()
    return conversions, to_conversions(conversions), prepare(conversions, GS)


def test_per_day_clipping_equals_clip_per_day(data) -> None:
    _, rows, prepared = data
    rng = np.random.default_rng(1)
    for r in [
        rng.uniform(0, 4, DAYS),
        np.full(DAYS, 1.0),
        np.full(DAYS, 0.0),
        np.full(DAYS, 100.0),  # above every user's day count: nothing clipped
        np.arange(DAYS) * 0.7,
    ]:
        expected = rows.to_matrix(clip_per_day(rows, r), PUBLISHERS, DAYS)
        np.testing.assert_allclose(prepared.per_day_clipped(r), expected, atol=1e-9)
    np.testing.assert_allclose(prepared.per_day_clipped(np.full(DAYS, 100.0)), prepared.truth)


def test_day_clipping_equals_the_data_layers_clipped_vector(data) -> None:
    conversions, _, prepared = data
    for day, bound in [(0, 1.0), (3, 2.4), (8, 0.3), (5, 50.0)]:
        np.testing.assert_allclose(
            prepared.day_clipped(day, bound), conversions.clipped_vector(day, bound), atol=1e-9
        )


def test_global_clipping_equals_clip_global(data) -> None:
    _, rows, prepared = data
    for bound in [0.0, 1.0, 2.5, 7.0, float(GS)]:
        expected = rows.to_matrix(clip_global(rows, bound), PUBLISHERS, DAYS)
        np.testing.assert_allclose(prepared.global_clipped(bound), expected, atol=1e-9)
    with pytest.raises(ValueError):
        prepared.global_clipped(GS + 1.0)


def test_histograms_and_truth(data) -> None:
    conversions, _, prepared = data
    for day in range(DAYS):
        hist = conversions.day_histogram(day)
        padded = np.zeros(prepared.max_day_count + 1, dtype=np.int64)
        padded[: len(hist)] = hist
        np.testing.assert_array_equal(prepared.histograms[day], padded)
        np.testing.assert_array_equal(prepared.truth[:, day], conversions.true_vector(day))
    assert prepared.truth.sum() == conversions.n_conversions


def test_exceed_counts_equal_streams_own(data) -> None:
    _, rows, prepared = data
    plan = Stream(float(GS), 1.0).plan(prefix(DAYS))
    expected = plan.exceed_counts(rows, DAYS)
    np.testing.assert_array_equal(prepared.exceed_counts(plan.taus[:-1]), expected)


@pytest.mark.parametrize("q", [0.5, 0.9, 0.99, 1.0])
def test_true_bounds_equal_the_nonprivate_helper(data, q: float) -> None:
    _, rows, prepared = data
    np.testing.assert_array_equal(prepared.true_bounds(q), nonprivate_given_bounds(rows, DAYS, q))


def test_rejects_bad_bounds(data) -> None:
    _, _, prepared = data
    with pytest.raises(ValueError):
        prepared.per_day_clipped(np.full(DAYS - 1, 1.0))
    with pytest.raises(ValueError):
        prepared.per_day_clipped(np.full(DAYS, -1.0))

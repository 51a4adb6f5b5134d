"""Contribution bounding on conversion arrays, against a plain-Python reference
(docs/baselines.md#contribution-bounds)."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest

from dp_research.baselines import (
    BIN,
    IPA,
    MMBPC,
    UMM,
    Conversions,
    clip_global,
    clip_per_day,
    running_before,
    user_day_totals,
)


def make(seed: int, users: int = 40, n: int = 5, publishers: int = 3, weighted: bool = False):
    rng = np.random.default_rng(seed)
    per_user = rng.integers(1, 20, size=users)
    user = rng.permutation(np.repeat(rng.choice(10_000, size=users, replace=False), per_user))
    size = len(user)
    weight = rng.choice([1.0, 0.5, 1 / 3, 0.25, 0.1], size=size) if weighted else None
    return Conversions(
        user=user,
        day=rng.integers(0, n, size=size),
        publisher=rng.integers(0, publishers, size=size),
        time=rng.integers(0, 6, size=size).astype(float),  # many ties: row order breaks them
        weight=weight,
    )


def reference_clip(conversions: Conversions, bound_of_day, per_day: bool) -> np.ndarray:
    """Walk each user's history in (day, time, row) order and keep weight up to the bound."""
    weights = conversions.weights
    rows = defaultdict(list)
    for row in range(len(conversions)):
        key = (conversions.user[row], conversions.day[row]) if per_day else conversions.user[row]
        rows[key].append(row)
    kept = np.zeros(len(conversions))
    for history in rows.values():
        history.sort(key=lambda row: (conversions.day[row], conversions.time[row], row))
        used = 0.0
        for row in history:
            bound = bound_of_day(conversions.day[row])
            take = min(weights[row], max(bound - used, 0.0))
            kept[row] = take
            used += weights[row]
    return kept


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("bound", [0.0, 1.0, 2.5, 7.0, 100.0])
def test_global_clip_matches_reference(weighted: bool, bound: float) -> None:
    conversions = make(1, weighted=weighted)
    kept = clip_global(conversions, bound)
    expected = reference_clip(conversions, lambda _: bound, per_day=False)
    np.testing.assert_allclose(kept, expected, atol=1e-12)
    totals = np.bincount(np.unique(conversions.user, return_inverse=True)[1], weights=kept)
    assert totals.max() <= bound + 1e-12


@pytest.mark.parametrize("weighted", [False, True])
def test_per_day_clip_matches_reference(weighted: bool) -> None:
    conversions = make(2, weighted=weighted)
    r = np.array([1.0, 0.0, 2.5, 4.0, 3.0])
    kept = clip_per_day(conversions, r)
    expected = reference_clip(conversions, lambda day: r[day], per_day=True)
    np.testing.assert_allclose(kept, expected, atol=1e-12)
    user_index = np.unique(conversions.user, return_inverse=True)[1]
    per_user_day = np.zeros((user_index.max() + 1, 5))
    np.add.at(per_user_day, (user_index, conversions.day), kept)
    assert np.all(per_user_day <= r[None, :] + 1e-12)


def test_first_conversions_in_time_order_are_kept() -> None:
    """A user with conversions on days 3, 0, 0, 1 (listed out of order) keeps the first two."""
    conversions = Conversions(
        user=np.array([7, 7, 7, 7]),
        day=np.array([3, 0, 0, 1]),
        publisher=np.array([0, 1, 2, 0]),
        time=np.array([0.1, 0.9, 0.2, 0.5]),
    )
    np.testing.assert_array_equal(clip_global(conversions, 2.0), [0, 1, 1, 0])
    np.testing.assert_array_equal(clip_global(conversions, 2.5), [0, 1, 1, 0.5])
    np.testing.assert_array_equal(running_before(conversions), [3, 1, 0, 2])
    np.testing.assert_array_equal(clip_per_day(conversions, np.array([1.0, 1, 1, 1])), [1, 0, 1, 1])


def test_clip_methods_of_mechanisms_use_their_bound() -> None:
    conversions = make(3)
    n, publishers = 5, 3
    for mechanism in (IPA(4.0, 1.0), BIN(4.0, 1.0), UMM(4.0, 1.0)):
        x = mechanism.clip(conversions, publishers, n)
        expected = conversions.to_matrix(clip_global(conversions, 4.0), publishers, n)
        np.testing.assert_array_equal(x, expected)
    r = (1.0, 2.0, 1.0, 3.0, 1.0)
    x = MMBPC(r, 1.0).clip(conversions, publishers, n)
    expected = conversions.to_matrix(clip_per_day(conversions, np.array(r)), publishers, n)
    np.testing.assert_array_equal(x, expected)
    assert x.sum() < len(conversions)  # clipping bit


def test_to_matrix_counts_cells() -> None:
    conversions = make(4)
    x = conversions.to_matrix(conversions.weights, 3, 5)
    for p in range(3):
        for day in range(5):
            cell = (conversions.publisher == p) & (conversions.day == day)
            assert x[p, day] == cell.sum()
    with pytest.raises(ValueError, match="grid"):
        conversions.to_matrix(conversions.weights, 2, 5)


def test_user_day_totals() -> None:
    conversions = make(5, weighted=True)
    days, totals = user_day_totals(conversions)
    expected = defaultdict(float)
    for u, d, w in zip(conversions.user, conversions.day, conversions.weights, strict=True):
        expected[(u, d)] += w
    assert len(days) == len(expected)
    assert sorted(totals.round(12)) == sorted(np.round(list(expected.values()), 12))


def test_long_fractional_histories_do_not_drift() -> None:
    """Running sums are per user, so a huge global cumulative sum cannot leak round-off."""
    size = 200_000
    rng = np.random.default_rng(0)
    conversions = Conversions(
        user=np.arange(size) // 100,
        day=np.zeros(size, dtype=np.int64),
        publisher=np.zeros(size, dtype=np.int64),
        time=rng.random(size),
        weight=np.full(size, 0.1),
    )
    kept = clip_global(conversions, 3.0)
    per_user = np.bincount(conversions.user, weights=kept)
    np.testing.assert_allclose(per_user, 3.0, rtol=0, atol=1e-12)


def test_invalid_inputs_are_refused() -> None:
    with pytest.raises(ValueError):
        Conversions(np.zeros(2), np.zeros(3), np.zeros(2), np.zeros(2))
    with pytest.raises(ValueError):
        Conversions(np.zeros(2), np.zeros(2), np.zeros(2), np.zeros(2), weight=np.full(2, 1.5))
    conversions = make(6)
    with pytest.raises(ValueError):
        clip_global(conversions, -1.0)
    with pytest.raises(ValueError):
        clip_per_day(conversions, np.ones(2))  # fewer bounds than days


def test_order_does_not_depend_on_user_id_encoding() -> None:
    """Huge or negative ids take the three-key sort path; the kept rows must not change."""
    conversions = make(7, weighted=True)
    expected = clip_global(conversions, 4.0)
    for shift in (2**62, -(2**40)):
        shifted = Conversions(
            user=conversions.user + shift,
            day=conversions.day,
            publisher=conversions.publisher,
            time=conversions.time,
            weight=conversions.weight,
        )
        np.testing.assert_array_equal(clip_global(shifted, 4.0), expected)
        np.testing.assert_array_equal(
            clip_per_day(shifted, np.full(5, 2.0)), clip_per_day(conversions, np.full(5, 2.0))
        )

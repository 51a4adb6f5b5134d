"""The clipping specification (dp_platform/clipping.py) and every simulator held against it.

The SQL clipping of the warehouse is held against the same specification in
tests/test_attribution_properties.py (every attribution rule, ties and window edges), and the
Spark port against DuckDB in tests/test_spark_parity.py.
"""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from dp_platform.clipping import clipped_sums, count_fraction, day_ranks, kept_weights
from dp_platform.events.model import ConversionSet
from dp_research.evaluation.prepared import prepare
from tests.simulation import clip_day

bounds = st.floats(0.0, 6.0, allow_nan=False).map(lambda b: round(b, 2))


@st.composite
def days(draw: st.DrawFn) -> dict[str, np.ndarray]:
    """One day's rows: few users, few distinct times (ties), ids unrelated to load order."""
    n = draw(st.integers(0, 25))
    return {
        "users": np.array(draw(st.lists(st.integers(0, 3), min_size=n, max_size=n)), dtype=int),
        "ts": np.array(draw(st.lists(st.integers(0, 4), min_size=n, max_size=n)), dtype=float),
        "ids": np.array(draw(st.permutations(range(n))), dtype=int),
        "publishers": np.array(draw(st.lists(st.integers(0, 2), min_size=n, max_size=n)), int),
    }


@settings(max_examples=200, deadline=None)
@given(day=days(), bound=bounds, seed=st.integers(0, 2**16))
def test_the_specification_keeps_whole_conversions_first_in_time_then_id_order(
    day, bound, seed
) -> None:
    users, ts, ids = day["users"], day["ts"], day["ids"]
    kept = kept_weights(users, ts, ids, np.ones(users.size), bound)
    for user in np.unique(users):
        mine = np.flatnonzero(users == user)
        order = mine[np.lexsort((ids[mine], ts[mine]))]  # (ts, id): the tie order
        expected = [min(1.0, max(0.0, bound - rank)) for rank in range(order.size)]
        np.testing.assert_allclose(kept[order], expected, atol=0)
        assert kept[mine].sum() <= bound + 1e-12  # every user's day: L1 <= r
    shuffle = np.random.default_rng(seed).permutation(users.size)  # rows in any order
    moved = kept_weights(users[shuffle], ts[shuffle], ids[shuffle], np.ones(users.size), bound)
    np.testing.assert_array_equal(moved, kept[shuffle])


@settings(max_examples=100, deadline=None)
@given(day=days(), low=bounds, high=bounds)
def test_a_larger_bound_never_keeps_less(day, low, high) -> None:
    low, high = sorted((low, high))
    args = day["users"], day["ts"], day["ids"], day["publishers"], np.ones(day["users"].size), 3
    assert np.all(clipped_sums(*args, low) <= clipped_sums(*args, high) + 1e-12)


def test_a_multi_touch_conversion_keeps_the_same_fraction_of_each_of_its_weights() -> None:
    # user 0: conversion 7 at t=0 (one touch), conversion 3 at t=1 split 0.25/0.75
    users, ts, ids = np.array([0, 0, 0]), np.array([0.0, 1.0, 1.0]), np.array([7, 3, 3])
    kept = kept_weights(users, ts, ids, np.array([1.0, 0.25, 0.75]), 1.5)
    np.testing.assert_allclose(kept, [1.0, 0.125, 0.375])
    assert count_fraction(np.arange(4), 2.5).tolist() == [1.0, 1.0, 0.5, 0.0]
    ranks = day_ranks(np.array([1, 1, 1]), np.array([5.0, 5.0, 4.0]), np.array([9, 2, 8]))
    assert ranks.tolist() == [2, 1, 0]


@settings(max_examples=100, deadline=None)
@given(day=days(), bound=bounds)
def test_the_in_memory_simulator_is_the_specification(day, bound) -> None:
    users, ts, publishers = day["users"], day["ts"], day["publishers"]
    got = clip_day(users, ts, publishers, 3, bound)
    index = np.arange(users.size)  # the simulator breaks time ties by the row's index
    want = clipped_sums(users, ts, index, publishers, np.ones(users.size), 3, bound)
    np.testing.assert_allclose(got, want, atol=1e-12)


def test_the_event_model_and_the_evaluation_summaries_are_the_specification() -> None:
    rng = np.random.default_rng(5)
    n = 4000
    table = ConversionSet(
        user=rng.integers(0, 300, n),
        day=rng.integers(0, 4, n),
        time_ms=rng.integers(0, 5, n) * 1000,  # few instants: many ties
        publisher=rng.integers(0, 6, n),
        n_users=300,
        n_days=4,
        n_publishers=6,
    )
    prepared = prepare(table, global_bound=8)
    for day in range(4):
        on_day = np.flatnonzero(table.day == day)
        for bound in (0.0, 0.4, 1.0, 2.75, 9.0):
            want = clipped_sums(
                table.user[on_day],
                table.time_ms[on_day],
                on_day,  # the model breaks time ties by the conversion's index
                table.publisher[on_day],
                np.ones(on_day.size),
                6,
                bound,
            )
            if bound > 0:  # the model refuses a zero bound (the platform floors bounds above 0)
                np.testing.assert_allclose(table.clipped_vector(day, bound), want, atol=1e-9)
            np.testing.assert_allclose(prepared.day_clipped(day, bound), want, atol=1e-9)
    assert math.isclose(float(table.clipped_vector(0, 1e9).sum()), float(np.sum(table.day == 0)))

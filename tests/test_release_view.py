"""The post-processing `releases --json` adds for a campaign with cells (release_view.py)."""

from __future__ import annotations

import numpy as np

from dp_platform.cells import CellLayout
from dp_platform.consistency import isotonic_cumulative
from dp_platform.release_view import prefix_isotonic, total_levels


def test_one_pass_gives_every_days_projection_of_the_series_so_far() -> None:
    rng = np.random.default_rng(5)
    days = 40
    # small increments against the noise: the running sums dip often, some below zero
    series = np.cumsum(rng.normal(0.3, 2.0, size=(60, days)), axis=1)
    series[:5] = np.round(series[:5])  # ties between neighbours
    sigmas = np.sqrt(np.cumsum(rng.uniform(0.5, 3.0, size=(60, days)) ** 2, axis=1))
    fast, whole = prefix_isotonic(series, sigmas)
    np.testing.assert_allclose(whole, isotonic_cumulative(series, sigmas), rtol=1e-12, atol=1e-9)
    assert np.all(np.diff(whole, axis=1) >= 0) and np.array_equal(whole[:, -1], fast[:, -1])
    moved = 0
    for day in range(1, days + 1):
        slow = isotonic_cumulative(series[:, :day], sigmas[:, :day])[:, -1]
        np.testing.assert_allclose(fast[:, day - 1], slow, rtol=1e-12, atol=1e-9)
        moved += int(np.sum(slow != series[:, day - 1]))
    assert moved > 100  # the projection was active, not the identity
    assert np.all(fast >= 0)


def test_total_levels_are_every_non_empty_subset_of_publisher_and_dimensions() -> None:
    layout = CellLayout(
        ("p", "q"), (("region", ("n", "s")), ("device", ("m", "d", "t"))), ("count",)
    )
    levels = total_levels(layout)
    assert len(levels) == len(set(levels)) == 7
    assert ("publisher",) in levels and ("region", "device") in levels
    assert ("publisher", "region", "device") in levels
    plain = CellLayout(("p",), (), ("count", "value"), value_cap=1.0)
    assert total_levels(plain) == [("publisher",)]

"""The post-processing `releases --json` adds for a campaign with cells (release_view.py)."""

from __future__ import annotations

import numpy as np
import pytest

from dp_platform.cells import CellLayout
from dp_platform.consistency import isotonic_cumulative
from dp_platform.release_view import prefix_isotonic, total_levels
from tests import to_date_runs


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


# -- campaign-to-date numbers: unbiased and additive (issue 28) ----------------------------------

RUNS = 200


def test_the_sum_of_the_campaign_to_date_cells_is_unbiased_over_seeded_runs() -> None:
    """Over 200 seeded runs of a sparse small layout with a known truth (tests/to_date_runs.py),
    the campaign total to date as shown — the grand total's ``value`` and the sum of the cells'
    ``value`` — is centred on the true total: mean error within 2 standard errors of 0. The
    per-cell projection summed (the published value before issue 28) is +66 % here: it fails
    this test, and the test checks that it still would, so the runs can tell a bias apart."""
    errors = to_date_runs.last_day_errors(RUNS)
    for name in ("cells_value", "total_value"):
        e = errors[name]
        assert abs(e.mean()) < 2 * e.std(ddof=1) / np.sqrt(RUNS), name
    np.testing.assert_array_equal(errors["cells_value"], errors["total_value"])  # exact sums
    biased = errors["cells_projected"]
    assert biased.mean() > 10 * biased.std(ddof=1) / np.sqrt(RUNS)


def test_every_campaign_to_date_total_is_exactly_the_sum_of_its_cells_on_every_day() -> None:
    """Every total to date (every level, every day, and the series) equals the sum of the cells
    to date it covers, bit for bit, with se² the sum of theirs; the projected numbers do not add
    up (why they are not what totals show)."""
    layout = to_date_runs.LAYOUT
    rows = to_date_runs.run(7, to_date_runs.truth()).rows
    axes = ("publisher", *layout.dimension_names)
    not_additive = 0
    for day in range(1, to_date_runs.DAYS + 1):
        shown = rows.day_rows(day)
        cells, totals = shown[: layout.size], shown[layout.size :]
        assert len(totals) == (5 * 3 * 4) - layout.size  # (4+1)·(2+1)·(3+1) labels, less cells
        for total in totals:
            covered = [c for c in cells if all(total[a] in ("all", c[a]) for a in axes)]
            assert total["value"] == sum(c["value"] for c in covered), (day, total)
            assert total["se"] ** 2 == pytest.approx(sum(c["se"] ** 2 for c in covered))
            not_additive += total["projected"] != pytest.approx(
                sum(c["projected"] for c in covered)
            )
    assert not_additive > 0
    # the series (what plots draw) holds each day's published number: nothing is revised later
    series = rows.series()
    for day in range(1, to_date_runs.DAYS + 1):
        published = [row["value"] for row in rows.day_rows(day)]
        assert [s["value"][day - 1] for s in series] == published

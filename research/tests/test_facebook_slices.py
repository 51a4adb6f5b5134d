"""The age × gender demo on Facebook-shaped data (dp_research.evaluation.facebook_slices)."""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from dp_platform.consistency import PUBLISHER
from dp_platform.events.facebook import default_facebook_path, facebook_ad_groups
from dp_platform.privacy.noise import SeededNoise
from dp_research.evaluation.facebook_slices import (
    SliceSettings,
    _cells,
    _spread,
    facebook_slices,
    period_table,
    slice_layout,
)


class _Recording(SeededNoise):
    """Seeded noise that records what each Gaussian draw declared."""

    def __init__(self, seed: int) -> None:
        super().__init__(seed)
        self.declared: list[tuple[float, float, Fraction]] = []

    def add_gaussian(self, values, scale, *, l2_sensitivity, rho):  # type: ignore[override]
        self.declared.append((scale, l2_sensitivity, Fraction(rho)))
        return super().add_gaussian(values, scale, l2_sensitivity=l2_sensitivity, rho=rho)


def test_the_demo_charges_exactly_rho_and_each_draw_declares_its_bound(
    facebook_csv: Callable[..., Path],
) -> None:
    groups = facebook_ad_groups(facebook_csv())
    settings = SliceSettings(days=5, rho=0.5, conversion_bound=2.0, spend_cap=15.0)
    noise = _Recording(1)
    release = facebook_slices(groups, settings, noise)
    assert release.rho_charged == Fraction(1, 2)
    assert sum(rho for _, _, rho in noise.declared) == Fraction(1, 2)
    assert len(noise.declared) == 2 * settings.days
    for scale, sensitivity, rho in noise.declared:
        assert sensitivity in (2.0, 15.0)
        assert sensitivity**2 / (2 * scale**2) <= float(rho)  # ρ = Δ²/(2σ²) fits the charge


def test_removing_any_ad_group_moves_each_days_vector_by_at_most_the_bound(
    facebook_csv: Callable[..., Path],
) -> None:
    """The sensitivity the draws declare, brute-forced: drop each group in turn."""
    groups = facebook_ad_groups(facebook_csv(rows=24))
    settings = SliceSettings(days=4, conversion_bound=1.0, spend_cap=8.0, seed=3)
    layout = slice_layout(groups)
    conversions, spend = _spread(groups, settings)
    _, clipped = _cells(groups, (conversions, spend), settings, layout)
    for drop in range(groups.n_groups):
        keep = (np.arange(groups.n_groups) != drop)[:, None]
        neighbour = (conversions * keep, spend * keep)  # the other groups' days are unchanged
        _, without = _cells(groups, neighbour, settings, layout)
        change = np.sqrt(((clipped - without) ** 2).sum(axis=(1, 2, 3)))  # (days, measures)
        assert np.all(change[:, 0] <= settings.conversion_bound + 1e-9)
        assert np.all(change[:, 1] <= settings.spend_cap + 1e-9)
        assert change.max() > 0 or groups.approved[drop] == 0 == groups.spent[drop]


def test_every_total_equals_the_sum_of_its_slices(facebook_csv: Callable[..., Path]) -> None:
    groups = facebook_ad_groups(facebook_csv())
    release = facebook_slices(groups, SliceSettings(days=6), SeededNoise(2))
    for day in range(6):
        cells = release.day_totals(day, (PUBLISHER,)).values  # age × gender × measure
        by_age = release.day_totals(day, (PUBLISHER, "gender")).values
        total = release.day_totals(day, (PUBLISHER, "age", "gender")).values
        np.testing.assert_array_equal(by_age, cells.sum(axis=1))  # exact, not up to rounding
        np.testing.assert_array_equal(total, by_age.sum(axis=0))
    period = release.period_totals((PUBLISHER, "age", "gender")).values
    daily = [release.day_totals(d, (PUBLISHER, "age", "gender")).values for d in range(6)]
    np.testing.assert_array_equal(period, np.sum(daily, axis=0))  # period = Σ days, exactly
    rows = period_table(release)
    for measure in ("approved_conversions", "spent"):
        slices = [
            r for r in rows if r["measure"] == measure and "all" not in (r["age"], r["gender"])
        ]
        overall = next(
            r for r in rows if r["measure"] == measure and r["age"] == r["gender"] == "all"
        )
        assert overall["value"] == sum(r["value"] for r in slices)
        assert overall["se"] ** 2 == pytest.approx(sum(r["se"] ** 2 for r in slices), rel=1e-12)
        assert all(r["ci_low"] < r["value"] < r["ci_high"] for r in rows)


def test_clipping_keeps_the_truth_at_or_below_the_unclipped(
    facebook_csv: Callable[..., Path],
) -> None:
    groups = facebook_ad_groups(facebook_csv())
    release = facebook_slices(groups, SliceSettings(days=3, spend_cap=1.0), SeededNoise(3))
    assert np.all(release.clipped <= release.unclipped + 1e-9)
    assert release.unclipped[..., 0].sum() == groups.approved.sum()
    assert release.unclipped[..., 1].sum() == pytest.approx(groups.spent.sum())


def test_a_bad_row_is_refused_with_its_number_and_rule(facebook_csv: Callable[..., Path]) -> None:
    with pytest.raises(ValueError, match=r"row 8: Spent must be a number >= 0"):
        facebook_ad_groups(facebook_csv(spent="-3.5"))


@pytest.mark.skipif(not default_facebook_path().is_file(), reason="Facebook data not present")
def test_the_real_file_has_the_audience_and_totals_the_demo_uses() -> None:
    groups = facebook_ad_groups()
    assert groups.n_groups == 1143
    assert groups.age_values == ("30-34", "35-39", "40-44", "45-49")
    assert groups.gender_values == ("F", "M")
    assert groups.approved.sum() == 1079
    assert groups.spent.sum() == pytest.approx(58705.23, abs=0.01)

"""Daily noisy slices by age × gender on the Facebook ad data, with intervals and totals.

The demo of a breakdown release on real data (docs/slices.md#facebook-age--gender). Like the
paper we take each **ad group as the privacy unit** (the file has no users); each group's
``Approved_Conversion`` is spread uniformly at random over the days (seeded — the file has no
dates) and its ``Spent`` evenly over them (spend accrues with delivery; the file has no daily
figure either).

Mechanism (one Gaussian vector per day and measure):

- privacy unit: an ad group; adjacency: add/remove one group (its rows on every day);
- each group's day is clipped to ``conversion_bound`` conversions and ``spend_cap`` of spend; a
  group is in one age × gender cell, so one day's vector of a measure changes in one cell by at
  most its bound: ℓ2 sensitivity = ``conversion_bound`` (counts), ``spend_cap`` (spend);
- cost: each of the 2·days draws is charged ρ/(2·days) (σ = bound/√(2·ρ/(2·days))), so the
  whole demo is ρ-zCDP by composition (the sampler checks each draw against OpenDP's map).

Everything after the draws is post-processing (dp_platform/consistency.py): totals by age, by
gender and overall are sums of the same noisy cells (so a slice never disagrees with its
total), each with its exact noise-only 95 % interval, and the campaign-to-date totals are
projected onto non-negative, non-decreasing series. **Evaluation, not a release**: the noise
source is a parameter (seeded in the demo, as in the rest of ``dp_research.evaluation``), and the
truth is reported next to the estimates — fine for a public file, never for a client's data.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from dp_platform.consistency import (
    MEASURE,
    PUBLISHER,
    CellLayout,
    Totals,
    derived_totals,
    isotonic_cumulative,
    normal_interval,
    on_grid,
)
from dp_platform.events.facebook import AdGroups
from dp_platform.privacy.noise import NoiseSource

__all__ = [
    "MEASURES",
    "SliceRelease",
    "SliceSettings",
    "facebook_slices",
    "period_table",
    "slice_layout",
]

MEASURES = ("approved_conversions", "spent")
_ROUND_UP = 1.0 + 1e-9  # σ a hair above the exact value: OpenDP's map is checked on a grid


@dataclass(frozen=True)
class SliceSettings:
    """Public parameters of the demo, fixed before looking at the data."""

    days: int = 31
    rho: float = 1.0
    conversion_bound: float = 2.0  # conversions per ad group and day
    spend_cap: float = 10.0  # spend per ad group and day (the file's currency)
    seed: int = 0  # spreads the conversions over the days (data, not noise)

    def __post_init__(self) -> None:
        if self.days < 1 or not (self.rho > 0 and self.conversion_bound > 0 and self.spend_cap > 0):
            raise ValueError("days must be >= 1 and rho, conversion_bound, spend_cap > 0")

    @property
    def rho_per_draw(self) -> Fraction:
        return Fraction(repr(self.rho)) / (2 * self.days)

    def sigmas(self) -> tuple[float, float]:
        """σ of the count and of the spend draws: bound / √(2·ρ_draw), rounded up a hair."""
        root = float(2 * self.rho_per_draw) ** 0.5
        return (self.conversion_bound / root * _ROUND_UP, self.spend_cap / root * _ROUND_UP)


def slice_layout(groups: AdGroups) -> CellLayout:
    """One publisher, age × gender, the two measures."""
    return CellLayout(
        publishers=("facebook",),
        dimensions=(("age", groups.age_values), ("gender", groups.gender_values)),
        measures=MEASURES,
    )


@dataclass(frozen=True)
class SliceRelease:
    """The demo's output: per-day noisy cells, their σ, and the (public-data) truth."""

    layout: CellLayout
    settings: SliceSettings
    noisy: np.ndarray  # (days, *layout.shape)
    sigmas: np.ndarray  # (days, *layout.shape)
    clipped: np.ndarray  # truth after clipping (what the noise is centred on)
    unclipped: np.ndarray  # truth before clipping
    rho_charged: Fraction

    def day_totals(self, day: int, over: tuple[str, ...]) -> Totals:
        """Day ``day``'s totals over ``over`` (0-based day), from its noisy cells."""
        return derived_totals(self.layout, self.noisy[day], self.sigmas[day], over)

    def period_totals(self, over: tuple[str, ...]) -> Totals:
        """Totals of the whole period over ``over``: sums over days and axes of the same cells."""
        daily = on_grid(self.noisy)  # the released daily cells: the period sums them exactly
        return derived_totals(
            self.layout, daily.sum(axis=0), np.sqrt((self.sigmas**2).sum(axis=0)), over
        )

    def cumulative(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Campaign-to-date totals per measure (measure × day): raw, projected, and their SE."""
        over = tuple(name for name in self.layout.axis_names if name != MEASURE)
        daily = np.stack([self.day_totals(d, over).values for d in range(len(self.noisy))], 1)
        variances = np.stack(
            [self.day_totals(d, over).standard_errors ** 2 for d in range(len(self.noisy))], 1
        )
        raw = np.cumsum(daily, axis=1)
        se = np.sqrt(np.cumsum(variances, axis=1))
        return raw, isotonic_cumulative(raw, se), se


def _spread(groups: AdGroups, settings: SliceSettings) -> tuple[np.ndarray, np.ndarray]:
    """(groups × days) conversions (spread at random, seeded) and spend (spread evenly).

    This is data preparation (the file has no dates), not part of the mechanism.
    """
    rng = np.random.default_rng(settings.seed)
    days = settings.days
    group_of = np.repeat(np.arange(groups.n_groups), groups.approved)
    day_of = rng.integers(0, days, size=len(group_of))
    conversions = np.zeros((groups.n_groups, days))
    np.add.at(conversions, (group_of, day_of), 1.0)
    spend = np.repeat((groups.spent / days)[:, None], days, axis=1)
    return conversions, spend


def _cells(
    groups: AdGroups,
    per_group_day: tuple[np.ndarray, np.ndarray],
    settings: SliceSettings,
    layout: CellLayout,
) -> tuple[np.ndarray, np.ndarray]:
    """(days, *shape) cells before and after each group's day is clipped to its bounds."""
    days = per_group_day[0].shape[1]
    unclipped = np.zeros((days, *layout.shape))
    clipped = np.zeros((days, *layout.shape))
    bounds = (settings.conversion_bound, settings.spend_cap)
    for m, (raw, bound) in enumerate(zip(per_group_day, bounds, strict=True)):
        for day in range(days):
            np.add.at(unclipped[day, 0, :, :, m], (groups.age, groups.gender), raw[:, day])
            kept = np.minimum(raw[:, day], bound)
            np.add.at(clipped[day, 0, :, :, m], (groups.age, groups.gender), kept)
    return unclipped, clipped


def facebook_slices(groups: AdGroups, settings: SliceSettings, noise: NoiseSource) -> SliceRelease:
    """Every day's age × gender cells of both measures, noised (module doc: cost ρ)."""
    layout = slice_layout(groups)
    unclipped, clipped = _cells(groups, _spread(groups, settings), settings, layout)
    noisy = np.empty_like(clipped)
    sigmas = np.empty_like(clipped)
    charged = Fraction(0)
    bounds = (settings.conversion_bound, settings.spend_cap)
    for day in range(settings.days):
        for m, (sigma, bound) in enumerate(zip(settings.sigmas(), bounds, strict=True)):
            cells = clipped[day, ..., m]
            noisy[day, ..., m] = noise.add_gaussian(
                cells.ravel(), sigma, l2_sensitivity=bound, rho=settings.rho_per_draw
            ).reshape(cells.shape)
            sigmas[day, ..., m] = sigma
            charged += settings.rho_per_draw
    return SliceRelease(layout, settings, noisy, sigmas, clipped, unclipped, charged)


def period_table(release: SliceRelease, day: int | None = None) -> list[dict[str, object]]:
    """Rows of the age × gender table with its totals: the whole period, or day ``day``."""
    rows: list[dict[str, object]] = []
    layout = release.layout
    if day is None:
        truth_cells = release.clipped.sum(axis=0)
        raw_cells = release.unclipped.sum(axis=0)
    else:
        truth_cells, raw_cells = release.clipped[day], release.unclipped[day]
    ages = dict(layout.dimensions)["age"]
    genders = dict(layout.dimensions)["gender"]
    for over, label in (
        ((PUBLISHER,), lambda i: (ages[i[0]], genders[i[1]])),
        ((PUBLISHER, "gender"), lambda i: (ages[i[0]], "all")),
        ((PUBLISHER, "age"), lambda i: ("all", genders[i[0]])),
        ((PUBLISHER, "age", "gender"), lambda i: ("all", "all")),
    ):
        totals = release.period_totals(over) if day is None else release.day_totals(day, over)
        low, high = normal_interval(totals.values, totals.standard_errors)
        summed = tuple(layout.summed_axes(over))
        clipped = truth_cells.sum(axis=summed)
        unclipped = raw_cells.sum(axis=summed)
        for index in np.ndindex(totals.values.shape[:-1]):
            age, gender = label(index)
            for m, measure in enumerate(MEASURES):
                at = (*index, m)
                rows.append(
                    {
                        "age": age,
                        "gender": gender,
                        "measure": measure,
                        "value": float(totals.values[at]),
                        "se": float(totals.standard_errors[at]),
                        "ci_low": float(low[at]),
                        "ci_high": float(high[at]),
                        "clipped_truth": float(clipped[at]),
                        "truth": float(unclipped[at]),
                    }
                )
    return rows

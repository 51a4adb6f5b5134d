"""What consistency post-processing gains, measured with the same seeds before and after.

Two measurements (docs/slices.md):

1. **Isotonic projection of cumulative answers** on the paper's datasets: AdsBPC's real
   mechanism (:func:`~.adsbpc_runs.run_adsbpc`, seeded) releases every day's per-publisher
   vector; the prefix answers are its cumulative sums, released as they are ("raw"), projected
   onto non-negative non-decreasing series (:func:`dp_platform.consistency.isotonic_cumulative`),
   or from daily values clipped at 0 (the other obvious fix, for comparison). Error: the prefix
   WRMSE with γ² = (1, …, 1, 49) against the unclipped truth (clipping bias counts, as in
   docs/results.md) and against the clipped truth (the noise alone); plus the share of 95 %
   intervals (unprojected half-width) that contain the clipped truth.
2. **Totals from cells, measured directly, or WLS-combined** on the event-level generator's
   cells (publisher × region × device × {count, value}). Per day and measure the same ρ is
   spent three ways: all on the cells (totals derived), all on one level of totals (only those
   exist), or split evenly between cells, publisher totals and the grand total and combined by
   weighted least squares. The errors are those of unbiased linear estimators, so the exact
   standard errors say everything; the seeded repeats check them.

3. **Coverage of the published campaign-to-date interval** (:func:`isotonic_coverage`): the
   projected value ± 1.96·se of the unprojected running sum, as ``releases --json`` publishes
   it, on fixed truth shapes, per day, both as of day d and in the latest fit.

Evaluation on synthetic or public data with seeded noise (see :mod:`.adsbpc_runs`): not a
release.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from fractions import Fraction

import numpy as np

from dp_platform.consistency import (
    PUBLISHER,
    CellLayout,
    Measured,
    derived_totals,
    isotonic_cumulative,
    normal_interval,
    wls_combine,
)
from dp_platform.events import generate_campaign
from dp_platform.events.model import US_PER_DAY, epoch_us
from dp_platform.mechanisms.adsbpc import make_plan
from dp_platform.privacy.noise import NoiseSource, SeededNoise
from dp_platform.release_view import prefix_isotonic
from dp_research.baselines import prefix, prefix_weights
from dp_research.evaluation.adsbpc_runs import campaign_for, run_adsbpc
from dp_research.evaluation.datasets import dataset_spec
from dp_research.evaluation.events_data import last_touch
from dp_research.evaluation.experiment import ExperimentConfig, noise_seed, prepare_dataset
from dp_research.evaluation.metrics import wrmse

__all__ = [
    "TRUTH_SHAPES",
    "CellGain",
    "CumulativeCellGain",
    "IsotonicCoverage",
    "IsotonicGain",
    "cumulative_cells_gain",
    "generator_cells",
    "isotonic_coverage",
    "isotonic_gain",
    "totals_gain",
]

START = date(2026, 3, 1)
_LEVELS = {
    "cells": (),
    "publisher totals": ("region", "device"),
    "region totals": (PUBLISHER, "device"),
    "grand total": (PUBLISHER, "region", "device"),
}


@dataclass(frozen=True)
class IsotonicGain:
    """Prefix WRMSE of AdsBPC's cumulative answers, raw / projected / from clipped days."""

    dataset: str
    users: int
    publishers: int
    repeats: int
    raw: float
    projected: float
    daily_clipped: float
    raw_noise: float  # against the clipped truth: the noise alone
    projected_noise: float
    coverage_raw: float  # share of 95 % intervals containing the clipped truth
    coverage_projected: float


def isotonic_gain(
    dataset: str, *, users: int, publishers: int, repeats: int, rho: float = 1.0, seed: int = 0
) -> IsotonicGain:
    """AdsBPC on ``dataset`` (n = 31, prefix workload), ``repeats`` seeded runs."""
    config = ExperimentConfig(
        dataset, users=users, publishers=publishers, repeats=repeats, rho=rho, seed=seed
    )
    data, _ = prepare_dataset(config)
    workload = prefix(config.days)
    plan = make_plan(campaign_for(workload, rho=rho, cap=dataset_spec(dataset).cap))
    weights = prefix_weights(config.days)
    truth = np.cumsum(data.truth, axis=1)
    runs: dict[str, list[np.ndarray]] = {"raw": [], "projected": [], "daily": [], "clipped": []}
    covered: dict[str, list[np.ndarray]] = {"raw": [], "projected": []}
    for repeat in range(repeats):
        run = run_adsbpc(plan, data, SeededNoise(noise_seed(seed, "adsbpc", repeat)))
        raw = np.cumsum(run.released, axis=1)
        se = np.sqrt(np.cumsum(run.sigmas**2))
        projected = isotonic_cumulative(raw, np.broadcast_to(se, raw.shape))
        clipped_truth = np.cumsum(data.per_day_clipped(run.bounds), axis=1)
        runs["raw"].append(raw)
        runs["projected"].append(projected)
        runs["daily"].append(np.cumsum(np.maximum(run.released, 0.0), axis=1))
        runs["clipped"].append(clipped_truth)
        for name, estimate in (("raw", raw), ("projected", projected)):
            low, high = normal_interval(estimate, se)
            covered[name].append((low <= clipped_truth) & (clipped_truth <= high))
    stack = {name: np.stack(values) for name, values in runs.items()}

    def noise_only(name: str) -> float:
        errors = ((stack[name] - stack["clipped"]) ** 2).mean(axis=0)
        return float(np.sqrt((errors @ weights / weights.sum()).mean()))

    return IsotonicGain(
        dataset=dataset,
        users=data.n_users,
        publishers=data.n_publishers,
        repeats=repeats,
        raw=wrmse(stack["raw"], truth, weights),
        projected=wrmse(stack["projected"], truth, weights),
        daily_clipped=wrmse(stack["daily"], truth, weights),
        raw_noise=noise_only("raw"),
        projected_noise=noise_only("projected"),
        coverage_raw=float(np.mean(covered["raw"])),
        coverage_projected=float(np.mean(covered["projected"])),
    )


def generator_cells(
    *, seed: int, users: int, publishers: int, conversions: int, days: int
) -> tuple[CellLayout, np.ndarray]:
    """(days, *layout.shape) true cells of the event-level generator: count and value sum."""
    events = generate_campaign(
        seed=seed,
        users=users,
        publishers=publishers,
        impressions=10 * conversions,
        conversions=conversions,
        days=days,
        start=START,
        value_median=40.0,
        dimensions=True,
    )
    regions, region = events.conv_dimensions["region"]
    devices, device = events.conv_dimensions["device"]
    layout = CellLayout(
        publishers=tuple(events.publisher_name(p) for p in range(publishers)),
        dimensions=(("region", regions), ("device", devices)),
        measures=("conversions", "value"),
    )
    publisher = last_touch(events)
    day = ((events.conv_ts - epoch_us(START)) // US_PER_DAY).astype(np.int64)
    kept = publisher >= 0
    cells = np.zeros((days, *layout.shape))
    index = (day[kept], publisher[kept], region[kept], device[kept])
    np.add.at(cells[..., 0], index, 1.0)
    np.add.at(cells[..., 1], index, events.conv_value[kept])
    return layout, cells


@dataclass(frozen=True)
class CellGain:
    """RMSE of each level's answers under one way of spending a day's ρ (None: not released)."""

    strategy: str
    measure: str
    analytic: dict[str, float | None]
    empirical: dict[str, float | None]


def _strategies() -> dict[str, dict[str, Fraction]]:
    """Share of a measure's daily ρ spent on each measured level."""
    third = Fraction(1, 3)
    return {
        "cells only (totals derived)": {"cells": Fraction(1)},
        "publisher totals only": {"publisher totals": Fraction(1)},
        "grand total only": {"grand total": Fraction(1)},
        "cells + publisher + grand, WLS": {
            "cells": third,
            "publisher totals": third,
            "grand total": third,
        },
    }


def totals_gain(
    layout: CellLayout,
    cells: np.ndarray,
    *,
    rho_per_day: float,
    bounds: tuple[float, float],
    repeats: int,
    seed: int = 0,
) -> list[CellGain]:
    """Every strategy × measure: exact and seeded-empirical RMSE of each level's answers.

    ``bounds`` are each user's per-day contribution bounds (count, value): any one level's
    vector changes by at most that in ℓ2 when a user is added or removed (a user's clipped day
    spread over cells has ℓ1, hence ℓ2, at most the bound, and summing cells cannot raise
    it), so a level measured at ρ_level has σ = bound/√(2ρ_level).
    """
    out: list[CellGain] = []
    rho = Fraction(repr(rho_per_day))
    for strategy, shares in _strategies().items():
        for m, measure in enumerate(layout.measures):
            sub = CellLayout(layout.publishers, layout.dimensions, (measure,))
            truth = cells[..., m : m + 1]
            levels = {
                name: (over, float(bounds[m]) / float(2 * rho * share) ** 0.5, rho * share)
                for name, share in shares.items()
                for over in (_LEVELS[name],)
            }
            analytic = _analytic(sub, levels)
            squared: dict[str, list[float]] = {name: [] for name in _LEVELS}
            for repeat in range(repeats):
                stream = np.random.SeedSequence([seed, m, repeat]).generate_state(1, np.uint64)
                noise = SeededNoise(int(stream[0]))
                for day in range(truth.shape[0]):
                    answers = _answers(sub, truth[day], levels, bounds[m], noise)
                    for name, estimate in answers.items():
                        exact = derived_totals(sub, truth[day], np.ones(sub.shape), _LEVELS[name])
                        squared[name].append(float(((estimate - exact.values) ** 2).mean()))
            empirical = {
                name: (float(np.sqrt(np.mean(v))) if analytic[name] is not None else None)
                for name, v in squared.items()
            }
            out.append(CellGain(strategy, measure, analytic, empirical))
    return out


def _measure_levels(
    layout: CellLayout,
    truth: np.ndarray,
    levels: dict[str, tuple[tuple[str, ...], float, Fraction]],
    bound: float,
    noise: NoiseSource,
) -> list[Measured]:
    measured = []
    for over, sigma, rho in levels.values():
        exact = derived_totals(layout, truth, np.ones(layout.shape), over).values
        values = noise.add_gaussian(
            exact.ravel(), sigma * (1 + 1e-9), l2_sensitivity=bound, rho=rho
        )
        measured.append(Measured(over, values.reshape(exact.shape), np.full(exact.shape, sigma)))
    return measured


def _answers(
    layout: CellLayout,
    truth: np.ndarray,
    levels: dict[str, tuple[tuple[str, ...], float, Fraction]],
    bound: float,
    noise: NoiseSource,
) -> dict[str, np.ndarray]:
    """Each level's released answer under the strategy (only what it can answer)."""
    measured = _measure_levels(layout, truth, levels, bound, noise)
    if "cells" not in levels:  # only the measured level exists
        (only,) = measured
        name = next(iter(levels))
        return {name: only.values}
    combined = wls_combine(layout, measured)
    return {name: combined.totals(over).values for name, over in _LEVELS.items()}


def _analytic(
    layout: CellLayout, levels: dict[str, tuple[tuple[str, ...], float, Fraction]]
) -> dict[str, float | None]:
    """Exact RMSE (root mean variance) of each level under the strategy."""
    if "cells" not in levels:
        name = next(iter(levels))
        return {level: (levels[name][1] if level == name else None) for level in _LEVELS}
    zeros = np.zeros(layout.shape)
    measured = [
        Measured(over, derived_totals(layout, zeros, np.ones(layout.shape), over).values, sigma_of)
        for over, sigma, _ in levels.values()
        for sigma_of in (np.full(layout.kept_shape(over), sigma),)
    ]
    combined = wls_combine(layout, measured)
    return {
        name: float(np.sqrt((combined.totals(over).standard_errors ** 2).mean()))
        for name, over in _LEVELS.items()
    }


@dataclass(frozen=True)
class CumulativeCellGain:
    """RMSE of campaign-to-date cell answers, raw / projected / from clipped days, and coverage."""

    measure: str
    raw: float
    projected: float
    daily_clipped: float
    coverage_raw: float
    coverage_projected: float


def cumulative_cells_gain(
    layout: CellLayout,
    cells: np.ndarray,
    *,
    rho_per_day: float,
    bounds: tuple[float, float],
    repeats: int,
    seed: int = 0,
) -> list[CumulativeCellGain]:
    """Isotonic projection of every cell's campaign-to-date series (all of ρ on the cells).

    Cells are small (about one conversion per cell and day at the generator's defaults) next to
    their noise, where a cumulative series most often goes down or below zero.
    """
    out = []
    rho = Fraction(repr(rho_per_day))
    days = cells.shape[0]
    for m, measure in enumerate(layout.measures):
        sigma = float(bounds[m]) / float(2 * rho) ** 0.5
        truth = np.cumsum(np.moveaxis(cells[..., m], 0, -1), axis=-1)  # (*cells, days)
        se = sigma * np.sqrt(np.arange(1, days + 1))
        errors: dict[str, list[float]] = {"raw": [], "projected": [], "daily": []}
        covered: dict[str, list[float]] = {"raw": [], "projected": []}
        for repeat in range(repeats):
            stream = np.random.SeedSequence([seed, 7, m, repeat]).generate_state(1, np.uint64)
            noise = SeededNoise(int(stream[0]))
            daily = np.stack(
                [
                    noise.add_gaussian(
                        cells[d, ..., m].ravel(),
                        sigma * (1 + 1e-9),
                        l2_sensitivity=bounds[m],
                        rho=rho,
                    ).reshape(cells.shape[1:-1])
                    for d in range(days)
                ],
                axis=-1,
            )
            raw = np.cumsum(daily, axis=-1)
            projected = isotonic_cumulative(raw, np.broadcast_to(se, raw.shape))
            clipped_days = np.cumsum(np.maximum(daily, 0.0), axis=-1)
            for name, estimate in (("raw", raw), ("projected", projected), ("daily", clipped_days)):
                errors[name].append(float(((estimate - truth) ** 2).mean()))
            for name, estimate in (("raw", raw), ("projected", projected)):
                low, high = normal_interval(estimate, se)
                covered[name].append(float(((low <= truth) & (truth <= high)).mean()))
        out.append(
            CumulativeCellGain(
                measure=measure,
                raw=float(np.sqrt(np.mean(errors["raw"]))),
                projected=float(np.sqrt(np.mean(errors["projected"]))),
                daily_clipped=float(np.sqrt(np.mean(errors["daily"]))),
                coverage_raw=float(np.mean(covered["raw"])),
                coverage_projected=float(np.mean(covered["projected"])),
            )
        )
    return out


def _shape(days: int, **increments: float) -> np.ndarray:
    """A daily truth: ``d<N>=x`` puts x on day N (1-based), everything else 0."""
    daily = np.zeros(days)
    for key, value in increments.items():
        daily[int(key[1:]) - 1] = value
    return daily


TRUTH_SHAPES: dict[str, np.ndarray] = {
    "zero (an empty cell)": np.zeros(31),
    "sparse: 1 on days 5, 12, 20, 27": _shape(31, d5=1, d12=1, d20=1, d27=1),
    "0 for 10 days, then 5 a day": np.r_[np.zeros(10), np.full(21, 5.0)],
    "steady, 5 a day": np.full(31, 5.0),
    "step: 100 on day 16, else 0": _shape(31, d16=100),
    "step: 20 on day 2, else 0": _shape(31, d2=20),
    "burst: 100 on day 1, else 0": _shape(31, d1=100),
    "large, 1000 a day": np.full(31, 1000.0),
}
"""Daily true counts (31 days) for the campaign-to-date coverage, against σ = 4 per day: the
shapes where a non-negative, non-decreasing projection can bite (at or near 0, flat stretches,
a jump followed by nothing) and one far from every constraint."""


@dataclass(frozen=True)
class IsotonicCoverage:
    """Share of runs whose 95 % interval holds the true running sum, per day (index d−1):
    ``raw`` the unprojected sum, ``as_of`` the number published on day d (fit over days 1..d),
    ``latest`` day d of the fit over every day (the document's top-level series)."""

    shape: str
    runs: int
    raw: tuple[float, ...]
    as_of: tuple[float, ...]
    latest: tuple[float, ...]

    def summary(self, kind: str) -> tuple[float, float, float]:
        """(min over days, median over days, overall) of ``kind``'s coverage."""
        per_day = np.asarray(getattr(self, kind))
        return float(per_day.min()), float(np.median(per_day)), float(per_day.mean())


def isotonic_coverage(
    shapes: dict[str, np.ndarray] | None = None,
    *,
    sigma: float = 4.0,
    runs: int = 4000,
    seed: int = 0,
) -> list[IsotonicCoverage]:
    """Coverage of the campaign-to-date interval ``releases --json`` publishes for a cell with
    independent days (AdsBPC, cells): daily noise N(0, σ²), se_d = σ√d, the projection and the
    interval computed by the published code (:func:`~dp_platform.release_view.prefix_isotonic`,
    :func:`~dp_platform.consistency.normal_interval`). One seeded stream per shape."""
    out = []
    for number, (name, daily) in enumerate((shapes or TRUTH_SHAPES).items()):
        days = daily.size
        rng = np.random.default_rng([seed, 24, number])
        truth = np.cumsum(daily)
        se = np.broadcast_to(sigma * np.sqrt(np.arange(1, days + 1)), (runs, days))
        raw = np.cumsum(daily + rng.normal(0.0, sigma, size=(runs, days)), axis=1)
        as_of, latest = prefix_isotonic(raw, se)
        shares = [_covered(estimate, se, truth) for estimate in (raw, as_of, latest)]
        out.append(IsotonicCoverage(name, runs, *shares))
    return out


def _covered(estimate: np.ndarray, se: np.ndarray, truth: np.ndarray) -> tuple[float, ...]:
    """Per day (column), the share of runs (rows) whose 95 % interval holds the truth."""
    low, high = normal_interval(estimate, se)
    return tuple(((low <= truth) & (truth <= high)).mean(axis=0).tolist())

"""Seeded runs of a small broken-down campaign's releases with a known truth, read through the
release view (dp_platform/release_view.py): what the campaign-to-date numbers' errors are.

4 publishers × 2 regions × 3 devices of counts over 14 days, each cell's day drawn once from a
sparse truth (Poisson 0.5: about one conversion every other day, against σ = 4 per cell-day —
the regime of the demo's sliced campaign, where running sums dip and the per-cell projection
moves them). Each run adds Gaussian noise through :class:`SeededNoise` with its own seed;
nothing else changes between runs. No Dagster: the release view is post-processing of
released cells, so the published days are built directly from the noisy entries.

``python -m tests.to_date_runs [RUNS]`` prints the mean relative error of Σ of the campaign-to-
date cells on the last day (published ``value`` and the labelled ``projected``) ± its standard
error: the before/after of issue 28 (``projected`` was the published ``value`` before).

Imported by tests/test_release_view.py; not a pytest conftest.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from dp_platform.cells import CellLayout, cell_records, published_values
from dp_platform.privacy.noise import SeededNoise
from dp_platform.publication import PublishedDay
from dp_platform.release_view import CumulativeRows

LAYOUT = CellLayout(
    ("p1", "p2", "p3", "p4"),
    (("region", ("north", "south")), ("device", ("mobile", "desktop", "tv"))),
    ("count",),
)
DAYS = 14
SIGMA = 4.0  # per cell and day; ρ = Δ²/(2σ²) at Δ = 1
TRUTH_SEED = 2028


def truth() -> np.ndarray:
    """Days × cells: the true (clipped) count of each cell on each day, fixed for every run."""
    rng = np.random.default_rng(TRUTH_SEED)
    return rng.poisson(0.5, size=(DAYS, LAYOUT.size)).astype(np.float64)


@dataclass(frozen=True)
class Run:
    """One seeded run: the published days and the campaign-to-date rows they give."""

    days: list[PublishedDay]
    rows: CumulativeRows


def run(seed: int, daily: np.ndarray) -> Run:
    """Release every day of ``daily`` with ``SeededNoise(seed)`` and read it as `releases` does."""
    noise = SeededNoise(seed)
    days = []
    for day, entries in enumerate(daily, start=1):
        noisy = noise.add_gaussian(
            entries, SIGMA, l2_sensitivity=1.0, rho=Fraction(1, int(2 * SIGMA**2))
        )
        cells = cell_records(LAYOUT, noisy, SIGMA)
        days.append(
            PublishedDay(
                day=day,
                bound=1.0,
                sigma=SIGMA,
                rho_charged=0.0,
                rho_spent=0.0,
                rho_planned=0.0,
                values={},
                answers={},
                answer_std={},
                value_std=SIGMA,
                cells=cells,
            )
        )
    return Run(days, CumulativeRows(LAYOUT, days))


def last_day_errors(runs: int, first_seed: int = 0) -> dict[str, np.ndarray]:
    """Per run, on the last day: Σ of the cells' ``value`` and ``projected``, and the grand
    total's ``value``, each minus the true campaign total (the rows are cells first)."""
    daily = truth()
    true_total = float(published_values(LAYOUT, daily.sum(axis=0)).sum())
    errors: dict[str, list[float]] = {
        "cells_value": [],
        "cells_projected": [],
        "total_value": [],
        "total_projected": [],
    }
    for seed in range(first_seed, first_seed + runs):
        rows = run(seed, daily).rows.day_rows(DAYS)
        cells, grand = rows[: LAYOUT.size], _grand_total(rows)
        errors["cells_value"].append(sum(float(r["value"]) for r in cells) - true_total)
        errors["cells_projected"].append(sum(float(r["projected"]) for r in cells) - true_total)
        errors["total_value"].append(float(grand["value"]) - true_total)
        errors["total_projected"].append(float(grand["projected"]) - true_total)
    return {name: np.asarray(values) for name, values in errors.items()}


def _grand_total(rows: list[dict]) -> dict:
    summed = ("publisher", *LAYOUT.dimension_names)
    (grand,) = [r for r in rows if all(r[a] == "all" for a in summed)]
    return grand


def main(argv: list[str]) -> int:
    runs = int(argv[0]) if argv else 200
    true_total = float(truth().sum())
    errors = last_day_errors(runs)
    print(
        f"{runs} seeded runs, {LAYOUT.size} cells × {DAYS} days, σ = {SIGMA:g} per cell-day, "
        f"true campaign total {true_total:g}; error of Σ campaign-to-date cells on day {DAYS}, "
        "mean ± standard error, relative to the true total:"
    )
    for name, label in (
        ("cells_projected", "Σ projected cells (the published value before issue 28)"),
        ("cells_value", "Σ running-sum cells (the published value now)"),
        ("total_projected", "grand total's projection (the published value before)"),
        ("total_value", "grand total's running sum (the published value now)"),
    ):
        e = errors[name]
        mean, se = e.mean() / true_total, e.std(ddof=1) / np.sqrt(e.size) / true_total
        print(f"  {label:<58} {100 * mean:+.1f} % ± {100 * se:.1f} %")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""The figures of docs/slices.md: the Facebook age × gender demo and the consistency gains.

``dp-platform evaluate --dataset facebook --slices age,gender`` prints the demo;
``dp-platform evaluate --consistency`` prints the gains tables, and
``dp-platform evaluate --isotonic-coverage`` (also part of ``--consistency``) the coverage of the
published campaign-to-date interval. All are evaluations with seeded noise on synthetic or
public data, not releases.
"""

from __future__ import annotations

from dataclasses import asdict

import numpy as np

from dp_platform.consistency import PUBLISHER, normal_interval
from dp_platform.events.facebook import AdGroups
from dp_platform.privacy.noise import SeededNoise
from dp_research.evaluation.consistency_gains import (
    cumulative_cells_gain,
    generator_cells,
    isotonic_coverage,
    isotonic_gain,
    totals_gain,
)
from dp_research.evaluation.facebook_slices import (
    MEASURES,
    SliceSettings,
    facebook_slices,
    period_table,
)

__all__ = ["consistency_report", "coverage_report", "facebook_report"]

FACEBOOK_REPEATS = 60
_LEVELS = (
    (PUBLISHER,),
    (PUBLISHER, "gender"),
    (PUBLISHER, "age"),
    (PUBLISHER, "age", "gender"),
)


def _max_inconsistency(release) -> float:
    """Largest |total − Σ its slices| over every day, level and measure (float rounding only)."""
    worst = 0.0
    for day in range(release.settings.days):
        cells = release.day_totals(day, (PUBLISHER,)).values
        by_age = release.day_totals(day, (PUBLISHER, "gender")).values
        by_gender = release.day_totals(day, (PUBLISHER, "age")).values
        total = release.day_totals(day, (PUBLISHER, "age", "gender")).values
        for derived, summed in (
            (by_age, cells.sum(axis=1)),
            (by_gender, cells.sum(axis=0)),
            (total, by_age.sum(axis=0)),
            (total, by_gender.sum(axis=0)),
        ):
            worst = max(worst, float(np.abs(derived - summed).max()))
    return worst


def _coverage(groups: AdGroups, settings: SliceSettings, runs: int) -> dict[str, float]:
    """Share of period intervals (every level) containing the clipped / the unclipped truth."""
    hits: dict[str, list[np.ndarray]] = {
        f"{m} vs {t}": [] for m in MEASURES for t in ("clipped", "unclipped")
    }
    for run in range(runs):
        release = facebook_slices(groups, settings, SeededNoise(10_000 + run))
        for over in _LEVELS:
            totals = release.period_totals(over)
            low, high = normal_interval(totals.values, totals.standard_errors)
            summed = (0, *(1 + a for a in release.layout.summed_axes(over)))
            for truth_name, truth in (
                ("clipped", release.clipped),
                ("unclipped", release.unclipped),
            ):
                target = truth.sum(axis=summed)
                inside = (low <= target) & (target <= high)
                for m, measure in enumerate(MEASURES):
                    hits[f"{measure} vs {truth_name}"].append(inside[..., m].ravel())
    return {key: float(np.concatenate(v).mean()) for key, v in hits.items()}


def facebook_report(
    groups: AdGroups, settings: SliceSettings, *, noise_seed: int = 1, coverage_runs: int = 200
) -> tuple[str, dict]:
    """Markdown and JSON of the demo: period table, consistency check, cumulative, coverage."""
    release = facebook_slices(groups, settings, SeededNoise(noise_seed))
    rows = period_table(release)
    sigma_count, sigma_spend = settings.sigmas()
    lines = [
        f"ρ = {settings.rho:g} over n = {settings.days} days ({release.rho_charged} charged), "
        f"bounds per ad group and day: {settings.conversion_bound:g} conversions, "
        f"{settings.spend_cap:g} spend; σ per cell and day: {sigma_count:.2f} (conversions), "
        f"{sigma_spend:.2f} (spend).",
        "",
        "| age | gender | measure | noisy total | 95 % interval | clipped truth | truth |",
        "|---|---|---|---:|---|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['age']} | {r['gender']} | {r['measure']} | {r['value']:.1f} | "
            f"[{r['ci_low']:.1f}, {r['ci_high']:.1f}] | {r['clipped_truth']:.1f} | "
            f"{r['truth']:.1f} |"
        )
    last = settings.days - 1
    lines += [
        "",
        f"Day {settings.days} alone (every day is released like this):",
        "",
        "| age | gender | measure | noisy | 95 % interval | clipped truth |",
        "|---|---|---|---:|---|---:|",
    ]
    for r in period_table(release, last):
        lines.append(
            f"| {r['age']} | {r['gender']} | {r['measure']} | {r['value']:.1f} | "
            f"[{r['ci_low']:.1f}, {r['ci_high']:.1f}] | {r['clipped_truth']:.1f} |"
        )
    worst = _max_inconsistency(release)
    raw, projected, se = release.cumulative()
    changed = int((np.abs(raw - projected) > 1e-9).sum())
    coverage = _coverage(groups, settings, coverage_runs)
    lines += [
        "",
        f"Largest |total − Σ slices| over all {settings.days} days, levels and measures: "
        f"{worst:g} (the totals are sums of the same cells, on a 2⁻¹⁰ grid: exact).",
        f"Campaign-to-date totals: the projection changed {changed} of {raw.size} values.",
        "",
        f"Coverage of the period intervals over {coverage_runs} seeded runs (all levels):",
        "",
        "| measure | of the clipped truth | of the unclipped truth |",
        "|---|---:|---:|",
    ]
    for measure in MEASURES:
        lines.append(
            f"| {measure} | {100 * coverage[f'{measure} vs clipped']:.1f} % | "
            f"{100 * coverage[f'{measure} vs unclipped']:.1f} % |"
        )
    payload = {
        "settings": asdict(settings),
        "rho_charged": float(release.rho_charged),
        "rows": rows,
        "days": [period_table(release, day) for day in range(settings.days)],
        "max_inconsistency": worst,
        "cumulative": {
            "raw": raw.tolist(),
            "projected": projected.tolist(),
            "se": se.tolist(),
        },
        "coverage": coverage,
    }
    return "\n".join(lines), payload


def _fmt(value: float | None, digits: int = 2) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def coverage_report(*, runs: int = 4000, seed: int = 0) -> tuple[str, dict]:
    """The campaign-to-date coverage table of docs/slices.md#confidence-intervals."""
    results = isotonic_coverage(runs=runs, seed=seed)
    lines = [
        f"**Coverage of the campaign-to-date interval** ({runs} seeded runs per shape, seed "
        f"{seed}; 31 days, σ = 4 per day, independent days; projected value ± 1.96·se of the "
        "unprojected sum). Per day's coverage: min / median over the 31 days, then overall:",
        "",
        "| truth (daily counts) | raw | published as of day d | latest fit |",
        "|---|---|---|---|",
    ]
    for result in results:
        shown = [
            "{:.1f} / {:.1f} / {:.1f} %".format(*(100 * v for v in result.summary(kind)))
            for kind in ("raw", "as_of", "latest")
        ]
        lines.append(f"| {result.shape} | " + " | ".join(shown) + " |")
    return "\n".join(lines), {"isotonic_coverage": [asdict(r) for r in results]}


def consistency_report(
    *,
    paper_users: int = 100_000,
    paper_publishers: int = 100,
    paper_repeats: int = 10,
    datasets: tuple[str, ...] = ("zipf", "normal", "uniform", "facebook"),
    generator_repeats: int = 20,
    seed: int = 0,
) -> tuple[str, dict]:
    """The three tables of docs/slices.md#what-consistency-gains."""
    lines = [
        f"**Isotonic projection of AdsBPC's prefix answers** (ρ = 1, n = 31, {paper_repeats} "
        f"seeded repeats, Facebook {FACEBOOK_REPEATS}; synthetic sets at {paper_users:,} "
        f"users × {paper_publishers} publishers, Facebook as is). WRMSE, γ² = (1, …, 1, 49):",
        "",
        "| dataset | raw | projected | daily values clipped at 0 | raw, noise only "
        "| projected, noise only | 95 % coverage raw | projected |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    payload: dict = {"isotonic": [], "cumulative_cells": [], "totals": []}
    for dataset in datasets:
        # Facebook is tiny and its cumulative intervals are strongly correlated within a
        # repeat: more repeats to estimate its coverage
        repeats = max(paper_repeats, FACEBOOK_REPEATS) if dataset == "facebook" else paper_repeats
        gain = isotonic_gain(
            dataset,
            users=paper_users,
            publishers=paper_publishers,
            repeats=repeats,
            seed=seed,
        )
        payload["isotonic"].append(asdict(gain))
        lines.append(
            f"| {dataset} | {gain.raw:.2f} | {gain.projected:.2f} | {gain.daily_clipped:.2f} | "
            f"{gain.raw_noise:.2f} | {gain.projected_noise:.2f} | "
            f"{100 * gain.coverage_raw:.1f} % | {100 * gain.coverage_projected:.1f} % |"
        )
    layout, cells = generator_cells(
        seed=seed, users=10_000, publishers=20, conversions=20_000, days=31
    )
    bounds = (2.0, 200.0)
    rho_per_day = 1.0 / 31
    lines += [
        "",
        f"**Event-level generator cells** (seed {seed}: 10,000 users, 20 publishers × 5 regions "
        f"× 3 devices, {int(cells[..., 0].sum()):,} attributed conversions over 31 days, "
        "order values log-normal with median 40); per day and measure ρ = 1/31, bounds per "
        f"user-day {bounds[0]:g} conversions and {bounds[1]:g} of value; "
        f"{generator_repeats} seeded repeats.",
        "",
        "Campaign-to-date value of every cell (RMSE):",
        "",
        "| measure | raw | projected | daily values clipped at 0 | 95 % coverage raw | projected |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for gain in cumulative_cells_gain(
        layout, cells, rho_per_day=rho_per_day, bounds=bounds, repeats=generator_repeats, seed=seed
    ):
        payload["cumulative_cells"].append(asdict(gain))
        digits = 1 if gain.measure == "value" else 2
        lines.append(
            f"| {gain.measure} | {gain.raw:.{digits}f} | {gain.projected:.{digits}f} | "
            f"{gain.daily_clipped:.{digits}f} | {100 * gain.coverage_raw:.1f} % | "
            f"{100 * gain.coverage_projected:.1f} % |"
        )
    lines += [
        "",
        "A day's totals, by how the day's ρ is spent (RMSE per answer: exact / seeded "
        "empirical over the first 7 days; — = not released):",
        "",
        "| strategy | measure | cells | publisher totals | region totals | grand total |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for gain in totals_gain(
        layout,
        cells[:7],
        rho_per_day=rho_per_day,
        bounds=bounds,
        repeats=generator_repeats,
        seed=seed,
    ):
        payload["totals"].append(asdict(gain))
        digits = 0 if gain.measure == "value" else 2
        cells_text = [
            "—"
            if gain.analytic[level] is None
            else f"{_fmt(gain.analytic[level], digits)} / {_fmt(gain.empirical[level], digits)}"
            for level in ("cells", "publisher totals", "region totals", "grand total")
        ]
        lines.append(f"| {gain.strategy} | {gain.measure} | " + " | ".join(cells_text) + " |")
    coverage_text, coverage_payload = coverage_report(seed=seed)
    payload.update(coverage_payload)
    return "\n".join([*lines, "", coverage_text]), payload

"""What the UI may show, day by day. Built only from DP outputs (releases, bounds, ρ) — never data
— and from the ids of the commits a release read (load ids, table versions: they count commits,
not users).

The Dagster UI and its event log are treated as visible to anyone who can read a release: the
functions here take published releases (:mod:`dp_platform.publication` — the same records
``dp-platform releases`` prints), bound choices and a release's inputs
(:class:`~dp_platform.warehouse.base.ReleaseInputs`, which holds no row count), nothing else,
so a true count or an SVT threshold cannot reach metadata by accident. Every value is rounded
to what its noise justifies (:mod:`dp_platform.display`); numbers are floats so the Partitions
view plots them per day.
"""

from __future__ import annotations

import math
from datetime import date

import dagster as dg

from dp_platform.cells import largest_cells, weight_text
from dp_platform.display import (
    RHO_DIGITS,
    answers_chart_markdown,
    round_to_noise,
    significant,
)
from dp_platform.mechanisms.base import Markdown, Shown
from dp_platform.privacy.accounting import Rho
from dp_platform.publication import PublishedDay
from dp_platform.release_intervals import day_intervals
from dp_platform.warehouse.base import ReleaseInputs

__all__ = [
    "LINEAGE_KEYS",
    "answers_chart",
    "answers_metadata",
    "bound_metadata",
    "day_metadata",
    "lineage_metadata",
    "publisher_answer_metadata",
    "release_metadata",
    "run_metadata",
    "shown_metadata",
]

_TABLE_ROWS = 20  # keeps the table short enough for the UI to show inline


def run_metadata(days: list[date]) -> dict[str, dg.MetadataValue]:
    """Which days the run covered (added to every partition of the run)."""
    return {
        "run_first_day": dg.MetadataValue.text(days[0].isoformat()),
        "run_last_day": dg.MetadataValue.text(days[-1].isoformat()),
        "days_in_run": dg.MetadataValue.text(str(len(days))),
    }


def day_metadata(day: date, index: int) -> dict[str, dg.MetadataValue]:
    """The partition's own day, as a date and as the campaign's day number."""
    # text, not numbers: the Plots view should chart released values, not the calendar
    return {
        "date": dg.MetadataValue.text(day.isoformat()),
        "day": dg.MetadataValue.text(str(index)),
    }


def bound_metadata(bound: float, method: str, charges: dict[str, Rho], drawn_now: bool) -> dict:
    """The day's private bound r_i (a DP output) and what choosing it cost."""
    return {
        "bound_r": dg.MetadataValue.float(significant(bound)),
        "bound_method": dg.MetadataValue.text(method),
        "rho_charged": dg.MetadataValue.float(
            significant(float(sum(charges.values(), Rho.zero())))
        ),
        "drawn_now": dg.MetadataValue.bool(drawn_now),
    }


def cell_metadata(day: PublishedDay) -> dict[str, dg.MetadataValue]:
    """A campaign with cells: each measure's per-cell σ and its top slices (largest noisy
    cells), rounded to their noise — DP values only."""
    if len(day.cells) == len(day.values):  # one count per publisher: nothing more to show
        return {}
    metadata: dict[str, dg.MetadataValue] = {"cells": dg.MetadataValue.int(len(day.cells))}
    keys, largest = largest_cells(day.cells, _TABLE_ROWS)
    for measure, top in largest.items():
        sigma = float(top[0]["sigma"])
        rows = [
            f"| {' | '.join(str(c[k]) for k in keys)} | "
            f"{round_to_noise(float(c['value']), sigma):g} | "
            f"{round_to_noise(float(c['ci_low']), sigma):g} .. "
            f"{round_to_noise(float(c['ci_high']), sigma):g} |"
            for c in top
        ]
        header = f"| {' | '.join(keys)} | noisy {measure} | 95 % interval |"
        rule = "|" + "---|" * (len(keys) + 2)
        metadata[f"sigma_per_{measure}_cell"] = dg.MetadataValue.float(significant(sigma))
        metadata[f"top_{measure}_slices"] = dg.MetadataValue.md("\n".join([header, rule, *rows]))
    if day.marginals:
        metadata["marginals_sigma"] = dg.MetadataValue.md(_marginal_table(day))
    return metadata


def _marginal_table(day: PublishedDay) -> str:
    """One line per marginal the advertiser reads: its weight in the strategy and the σ of one
    of its numbers per measure this day (public: the release's σ times the plan's factor)."""
    measures = list(day.marginals[0]["sigma"])
    lines = [
        f"| marginal | weight | {' | '.join(f'σ of a {m} number' for m in measures)} |",
        "|" + "---|" * (len(measures) + 2),
    ]
    for row in day.marginals:
        keeps = " × ".join(row["keeps"]) or "all publishers"
        weight = weight_text(row["weight"]) or "—"
        sigmas = " | ".join(f"{significant(row['sigma'][m]):g}" for m in measures)
        lines.append(f"| {keeps} | {weight} | {sigmas} |")
    return "\n".join(lines)


def _interval(interval: dict[str, float], std: float) -> str:
    """``low .. high``, each end rounded to what the noise justifies."""
    low, high = interval["ci_low"], interval["ci_high"]
    return f"{round_to_noise(low, std):g} .. {round_to_noise(high, std):g}"


def release_metadata(day: PublishedDay, drawn_now: bool) -> dict[str, dg.MetadataValue]:
    """The day's release as ``dp-platform releases`` shows it, rounded to its noise."""
    values = list(day.values.values())
    total_std = day.values_total_std()
    intervals = day_intervals(day)
    values_ci, total_ci = intervals["values_ci"], intervals["total_ci"]
    rows = [
        f"| {p} | {round_to_noise(v, day.value_std):g} | {_interval(values_ci[p], day.value_std)} |"
        for p, v in list(day.values.items())[:_TABLE_ROWS]
    ]
    more = len(values) - _TABLE_ROWS
    table = "\n".join(
        ["| publisher | noisy value | 95 % interval |", "|---|---|---|", *rows]
        + ([f"| … {more} more | `dp-platform releases` | |"] if more > 0 else [])
    )
    return {
        "bound_r": dg.MetadataValue.float(significant(day.bound)),
        "sigma": dg.MetadataValue.float(significant(day.sigma)),
        "rho_charged_today": dg.MetadataValue.float(significant(day.rho_charged)),
        "rho_spent": dg.MetadataValue.float(significant(day.rho_spent, RHO_DIGITS)),
        "rho_remaining": dg.MetadataValue.float(
            significant(day.rho_planned - day.rho_spent, RHO_DIGITS)
        ),
        "noisy_total": dg.MetadataValue.float(round_to_noise(sum(values), total_std)),
        "noisy_total_ci_low": dg.MetadataValue.float(round_to_noise(total_ci["ci_low"], total_std)),
        "noisy_total_ci_high": dg.MetadataValue.float(
            round_to_noise(total_ci["ci_high"], total_std)
        ),
        "publishers": dg.MetadataValue.text(str(len(values))),
        "noisy_values": dg.MetadataValue.md(table),
        "drawn_now": dg.MetadataValue.bool(drawn_now),
        **cell_metadata(day),
    }


LINEAGE_KEYS = frozenset({"read_load", "read_clipped_version", "read_versions"})
"""The release metadata naming what the release read (:func:`lineage_metadata`)."""


def lineage_metadata(inputs: ReleaseInputs | None) -> dict[str, dg.MetadataValue]:
    """What a release read, for its partition: the load its input chain was built from
    (``read_load``), the version of the clipped table that held its true vector
    (``read_clipped_version``) and, where the engine keeps them (Spark's Delta tables), each
    event table's version for that load (``read_versions``, JSON). Text, not numbers: the
    Plots view charts released values, not commit counters. Nothing when there is no record."""
    if inputs is None:
        return {}
    shown: dict[str, dg.MetadataValue] = {
        "read_load": dg.MetadataValue.text(str(inputs.load)),
        "read_clipped_version": dg.MetadataValue.text(str(inputs.clipped_version)),
    }
    if inputs.tables:
        shown["read_versions"] = dg.MetadataValue.json(dict(inputs.tables))
    return shown


def _latest_answers(day: PublishedDay) -> tuple[float, float, dict[str, float], float] | None:
    """Day ``day``'s latest query: its total and the total's σ, each publisher's answer and
    one publisher's σ — all rounded to their noise (DP outputs only), or None without one."""
    if not day.answers:
        return None
    query = max(day.answers, key=int)
    std = day.answer_std[query]
    one_std = day.answer_one_std(query)  # as release_intervals reads it
    per_publisher = {p: round_to_noise(v, one_std) for p, v in day.answers[query].items()}
    return round_to_noise(sum(day.answers[query].values()), std), std, per_publisher, one_std


def publisher_answer_metadata(today: PublishedDay) -> dict[str, dg.MetadataValue]:
    """The latest query's answer per publisher: a table (answer ± 2σ, 95 % interval) to read,
    and one float ``answer/<publisher>`` each so the Plots view draws every publisher by day."""
    latest = _latest_answers(today)
    if latest is None:
        return {}
    _, _, per_publisher, one_std = latest
    query = max(today.answers, key=int)
    intervals = day_intervals(today)["answers_ci"][query]
    shown = list(per_publisher.items())[:_TABLE_ROWS]
    rows = [
        f"| {p} | {v:g} | ± {round_to_noise(2 * one_std, one_std):g} | "
        f"{_interval(intervals[p], one_std)} |"
        for p, v in shown
    ]
    more = len(per_publisher) - _TABLE_ROWS
    table = "\n".join(
        ["| publisher | noisy answer | ± 2σ | 95 % interval |", "|---|---|---|---|", *rows]
        + ([f"| … {more} more | `dp-platform releases` | | |"] if more > 0 else [])
    )
    return {
        "answers_by_publisher": dg.MetadataValue.md(table),
        **{f"answer/{p}": dg.MetadataValue.float(v) for p, v in shown},
    }


def answers_chart(history: list[PublishedDay]) -> str | None:
    """The chart of every answer so far: the total in its ±2σ band and the largest publishers
    (by the latest answer, at most five) day by day — rounded DP answers only."""
    days, total, low, high = [], [], [], []
    publishers: dict[str, list[float]] = {}
    for published in history:
        latest = _latest_answers(published)
        if latest is None:
            continue
        value, std, per_publisher, _ = latest
        days.append(published.day)
        total.append(value)
        low.append(round_to_noise(value - 2 * std, std))
        high.append(round_to_noise(value + 2 * std, std))
        for p, v in per_publisher.items():
            publishers.setdefault(p, [math.nan] * (len(days) - 1)).append(v)
        for series in publishers.values():  # a publisher absent on a day: a gap, not a zero
            series.extend([math.nan] * (len(days) - len(series)))
    if not days:
        return None
    last = {p: s[-1] for p, s in publishers.items() if math.isfinite(s[-1])}
    top = sorted(last, key=last.__getitem__, reverse=True)[:5]
    lines = {p: publishers[p] for p in top if all(math.isfinite(v) for v in publishers[p])}
    return answers_chart_markdown(days, total, low, high, lines)


def answers_metadata(history: list[PublishedDay]) -> dict[str, dg.MetadataValue]:
    """Day d's answers (the last day of ``history``): each query ending on d, summed over the
    publishers, ± 2σ, per publisher, and a chart of every answer so far with its band and the
    largest publishers' answers, drawn inline."""
    today = history[-1]
    metadata: dict[str, dg.MetadataValue] = {
        "queries_ending_today": dg.MetadataValue.text(str(len(today.answers))),
    }
    if today.answers:
        query = max(today.answers, key=int)
        value, std = sum(today.answers[query].values()), today.answer_std[query]
        metadata.update(
            {
                "query": dg.MetadataValue.text(query),
                "answer": dg.MetadataValue.float(round_to_noise(value, std)),
                "answer_std": dg.MetadataValue.float(significant(std)),
                "answer_low_2sd": dg.MetadataValue.float(round_to_noise(value - 2 * std, std)),
                "answer_high_2sd": dg.MetadataValue.float(round_to_noise(value + 2 * std, std)),
            }
        )
        interval = day_intervals(today)["answers_ci"][query]["total"]
        metadata["answer_ci_low"] = dg.MetadataValue.float(round_to_noise(interval["ci_low"], std))
        metadata["answer_ci_high"] = dg.MetadataValue.float(
            round_to_noise(interval["ci_high"], std)
        )
    chart = answers_chart(history)
    if chart is not None:
        metadata["chart"] = dg.MetadataValue.md(chart)
    metadata.update(publisher_answer_metadata(today))
    return metadata


def shown_metadata(shown: Shown, drawn_now: bool) -> dict[str, dg.MetadataValue]:
    """What a campaign-level mechanism shows of its release (DP values only), for the UI."""
    metadata: dict[str, dg.MetadataValue] = {}
    for label, value in shown.items():
        if isinstance(value, Markdown):
            metadata[label] = dg.MetadataValue.md(value)
        elif isinstance(value, bool | str):
            metadata[label] = dg.MetadataValue.text(str(value))
        elif isinstance(value, int):
            metadata[label] = dg.MetadataValue.int(value)
        else:
            metadata[label] = dg.MetadataValue.float(float(value))
    metadata["drawn_now"] = dg.MetadataValue.bool(drawn_now)
    return metadata

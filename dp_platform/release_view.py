"""What ``dp-platform releases --json`` publishes: every day with its 95 % intervals, and for a
campaign with cells the derived totals and the campaign-to-date (cumulative) numbers.

Post-processing of the ledger's DP outputs only (:mod:`dp_platform.publication`): no data, no
noise, no privacy cost.

- **Intervals** (:func:`~dp_platform.release_intervals.day_intervals`): ``values_ci``,
  ``total_ci``, ``answers_ci`` next to a day's existing keys, which keep their shape.
- **Totals** (campaign with cells): every subset of {publisher, each breakdown dimension}
  summed, as rows of :func:`~dp_platform.consistency.slice_rows` — each axis's label, ``"all"``
  where summed, ``measure``, ``value``, ``se``, ``ci_low``, ``ci_high``. They are sums of the
  published (gridded) cells, so a total equals the sum of its slices exactly, on every day and
  every level; the standard error √Σσ² is exact.
- **Cumulative** (campaign with cells): per cell and per total, the campaign-to-date value
  through day d projected onto non-negative, non-decreasing series over days 1..d
  (:func:`~dp_platform.consistency.isotonic_cumulative`, weights 1/se²), recomputed each day
  from every release so far. A later day's fit may revise an earlier day's projected number:
  the document's top-level ``cumulative`` holds the latest fit's whole series. ``se`` is the
  exact standard error of the *unprojected* sum; the interval is the projected value ± 1.96·se
  (the projection has no exact standard error; its coverage is measured, docs/slices.md). The
  projection is non-linear, so projected totals need not equal the sum of projected slices:
  consistency is a property of the daily ``totals``, not of ``cumulative``.
"""

from __future__ import annotations

import itertools

import numpy as np

from dp_platform.cells import PUBLISHER, CellLayout
from dp_platform.consistency import (
    ALL,
    derived_totals,
    normal_interval,
    slice_rows,
)
from dp_platform.ledger import Ledger
from dp_platform.publication import PublishedDay, campaign_layout, published_days
from dp_platform.release_intervals import day_intervals

__all__ = ["CumulativeRows", "prefix_isotonic", "release_document", "total_levels"]

Row = dict[str, str | float]


def total_levels(layout: CellLayout) -> list[tuple[str, ...]]:
    """Every non-empty subset of {publisher, the breakdown dimensions}: the axes a total sums."""
    summable = (PUBLISHER, *layout.dimension_names)
    return [
        over
        for size in range(1, len(summable) + 1)
        for over in itertools.combinations(summable, size)
    ]


def _labels(layout: CellLayout, over: tuple[str, ...], shape: tuple[int, ...]) -> list[Row]:
    """Each total's axis labels in C order of its kept axes (``"all"`` where summed)."""
    kept = layout.kept(over)
    rows = []
    for index in np.ndindex(shape):
        chosen = {name: labels[i] for (name, labels), i in zip(kept, index, strict=True)}
        rows.append({name: chosen.get(name, ALL) for name in layout.axis_names})
    return rows


def prefix_isotonic(series: np.ndarray, sigmas: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(last, whole)``, both rows × days: ``last[:, d-1]`` is the last value of
    ``isotonic_cumulative(series[:, :d], sigmas[:, :d])`` for every d, ``whole`` the projection
    of the whole series (:func:`~dp_platform.consistency.isotonic_cumulative`'s result).

    Pool-adjacent-violators from the left keeps, after each new point, exactly the weighted
    isotonic fit of the prefix so far (its blocks' means), so one pass per row gives every
    day's answer: O(rows × days) instead of one regression per row and day. Clipping at 0 is
    the clipping of ``isotonic_cumulative``. One pass gives both, so the last day's number and
    the last point of the whole series are the same float.
    """
    weights = 1.0 / np.asarray(sigmas, dtype=np.float64) ** 2
    values = np.asarray(series, dtype=np.float64)
    last = np.empty_like(values)
    whole = np.empty_like(values)
    for row in range(values.shape[0]):
        means: list[float] = []
        totals: list[float] = []
        sizes: list[int] = []
        pairs = zip(values[row].tolist(), weights[row].tolist(), strict=True)
        for day, (y, w) in enumerate(pairs):
            means.append(y)
            totals.append(w)
            sizes.append(1)
            while len(means) > 1 and means[-2] > means[-1]:
                w_last, w_prev = totals.pop(), totals[-1]
                m_last = means.pop()
                means[-1] = (means[-1] * w_prev + m_last * w_last) / (w_prev + w_last)
                totals[-1] = w_prev + w_last
                merged = sizes.pop()
                sizes[-1] += merged
            last[row, day] = max(means[-1], 0.0)
        whole[row] = np.maximum(np.repeat(means, sizes), 0.0)
    return last, whole


class CumulativeRows:
    """Campaign-to-date numbers of every cell and total (cells first, then each level).

    ``raw``/``se``: rows × days, the exact running sums of the published cells and their
    standard errors. Built once per campaign, projected in one pass (:func:`prefix_isotonic`).
    """

    def __init__(self, layout: CellLayout, days: list[PublishedDay]) -> None:
        labels: list[Row] = []
        raw_parts, variance_parts = [], []
        cells = [np.array([c["value"] for c in day.cells], dtype=np.float64) for day in days]
        sigmas = [np.array([c["sigma"] for c in day.cells], dtype=np.float64) for day in days]
        for over in [(), *total_levels(layout)]:
            totals = [
                derived_totals(layout, v, s, over) for v, s in zip(cells, sigmas, strict=True)
            ]
            shape = totals[0].values.shape
            labels += _labels(layout, over, shape)
            raw_parts.append(np.stack([t.values.ravel() for t in totals], axis=1))
            variance_parts.append(
                np.stack([t.standard_errors.ravel() ** 2 for t in totals], axis=1)
            )
        self.labels = labels
        # gridded values: every running sum is exact (consistency.on_grid)
        self.raw = np.cumsum(np.concatenate(raw_parts), axis=1)
        self.se = np.sqrt(np.cumsum(np.concatenate(variance_parts), axis=1))
        # correlated noise across days (an AdsBPC+ strategy): the exact to-date σ, per day
        self.se *= np.array([day.to_date_factor for day in days])[None, :]

        self._last, self._whole = prefix_isotonic(self.raw, self.se)

    def day_rows(self, day: int) -> list[Row]:
        """Day ``day``'s projected campaign-to-date number of each row (the last value of the
        projection over days 1..``day``), with its interval."""
        value = self._last[:, day - 1]
        se = self.se[:, day - 1]
        low, high = normal_interval(value, se)
        return [
            {**label, "value": float(v), "se": float(s), "ci_low": float(lo), "ci_high": float(hi)}
            for label, v, s, lo, hi in zip(self.labels, value, se, low, high, strict=True)
        ]

    def series(self) -> list[Row]:
        """The latest fit (over every released day) as one series per row, for plots/tools."""
        projected, se = self._whole, self.se
        day = projected.shape[1]
        low, high = normal_interval(projected, se)
        return [
            {
                **label,
                "days": list(range(1, day + 1)),
                "value": projected[r].tolist(),
                "se": se[r].tolist(),
                "ci_low": low[r].tolist(),
                "ci_high": high[r].tolist(),
            }
            for r, label in enumerate(self.labels)
        ]


def release_document(ledger: Ledger, campaign: str) -> dict:
    """The ``releases --json`` document of ``campaign`` (see the module doc for its keys)."""
    days = published_days(ledger, campaign)
    records = [{**day.to_json(), **day_intervals(day)} for day in days]
    document: dict = {"campaign": campaign, "days": records}
    layout = campaign_layout(ledger, campaign) if days else None
    if layout is not None and not layout.plain:
        cumulative = CumulativeRows(layout, days)
        # positions, not day numbers: the series runs over the released days in order
        for position, (record, day) in enumerate(zip(records, days, strict=True), start=1):
            values = [c["value"] for c in day.cells]
            sigmas = [c["sigma"] for c in day.cells]
            record["totals"] = slice_rows(layout, values, sigmas, total_levels(layout))
            record["cumulative"] = cumulative.day_rows(position)
        document["cumulative"] = cumulative.series()
    document.update(ledger.campaign_releases(campaign))
    return document

"""What ``dp-platform releases --json`` publishes: every day with its 95 % intervals, and for a
campaign with cells the derived totals and the campaign-to-date (cumulative) numbers.

Post-processing of the ledger's DP outputs only (:mod:`dp_platform.publication`): no data, no
noise, no privacy cost.

- **Intervals** (:func:`~dp_platform.release_intervals.day_intervals`): ``values_ci``,
  ``total_ci``, ``answers_ci`` next to a day's existing keys, which keep their shape (and
  ``remainder_ci`` beside ``remainder``, for an AdsBPC+ plan that releases one).
- **Totals** (campaign with cells): every subset of {publisher, each breakdown dimension}
  summed, as rows of :func:`~dp_platform.consistency.slice_rows` — each axis's label, ``"all"``
  where summed, ``measure``, ``value``, ``se``, ``ci_low``, ``ci_high``. They are sums of the
  published (gridded) cells, so a total equals the sum of its slices exactly, on every day and
  every level; the standard error √Σσ² is exact.
- **Cumulative** (campaign with cells): per cell and per total, the campaign-to-date number
  through day d. ``value`` is the running sum of the published cells over days 1..d: linear in
  the DP outputs, so unbiased for the clipped total, its ``se`` exact (√Σσ², times the
  strategy's to-date factor when days share noise) and ``ci_low``/``ci_high`` value ∓ 1.96·se
  exact; the cells are gridded, so every total equals the sum of its cells exactly on every
  day, and a day's number is never revised later. It may dip or go below 0: that is noise.
  ``projected`` is a separate, secondary number: the same row's series projected onto
  non-negative, non-decreasing series over days 1..d
  (:func:`~dp_platform.consistency.isotonic_cumulative`, weights 1/se²), with no interval. Per
  cell it is closer to the truth where counts are small against the noise, but it is biased
  upward (clipping at 0 and pooling only ever raise a sum that dips), so summed over cells it
  overstates the total and projected totals are not the sums of projected cells; nothing
  here ranks, sums or plots it. :data:`CUMULATIVE_FIELDS` is the label the document carries.
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

__all__ = [
    "CUMULATIVE_FIELDS",
    "CumulativeRows",
    "prefix_isotonic",
    "release_document",
    "total_levels",
]

Row = dict[str, str | float]

CUMULATIVE_FIELDS = {
    "value": "campaign-to-date running sum of the released cells: unbiased, exact se and 95 % "
    "interval; every total equals the sum of its cells exactly",
    "projected": "projected: non-negative and non-decreasing per cell (isotonic, no interval), "
    "biased upward when summed; not additive, not for totals or rankings",
}
"""The document's ``cumulative_fields``: what each number of a ``cumulative`` row is."""


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
    standard errors — the published ``value``. The isotonic projection (``projected``, labelled
    biased) is computed once per campaign in one pass (:func:`prefix_isotonic`).
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
        # gridded values: every running sum is exact (consistency.on_grid), so a total to date
        # is the sum of its cells to date bit for bit
        self.raw = np.cumsum(np.concatenate(raw_parts), axis=1)
        self.se = np.sqrt(np.cumsum(np.concatenate(variance_parts), axis=1))
        # correlated noise across days (an AdsBPC+ strategy): the exact to-date σ, per day
        self.se *= np.array([day.to_date_factor for day in days])[None, :]

        self._last, self._whole = prefix_isotonic(self.raw, self.se)

    def day_rows(self, day: int) -> list[Row]:
        """Day ``day``'s campaign-to-date number of each row: the running sum through ``day``
        with its exact interval, and the (biased) projection over days 1..``day``."""
        value = self.raw[:, day - 1]
        se = self.se[:, day - 1]
        low, high = normal_interval(value, se)
        projected = self._last[:, day - 1]
        return [
            {
                **label,
                "value": float(v),
                "se": float(s),
                "ci_low": float(lo),
                "ci_high": float(hi),
                "projected": float(p),
            }
            for label, v, s, lo, hi, p in zip(
                self.labels, value, se, low, high, projected, strict=True
            )
        ]

    def series(self) -> list[Row]:
        """Every row's running sums over the released days with their intervals (what plots
        draw), and the latest projection over every day as ``projected``."""
        raw, se = self.raw, self.se
        day = raw.shape[1]
        low, high = normal_interval(raw, se)
        return [
            {
                **label,
                "days": list(range(1, day + 1)),
                "value": raw[r].tolist(),
                "se": se[r].tolist(),
                "ci_low": low[r].tolist(),
                "ci_high": high[r].tolist(),
                "projected": self._whole[r].tolist(),
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
        document["cumulative_fields"] = dict(CUMULATIVE_FIELDS)
    document.update(ledger.campaign_releases(campaign))
    return document

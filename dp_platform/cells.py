"""A campaign's released cells: publisher × breakdown values × measure (docs/algorithm.md#cells).

A stream mechanism releases one noisy vector a day. A count-only campaign without a breakdown
releases one entry per publisher key, as always; a campaign with a breakdown or the ``value``
measure releases one entry per *cell* instead — the publisher keys frozen at registration
crossed with each dimension's public value list (in the registered order) and the measures.
Everything here is public and fixed at registration; no key exists because the data has it.

**Scaled cells.** A conversion credited to publisher p with weight w (Σ_p w ≤ 1) adds
w·s_count to (p, its values, count) and w·min(v, cap)/cap·s_value to (p, its values, value),
with s = 1/√m for m measures (:func:`CellLayout.scale`). One conversion's whole contribution
then has L2 norm ≤ s·√(Σ_p w_p²·(1 + 1)) ≤ 1 for m = 2 (and = w-norm ≤ 1 for m = 1), every
entry ≥ 0 — what a publisher-only conversion had. A user clipped to r conversions therefore
keeps L2 ≤ r and the mechanisms' sensitivity, σ and charges are unchanged. The published value
of a cell is the noisy entry times 1/s (count) or cap/s (value): post-processing, with σ
rescaled by the same factor (:meth:`CellLayout.unscale`).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from dp_platform.config import CampaignConfig

__all__ = ["Z95", "Cell", "CellLayout", "cell_records", "layout_of", "publisher_counts"]

Z95 = 1.959964
"""Two-sided 95 % normal quantile: a cell's interval is value ± Z95·σ."""


@dataclass(frozen=True)
class Cell:
    """One released entry: a publisher, one value per breakdown dimension, a measure."""

    publisher: str
    values: tuple[str, ...]
    measure: str


@dataclass(frozen=True)
class CellLayout:
    """The cell vector's order: publisher-major, then the dimensions' values (row-major, in the
    breakdown's order), then the measures."""

    publishers: tuple[str, ...]
    dimensions: tuple[tuple[str, tuple[str, ...]], ...]
    measures: tuple[str, ...]
    value_cap: float | None

    @property
    def plain(self) -> bool:
        """A count-only campaign without breakdown: cells are the publishers, as always."""
        return not self.dimensions and self.measures == ("count",)

    @property
    def combinations(self) -> int:
        """Value combinations of the breakdown (1 without one)."""
        return math.prod(len(values) for _, values in self.dimensions)

    @property
    def size(self) -> int:
        return len(self.publishers) * self.combinations * len(self.measures)

    @property
    def dimension_names(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.dimensions)

    def scale(self, measure: str) -> float:
        """s: the public factor a measure's entries are multiplied by before clipping (module
        doc). 1/√m keeps one conversion's L2 norm ≤ 1 (the Gaussian mechanisms' unit)."""
        if measure not in self.measures:
            raise ValueError(f"measure {measure!r} is not released by this campaign")
        return 1.0 if len(self.measures) == 1 else 1.0 / math.sqrt(len(self.measures))

    def unscale(self, measure: str) -> float:
        """Factor from a released entry to the published number: 1/s (count), cap/s (value)."""
        factor = 1.0 / self.scale(measure)
        if measure == "value":
            assert self.value_cap is not None
            factor *= self.value_cap
        return factor

    def cells(self) -> list[Cell]:
        """Every cell in vector order."""
        combos = list(itertools.product(*(values for _, values in self.dimensions)))
        return [
            Cell(publisher, tuple(combo), measure)
            for publisher in self.publishers
            for combo in combos
            for measure in self.measures
        ]

    def cell_publishers(self) -> list[str]:
        """Each cell's publisher, in vector order (cheaper than :meth:`cells` at 10⁵ cells)."""
        per = self.combinations * len(self.measures)
        return [publisher for publisher in self.publishers for _ in range(per)]

    def unscale_factors(self) -> list[float]:
        """Per cell, in vector order, the factor of :meth:`unscale`."""
        per_publisher = [self.unscale(m) for _ in range(self.combinations) for m in self.measures]
        return per_publisher * len(self.publishers)

    def dimension_index(self) -> list[tuple[str, str, int, int]]:
        """(dimension, value, index in its list, stride) for the warehouse: a conversion's
        combination number is Σ index·stride (row-major over the breakdown)."""
        rows = []
        stride = self.combinations
        for name, values in self.dimensions:
            stride //= len(values)
            rows += [(name, value, i, stride) for i, value in enumerate(values)]
        return rows


def layout_of(campaign: CampaignConfig, publishers: list[str]) -> CellLayout:
    """The cells of ``campaign`` over its frozen ``publishers`` (the registered config's)."""
    return CellLayout(
        publishers=tuple(publishers),
        dimensions=tuple((d.name, tuple(d.values)) for d in campaign.breakdown),
        measures=tuple(campaign.measures),
        value_cap=campaign.value_cap,
    )


def cell_records(
    layout: CellLayout, entries: Sequence[float], sigma: float
) -> list[dict[str, str | float]]:
    """A day's release as published cells: ``{"publisher", one key per dimension, "measure",
    "value", "sigma", "ci_low", "ci_high"}`` in vector order — the released entries and σ times
    each cell's :meth:`CellLayout.unscale` factor (post-processing of DP values only).

    The one place a release becomes cells: derived totals or consistency post-processing start
    from these records."""
    if len(entries) != layout.size:
        raise ValueError(f"{len(entries)} released entries for {layout.size} cells")
    records: list[dict[str, str | float]] = []
    names = layout.dimension_names
    for cell, entry, factor in zip(layout.cells(), entries, layout.unscale_factors(), strict=True):
        value, spread = float(entry) * factor, float(sigma) * factor
        record: dict[str, str | float] = {"publisher": cell.publisher}
        record.update(zip(names, cell.values, strict=True))
        record.update(
            {
                "measure": cell.measure,
                "value": value,
                "sigma": spread,
                "ci_low": value - Z95 * spread,
                "ci_high": value + Z95 * spread,
            }
        )
        records.append(record)
    return records


def publisher_counts(layout: CellLayout, entries: Sequence[float]) -> np.ndarray:
    """Per publisher, the count cells summed over the breakdown, in published units: a plain
    campaign's entries as they are; otherwise σ of each sum is σ·unscale(count)·√combinations."""
    vector = np.asarray(entries, dtype=np.float64)
    if layout.plain:
        return vector
    count = layout.measures.index("count")
    grid = vector.reshape(len(layout.publishers), layout.combinations, len(layout.measures))
    return grid[:, :, count].sum(axis=1) * layout.unscale("count")

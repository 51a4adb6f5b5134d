"""A campaign's released cells: publisher × breakdown values × measure (docs/algorithm.md#cells).

A stream mechanism releases one noisy vector a day. A count-only campaign without a breakdown
releases one entry per publisher key, as always; a campaign with a breakdown or the ``value``
measure releases one entry per *cell* instead — the publisher keys frozen at registration
crossed with each dimension's public value list (in the registered order) and the measures.
Everything here is public and fixed at registration; no key exists because the data has it.

**Scaled cells.** Each touch of a conversion — an impression credited with weight w_j, of
publisher p_j, Σ_j w_j ≤ 1 — adds w_j·s to (p_j, the values, count) and w_j·min(v, cap)/cap·s
to (p_j, the values, value), the values being the conversion's own for conversion dimensions
and the credited impression's for impression dimensions. s is the measure scale of the
releasing mechanism's norm (:attr:`CellLayout.norm`, from its settings' ``cell_norm``):
1/√m for m measures under ℓ2 (the Gaussian mechanisms), 1/m under ℓ1 (Laplace). One
conversion's whole contribution then has norm ≤ 1 in that norm, every entry ≥ 0 — what a
publisher-only conversion had — however its credit is split. A user clipped to r conversions
therefore keeps norm ≤ r and the mechanisms' sensitivity, σ and charges are unchanged. The
published value of a cell is the noisy entry times 1/s (count) or cap/s (value):
post-processing, with σ rescaled by the same factor (:meth:`CellLayout.unscale`).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from statistics import NormalDist
from typing import Literal, TypedDict

import numpy as np
import scipy.sparse

from dp_platform.cell_strategy import CellStrategy, MarginalWeights, strategy_for
from dp_platform.config import CampaignConfig

__all__ = [
    "CELL_STATISTICS",
    "GRID",
    "MEASURE",
    "PUBLISHER",
    "Z95",
    "Cell",
    "CellLayout",
    "MarginalSigma",
    "cell_records",
    "dimension_keys",
    "largest_cells",
    "layout_of",
    "on_grid",
    "published_values",
    "publisher_counts",
    "weight_text",
]

Z95 = NormalDist().inv_cdf(0.975)
"""Two-sided 95 % normal quantile (1.95996…): a cell's interval is value ± Z95·σ, the same
number :func:`dp_platform.consistency.normal_interval` uses at 95 %."""


class MarginalSigma(TypedDict):
    """One marginal the advertiser reads and the σ of one of its numbers per measure."""

    keeps: list[str]
    weight: dict[str, float] | None  # per measure, in the residual strategy; None: independent
    sigma: dict[str, float]


def weight_text(weights: dict[str, float] | None) -> str | None:
    """A marginal's weight as ``plan`` and the UI print it: one number when its measures weigh
    alike, ``count 50, value 1`` otherwise; None for independent cells."""
    if weights is None:
        return None
    if len(set(weights.values())) == 1:
        return f"{next(iter(weights.values())):g}"
    return ", ".join(f"{measure} {weight:g}" for measure, weight in weights.items())


@dataclass(frozen=True)
class Cell:
    """One released entry: a publisher, one value per breakdown dimension, a measure."""

    publisher: str
    values: tuple[str, ...]
    measure: str


PUBLISHER = "publisher"
MEASURE = "measure"
GRID = 2.0**-10  # released cells are multiples of this: their sums are exact (on_grid)
_EXACT_LIMIT = 2.0**42


def on_grid(values: np.ndarray) -> np.ndarray:
    """``values`` rounded to the nearest multiple of :data:`GRID` = 2⁻¹⁰ (post-processing).

    Multiples of 2⁻¹⁰ below 2⁴³ in magnitude are exact doubles and so are their sums, so totals
    of gridded cells are exact whatever the summation order: a released total then equals the
    sum of its released slices exactly, not up to rounding. The rounding moves a value by at
    most 2⁻¹¹ ≈ 0.0005 (variance ≤ 2⁻²⁰/12, negligible next to any σ here, and not added to the
    standard errors). Refused when the cells' absolute sum reaches 2⁴² (sums could then round).
    """
    array = np.asarray(values, dtype=np.float64)
    if not np.all(np.isfinite(array)):
        raise ValueError("values must be finite")
    if float(np.abs(array).sum()) >= _EXACT_LIMIT:
        raise ValueError("cells' absolute sum must be below 2^42 for exact totals")
    return np.round(array / GRID) * GRID


@dataclass(frozen=True)
class CellLayout:
    """The cell vector's order: publisher-major, then the dimensions' values (row-major, in the
    breakdown's order), then the measures.

    The one layout type of the platform: the warehouse fills it, :func:`cell_records` publishes
    it and :mod:`dp_platform.consistency` sums it (its axes are publisher, the dimensions,
    measure, in that order). ``value_cap`` is needed only to unscale the value measure."""

    publishers: tuple[str, ...]
    dimensions: tuple[tuple[str, tuple[str, ...]], ...]
    measures: tuple[str, ...]
    value_cap: float | None = None
    norm: Literal[1, 2] = 2
    """The ℓp norm (the releasing mechanism's ``cell_norm``) in which one conversion's cells
    must stay ≤ 1: it decides the measures' scale (:meth:`scale`)."""
    marginals: MarginalWeights | None = None
    """The registered workload of marginals when the cells are measured by a residual strategy;
    None: each cell on its own (:mod:`dp_platform.cell_strategy`)."""

    def __post_init__(self) -> None:
        if self.norm not in (1, 2):
            raise ValueError(f"norm must be 1 or 2, not {self.norm!r}")
        names = [PUBLISHER, *(name for name, _ in self.dimensions), MEASURE]
        if len(set(names)) != len(names):
            raise ValueError(
                f"dimension names must be distinct and not {PUBLISHER!r} or {MEASURE!r}: {names}"
            )
        for name, labels in self.axes:
            if not labels and name != PUBLISHER:  # no publisher yet: an empty vector
                raise ValueError(f"axis {name!r} has no values")
            if len(set(labels)) != len(labels):
                raise ValueError(f"axis {name!r} repeats a value: {labels}")

    @property
    def axes(self) -> tuple[tuple[str, tuple[str, ...]], ...]:
        """Every axis in cell order: publisher, the dimensions, measure."""
        return ((PUBLISHER, self.publishers), *self.dimensions, (MEASURE, self.measures))

    @property
    def axis_names(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.axes)

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(len(labels) for _, labels in self.axes)

    def as_array(self, values: np.ndarray, what: str = "values") -> np.ndarray:
        """``values`` as a float array of :attr:`shape` (flat input is read in C order)."""
        array = np.asarray(values, dtype=np.float64)
        if array.shape == self.shape:
            return array
        if array.ndim == 1 and array.size == self.size:
            return array.reshape(self.shape)
        raise ValueError(
            f"{what}: expected {self.size} cells shaped {self.shape}, got {array.shape}"
        )

    def summed_axes(self, over: Sequence[str]) -> tuple[int, ...]:
        """Positions of the axes in ``over``; summing over the measure axis is refused."""
        names = self.axis_names
        unknown = [name for name in over if name not in names]
        if unknown:
            raise ValueError(f"unknown axis {unknown[0]!r}; axes are {names}")
        if MEASURE in over:
            raise ValueError("measures are never summed together (a count and a sum do not add)")
        return tuple(sorted({names.index(name) for name in over}))

    def kept(self, over: Sequence[str]) -> tuple[tuple[str, tuple[str, ...]], ...]:
        summed = set(over)
        return tuple((name, labels) for name, labels in self.axes if name not in summed)

    def kept_shape(self, over: Sequence[str]) -> tuple[int, ...]:
        return tuple(len(labels) for _, labels in self.kept(over))

    def aggregation(self, over: Sequence[str]) -> scipy.sparse.csr_matrix:
        """The 0/1 matrix mapping flat cells to flat totals over ``over`` (C order both)."""
        return _aggregation(self, self.summed_axes(over))

    @property
    def strategy(self) -> CellStrategy:
        """How the cells are measured (encode, decode, each marginal's σ)."""
        return strategy_for(self)

    @property
    def workload(self) -> MarginalWeights:
        """The marginals the advertiser reads: the registered ones, or for independent cells
        the default list (their σ then only shown, not optimised for)."""
        return self.marginals or MarginalWeights.default(self.dimension_names)

    def marginal_sigmas(self, sigma: float) -> list[MarginalSigma]:
        """Per marginal of :attr:`workload`, the σ of one of its numbers per measure at the
        release's σ ``sigma`` (public: what ``plan``, ``releases`` and the UI show)."""
        return [
            {
                "keeps": list(kept),
                "weight": weights if self.marginals is not None else None,
                "sigma": {
                    m: float(sigma) * self.strategy.entry_std(kept, m) for m in self.measures
                },
            }
            for kept, weights in self.workload.table(self.measures)
        ]

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
        doc). 1/√m keeps one conversion's L2 norm ≤ 1 (the Gaussian mechanisms' unit), 1/m its
        L1 norm (Laplace's: :attr:`norm` 1)."""
        if measure not in self.measures:
            raise ValueError(f"measure {measure!r} is not released by this campaign")
        if len(self.measures) == 1:
            return 1.0
        if self.norm == 1:
            return 1.0 / len(self.measures)
        return 1.0 / math.sqrt(len(self.measures))

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


@lru_cache(maxsize=256)
def _aggregation(layout: CellLayout, summed: tuple[int, ...]) -> scipy.sparse.csr_matrix:
    """Built once per (layout, summed axes): every day of a campaign reuses it (read-only)."""
    index = np.indices(layout.shape).reshape(len(layout.shape), -1)
    kept_axes = [a for a in range(len(layout.shape)) if a not in summed]
    kept_shape = tuple(layout.shape[a] for a in kept_axes)
    rows = np.ravel_multi_index(tuple(index[a] for a in kept_axes), kept_shape)
    ones = np.ones(layout.size)
    return scipy.sparse.csr_matrix(
        (ones, (rows, np.arange(layout.size))), shape=(int(np.prod(kept_shape)), layout.size)
    )


def layout_of(
    campaign: CampaignConfig, publishers: list[str], marginals: MarginalWeights | None = None
) -> CellLayout:
    """The cells of ``campaign`` over its frozen ``publishers`` (the registered config's),
    scaled for the norm its mechanism's sensitivity is stated in; ``marginals``: the
    registered stream plan's ``marginals`` (Registration.layout), None for independent cells."""
    return CellLayout(
        publishers=tuple(publishers),
        dimensions=tuple((d.name, d.cell_values) for d in campaign.breakdown),
        measures=tuple(campaign.measures),
        value_cap=campaign.value_cap,
        norm=campaign.mechanism.cell_norm or 2,
        marginals=marginals,
    )


def dimension_keys(
    campaign: CampaignConfig, layout: CellLayout, source: str
) -> list[tuple[str, str, int, int]]:
    """The layout's (dimension, value, index, stride) rows of the breakdown's dimensions read
    from ``source``'s events — every engine's placement: conversions' by cell_rows.sql,
    impressions' by the credited impression's touch (attribution_touch.sql)."""
    sources = {d.name: d.source for d in campaign.breakdown}
    return [row for row in layout.dimension_index() if sources[row[0]] == source]


def published_values(layout: CellLayout, entries: Sequence[float]) -> np.ndarray:
    """Each cell's published number, in vector order: the released entry times its
    :meth:`CellLayout.unscale` factor — put on :data:`GRID` for a campaign with cells, so that
    every total derived from them (and each publisher's count) is their exact sum; a plain
    campaign's entries as they are (its one count per publisher sums nothing)."""
    if len(entries) != layout.size:
        raise ValueError(f"{len(entries)} released entries for {layout.size} cells")
    vector = np.asarray(entries, dtype=np.float64)
    if layout.plain:
        return vector
    return on_grid(vector * np.asarray(layout.unscale_factors()))


def cell_records(
    layout: CellLayout, entries: Sequence[float], sigma: float, *, z: float = Z95
) -> list[dict[str, str | float]]:
    """A release as published cells: ``{"publisher", one key per dimension, "measure",
    "value", "sigma", "ci_low", "ci_high"}`` in vector order — :func:`published_values` and σ
    (the release's noise σ) times each cell's factor from the layout's strategy (the
    :meth:`CellLayout.unscale` factor for independent cells; post-processing of DP values
    only); the 95 % interval is value ± z·σ, ``z`` the noise law's (:data:`Z95` for Gaussian
    noise; a Laplace mechanism passes its own).

    The one place a release becomes cells: derived totals or consistency post-processing start
    from these records."""
    values = published_values(layout, entries)
    records: list[dict[str, str | float]] = []
    names = layout.dimension_names
    axes = layout.axis_names[:-1]
    factors = {m: layout.strategy.entry_std(axes, m) for m in layout.measures}
    for cell, value in zip(layout.cells(), values, strict=True):
        spread = float(sigma) * factors[cell.measure]
        record: dict[str, str | float] = {"publisher": cell.publisher}
        record.update(zip(names, cell.values, strict=True))
        record.update(
            {
                "measure": cell.measure,
                "value": float(value),
                "sigma": spread,
                "ci_low": float(value) - z * spread,
                "ci_high": float(value) + z * spread,
            }
        )
        records.append(record)
    return records


CELL_STATISTICS = frozenset({"measure", "value", "sigma", "ci_low", "ci_high"})
"""The keys of a cell record that are not its label (publisher and dimension values)."""


def largest_cells(
    cells: list[dict[str, str | float]], per_measure: int
) -> tuple[list[str], dict[str, list[dict[str, str | float]]]]:
    """``(label keys, measure → its ``per_measure`` largest cells)`` of a day's cell records:
    what the CLI table and the UI's top-slices tables show (noisy values only)."""
    keys = [k for k in cells[0] if k not in CELL_STATISTICS] if cells else []
    top: dict[str, list[dict[str, str | float]]] = {}
    for measure in dict.fromkeys(str(c["measure"]) for c in cells):
        mine = [c for c in cells if c["measure"] == measure]
        top[measure] = sorted(mine, key=lambda c: -float(c["value"]))[:per_measure]
    return keys, top


def publisher_counts(layout: CellLayout, entries: Sequence[float]) -> np.ndarray:
    """Per publisher, the count cells summed over the breakdown, in published units: a plain
    campaign's entries as they are; otherwise the exact sum of the published (gridded) count
    cells, σ of each sum σ·``layout.strategy.entry_std(("publisher",), "count")``."""
    values = published_values(layout, entries)
    if layout.plain:
        return values
    count = layout.measures.index("count")
    grid = values.reshape(len(layout.publishers), layout.combinations, len(layout.measures))
    return grid[:, :, count].sum(axis=1)

"""How a campaign's cells are measured: each cell on its own, or every marginal by a residual
strategy (docs/slices.md).

A Gaussian mechanism releasing cells adds N(0, σ² I) to the vector its strategy *encodes* from
the clipped cells and publishes what the strategy *decodes* from the noisy vector — both linear
and public, so the release's privacy is the encoded vector's ℓ2 sensitivity and the decoding is
post-processing. Two strategies, one interface (:class:`CellStrategy`):

- :class:`IndependentCells`: encode and decode are the identity — every campaign registered
  before residual strategies, and every layout without cells (one count per publisher).
- :class:`ResidualCells`: :class:`dp_platform.privacy.marginals.ResidualStrategy` over the
  publisher and breakdown axes, with the campaign's :class:`MarginalWeights`.

Both keep one conversion's encoded norm ≤ 1, so a user clipped to r conversions a day has ℓ2
sensitivity ≤ r either way: the mechanisms' σ and charges do not depend on the strategy. What
changes is each marginal's σ (:meth:`CellStrategy.entry_std`) and, for AdsBPC+'s filter, a
user's exact norm — the quadratic form :meth:`CellStrategy.gram` gives.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import TYPE_CHECKING, Protocol

import numpy as np
import pandas as pd

from dp_platform.privacy.marginals import Marginal, ResidualStrategy, measure_transform, subsets

if TYPE_CHECKING:
    from dp_platform.config import CampaignConfig

__all__ = [
    "MARGINALS_HELP",
    "CellStrategy",
    "Gram",
    "IndependentCells",
    "MarginalWeights",
    "MeasureWeights",
    "ResidualCells",
    "WrittenMarginals",
    "check_marginals",
    "planned_marginals",
    "strategy_for",
]


class Cells(Protocol):
    """What a strategy reads of :class:`dp_platform.cells.CellLayout` (which builds on this
    module): its axes (publisher, dimensions, measure last), the scale of its measures."""

    @property
    def axes(self) -> tuple[tuple[str, tuple[str, ...]], ...]: ...
    @property
    def shape(self) -> tuple[int, ...]: ...
    @property
    def size(self) -> int: ...
    @property
    def measures(self) -> tuple[str, ...]: ...
    @property
    def norm(self) -> int: ...
    @property
    def marginals(self) -> MarginalWeights | None: ...
    def scale(self, measure: str) -> float: ...
    def unscale(self, measure: str) -> float: ...


WrittenMarginals = Mapping[str, float | Mapping[str, float]]
"""The catalogue's ``marginals:`` as written: per marginal one weight or one per measure."""

PUBLISHER_WEIGHT = 4.0
ONE_DIMENSION_WEIGHT = 2.0
FINER_WEIGHT = 1.0


MeasureWeights = tuple[tuple[str, float], ...]
"""A marginal's weight per measure, in the catalogue's order (``{count: 50, value: 1}``)."""


@dataclass(frozen=True)
class MarginalWeights:
    """The workload of a broken-down campaign: for each marginal the advertiser reads — named
    by the axes it keeps (``publisher`` and dimension names, in the layout's order) — the weight
    of its mean cell variance in what the strategy minimises. Public, fixed at registration.

    ``weights`` weigh every measure of a marginal alike (the strategy is then optimal over
    every Gaussian one: dp_platform/privacy/marginals.py); ``by_measure`` gives a marginal one
    weight per measure — a campaign whose advertiser reads publisher counts more than values,
    say — and a measure it leaves out is not read in that marginal (weight 0)."""

    weights: tuple[tuple[tuple[str, ...], float], ...]
    by_measure: tuple[tuple[tuple[str, ...], MeasureWeights], ...] = ()
    """Absent from plans registered before per-measure weights: they read back as ()."""

    @classmethod
    def default(cls, dimensions: Sequence[str]) -> MarginalWeights:
        """Publisher totals weigh 4, publisher × one dimension 2, finer marginals (the full
        cells among them) 1: an advertiser reads totals most and the full cells least."""
        entries = []
        for size in range(len(dimensions) + 1):
            for chosen in itertools.combinations(dimensions, size):
                weight = (
                    (PUBLISHER_WEIGHT, ONE_DIMENSION_WEIGHT)[size] if size < 2 else FINER_WEIGHT
                )
                entries.append((("publisher", *chosen), weight))
        return cls(tuple(entries))

    @classmethod
    def written(cls, mapping: Mapping[str, float | Mapping[str, float]]) -> MarginalWeights:
        """From the catalogue's ``marginals:``: ``"publisher,region": 2`` keeps those axes and
        weighs each measure 2; ``"publisher": {count: 50, value: 1}`` weighs them apart."""
        alike, apart = [], []
        for key, weight in mapping.items():
            kept = tuple(name.strip() for name in key.split(","))
            if isinstance(weight, Mapping):
                apart.append((kept, tuple((m, float(w)) for m, w in weight.items())))
            else:
                alike.append((kept, float(weight)))
        return cls(tuple(alike), tuple(apart))

    def table(self, measures: Sequence[str]) -> list[tuple[tuple[str, ...], dict[str, float]]]:
        """Every marginal with its weight per measure (0: not read), alike ones first, each
        group in its written order."""
        rows = [(kept, dict.fromkeys(measures, weight)) for kept, weight in self.weights]
        for kept, weights in self.by_measure:
            named = dict(weights)
            rows.append((kept, {m: named.get(m, 0.0) for m in measures}))
        return rows

    def check(self, axes: Sequence[str], measures: Sequence[str]) -> None:
        """Refuses (ValueError) an unknown or repeated axis or measure, a weight ≤ 0, and a
        workload that leaves out a measure of the full cells (every released cell needs its
        residuals measured)."""
        seen: dict[tuple[str, ...], set[str]] = {}
        entries = [(kept, ((None, weight),)) for kept, weight in self.weights]
        entries += [(kept, tuple(weights)) for kept, weights in self.by_measure]
        for kept, weights in entries:
            label = ", ".join(kept)
            unknown = [name for name in kept if name not in axes]
            if unknown:
                raise ValueError(f"marginals: {unknown[0]!r} is not publisher or a breakdown axis")
            ordered = tuple(name for name in axes if name in kept)
            if ordered in seen or len(set(kept)) != len(kept):
                raise ValueError(f"marginals: {label} is listed twice")
            named = [m for m, _ in weights if m is not None]
            stray = [m for m in named if m not in measures]
            if stray:
                raise ValueError(
                    f"marginals: {label}: {stray[0]!r} is not a measure of the campaign "
                    f"({', '.join(measures)})"
                )
            if len(set(named)) != len(named):
                raise ValueError(f"marginals: {label} names a measure twice")
            for measure, weight in weights:
                if not (weight > 0 and math.isfinite(weight)):
                    which = "" if measure is None else f" {measure}"
                    raise ValueError(f"marginals: {label}{which} needs a weight > 0")
            seen[ordered] = set(measures) if not named else set(named)
        missing = [m for m in measures if m not in seen.get(tuple(axes), set())]
        if missing:
            raise ValueError(
                f"marginals: the full cells ({', '.join(axes)}) must be weighed for "
                f"{', '.join(missing)}: they are released"
            )


def planned_marginals(
    campaign: CampaignConfig, written: WrittenMarginals | None
) -> MarginalWeights | None:
    """The workload a new registration of ``campaign`` measures its cells by: the catalogue's
    ``marginals:`` or the default; None (independent cells) for one count per publisher and
    under ``replace`` adjacency (moving a user between two cells moves two correlated
    residual sets: its sensitivity is not yet derived for residual strategies)."""
    if campaign.cells_per_publisher == 1 or campaign.privacy.adjacency == "replace":
        return None
    dimensions = [d.name for d in campaign.breakdown]
    weights = (
        MarginalWeights.default(dimensions) if written is None else MarginalWeights.written(written)
    )
    weights.check(["publisher", *dimensions], campaign.measures)
    return weights


MARGINALS_HELP = (
    "weight of each marginal the advertiser reads, by the axes it keeps "
    '("publisher,region": 2), or per measure ("publisher": {count: 50, value: 1}); default: '
    "publisher totals 4, publisher × one dimension 2, finer 1 (docs/slices.md)"
)
"""The catalogue's ``marginals:`` field, as every Gaussian mechanism's settings declare it."""


def check_marginals(campaign: CampaignConfig, written: WrittenMarginals | None) -> None:
    """Refuses (ValueError) a written ``marginals:`` the campaign cannot use: one count per
    publisher (nothing to weigh), ``replace`` adjacency, or weights :meth:`MarginalWeights.check`
    refuses — the settings' check of every mechanism that measures cells by residuals."""
    if written is None:
        return
    if campaign.cells_per_publisher == 1:
        raise ValueError(
            "marginals: the campaign releases one count per publisher (no breakdown, "
            "no value measure): there are no marginals to weigh"
        )
    if campaign.privacy.adjacency == "replace":
        raise ValueError("marginals: residual strategies are derived for add_remove adjacency only")
    planned_marginals(campaign, written)


@dataclass(frozen=True)
class Gram:
    """‖encode(x)‖² = Σ_s weight[s]·(Σ_{k: slot[k] = s} coef[k]·x[position[k]])²: a user's
    exact squared norm as sums over marginal keys — what AdsBPC+'s filter computes per user in
    SQL (a weight may be negative; the sum never is)."""

    position: np.ndarray
    slot: np.ndarray
    coef: np.ndarray
    weight: np.ndarray

    def slots(self, vector: np.ndarray) -> np.ndarray:
        """M·x: each slot's Σ coef·x[position]."""
        return np.bincount(
            self.slot,
            weights=self.coef * np.asarray(vector, dtype=np.float64)[self.position],
            minlength=self.weight.size,
        )

    def inner(self, x: np.ndarray, y: np.ndarray) -> float:
        """⟨encode(x), encode(y)⟩ = Σ_s weight[s]·(Mx)_s·(My)_s (the filter's inner product)."""
        return float(self.weight @ (self.slots(x) * self.slots(y)))

    def norm_squared(self, vector: np.ndarray) -> float:
        return float(self.weight @ self.slots(vector) ** 2)

    @property
    def identity(self) -> bool:
        """True when the form is Σ x² itself (slot = position, coef = weight = 1): the
        warehouse then computes the plain sums, without the map to slots."""
        size = self.weight.size
        return bool(
            self.position.size == size
            and np.array_equal(self.position, np.arange(size))
            and np.array_equal(self.slot, self.position)
            and np.all(self.coef == 1.0)
            and np.all(self.weight == 1.0)
        )

    def slot_rows(self) -> pd.DataFrame:
        """(position, slot, coef, weight) per row, each with its slot's weight: the table the
        AdsBPC+ SQL of either engine joins — empty for the identity, which it sums without."""
        keep = slice(0, 0) if self.identity else slice(None)
        return pd.DataFrame(
            {
                "position": self.position[keep].astype(np.int64),
                "slot": self.slot[keep].astype(np.int64),
                "coef": self.coef[keep].astype(np.float64),
                "weight": self.weight[self.slot][keep].astype(np.float64),
            }
        )


class CellStrategy(Protocol):
    def encode(self, entries: np.ndarray) -> np.ndarray:
        """The vector the Gaussian is added to, from the clipped (scaled) cell entries."""
        ...

    def decode(self, measured: np.ndarray) -> np.ndarray:
        """The released cell entries (scaled, like the input of :meth:`encode`)."""
        ...

    def entry_std(self, kept: Sequence[str], measure: str) -> float:
        """σ of one published number of the marginal keeping ``kept`` (publisher and/or
        dimension names; all of them: a cell) of ``measure``, per unit of the release's σ."""
        ...

    def gram(self) -> Gram:
        """The quadratic form of :meth:`encode`'s squared norm."""
        ...

    def total_std(self, sigmas: np.ndarray, summed: tuple[int, ...]) -> np.ndarray:
        """Standard errors of the totals over the axes at positions ``summed`` of cells whose
        σ are ``sigmas`` (shaped like the layout), shaped by the kept axes."""
        ...


@dataclass(frozen=True)
class IndependentCells:
    """Each cell its own Gaussian: a marginal's σ is √(cells summed) times a cell's."""

    layout: Cells

    def encode(self, entries: np.ndarray) -> np.ndarray:
        return np.asarray(entries, dtype=np.float64)

    def decode(self, measured: np.ndarray) -> np.ndarray:
        return np.asarray(measured, dtype=np.float64)

    def entry_std(self, kept: Sequence[str], measure: str) -> float:
        summed = math.prod(
            len(labels) for name, labels in self.layout.axes[:-1] if name not in kept
        )
        return self.layout.unscale(measure) * math.sqrt(summed)

    def total_std(self, sigmas: np.ndarray, summed: tuple[int, ...]) -> np.ndarray:
        """√Σσ²: the cells' noises are independent."""
        return np.sqrt((np.asarray(sigmas) ** 2).sum(axis=summed))

    def gram(self) -> Gram:
        positions = np.arange(self.layout.size)
        return Gram(positions, positions, np.ones(self.layout.size), np.ones(self.layout.size))


@dataclass(frozen=True)
class ResidualCells:
    """Every marginal of the weights measured by its residuals (privacy/marginals.py)."""

    layout: Cells
    weights: MarginalWeights

    @cached_property
    def _axes(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.layout.axes[:-1])

    @cached_property
    def _strategy(self) -> ResidualStrategy:
        if self.layout.norm != 2:
            raise ValueError("a residual strategy needs Gaussian noise (cells in the ℓ2 norm)")
        measures = self.layout.measures
        self.weights.check(self._axes, measures)
        planned: dict[tuple[int, Marginal], float] = {}
        for kept, weights in self.weights.table(measures):
            for m, measure in enumerate(measures):
                if weights[measure] > 0:
                    planned[(m, self._marginal(kept))] = weights[measure]
        return ResidualStrategy.planned(self.layout.shape[:-1], len(measures), planned)

    def _marginal(self, kept: Sequence[str]) -> Marginal:
        return frozenset(i for i, name in enumerate(self._axes) if name in kept)

    @property
    def _scale(self) -> float:
        return self.layout.scale(self.layout.measures[0])  # 1/√m: the same for every measure

    def encode(self, entries: np.ndarray) -> np.ndarray:
        return self._strategy.measure_vector(np.asarray(entries, dtype=np.float64) / self._scale)

    def decode(self, measured: np.ndarray) -> np.ndarray:
        return self._strategy.reconstruct(np.asarray(measured, dtype=np.float64)) * self._scale

    def entry_std(self, kept: Sequence[str], measure: str) -> float:
        index = self.layout.measures.index(measure)
        variance = self._strategy.marginal_variance(index, self._marginal(kept))
        return math.sqrt(variance) * self._scale * self.layout.unscale(measure)

    def total_std(self, sigmas: np.ndarray, summed: tuple[int, ...]) -> np.ndarray:
        """The release's σ (a measure's cells share it: refused otherwise) times the
        marginal's own factor — the cells' noises are correlated, so not √Σσ²."""
        array = np.asarray(sigmas, dtype=np.float64)
        names = self._axes
        kept = tuple(name for i, name in enumerate(names) if i not in summed)
        kept_shape = tuple(n for i, n in enumerate(array.shape) if i not in summed)
        out = np.empty(kept_shape)
        for index, measure in enumerate(self.layout.measures):
            cells = array[..., index]
            if not np.allclose(cells, cells.flat[0], rtol=1e-12, atol=0.0):
                raise ValueError(f"the {measure} cells of one release must share their σ")
            release = float(cells.flat[0]) / self.entry_std(names, measure)
            out[..., index] = release * self.entry_std(kept, measure)
        return out

    def gram(self) -> Gram:
        return self._gram

    @cached_property
    def _gram(self) -> Gram:
        """Möbius inversion of ‖Sx‖² = Σ_B d_B²‖P_B x‖² over the marginals A:
        ‖P_B x‖² = Σ_{A⊆B} (−1)^{|B∖A|}‖marg_A x‖²/Π_{i∉A} n_i, per measure row of T. Built
        once per layout (every AdsBPC+ day of a campaign reads it)."""
        strategy = self._strategy
        sizes = self.layout.shape[:-1]
        axes = len(sizes)
        transform = measure_transform(len(self.layout.measures))
        index = np.indices(self.layout.shape).reshape(len(self.layout.shape), -1)
        positions, slots, coefs, weights = [], [], [], []
        offset = 0
        for row in range(transform.shape[0]):
            for kept in subsets(axes):
                weight = _mobius_weight(strategy.scales, row, kept, sizes) / self._scale**2
                if weight == 0:
                    continue
                kept_axes = sorted(kept)
                keys = (
                    np.ravel_multi_index(
                        tuple(index[a] for a in kept_axes), tuple(sizes[a] for a in kept_axes)
                    )
                    if kept_axes
                    else np.zeros(index.shape[1], dtype=np.int64)
                )
                width = math.prod(sizes[a] for a in kept_axes)
                for measure in range(transform.shape[1]):
                    if transform[row, measure] == 0:
                        continue
                    chosen = np.flatnonzero(index[-1] == measure)
                    positions.append(chosen)
                    slots.append(offset + keys[chosen])
                    coefs.append(np.full(chosen.size, transform[row, measure]))
                weights.append(np.full(width, weight))
                offset += width
        return Gram(
            np.concatenate(positions),
            np.concatenate(slots),
            np.concatenate(coefs),
            np.concatenate(weights),
        )


def _mobius_weight(
    scales: Mapping[tuple[int, Marginal], float], row: int, kept: Marginal, sizes: Sequence[int]
) -> float:
    """g_A = Σ_{B⊇A} (−1)^{|B∖A|} d_B² / Π_{i∉A} n_i for measure row ``row``."""
    total = sum(
        (-1) ** (len(residual) - len(kept)) * d**2
        for (m, residual), d in scales.items()
        if m == row and kept <= residual
    )
    return total / math.prod(n for i, n in enumerate(sizes) if i not in kept)


@lru_cache(maxsize=64)
def strategy_for(layout: Cells) -> CellStrategy:
    """The layout's strategy: residual when it carries marginal weights, else independent."""
    if layout.marginals is None:
        return IndependentCells(layout)
    return ResidualCells(layout, layout.marginals)

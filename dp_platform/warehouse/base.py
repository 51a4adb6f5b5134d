"""What the platform asks of a warehouse engine, and the registry that picks one.

Two engines implement :class:`WarehouseEngine`: DuckDB (``store.Warehouse``, the embedded
default and the reference) and Apache Spark (``spark.store.SparkWarehouse``). Both return the
same numpy aggregates for the same events — tests/test_spark_parity.py proves it — so the
library (``daily.py``, ``oneshot.py``, ``reach.py``), the schema checks and the commands never
ask which engine they hold. The catalogue's ``warehouse:`` block names the engine;
:func:`open_warehouse` is the only place that turns the name into an implementation, and it
imports an engine's module only when that engine is chosen (a DuckDB campaign never loads
PySpark, let alone starts a JVM).

Every method that builds a per-publisher vector takes ``publishers``: the list the vector is
over, in order. ``None`` means the campaign's current list (:meth:`campaign_publishers`); a
caller that froze the list (e.g. at registration) passes it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from datetime import date, datetime
from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, Self

import numpy as np
import pandas as pd

from dp_platform.config import CampaignConfig
from dp_platform.errors import ConfigError
from dp_platform.settings import WarehouseConfig

if TYPE_CHECKING:
    from dp_platform.cell_strategy import MarginalWeights
    from dp_platform.home import Home
    from dp_platform.privacy.discrete import IntegerNoiseSource
    from dp_platform.warehouse.ingest import DimensionLists, IngestReport

__all__ = [
    "ENGINES",
    "PeriodBound",
    "ProfileGrid",
    "ReleaseInputs",
    "StrategyRow",
    "WarehouseEngine",
    "open_warehouse",
]


@dataclass(frozen=True)
class PeriodBound:
    """How a sum over a campaign's whole period bounds each user (the one-shot release): keep
    at most ``bound`` conversions per user (the last one fractionally), enforced ``pre`` or
    ``post`` attribution; with ``use_value`` sum values capped at ``value_cap`` instead."""

    bound: float
    enforcement: str
    use_value: bool
    value_cap: float


@dataclass(frozen=True)
class ProfileGrid:
    """Public log-spaced bins for a histogram of per-user profiles T ∈ (0, cap²]: ``bins`` bins
    from ``low``·cap² to cap² (the AdsBPC+ mechanism owns its grid; engines only apply it)."""

    low: float
    bins: int

    def sql_parameters(self, cap: float) -> dict[str, float | int]:
        """The grid as the profile SQL takes it (same on every engine)."""
        return {
            "low": self.low * cap * cap,
            "step": float(np.log(1.0 / self.low) / self.bins),
            "bins": self.bins,
        }


def check_remainder_cap(cap: float | None) -> None:
    """An AdsBPC+ remainder cap E is a finite number > 0 (None: no remainder)."""
    if cap is not None and not (cap > 0 and math.isfinite(cap)):
        raise ValueError(f"remainder_cap must be a finite number > 0, not {cap}")


@dataclass(frozen=True)
class ReleaseInputs:
    """What a day's clipped vector — the true values its release adds noise to — was computed
    from, as the engine's partition records keep it: ids of commits, never counts of rows or
    users, so safe to show beside the release.

    ``load``: the last load its attribution was built from (the ``input_version`` chain);
    ``clipped_version``: the version of ``clipped_daily_vectors`` that wrote the day (Spark: a
    Delta version, ``VERSION AS OF`` reads it back; DuckDB: the partition record's number from
    its ``partition_versions`` sequence); ``tables``: each event table's version as that load
    left it (Spark: the Delta versions ``loads`` recorded; DuckDB keeps none: empty)."""

    load: int
    clipped_version: int
    tables: dict[str, int]


@dataclass(frozen=True)
class StrategyRow:
    """Day t's row of an AdsBPC+ strategy (privacy/strategy.py), as engines take it: C_tt and
    C_tj of the earlier days (j = 1..t−1, in order; zeros may be left out). ``carry``: whether
    later rows read this day's kept values, so the engine must keep them (secret state, so
    the diagonal strategy, whose later rows never read them, keeps none)."""

    diagonal: float
    earlier: tuple[float, ...]
    carry: bool = True

    @classmethod
    def identity(cls, earlier_days: int) -> StrategyRow:
        """Row t = earlier_days + 1 of the diagonal strategy C = I: one filter SQL serves both
        (plus_filter.sql), so the privacy-critical cut is written once per engine."""
        return cls(1.0, (0.0,) * earlier_days, carry=False)

    def sql_parameters(self, days: list[date]) -> dict[str, object]:
        """``$ctt``, ``$past_days``, ``$past_coefs``, ``$carry`` for ``days`` = days 1..t−1."""
        if len(days) != len(self.earlier):
            raise ValueError(f"the row has {len(self.earlier)} earlier coefficients")
        kept = [(d, c) for d, c in zip(days, self.earlier, strict=True) if c != 0.0]
        return {
            "ctt": float(self.diagonal),
            "past_days": [d for d, _ in kept],
            "past_coefs": [float(c) for _, c in kept],
            "carry": self.carry,
        }


class WarehouseEngine(Protocol):
    """The warehouse methods the platform calls; aggregates out, never user-level rows
    (``day_frame`` is for schema checks only)."""

    engine: str

    @property
    def identity(self) -> str:
        """A stable identity of this warehouse's stored state (a random UUID created once and
        kept inside the warehouse: a copied or moved home keeps it, another warehouse has its
        own). The ledger binds a campaign with per-user state to it (warehouse_binding.py)."""
        ...

    def close(self) -> None: ...

    def __enter__(self) -> Self: ...

    def __exit__(self, *exc: object) -> None: ...

    def ingest(
        self,
        impressions: str | Path,
        conversions: str | Path,
        *,
        now: datetime | None = None,
        dimensions: DimensionLists | None = None,
        impression_dimensions: DimensionLists | None = None,
    ) -> IngestReport:
        """Load both files; ``dimensions`` / ``impression_dimensions`` are the catalogue's
        breakdown columns of the conversions / impressions file (name → definition or public
        list: ingest.DimensionLists)."""
        ...

    def table_rows(self, table: str) -> int: ...

    def loads_without(
        self, kind: str, advertiser: str, first: date, last: date, dimension: str
    ) -> list[int]:
        """The loads of ``kind`` (conversions | impressions) holding the advertiser's events
        dated ``first``..``last`` that were ingested without ``dimension``'s column: ingest
        metadata, never counts (dp_platform/dimension_coverage.py)."""
        ...

    def day_frame(self, table: str, campaign: CampaignConfig, days: list[date]) -> pd.DataFrame: ...

    def advertiser_publishers(self, advertiser: str) -> list[str]: ...

    def campaign_publishers(self, campaign: CampaignConfig) -> list[str]: ...

    def attribute_days(
        self,
        campaign: CampaignConfig,
        first: date,
        last: date,
        *,
        publishers: list[str] | None = None,
        noise: IntegerNoiseSource | None = None,
    ) -> dict: ...

    def attribute_day(self, campaign: CampaignConfig, day: date) -> dict: ...

    def contributions_days(self, campaign: CampaignConfig, first: date, last: date) -> dict: ...

    def contributions_day(self, campaign: CampaignConfig, day: date) -> dict: ...

    def day_histogram(self, campaign: CampaignConfig, day: date) -> np.ndarray: ...

    def capped_histogram(self, campaign: CampaignConfig, day: date, cap: int) -> np.ndarray: ...

    def clipped_vector(
        self,
        campaign: CampaignConfig,
        day: date,
        bound: float,
        *,
        publishers: list[str] | None = None,
    ) -> np.ndarray: ...

    def plus_clipped_vector(
        self,
        campaign: CampaignConfig,
        day: date,
        bound: float,
        sigma: float,
        cap: float,
        *,
        publishers: list[str] | None = None,
        row: StrategyRow | None = None,
        marginals: MarginalWeights | None = None,
        remainder_cap: float | None = None,
    ) -> np.ndarray:
        """The day's AdsBPC+ filter clip (plus_filter.sql); ``marginals``: the registered
        plan's residual workload, whose Gram is the norm each user is charged (None: Σ x²);
        ``remainder_cap`` E: also store the day's remainder (plus_remainder.sql)."""
        ...

    def plus_remainder(self, campaign: CampaignConfig, day: date) -> float:
        """The day's stored X_t = Σ_u min(c_ut − k_ut, E) (a true value)."""
        ...

    def plus_profile_histogram(
        self,
        campaign: CampaignConfig,
        days: list[date],
        bounds: list[float],
        factors: list[float],
        cap: float,
        *,
        grid: ProfileGrid,
        publishers: list[str] | None = None,
        cross: float = 0.0,
        marginals: MarginalWeights | None = None,
    ) -> np.ndarray:
        """Users per profile bin of T_u (plus_profile.sql), in the norm the filter charges
        (``marginals`` as :meth:`plus_clipped_vector`)."""
        ...

    def plus_spend_summary(self, campaign: CampaignConfig) -> dict: ...

    def release_inputs(self, campaign: CampaignConfig, day: date) -> ReleaseInputs | None:
        """What the day's clipped vector was computed from, by the record its last clip wrote
        (None: no clip recorded). The records as they are now: what a release drawn now read,
        not necessarily what an earlier draw read (assets/factory.py keeps that one)."""
        ...

    def one_shot_sums(
        self,
        campaign: CampaignConfig,
        bounding: PeriodBound,
        *,
        publishers: list[str] | None = None,
    ) -> np.ndarray: ...

    def reach_histogram(
        self,
        campaign: CampaignConfig,
        max_frequency: int,
        *,
        publishers: list[str] | None = None,
    ) -> np.ndarray: ...


Opener = Callable[[WarehouseConfig, "Home", bool], AbstractContextManager[WarehouseEngine]]

ENGINES: dict[str, str] = {
    "duckdb": "dp_platform.warehouse.store:open_at_home",
    "spark": "dp_platform.warehouse.spark.store:open_at_home",
}
"""Engine name (the catalogue's ``warehouse.engine``) → ``module:function`` opening it at a
platform home as ``function(settings, home, read_only)``, a context manager."""


def _opener(engine: str) -> Opener:
    if engine not in ENGINES:
        raise ConfigError(f"warehouse.engine: unknown engine {engine!r} ({', '.join(ENGINES)})")
    module, _, function = ENGINES[engine].partition(":")
    return getattr(import_module(module), function)


@contextmanager
def open_warehouse(
    settings: WarehouseConfig, home: Home, *, read_only: bool = False
) -> Iterator[WarehouseEngine]:
    """The engine the catalogue chose, open at ``home`` for one use (closed after it)."""
    with _opener(settings.engine)(settings, home, read_only) as warehouse:
        yield warehouse

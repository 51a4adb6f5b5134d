"""The Spark warehouse's ground floor: its database in the session, the campaign's released
vector put in scope for a query, and the partitions its records (records.py) hold.

:class:`~dp_platform.warehouse.spark.store.SparkWarehouse` opens it and builds every step on it
(attribution, contributions, histograms, clipping, the AdsBPC+ filter, campaign-level sums).
"""

from __future__ import annotations

from datetime import date
from typing import TYPE_CHECKING, Self

import numpy as np
import pandas as pd

from dp_platform.cell_strategy import MarginalWeights
from dp_platform.cells import CellLayout, dimension_keys, layout_of
from dp_platform.config import CampaignConfig
from dp_platform.errors import ConfigError
from dp_platform.warehouse.base import ReleaseInputs
from dp_platform.warehouse.ingest import TIE_ROOM
from dp_platform.warehouse.spark.commits import lost_to_another_run
from dp_platform.warehouse.spark.records import EVENT_TABLES, WarehouseRecords
from dp_platform.warehouse.spark.runner import SparkSqlRunner
from dp_platform.warehouse.store_core import (
    ATTRIBUTED,
    CLIPPED,
    CONTRIBUTIONS,
    WarehouseError,
    days_between,
)

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["SPEND", "TABLES", "VALUES", "SparkWarehouseCore"]

SPEND = "plus_user_spend"
VALUES = "plus_user_values"
REMAINDERS = "plus_remainders"
US_PER_DAY = 86_400_000_000
TABLES = (
    *EVENT_TABLES,
    ATTRIBUTED,
    CONTRIBUTIONS,
    CLIPPED,
    SPEND,
    "private_touch_choices",
)


class SparkWarehouseCore:
    """The session, root, records and runner :class:`~.store.SparkWarehouse` opens, and what
    every step stands on: the current database, scope and partitions."""

    spark: SparkSession
    root: str
    records: WarehouseRecords
    sql: SparkSqlRunner
    database: str

    def _use(self) -> None:
        """This warehouse's tables are the session's current database."""
        self.spark.catalog.setCurrentDatabase(self.database)

    def loads_without(
        self, kind: str, advertiser: str, first: date, last: date, dimension: str
    ) -> list[int]:
        """The committed loads of ``kind`` holding the advertiser's events dated
        ``first``..``last`` that were ingested without ``dimension``'s column (DuckDB's
        loads_without_dimension.sql; ``loads`` records each load's columns)."""
        if kind not in ("conversions", "impressions"):
            raise ValueError(f"unknown event kind {kind!r}")
        self._use()
        rows = self.sql.run(f"loads_of_{kind}", advertiser=advertiser, first=first, last=last)
        committed = {int(row[0]) for row in self.records.committed_loads()}
        held = {int(row[0]) for row in rows} & committed
        return sorted(held - self.records.loads_with_dimension(dimension))

    @property
    def identity(self) -> str:
        """This warehouse's identity, kept in its ``meta`` table (records.py): what the ledger
        binds a campaign with per-user state to."""
        return self.records.identity()

    def close(self) -> None:
        self.sql.release()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- campaign scope ------------------------------------------------------------------

    def advertiser_publishers(self, advertiser: str) -> list[str]:
        """Every publisher that has shown an impression of the advertiser, sorted by id (read
        once, when a ``publishers: all`` campaign registers; as DuckDB's)."""
        self._use()
        return [row[0] for row in self.sql.run("advertiser_publishers", advertiser=advertiser)]

    def campaign_publishers(self, campaign: CampaignConfig) -> list[str]:
        """The release's publishers, in vector order (as DuckDB's ``campaign_publishers``)."""
        if isinstance(campaign.publishers, list):
            return list(campaign.publishers)
        return self.advertiser_publishers(campaign.advertiser)

    def _scope(self, campaign: CampaignConfig, publishers: list[str] | None = None) -> list[str]:
        """Register view campaign_pubs for the vector's publishers (``None``: the campaign's)."""
        self._use()
        chosen = self.campaign_publishers(campaign) if publishers is None else list(publishers)
        listed = pd.DataFrame({"position": np.arange(len(chosen), dtype=np.int32)})
        listed["publisher_id"] = pd.Series(chosen, dtype=object)
        self.spark.createDataFrame(
            listed, schema="position INT, publisher_id STRING"
        ).createOrReplaceTempView("publisher_list")
        self.sql.run("campaign_publishers")
        return chosen

    def _cell_scope(
        self,
        campaign: CampaignConfig,
        publishers: list[str] | None,
        first: date,
        last: date,
        marginals: MarginalWeights | None = None,
    ) -> CellLayout:
        """Put the campaign's released vector for days first..last in scope (DuckDB's
        ``_cell_scope``): campaign_pubs, view ``cell_rows`` (its attributed rows as vector
        entries: cell_rows_plain.sql for a count-only campaign without breakdown, cell_rows.sql
        with the layout views otherwise) and view ``cell_positions``. The layout is the
        registered config's (public; ``marginals``: its plan's, read by :meth:`_gram_scope`);
        it reaches Spark as small views, never as literals."""
        layout = layout_of(campaign, self._scope(campaign, publishers), marginals)
        days = {"campaign": campaign.name, "first": first, "last": last}
        if layout.plain:
            self.sql.run("cell_rows_plain", **days)
            return layout
        measures = pd.DataFrame(
            {
                "measure": np.arange(len(layout.measures), dtype=np.int32),
                "value_part": [m == "value" for m in layout.measures],
                "scale": [layout.scale(m) for m in layout.measures],
            }
        )
        self.spark.createDataFrame(
            measures, schema="measure INT, value_part BOOLEAN, scale DOUBLE"
        ).createOrReplaceTempView("campaign_measures")
        keys = dimension_keys(campaign, layout, "conversions")
        self._dimension_list("campaign_dim_list", keys)
        self.sql.run("cell_layout")
        self.spark.range(layout.size).selectExpr(
            "id AS cell_key", "id AS position"
        ).createOrReplaceTempView("cell_positions")
        self.sql.run(
            "cell_rows",
            dimensions=len({name for name, *_ in keys}),
            touched=bool(dimension_keys(campaign, layout, "impressions")),
            combinations=layout.combinations,
            measures=len(layout.measures),
            value_cap=float(layout.value_cap or 1.0),
            **days,
        )
        return layout

    def _gram_scope(self, layout: CellLayout) -> dict[str, bool]:
        """The layout's norm for the AdsBPC+ SQL (DuckDB's ``_gram_scope``): view gram_slots
        (position, slot, coef, weight; empty for the identity Gram) and ``identity``."""
        gram = layout.strategy.gram()
        self.spark.createDataFrame(
            gram.slot_rows(), schema="position BIGINT, slot BIGINT, coef DOUBLE, weight DOUBLE"
        ).createOrReplaceTempView("gram_slots")
        return {"identity": gram.identity}

    def _dimension_list(self, view: str, keys: list[tuple[str, str, int, int]]) -> None:
        """Register ``keys`` (dimension, value, idx, stride: public, from the registered
        config) as the small view ``view``."""
        frame = pd.DataFrame(keys, columns=["dimension", "value", "idx", "stride"])
        self.spark.createDataFrame(
            frame.astype({"idx": np.int64, "stride": np.int64}),
            schema="dimension STRING, value STRING, idx BIGINT, stride BIGINT",
        ).createOrReplaceTempView(view)

    def _cell_sums(
        self, layout: CellLayout, query: str, cells_query: str | None = None, **params: object
    ) -> np.ndarray:
        """Run ``query`` (rows of (vector position, sum)) with :meth:`_cell_scope` in scope:
        the vector of ``layout``, zeros where no row; ``cells_query`` instead for a layout with
        cells (DuckDB's ``publisher_sums``). Columnar: 10⁵ cells are no Python loop."""
        if cells_query is not None and not layout.plain:
            query = cells_query
        vector = np.zeros(layout.size, dtype=np.float64)
        sums = self.sql.frame(query, **params)
        vector[sums.iloc[:, 0].to_numpy(dtype=np.int64)] = sums.iloc[:, 1].to_numpy(np.float64)
        return vector

    @staticmethod
    def _check_range(campaign: CampaignConfig, first: date, last: date) -> None:
        campaign.day_index(first)
        campaign.day_index(last)
        if last < first:
            raise ConfigError(f"day range {first}..{last} is empty")

    def _scope_params(self, campaign: CampaignConfig, first: date, last: date) -> dict:
        return {
            "advertiser": campaign.advertiser,
            "first": first,
            "last": last,
            "lookback_days": campaign.attribution.lookback_days,
            "tie_room": TIE_ROOM,
        }

    @staticmethod
    def _touch_keys(campaign: CampaignConfig) -> list[tuple[str, str, int, int]]:
        """The breakdown's impression dimensions as layout rows (none: every touch is 0)."""
        return dimension_keys(campaign, layout_of(campaign, []), "impressions")

    def _attribution_scope(self, campaign: CampaignConfig, first: date, last: date) -> None:
        """attribution_scope.sql's views for days first..last, its impressions carrying their
        touch (DuckDB's ``_touch_scope``): attribution_touch.sql with the campaign's impression
        dimensions (view campaign_touch_list), else the constant 0 (no dimension table read)."""
        params = self._scope_params(campaign, first, last)
        keys = self._touch_keys(campaign)
        if keys:
            self._dimension_list("campaign_touch_list", keys)
            self.sql.run(
                "attribution_touch", touch_dimensions=len({name for name, *_ in keys}), **params
            )
        else:
            self.sql.run("impression_touches_plain")
        self.sql.run("attribution_scope", **params)

    # -- partitions ----------------------------------------------------------------------

    def _clear(self, table: str, campaign: CampaignConfig, days: list[date]) -> None:
        """Delete the days' rows of an unrecorded table (one commit)."""
        self.sql.query(
            f"DELETE FROM {table} WHERE campaign = :campaign AND day BETWEEN :first AND :last "
            "AND array_contains(:days, day)",
            campaign=campaign.name,
            first=min(days),
            last=max(days),
            days=sorted(days),
        )

    def _day_counts(
        self, table: str, campaign: CampaignConfig, first: date, last: date, extra: str
    ) -> tuple[dict[date, int], int]:
        """Rows per day of the range (every day, empty ones 0: the partitions record) and the
        range's total of ``extra`` (a per-day aggregate SQL expression), in one scan."""
        counts = dict.fromkeys(days_between(first, last), 0)
        total = 0
        for day, rows, part in self.sql.query(
            f"SELECT day, count(*), {extra} FROM {table} WHERE campaign = :campaign "
            "AND day BETWEEN :first AND :last GROUP BY day",
            campaign=campaign.name,
            first=first,
            last=last,
        ):
            counts[day] = int(rows)
            total += int(part)
        return counts, total

    def _version(self, asset: str, campaign: CampaignConfig, day: date) -> tuple[int, int | None]:
        found = self.records.version(asset, campaign.name, day)
        if found is None:
            raise WarehouseError(
                f"{asset} of campaign {campaign.name} for {day} is not materialised yet"
            )
        return found

    def release_inputs(self, campaign: CampaignConfig, day: date) -> ReleaseInputs | None:
        """The day's clip record (:meth:`~dp_platform.warehouse.base.WarehouseEngine.
        release_inputs`): the Delta version of ``clipped_daily_vectors`` that wrote the day,
        the load its attribution was built from and the event tables' versions ``loads``
        recorded for that load."""
        self._use()
        found = self.records.version(CLIPPED, campaign.name, day)
        if found is None or found[1] is None:
            return None
        version, load = found
        return ReleaseInputs(
            load=load, clipped_version=version, tables=self.records.event_versions(load)
        )

    # -- the clipped-vector table: written by every clip, read back by a write-once re-run

    def _store_clipped(
        self,
        campaign: CampaignConfig,
        day: date,
        bound: float,
        layout: CellLayout,
        vector: np.ndarray,
        read: int | None,
    ) -> None:
        """Replace the (campaign, day) partition of the clipped-vector table (schema checks,
        a write-once re-run): one commit (clipped_store.sql), or emptied when the campaign has
        no publisher; forgotten in ``partitions`` before and recorded after, with the Delta
        version that wrote it and the load its attribution was built from (``read``, as the
        attribution's record said when the clip read it) — what the release drawn from this
        vector read (:meth:`release_inputs`)."""
        self.records.forget(CLIPPED, campaign.name, [day])
        with lost_to_another_run(f"{CLIPPED} of campaign {campaign.name}, {day}"):
            if not layout.publishers:
                self._clear(CLIPPED, campaign, [day])
            else:  # campaign_pubs holds these publishers (the caller's scope)
                values = pd.DataFrame(
                    {"position": np.arange(len(vector), dtype=np.int32), "value": vector}
                )
                self.spark.createDataFrame(
                    values, schema="position INT, value DOUBLE"
                ).createOrReplaceTempView("clipped_new")
                self.sql.run(
                    "clipped_store",
                    bound=float(bound),
                    campaign=campaign.name,
                    day=day,
                    per=layout.size // len(layout.publishers),
                )
        # one row per vector entry (each position's publisher is in campaign_pubs)
        written = len(vector) if layout.publishers else 0
        self.records.record(CLIPPED, campaign.name, {day: written}, {day: read})

    def _stored_vector(self, campaign: CampaignConfig, day: date) -> np.ndarray:
        rows = self.sql.query(
            f"SELECT position, value FROM {CLIPPED} WHERE campaign = :c AND day = :d "
            "ORDER BY position",
            c=campaign.name,
            d=day,
        )
        return np.array([value for _, value in rows], dtype=np.float64)

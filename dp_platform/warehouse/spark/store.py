"""The Spark warehouse: the DuckDB warehouse's methods (../store.py) on Parquet tables.

Same contract as DuckDB's ``Warehouse`` (dp_platform/warehouse/base.py): heavy work is Spark SQL
(files in this package, each the twin of the DuckDB file of the same name and parameters);
Python receives per-day aggregates only. Tables are Parquet under one root, partitioned by
(campaign, day) for derived data; the catalog (catalog.py, SQLite) is the commit record:

* a range of days is rewritten by forgetting it in the catalog, dropping its directories,
  writing the new rows and recording new versions — a reader checks the catalog first, so a
  crash leaves "not materialised", never a mix of two versions;
* AdsBPC+ spends of a day count once the catalog records the day (see catalog.py).

One SparkSession per process (session.py); each open registers the tables in a database named
after the root, so several warehouses can share a session (the tests do).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Self

import numpy as np
import pandas as pd

from dp_platform.cells import CellLayout, dimension_keys, layout_of
from dp_platform.config import CampaignConfig, ConfigError, WarehouseConfig
from dp_platform.file_lock import exclusive
from dp_platform.privacy.filter import RESIDUAL
from dp_platform.warehouse.base import StrategyRow
from dp_platform.warehouse.ingest import TIE_ROOM, IngestReport
from dp_platform.warehouse.spark.catalog import Catalog
from dp_platform.warehouse.spark.files import TableFiles
from dp_platform.warehouse.spark.ingest import ingest_files, recover
from dp_platform.warehouse.spark.runner import SparkSqlRunner
from dp_platform.warehouse.spark.session import private_session
from dp_platform.warehouse.store_core import FRAME_TABLES, WarehouseError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from dp_platform.home import Home
    from dp_platform.privacy.discrete import IntegerNoiseSource
    from dp_platform.warehouse.base import PeriodBound, ProfileGrid

__all__ = ["TABLES", "SparkWarehouse", "open_at_home"]

_ATTRIBUTED = "attributed_conversions"
_CONTRIBUTIONS = "user_day_contributions"
_CLIPPED = "clipped_daily_vectors"
_SPEND = "plus_user_spend"
_VALUES = "plus_user_values"
_US_PER_DAY = 86_400_000_000
TABLES = (
    "users",
    "publishers",
    "advertisers",
    "advertiser_publishers",
    "impressions",
    "conversions",
    "quarantine",
    "dimension_values",
    "conversion_dimensions",
    "impression_dimensions",
    _ATTRIBUTED,
    _CONTRIBUTIONS,
    _CLIPPED,
    _SPEND,
    "private_touch_choices",
)


def _days(first: date, last: date) -> list[date]:
    return [first + timedelta(days=i) for i in range((last - first).days + 1)]


class SparkWarehouse:
    """Parquet tables under ``root`` (any Hadoop file system URI or a local path) and their
    catalog at ``catalog``; the schema is created idempotently on open."""

    engine = "spark"

    def __init__(self, spark: SparkSession, root: str | Path, catalog: str | Path) -> None:
        self.spark = spark
        self.root = str(root).rstrip("/")
        self.catalog = Catalog(Path(catalog))
        self.files = TableFiles(spark)
        self.sql = SparkSqlRunner(spark, {"root": self.root})
        self.database = "dp_" + hashlib.sha256(self.root.encode()).hexdigest()[:16]
        spark.sql(f"CREATE DATABASE IF NOT EXISTS {self.database} LOCATION '{self.root}/_database'")
        self._use()
        self.sql.run("schema")
        self._add_touch_columns()
        self.refresh()
        recover(self)
        self._drop_uncommitted_touches()

    def _use(self) -> None:
        """This warehouse's tables are the session's current database."""
        self.spark.catalog.setCurrentDatabase(self.database)

    def _add_touch_columns(self) -> None:
        """Tables defined before touches existed (a persistent session catalog keeps their old
        definition) get the column; their files read it as NULL (cell_rows.sql)."""
        for table in (_ATTRIBUTED, "private_touch_choices"):
            if "touch" not in self.spark.table(table).columns:
                self.spark.sql(f"ALTER TABLE {table} ADD COLUMNS (touch INT)")

    def refresh(self) -> None:
        """Forget cached file listings (after files changed outside Spark's writers)."""
        self._use()
        for table in TABLES:
            self.spark.catalog.refreshTable(table)

    @property
    def identity(self) -> str:
        """This warehouse's identity, kept in its catalog (catalog.py): what the ledger binds
        a campaign with per-user state to."""
        return self.catalog.identity()

    def close(self) -> None:
        self.sql.release()
        self.catalog.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- loading -------------------------------------------------------------------------

    def ingest(
        self,
        impressions: str | Path,
        conversions: str | Path,
        *,
        now: datetime | None = None,
        dimensions: dict[str, list[str]] | None = None,
        impression_dimensions: dict[str, list[str]] | None = None,
    ) -> IngestReport:
        """Validate and load two event files (all or nothing); see :mod:`.ingest`.
        ``dimensions`` / ``impression_dimensions``: the catalogue's dimensions of the
        conversions / impressions file (name → public values)."""
        self._use()
        return ingest_files(
            self,
            impressions,
            conversions,
            now=now,
            dimensions=dimensions,
            impression_dimensions=impression_dimensions,
        )

    def table_rows(self, table: str) -> int:
        """Row count of a warehouse table (monitoring; no contents)."""
        self._use()
        if table == "loads":
            return len(self.catalog.committed_loads())
        if table not in TABLES:
            raise ValueError(f"unknown table {table!r}")
        return int(self.sql.query(f"SELECT count(*) FROM {table}")[0][0])

    def day_frame(self, table: str, campaign: CampaignConfig, days: list[date]) -> pd.DataFrame:
        """Rows of ``table`` for the given days, shaped as ``dp_platform.schemas`` (schema checks
        only: private rows)."""
        if table not in FRAME_TABLES:
            raise ValueError(f"unknown table {table!r}; expected one of {FRAME_TABLES}")
        self._use()
        days = sorted(set(days)) or [campaign.start]
        frame = self.sql.frame(
            f"frame_{table}",
            advertiser=campaign.advertiser,
            campaign=campaign.name,
            first=min(days),
            last=max(days),
            days=days,
        )
        if "day" in frame.columns:
            frame["day"] = pd.to_datetime(frame["day"]).dt.date
        return frame

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
    ) -> CellLayout:
        """Put the campaign's released vector for days first..last in scope (DuckDB's
        ``_cell_scope``): campaign_pubs, view ``cell_rows`` (its attributed rows as vector
        entries: cell_rows_plain.sql for a count-only campaign without breakdown, cell_rows.sql
        with the layout views otherwise) and view ``cell_positions``. The layout is the
        registered config's (public); it reaches Spark as small views, never as literals."""
        layout = layout_of(campaign, self._scope(campaign, publishers))
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

    # -- partitions ----------------------------------------------------------------------

    def _clear(self, table: str, campaign: CampaignConfig, days: list[date]) -> None:
        """Forget the days (catalog first), then drop their directories."""
        if table in (_ATTRIBUTED, _CONTRIBUTIONS):
            self.catalog.forget(table, campaign.name, days)
        for day in days:
            self.files.delete(f"{self.root}/{table}/campaign={campaign.name}/day={day}")
        self.spark.catalog.refreshTable(table)

    def _day_rows(self, table: str, campaign: CampaignConfig, first: date, last: date) -> dict:
        counts = dict.fromkeys(_days(first, last), 0)
        for day, rows in self.sql.query(
            f"SELECT day, count(*) FROM {table} WHERE campaign = :campaign "
            "AND day BETWEEN :first AND :last GROUP BY day",
            campaign=campaign.name,
            first=first,
            last=last,
        ):
            counts[day] = int(rows)
        return counts

    def _version(self, asset: str, campaign: CampaignConfig, day: date) -> tuple[int, int | None]:
        found = self.catalog.version(asset, campaign.name, day)
        if found is None:
            raise WarehouseError(
                f"{asset} of campaign {campaign.name} for {day} is not materialised yet"
            )
        return found

    def _require_current(self, campaign: CampaignConfig, day: date) -> None:
        attributed, _ = self._version(_ATTRIBUTED, campaign, day)
        _, source = self._version(_CONTRIBUTIONS, campaign, day)
        if source != attributed:
            raise WarehouseError(
                f"{_CONTRIBUTIONS} of campaign {campaign.name} for {day} is stale "
                "(attribution was re-run); materialise it again"
            )

    # -- attribution and contributions ---------------------------------------------------

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

    def attribute_days(
        self,
        campaign: CampaignConfig,
        first: date,
        last: date,
        *,
        publishers: list[str] | None = None,
        noise: IntegerNoiseSource | None = None,
    ) -> dict:
        """(Re)materialise attributed_conversions for days first..last (see module doc)."""
        self._check_range(campaign, first, last)
        rule = campaign.attribution.rule
        chosen = self._scope(campaign, publishers)
        self._clear(_ATTRIBUTED, campaign, _days(first, last))
        try:
            if rule == "private_last_touch":
                self._attribute_private(campaign, first, last, noise)
            else:
                single_touch = rule in {"lta", "fta"}
                script = f"attribute_{rule}" if single_touch else "attribute_touches"
                # The single-touch stream covers the range in one pass; a multi-touch range
                # join goes day by day so its intermediate stays a day's size.
                spans = [(first, last)] if single_touch else [(d, d) for d in _days(first, last)]
                for span_first, span_last in spans:
                    self._attribution_scope(campaign, span_first, span_last)
                    self.sql.run(
                        script,
                        campaign=campaign.name,
                        rule=rule,
                        half_life_us=campaign.attribution.half_life_days * _US_PER_DAY,
                    )
        finally:
            self.sql.release()
        self.catalog.record(
            _ATTRIBUTED, campaign.name, self._day_rows(_ATTRIBUTED, campaign, first, last), None
        )
        single = rule in {"lta", "fta", "private_last_touch"}
        attributed, rows = self.sql.query(
            f"SELECT {'count(*)' if single else 'count(DISTINCT conversion_key)'}, count(*) "
            f"FROM {_ATTRIBUTED} WHERE campaign = :campaign AND day BETWEEN :first AND :last",
            campaign=campaign.name,
            first=first,
            last=last,
        )[0]
        total = self.sql.query(
            "SELECT count(*) FROM conversions AS c JOIN advertisers AS a "
            "ON a.advertiser_key = c.advertiser_key WHERE a.advertiser_id = :advertiser "
            "AND c.day BETWEEN :first AND :last",
            advertiser=campaign.advertiser,
            first=first,
            last=last,
        )[0][0]
        return {
            "rule": rule,
            "days": (last - first).days + 1,
            "publishers": len(chosen),
            "conversions": int(total),
            "attributed": int(attributed),
            "unattributed": int(total) - int(attributed),
            "rows": int(rows),
        }

    def _attribute_private(
        self,
        campaign: CampaignConfig,
        first: date,
        last: date,
        noise: IntegerNoiseSource | None,
    ) -> int:
        """Private last touch (attribution/private_touch.py), each conversion drawn once per
        campaign: candidates of conversions without a stored choice and their dense index in
        Spark, one Exp(1) per candidate from privacy/ on the driver (never Spark's rand()),
        joined back by index; the race's winners written as a new batch of
        private_touch_choices and committed in the catalog; then the range attributed from
        the stored choices. Returns the number of candidates drawn for now."""
        from dp_platform.attribution.private_touch import race_draws, race_parameters

        self._drop_uncommitted_touches(campaign.name)
        self._attribution_scope(campaign, first, last)
        self._stored_touches(campaign)
        count = int(self.sql.run("attribute_private_candidates")[0][0])
        draws = race_draws(campaign, count, noise)
        if count:
            frame = pd.DataFrame({"idx": np.arange(count, dtype=np.int64), "e": draws})
            self.spark.createDataFrame(
                frame, schema="idx BIGINT, e DOUBLE"
            ).createOrReplaceTempView("race_noise")
            batch = self.catalog.begin_touch_batch(campaign.name)
            try:
                self.sql.run(
                    "attribute_private_select",
                    campaign=campaign.name,
                    batch=batch,
                    **race_parameters(campaign),
                )
            finally:
                self.spark.catalog.dropTempView("race_noise")
            self.catalog.finish_touch_batch(batch, "committed")
            self._stored_touches(campaign)  # lists the batch just written
        self.sql.run(
            "attribute_private_stored",
            campaign=campaign.name,
            touched=bool(self._touch_keys(campaign)),
        )
        return count

    def _stored_touches(self, campaign: CampaignConfig) -> None:
        """View stored_touch_choices: the campaign's committed choices (listed now)."""
        committed = [batch for _, batch in self.catalog.touch_batches("committed", campaign.name)]
        self.spark.createDataFrame(
            pd.DataFrame({"batch": np.asarray(committed, dtype=np.int64)}), schema="batch BIGINT"
        ).createOrReplaceTempView("committed_touch_batches")
        self.spark.catalog.refreshTable("private_touch_choices")
        self.sql.run("private_touch_stored", campaign=campaign.name)

    def _drop_uncommitted_touches(self, campaign: str | None = None) -> None:
        """Delete the choices of batches a crash left uncommitted (never read), then forget
        them: the conversions they held are drawn afresh, as if never drawn."""
        for name, batch in self.catalog.touch_batches("started", campaign):
            self.files.delete(f"{self.root}/private_touch_choices/campaign={name}/batch={batch}")
            self.catalog.finish_touch_batch(batch, "aborted")

    def attribute_day(self, campaign: CampaignConfig, day: date) -> dict:
        """(Re)materialise attributed_conversions for one day; aggregate counts only."""
        return self.attribute_days(campaign, day, day)

    def contributions_days(self, campaign: CampaignConfig, first: date, last: date) -> dict:
        """(Re)materialise user_day_contributions for days first..last from the attribution."""
        self._check_range(campaign, first, last)
        for day in _days(first, last):
            self._version(_ATTRIBUTED, campaign, day)
        self._use()
        self._clear(_CONTRIBUTIONS, campaign, _days(first, last))
        self.sql.run("contributions", campaign=campaign.name, first=first, last=last)
        self.catalog.record(
            _CONTRIBUTIONS,
            campaign.name,
            self._day_rows(_CONTRIBUTIONS, campaign, first, last),
            _ATTRIBUTED,
        )
        users, conversions = self.sql.query(
            f"SELECT count(*), coalesce(sum(conversions), 0) FROM {_CONTRIBUTIONS} "
            "WHERE campaign = :campaign AND day BETWEEN :first AND :last",
            campaign=campaign.name,
            first=first,
            last=last,
        )[0]
        return {
            "days": (last - first).days + 1,
            "user_days": int(users),
            "conversions": int(conversions),
        }

    def contributions_day(self, campaign: CampaignConfig, day: date) -> dict:
        return self.contributions_days(campaign, day, day)

    # -- per-day statistics for the mechanism --------------------------------------------

    def day_histogram(self, campaign: CampaignConfig, day: date) -> np.ndarray:
        """h[c] = users with exactly c attributed conversions on ``day`` (as DuckDB's)."""
        campaign.day_index(day)
        self._require_current(campaign, day)
        self._use()
        rows = self.sql.run("histogram", campaign=campaign.name, day=day)
        hist = np.zeros((max(c for c, _ in rows) + 1) if rows else 1, dtype=np.int64)
        for count, users in rows:
            hist[count] = users
        return hist

    def capped_histogram(self, campaign: CampaignConfig, day: date, cap: int) -> np.ndarray:
        """h[c] for c = 0..Λ with users above Λ counted at Λ (length Λ + 1, h[0] = 0)."""
        if cap < 1:
            raise ValueError("cap must be >= 1")
        campaign.day_index(day)
        self._require_current(campaign, day)
        self._use()
        hist = np.zeros(cap + 1, dtype=np.int64)
        for count, users in self.sql.run(
            "capped_histogram", campaign=campaign.name, day=day, cap=cap
        ):
            hist[count] = users
        return hist

    def clipped_vector(
        self,
        campaign: CampaignConfig,
        day: date,
        bound: float,
        *,
        publishers: list[str] | None = None,
    ) -> np.ndarray:
        """Per-publisher sums of the day after clipping every user at ``bound``; stored in
        clipped_daily_vectors too."""
        if not (bound > 0 and np.isfinite(bound)):
            raise ValueError("bound must be a finite number > 0")
        campaign.day_index(day)
        self._version(_ATTRIBUTED, campaign, day)
        whole = int(np.floor(bound))
        layout = self._cell_scope(campaign, publishers, day, day)
        vector = self._cell_sums(
            layout, "clip", "clip_cells", whole=whole, fraction=float(bound - whole)
        )
        self._store_clipped(campaign, day, bound, layout, vector)
        return vector

    def _store_clipped(
        self,
        campaign: CampaignConfig,
        day: date,
        bound: float,
        layout: CellLayout,
        vector: np.ndarray,
    ) -> None:
        """Replace the (campaign, day) partition of the clipped-vector table (schema checks)."""
        self._clear(_CLIPPED, campaign, [day])
        if layout.publishers:  # campaign_pubs holds these publishers (the caller's scope)
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

    # -- AdsBPC+: the individual filter's per-user spend (secret state) -------------------

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
    ) -> np.ndarray:
        """The AdsBPC+ filter clip of the day (as DuckDB's): write-once per (campaign, day);
        the spends count once the catalog records the day (catalog.py). With a correlated
        strategy's ``row``, the day's row of C·x̄ (plus_filter.sql, as DuckDB's)."""
        if not (bound > 0 and sigma > 0 and cap > 0 and np.isfinite([bound, sigma, cap]).all()):
            raise ValueError("bound, sigma and cap must be finite numbers > 0")
        index = campaign.day_index(day)
        self._version(_ATTRIBUTED, campaign, day)
        self._use()
        stored = self.catalog.spend_day(campaign.name, day)
        if stored is not None:
            if stored != (float(bound), float(sigma), float(cap)):
                raise WarehouseError(
                    f"campaign {campaign.name}, {day}: already filtered with (r, σ, cap) = "
                    f"{stored}; a day's spend is applied once"
                )
            return self._stored_vector(campaign, day)
        previous = day - timedelta(days=1)
        if index > 1 and self.catalog.spend_day(campaign.name, previous) is None:
            raise WarehouseError(
                f"campaign {campaign.name}: the filter needs {previous} first "
                "(spends carry over, days run in order)"
            )
        whole = int(np.floor(bound))
        layout = self._cell_scope(campaign, publishers, day, day)
        self._clear(_SPEND, campaign, [day])  # leftovers of a run that did not commit
        self.sql.run("plus_values_schema")
        self._clear(_VALUES, campaign, [day])
        earlier = [campaign.start + timedelta(days=i) for i in range(index - 1)]
        strategy = (row or StrategyRow.identity(index - 1)).sql_parameters(earlier)
        try:
            vector = self._cell_sums(
                layout,
                "plus_filter",
                campaign=campaign.name,
                day=day,
                whole=whole,
                fraction=float(bound - whole),
                two_var=2.0 * float(sigma) ** 2,
                cap=float(cap),
                residual=RESIDUAL,
                **strategy,
            )
        finally:
            self.sql.release()
        top = self.sql.query(
            f"SELECT coalesce(max(spend), 0.0D) FROM {_SPEND} WHERE campaign = :c AND day = :d",
            c=campaign.name,
            d=day,
        )[0][0]
        if top > cap * (1.0 + 1e-12):  # the filter makes this impossible; never release
            raise WarehouseError(f"campaign {campaign.name}, {day}: a spend passed the cap")
        self._store_clipped(campaign, day, bound, layout, vector)
        self.catalog.commit_spend_day(campaign.name, day, float(bound), float(sigma), float(cap))
        return vector

    def _stored_vector(self, campaign: CampaignConfig, day: date) -> np.ndarray:
        rows = self.sql.query(
            f"SELECT position, value FROM {_CLIPPED} WHERE campaign = :c AND day = :d "
            "ORDER BY position",
            c=campaign.name,
            d=day,
        )
        return np.array([value for _, value in rows], dtype=np.float64)

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
    ) -> np.ndarray:
        """Users per profile bin (``grid``, × cap²) of T_u = Σ_d φ_d‖clip(c)‖² (+ ``cross`` ×
        the cross-day term of a correlated strategy, as DuckDB's)."""
        if not (len(days) == len(bounds) == len(factors)) or not days:
            raise ValueError("need one bound and one factor per day, and at least one day")
        for day in days:
            campaign.day_index(day)
            self._version(_ATTRIBUTED, campaign, day)
        whole = [int(np.floor(b)) for b in bounds]
        self._cell_scope(campaign, publishers, min(days), max(days))
        rows = self.sql.run(
            "plus_profile",
            days=list(days),
            whole=whole,
            fraction=[float(b - w) for b, w in zip(bounds, whole, strict=True)],
            factor=[float(f) for f in factors],
            cross=float(cross),
            **grid.sql_parameters(cap),
        )
        hist = np.zeros(grid.bins, dtype=np.int64)
        for bin_, users in rows:
            hist[bin_] = users
        return hist

    def plus_spend_summary(self, campaign: CampaignConfig) -> dict:
        """Aggregates of the filter's committed state (monitoring/tests)."""
        self._use()
        days = self.catalog.spend_day_list(campaign.name)
        if not days:
            return {"days": 0, "users": 0, "max_spend": 0.0}
        users, top = self.sql.query(
            f"SELECT count(DISTINCT user_key), coalesce(max(spend), 0.0D) FROM {_SPEND} "
            "WHERE campaign = :c AND array_contains(:days, day)",
            c=campaign.name,
            days=days,
        )[0]
        return {"days": len(days), "users": int(users), "max_spend": float(top)}

    # -- campaign-level releases ----------------------------------------------------------

    def one_shot_sums(
        self,
        campaign: CampaignConfig,
        bounding: PeriodBound,
        *,
        publishers: list[str] | None = None,
    ) -> np.ndarray:
        """True per-publisher (or per-cell: oneshot_sums_cells.sql) sums of the period after the
        plan's bounding (as DuckDB's)."""
        done = self.catalog.materialised_days(
            _ATTRIBUTED, campaign.name, campaign.start, campaign.end
        )
        if done != campaign.days:
            raise WarehouseError(
                f"one-shot release of {campaign.name} needs {_ATTRIBUTED} for all "
                f"{campaign.days} days ({done} materialised)"
            )
        whole = int(np.floor(bounding.bound))
        layout = self._cell_scope(campaign, publishers, campaign.start, campaign.end)
        return self._cell_sums(
            layout,
            "oneshot_sums",
            "oneshot_sums_cells",
            campaign=campaign.name,
            advertiser=campaign.advertiser,
            first=campaign.start,
            last=campaign.end,
            whole=whole,
            fraction=float(bounding.bound - whole),
            enforcement=bounding.enforcement,
            use_value=bool(bounding.use_value),
            value_cap=float(bounding.value_cap),
        )

    def reach_histogram(
        self,
        campaign: CampaignConfig,
        max_frequency: int,
        *,
        publishers: list[str] | None = None,
    ) -> np.ndarray:
        """True frequency histogram of the campaign's period (as DuckDB's)."""
        histogram = np.zeros(max_frequency, dtype=np.int64)
        if not self._scope(campaign, publishers):
            return histogram
        for k, users in self.sql.run(
            "reach_histogram",
            advertiser=campaign.advertiser,
            first=campaign.start,
            last=campaign.end,
            cap=max_frequency,
        ):
            histogram[int(k) - 1] = int(users)
        return histogram


@contextmanager
def _spark_lock(home: Home) -> Iterator[None]:
    """One writer of a home's Spark warehouse at a time (its own lock, not DuckDB's)."""
    directory = home.root / "spark"
    directory.mkdir(exist_ok=True)
    with exclusive(directory / ".lock", name="Spark warehouse"):
        yield


def tables_root(settings: WarehouseConfig, home: Home) -> str:
    """Where a home's Spark tables live: the catalogue's path, else ``<home>/spark/tables``."""
    return settings.spark.path or str(home.root / "spark" / "tables")


@contextmanager
def open_at_home(
    settings: WarehouseConfig, home: Home, read_only: bool
) -> Iterator[SparkWarehouse]:
    """The Spark warehouse of a platform home; starts the process's session on first use."""
    spark = private_session(settings.spark)
    with _spark_lock(home):
        warehouse = SparkWarehouse(
            spark, tables_root(settings, home), home.root / "spark" / "catalog.sqlite"
        )
        try:
            yield warehouse
        finally:
            warehouse.close()

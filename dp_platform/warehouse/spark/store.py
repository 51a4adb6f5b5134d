"""The Spark warehouse: the DuckDB warehouse's methods (../store.py) on Delta Lake tables.

Same contract as DuckDB's ``Warehouse`` (dp_platform/warehouse/base.py): heavy work is Spark SQL
(files in this package, each the twin of the DuckDB file of the same name and parameters);
Python receives per-day aggregates only. Tables are Delta Lake tables under one root (any
Hadoop file system URI: a local path, ``s3a://``), partitioned by (campaign, day) for derived
data; every write is a Delta commit, and the record tables (records.py) make a write that
spans tables visible:

* a range of days is rewritten by forgetting it in ``partitions``, replacing its rows in one
  commit (``INSERT … REPLACE WHERE``) and recording the days with the table's new version —
  a reader checks the record first, so a crash leaves "not materialised", never a mix of two
  versions;
* AdsBPC+ spends of a day count once ``plus_spend_days`` records the day with their run;
* private last touch's draws of a run are one commit: there whole, or not at all, and never a
  second draw of a conversion another run stored.

No lock: two processes on one root (two drivers of one cluster) meet only in Delta's commits,
and each write that must not happen twice reads what it writes in the same statement, so one
of two at once fails (docs/scale.md §5).

One SparkSession per process (session.py); each open registers the tables in a database named
after the root, so several warehouses can share a session (the tests do).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import date, datetime
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlparse

import numpy as np
import pandas as pd

from dp_platform.config import CampaignConfig
from dp_platform.settings import WarehouseConfig
from dp_platform.warehouse.ingest import DimensionLists, IngestReport
from dp_platform.warehouse.spark.commits import is_conflict, lost_to_another_run
from dp_platform.warehouse.spark.ingest import ingest_files, show_committed
from dp_platform.warehouse.spark.migrate import is_earlier_schema, register_earlier
from dp_platform.warehouse.spark.plus_store import SparkPlusStore
from dp_platform.warehouse.spark.records import WarehouseRecords
from dp_platform.warehouse.spark.runner import SparkSqlRunner, schema_tables
from dp_platform.warehouse.spark.session import private_session
from dp_platform.warehouse.spark.store_core import TABLES
from dp_platform.warehouse.spark.visibility import last_shown
from dp_platform.warehouse.store_core import (
    ATTRIBUTED,
    CONTRIBUTIONS,
    FRAME_TABLES,
    US_PER_DAY,
    WarehouseError,
    days_between,
    require_current,
)

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from dp_platform.home import Home
    from dp_platform.privacy.discrete import IntegerNoiseSource
    from dp_platform.warehouse.base import PeriodBound

__all__ = ["SparkWarehouse", "open_at_home"]


class SparkWarehouse(SparkPlusStore):
    """Delta tables under ``root`` (any Hadoop file system URI or a local path), their
    record tables among them; the schema is created idempotently on open, and the loaded
    tables' views show the loads committed by then (visibility.py)."""

    engine = "spark"

    def __init__(self, spark: SparkSession, root: str | Path) -> None:
        self.spark = spark
        self.root = qualified_root(root)
        self.sql = SparkSqlRunner(spark, {"root": self.root})
        self.records = WarehouseRecords(spark, self.sql)
        self.database = "dp_" + hashlib.sha256(self.root.encode()).hexdigest()[:16]
        spark.sql(f"CREATE DATABASE IF NOT EXISTS {self.database} LOCATION '{self.root}/_database'")
        self._use()
        self._create_tables()
        show_committed(self)

    def _create_tables(self) -> None:
        """schema.sql, unless this session registered every table of the root already (a
        reopen: each CREATE reads the table's Delta log, about 0.1 s a table); a root an
        earlier release wrote as plain Parquet is refused in one line (Delta will not create a
        table over a directory that holds other files)."""
        shown = self.spark.sql(f"SHOW TABLES IN {self.database}").collect()
        registered = {row["tableName"] for row in shown}
        if registered >= schema_tables():
            return
        try:
            self.sql.run("schema")
        except Exception as error:
            if is_earlier_schema(error):  # a root an earlier release made (migrate.py)
                register_earlier(self.spark, self.sql, self.root)
                self.sql.run("schema")
                return
            if is_conflict(error):  # another process's first open created a table with it:
                with lost_to_another_run(f"warehouse {self.root}"):  # every CREATE is IF NOT
                    self.sql.run("schema")  # EXISTS, and finds it now
                return
            if "DELTA_CREATE_TABLE_WITH_NON_EMPTY_LOCATION" not in str(error):
                raise
            raise WarehouseError(
                f"Spark tables at {self.root}: not Delta Lake tables (an earlier release wrote "
                "them as Parquet with a SQLite catalog); ingest the event files again into a "
                "new warehouse.spark.path"
            ) from None

    # -- loading -------------------------------------------------------------------------

    def ingest(
        self,
        impressions: str | Path,
        conversions: str | Path,
        *,
        now: datetime | None = None,
        dimensions: DimensionLists | None = None,
        impression_dimensions: DimensionLists | None = None,
    ) -> IngestReport:
        """Validate and load two event files (all or nothing); see :mod:`.ingest`.
        ``dimensions`` / ``impression_dimensions``: the catalogue's dimensions of the
        conversions / impressions file (name → definition or public list: ingest.DimensionLists)."""
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
            return len(self.records.committed_loads())
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

    # -- attribution and contributions ---------------------------------------------------

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
        # unrecorded first; each script then replaces its range's rows in one commit
        self.records.forget(ATTRIBUTED, campaign.name, days_between(first, last))
        with lost_to_another_run(f"{ATTRIBUTED} of campaign {campaign.name}"):
            try:
                if rule == "private_last_touch":
                    self._attribute_private(campaign, first, last, noise)
                else:
                    single_touch = rule in {"lta", "fta"}
                    script = f"attribute_{rule}" if single_touch else "attribute_touches"
                    # The single-touch stream covers the range in one pass; a multi-touch range
                    # join goes day by day so its intermediate stays a day's size.
                    spans = (
                        [(first, last)]
                        if single_touch
                        else [(d, d) for d in days_between(first, last)]
                    )
                    for span_first, span_last in spans:
                        self._attribution_scope(campaign, span_first, span_last)
                        self.sql.run(
                            script,
                            campaign=campaign.name,
                            first=span_first,
                            last=span_last,
                            rule=rule,
                            half_life_us=campaign.attribution.half_life_days * US_PER_DAY,
                        )
            finally:
                self.sql.release()
        # a conversion's rows are all on its day: the range's distinct conversions are the sum
        # of each day's
        per_day, attributed = self._day_counts(
            ATTRIBUTED, campaign, first, last, "count(DISTINCT conversion_key)"
        )
        # the last load its views show (not the last committed now: one committed meanwhile by
        # another process was not read)
        self.records.record(ATTRIBUTED, campaign.name, per_day, last_shown(self.database))
        rows = sum(per_day.values())
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
        private_touch_choices in one commit; then the range attributed from the stored
        choices. Returns the number of candidates drawn for now."""
        from dp_platform.attribution.private_touch import race_draws, race_parameters

        self._attribution_scope(campaign, first, last)
        self.sql.run("private_touch_stored", campaign=campaign.name)
        count = int(self.sql.run("attribute_private_candidates")[0][0])
        draws = race_draws(campaign, count, noise)
        if count:
            frame = pd.DataFrame({"idx": np.arange(count, dtype=np.int64), "e": draws})
            self.spark.createDataFrame(
                frame, schema="idx BIGINT, e DOUBLE"
            ).createOrReplaceTempView("race_noise")
            batch = self.sql.query(
                "SELECT coalesce(max(batch), 0) + 1 FROM private_touch_choices "
                "WHERE campaign = :campaign",
                campaign=campaign.name,
            )[0][0]
            try:
                self.sql.run(  # draws no conversion another run stored (its SQL)
                    "attribute_private_select",
                    campaign=campaign.name,
                    batch=batch,
                    **race_parameters(campaign),
                )
            finally:
                self.spark.catalog.dropTempView("race_noise")
        self.sql.run(
            "attribute_private_stored",
            campaign=campaign.name,
            first=first,
            last=last,
            touched=bool(self._touch_keys(campaign)),
        )
        return count

    def attribute_day(self, campaign: CampaignConfig, day: date) -> dict:
        """(Re)materialise attributed_conversions for one day; aggregate counts only."""
        return self.attribute_days(campaign, day, day)

    def contributions_days(self, campaign: CampaignConfig, first: date, last: date) -> dict:
        """(Re)materialise user_day_contributions for days first..last from the attribution."""
        self._check_range(campaign, first, last)
        # the loads each day's attribution was built from, read before its rows are: a newer
        # attribution written meanwhile is then recorded as not read (stale), never the reverse
        read = {d: self._version(ATTRIBUTED, campaign, d)[1] for d in days_between(first, last)}
        self._use()
        self.records.forget(CONTRIBUTIONS, campaign.name, days_between(first, last))
        with lost_to_another_run(f"{CONTRIBUTIONS} of campaign {campaign.name}"):
            self.sql.run("contributions", campaign=campaign.name, first=first, last=last)
        per_day, conversions = self._day_counts(
            CONTRIBUTIONS, campaign, first, last, "sum(conversions)"
        )
        self.records.record(CONTRIBUTIONS, campaign.name, per_day, read)
        users = sum(per_day.values())
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
        require_current(self._version, campaign, day)
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
        require_current(self._version, campaign, day)
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
        read = self._version(ATTRIBUTED, campaign, day)[1]
        whole = int(np.floor(bound))
        layout = self._cell_scope(campaign, publishers, day, day)
        vector = self._cell_sums(
            layout, "clip", "clip_cells", whole=whole, fraction=float(bound - whole)
        )
        self._store_clipped(campaign, day, bound, layout, vector, read)
        return vector

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
        done = self.records.materialised_days(
            ATTRIBUTED, campaign.name, campaign.start, campaign.end
        )
        if done != campaign.days:
            raise WarehouseError(
                f"one-shot release of {campaign.name} needs {ATTRIBUTED} for all "
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


def qualified_root(root: str | Path) -> str:
    """A local path made absolute, a URI as given. Spark resolves a relative table LOCATION
    against its warehouse directory but a relative path in a query against the working
    directory: a relative root put the tables in one place and looked them up in another
    (``DELTA_TABLE_NOT_FOUND`` on the next session's open)."""
    text = str(root).rstrip("/")
    if isinstance(root, Path) or len(urlparse(text).scheme) <= 1:  # no scheme (or a drive)
        return str(Path(text).absolute())
    return text


def tables_root(settings: WarehouseConfig, home: Home) -> str:
    """Where a home's Spark tables live: the catalogue's path, else ``<home>/spark/tables``."""
    return settings.spark.path or str(home.root / "spark" / "tables")


@contextmanager
def open_at_home(
    settings: WarehouseConfig, home: Home, read_only: bool
) -> Iterator[SparkWarehouse]:
    """The Spark warehouse of a platform home; starts the process's session on first use. No
    lock: processes on one home (or drivers on several machines) meet only in Delta's commits,
    each write made safe beside another by its own statement (docs/scale.md §5)."""
    spark = private_session(settings.spark)
    warehouse = SparkWarehouse(spark, tables_root(settings, home))
    try:
        yield warehouse
    finally:
        warehouse.close()

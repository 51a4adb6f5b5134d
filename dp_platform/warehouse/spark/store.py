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
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from dp_platform.cells import CellLayout
from dp_platform.config import CampaignConfig
from dp_platform.file_lock import exclusive
from dp_platform.privacy.filter import RESIDUAL
from dp_platform.settings import WarehouseConfig
from dp_platform.warehouse.base import StrategyRow, check_remainder_cap
from dp_platform.warehouse.ingest import DimensionLists, IngestReport
from dp_platform.warehouse.spark.catalog import Catalog
from dp_platform.warehouse.spark.files import TableFiles
from dp_platform.warehouse.spark.ingest import ingest_files, recover
from dp_platform.warehouse.spark.runner import SparkSqlRunner
from dp_platform.warehouse.spark.session import private_session
from dp_platform.warehouse.spark.store_core import (
    REMAINDERS,
    SPEND,
    TABLES,
    VALUES,
    SparkWarehouseCore,
)
from dp_platform.warehouse.store_core import (
    ATTRIBUTED,
    CLIPPED,
    CONTRIBUTIONS,
    FRAME_TABLES,
    US_PER_DAY,
    WarehouseError,
    days_between,
    require_current,
)

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from dp_platform.cell_strategy import MarginalWeights
    from dp_platform.home import Home
    from dp_platform.privacy.discrete import IntegerNoiseSource
    from dp_platform.warehouse.base import PeriodBound, ProfileGrid

__all__ = ["SparkWarehouse", "open_at_home"]


class SparkWarehouse(SparkWarehouseCore):
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
        self.catalog.record_dimensions_once(self._dimensions_of_loads)

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
        self._clear(ATTRIBUTED, campaign, days_between(first, last))
        try:
            if rule == "private_last_touch":
                self._attribute_private(campaign, first, last, noise)
            else:
                single_touch = rule in {"lta", "fta"}
                script = f"attribute_{rule}" if single_touch else "attribute_touches"
                # The single-touch stream covers the range in one pass; a multi-touch range
                # join goes day by day so its intermediate stays a day's size.
                spans = (
                    [(first, last)] if single_touch else [(d, d) for d in days_between(first, last)]
                )
                for span_first, span_last in spans:
                    self._attribution_scope(campaign, span_first, span_last)
                    self.sql.run(
                        script,
                        campaign=campaign.name,
                        rule=rule,
                        half_life_us=campaign.attribution.half_life_days * US_PER_DAY,
                    )
        finally:
            self.sql.release()
        self.catalog.record(
            ATTRIBUTED, campaign.name, self._day_rows(ATTRIBUTED, campaign, first, last), None
        )
        single = rule in {"lta", "fta", "private_last_touch"}
        attributed, rows = self.sql.query(
            f"SELECT {'count(*)' if single else 'count(DISTINCT conversion_key)'}, count(*) "
            f"FROM {ATTRIBUTED} WHERE campaign = :campaign AND day BETWEEN :first AND :last",
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
        for day in days_between(first, last):
            self._version(ATTRIBUTED, campaign, day)
        self._use()
        self._clear(CONTRIBUTIONS, campaign, days_between(first, last))
        self.sql.run("contributions", campaign=campaign.name, first=first, last=last)
        self.catalog.record(
            CONTRIBUTIONS,
            campaign.name,
            self._day_rows(CONTRIBUTIONS, campaign, first, last),
            ATTRIBUTED,
        )
        users, conversions = self.sql.query(
            f"SELECT count(*), coalesce(sum(conversions), 0) FROM {CONTRIBUTIONS} "
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
        self._version(ATTRIBUTED, campaign, day)
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
        self._clear(CLIPPED, campaign, [day])
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
        marginals: MarginalWeights | None = None,
        remainder_cap: float | None = None,
    ) -> np.ndarray:
        """The AdsBPC+ filter clip of the day (as DuckDB's): write-once per (campaign, day);
        the spends (and the remainder at ``remainder_cap``) count once the catalog records the
        day (catalog.py). With a correlated strategy's ``row``, the day's row of C·x̄; with
        ``marginals``, each user charged their encoded row's norm (plus_filter.sql, as
        DuckDB's)."""
        if not (bound > 0 and sigma > 0 and cap > 0 and np.isfinite([bound, sigma, cap]).all()):
            raise ValueError("bound, sigma and cap must be finite numbers > 0")
        check_remainder_cap(remainder_cap)
        index = campaign.day_index(day)
        self._version(ATTRIBUTED, campaign, day)
        self._use()
        stored = self.catalog.spend_day(campaign.name, day)
        if stored is not None:
            if stored != (float(bound), float(sigma), float(cap)):
                raise WarehouseError(
                    f"campaign {campaign.name}, {day}: already filtered with (r, σ, cap) = "
                    f"{stored}; a day's spend is applied once"
                )
            stored_cap = self._stored_remainder(campaign, day)[0]
            if stored_cap != remainder_cap:
                raise WarehouseError(
                    f"campaign {campaign.name}, {day}: already filtered with remainder cap "
                    f"{stored_cap}; a day's spend is applied once"
                )
            return self._stored_vector(campaign, day)
        previous = day - timedelta(days=1)
        if index > 1 and self.catalog.spend_day(campaign.name, previous) is None:
            raise WarehouseError(
                f"campaign {campaign.name}: the filter needs {previous} first "
                "(spends carry over, days run in order)"
            )
        whole = int(np.floor(bound))
        layout = self._cell_scope(campaign, publishers, day, day, marginals)
        gram = self._gram_scope(layout)
        self._clear(SPEND, campaign, [day])  # leftovers of a run that did not commit
        self._clear(REMAINDERS, campaign, [day])
        self.sql.run("plus_values_schema")
        self._clear(VALUES, campaign, [day])
        earlier = [campaign.start + timedelta(days=i) for i in range(index - 1)]
        strategy = (row or StrategyRow.identity(index - 1)).sql_parameters(earlier)
        try:
            vector = self._cell_sums(
                layout,
                "plus_filter",
                **gram,
                campaign=campaign.name,
                day=day,
                whole=whole,
                fraction=float(bound - whole),
                two_var=2.0 * float(sigma) ** 2,
                cap=float(cap),
                residual=RESIDUAL,
                **strategy,
            )
            if remainder_cap is not None:  # reads plus_filter's cached plus_kept
                self.sql.run(
                    "plus_remainder",
                    campaign=campaign.name,
                    day=day,
                    excess_cap=float(remainder_cap),
                )
        finally:
            self.sql.release()
        top = self.sql.query(
            f"SELECT coalesce(max(spend), 0.0D) FROM {SPEND} WHERE campaign = :c AND day = :d",
            c=campaign.name,
            d=day,
        )[0][0]
        if top > cap * (1.0 + 1e-12):  # the filter makes this impossible; never release
            raise WarehouseError(f"campaign {campaign.name}, {day}: a spend passed the cap")
        self._store_clipped(campaign, day, bound, layout, vector)
        self.catalog.commit_spend_day(campaign.name, day, float(bound), float(sigma), float(cap))
        return vector

    def _stored_remainder(
        self, campaign: CampaignConfig, day: date
    ) -> tuple[float | None, float | None]:
        """(E, X_t) of a committed filter day; (None, None) if it computed no remainder."""
        rows = self.sql.query(
            f"SELECT cap, value FROM {REMAINDERS} WHERE campaign = :c AND day = :d",
            c=campaign.name,
            d=day,
        )
        return (float(rows[0][0]), float(rows[0][1])) if rows else (None, None)

    def plus_remainder(self, campaign: CampaignConfig, day: date) -> float:
        """The day's remainder X_t as :meth:`plus_clipped_vector` stored it (a true value:
        only the mechanism's draw reads it); counted once the catalog records the day."""
        self._use()
        value = None
        if self.catalog.spend_day(campaign.name, day) is not None:
            value = self._stored_remainder(campaign, day)[1]
        if value is None:
            raise WarehouseError(
                f"campaign {campaign.name}, {day}: no remainder stored; the day's filter "
                "computes it (plus_clipped_vector with remainder_cap)"
            )
        return value

    def _stored_vector(self, campaign: CampaignConfig, day: date) -> np.ndarray:
        rows = self.sql.query(
            f"SELECT position, value FROM {CLIPPED} WHERE campaign = :c AND day = :d "
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
        marginals: MarginalWeights | None = None,
    ) -> np.ndarray:
        """Users per profile bin (``grid``, × cap²) of T_u = Σ_d φ_d‖clip(c)‖² (+ ``cross`` ×
        the cross-day term of a correlated strategy), in the filter's norm (as DuckDB's)."""
        if not (len(days) == len(bounds) == len(factors)) or not days:
            raise ValueError("need one bound and one factor per day, and at least one day")
        for day in days:
            campaign.day_index(day)
            self._version(ATTRIBUTED, campaign, day)
        whole = [int(np.floor(b)) for b in bounds]
        layout = self._cell_scope(campaign, publishers, min(days), max(days), marginals)
        rows = self.sql.run(
            "plus_profile",
            **self._gram_scope(layout),
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
            f"SELECT count(DISTINCT user_key), coalesce(max(spend), 0.0D) FROM {SPEND} "
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

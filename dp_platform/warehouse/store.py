"""The warehouse: one DuckDB file holding events, quarantine and per-(campaign, day) partitions.

Heavy work runs as SQL inside DuckDB (files next to this module); Python only receives per-day
aggregates — a histogram of counts, a k-vector, row counts — never user-level rows. Every
partition write deletes and re-inserts the partition in one transaction, so re-running a day
(retries, backfills, double execution) leaves exactly one copy.

Each step materialises a *range* of days in one SQL pass (``attribute_days``,
``contributions_days``): a backfill attributes a month of conversions with one ASOF join instead
of 31 joins that each re-read the look-back window. The one-day methods the Dagster layer calls
are the same SQL on a one-day range.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import date, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from dp_platform.config import CampaignConfig
from dp_platform.faults import fault_point
from dp_platform.settings import WarehouseConfig
from dp_platform.warehouse.ingest import TIE_ROOM, DimensionLists, IngestReport, ingest_files
from dp_platform.warehouse.plus_store import PlusStore
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
    from dp_platform.home import Home
    from dp_platform.privacy.discrete import IntegerNoiseSource
    from dp_platform.warehouse.base import PeriodBound

__all__ = ["Warehouse", "open_at_home"]


class Warehouse(PlusStore):
    """The DuckDB warehouse (:class:`~dp_platform.warehouse.base.WarehouseEngine`): every step's
    SQL on the file, scope and partitions of :class:`~.store_core.WarehouseCore` (AdsBPC+'s
    steps in :class:`~.plus_store.PlusStore`)."""

    engine = "duckdb"

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
        return ingest_files(
            self.sql,
            impressions,
            conversions,
            now=now,
            dimensions=dimensions,
            impression_dimensions=impression_dimensions,
        )

    def table_rows(self, table: str) -> int:
        """Row count of a warehouse table (monitoring; no contents)."""
        if table not in {
            "impressions",
            "conversions",
            "quarantine",
            "loads",
            "users",
            "publishers",
            "advertisers",
            ATTRIBUTED,
            CONTRIBUTIONS,
            CLIPPED,
        }:
            raise ValueError(f"unknown table {table!r}")
        return int(self.con.execute(f"SELECT count(*) FROM {table}").fetchone()[0])

    def day_frame(self, table: str, campaign: CampaignConfig, days: list[date]) -> pd.DataFrame:
        """Rows of ``table`` for the given days of a campaign, shaped as ``dp_platform.schemas``
        (``impressions``, ``conversions``, ``attributed``, ``contributions``, ``clipped``;
        ``quarantine`` ignores the days). For schema checks: the frames are private data."""
        if table not in FRAME_TABLES:
            raise ValueError(f"unknown table {table!r}; expected one of {FRAME_TABLES}")
        if not days:
            days = [campaign.start]
        frame = self.sql.frame(
            f"frame_{table}",
            advertiser=campaign.advertiser,
            campaign=campaign.name,
            first=min(days),
            last=max(days),
            days=sorted(set(days)),
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
        """(Re)materialise attributed_conversions for days first..last in one transaction.
        ``noise``: the Exp(1) source of private_last_touch (tests only; default secure)."""
        self._check_range(campaign, first, last)
        rule = campaign.attribution.rule
        with self.sql.transaction():
            publishers = self._scope(campaign, publishers)
            # attribution's temp macros over this campaign_pubs (bound now; only attribution
            # reads them, so the per-day clipping scopes skip them)
            self.sql.run("attribution_scope")
            self._touch_scope(campaign)
            self.sql.query(
                f"DELETE FROM {ATTRIBUTED} WHERE campaign = $campaign "
                "AND day BETWEEN $first AND $last",
                campaign=campaign.name,
                first=first,
                last=last,
            )
            if rule == "private_last_touch":  # random draw per conversion (Agarwal et al. §2)
                from dp_platform.attribution.private_touch import attribute_private_last_touch

                attribute_private_last_touch(
                    self.sql, campaign, first, last, tie_room=TIE_ROOM, noise=noise
                )
            else:
                single_touch = rule in {"lta", "fta"}
                script = f"attribute_{rule}" if single_touch else "attribute_touches"
                # One ASOF join covers the whole range; a multi-touch join (every candidate of
                # every conversion) goes day by day so its intermediate stays a day's size.
                spans = (
                    [(first, last)] if single_touch else [(d, d) for d in days_between(first, last)]
                )
                for span_first, span_last in spans:
                    self.sql.run(
                        script,
                        campaign=campaign.name,
                        advertiser=campaign.advertiser,
                        first=span_first,
                        last=span_last,
                        lookback_days=campaign.attribution.lookback_days,
                        tie_room=TIE_ROOM,
                        rule=rule,
                        half_life_us=campaign.attribution.half_life_days * US_PER_DAY,
                    )
            self._record(ATTRIBUTED, campaign, first, last, None)
            single = rule in {"lta", "fta", "private_last_touch"}  # one row per conversion
            stats = self.sql.query(
                f"SELECT {'count(*)' if single else 'count(DISTINCT conversion_key)'}, "
                f"count(*) FROM {ATTRIBUTED} "
                "WHERE campaign = $campaign AND day BETWEEN $first AND $last",
                campaign=campaign.name,
                first=first,
                last=last,
            )[0]
            total = self.sql.query(
                "SELECT count(*) FROM conversions c JOIN advertisers a "
                "ON a.advertiser_key = c.advertiser_key WHERE a.advertiser_id = $advertiser "
                "AND c.ts >= CAST($first AS TIMESTAMP) "
                "AND c.ts < CAST($last AS TIMESTAMP) + INTERVAL 1 DAY",
                advertiser=campaign.advertiser,
                first=first,
                last=last,
            )[0][0]
        fault_point("warehouse.partition_written")
        return {
            "rule": rule,
            "days": (last - first).days + 1,
            "publishers": len(publishers),
            "conversions": int(total),
            "attributed": int(stats[0]),
            "unattributed": int(total) - int(stats[0]),
            "rows": int(stats[1]),
        }

    def attribute_day(self, campaign: CampaignConfig, day: date) -> dict:
        """(Re)materialise attributed_conversions for one day; aggregate counts only."""
        return self.attribute_days(campaign, day, day)

    def contributions_days(self, campaign: CampaignConfig, first: date, last: date) -> dict:
        """(Re)materialise user_day_contributions for days first..last from the attribution."""
        self._check_range(campaign, first, last)
        for day in days_between(first, last):
            self._version(ATTRIBUTED, campaign, day)
        with self.sql.transaction():
            self.sql.query(
                f"DELETE FROM {CONTRIBUTIONS} WHERE campaign = $campaign "
                "AND day BETWEEN $first AND $last",
                campaign=campaign.name,
                first=first,
                last=last,
            )
            self.sql.run("contributions", campaign=campaign.name, first=first, last=last)
            self._record(CONTRIBUTIONS, campaign, first, last, ATTRIBUTED)
            users, conversions = self.sql.query(
                f"SELECT count(*), coalesce(sum(conversions), 0) FROM {CONTRIBUTIONS} "
                "WHERE campaign = $campaign AND day BETWEEN $first AND $last",
                campaign=campaign.name,
                first=first,
                last=last,
            )[0]
        fault_point("warehouse.partition_written")
        return {
            "days": (last - first).days + 1,
            "user_days": int(users),
            "conversions": int(conversions),
        }

    def contributions_day(self, campaign: CampaignConfig, day: date) -> dict:
        """(Re)materialise user_day_contributions for one day; aggregate counts only."""
        return self.contributions_days(campaign, day, day)

    # -- per-day statistics for the mechanism --------------------------------------------

    def day_histogram(self, campaign: CampaignConfig, day: date) -> np.ndarray:
        """h[c] = users whose count of attributed conversions on ``day`` is exactly c (c >= 1);
        h[0] = 0; not capped; length max count + 1 (at least 1)."""
        campaign.day_index(day)
        require_current(self._version, campaign, day)
        rows = self.sql.run("histogram", campaign=campaign.name, day=day)
        size = (max(c for c, _ in rows) + 1) if rows else 1
        hist = np.zeros(size, dtype=np.int64)
        for count, users in rows:
            hist[count] = users
        return hist

    def capped_histogram(self, campaign: CampaignConfig, day: date, cap: int) -> np.ndarray:
        """h[c] for c = 0..Λ with users above Λ counted at Λ (length Λ + 1, h[0] = 0)."""
        if cap < 1:
            raise ValueError("cap must be >= 1")
        campaign.day_index(day)
        require_current(self._version, campaign, day)
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
        """Per-publisher sums of the day after clipping every user at ``bound``
        (docs/algorithm.md#clipping), in ``publishers`` order (default :meth:`campaign_publishers`);
        also stored in clipped_daily_vectors."""
        if not (bound > 0 and np.isfinite(bound)):
            raise ValueError("bound must be a finite number > 0")
        campaign.day_index(day)
        self._version(ATTRIBUTED, campaign, day)
        whole = int(np.floor(bound))
        with self.sql.transaction():
            publishers, vector = self.publisher_sums(
                campaign,
                "clip",
                publishers,
                cells_query="clip_cells",
                campaign=campaign.name,
                day=day,
                whole=whole,
                fraction=float(bound - whole),
            )
            self._store_clipped(campaign, day, bound, publishers, vector)
        return vector

    # -- campaign-level releases ----------------------------------------------------------------

    def one_shot_sums(
        self,
        campaign: CampaignConfig,
        bounding: PeriodBound,
        *,
        publishers: list[str] | None = None,
    ) -> np.ndarray:
        """True per-publisher (or per-cell) sums of the campaign's period after the plan's
        bounding (PRIVATE: for oneshot.release_one_shot only). Needs attribute_days over the
        whole period."""
        done = self.sql.query(
            "SELECT count(DISTINCT day) FROM partitions WHERE asset = $asset "
            "AND campaign = $campaign AND day BETWEEN $first AND $last",
            asset=ATTRIBUTED,
            campaign=campaign.name,
            first=campaign.start,
            last=campaign.end,
        )[0][0]
        if int(done) != campaign.days:
            raise WarehouseError(
                f"one-shot release of {campaign.name} needs {ATTRIBUTED} for all "
                f"{campaign.days} days ({int(done)} materialised)"
            )
        whole = int(np.floor(bounding.bound))
        with self.sql.transaction():
            _, vector = self.publisher_sums(
                campaign,
                "oneshot_sums",
                publishers,
                cells_query="oneshot_sums_cells",
                campaign=campaign.name,
                advertiser=campaign.advertiser,
                first=campaign.start,
                last=campaign.end,
                whole=whole,
                fraction=float(bounding.bound - whole),
                enforcement=bounding.enforcement,
                use_value=bounding.use_value,
                value_cap=float(bounding.value_cap),
            )
        return vector

    def reach_histogram(
        self,
        campaign: CampaignConfig,
        max_frequency: int,
        *,
        publishers: list[str] | None = None,
    ) -> np.ndarray:
        """True frequency histogram of the campaign's period: entry k-1 = users who saw its
        ads exactly k times (k < K), the last entry K or more (PRIVATE: for reach only)."""
        histogram = np.zeros(max_frequency, dtype=np.int64)
        with self.sql.transaction():
            if not self._scope(campaign, publishers):
                return histogram
            rows = self.sql.run(
                "reach_histogram",
                advertiser=campaign.advertiser,
                first=campaign.start,
                last=campaign.end,
                cap=max_frequency,
            )
        for k, users in rows:
            histogram[int(k) - 1] = int(users)
        return histogram


@contextmanager
def open_at_home(settings: WarehouseConfig, home: Home, read_only: bool) -> Iterator[Warehouse]:
    """The DuckDB warehouse of a platform home, under its file lock (one process at a time:
    DuckDB lets one process open a file for writing). ``settings`` has nothing for DuckDB."""
    with home.warehouse_lock(), Warehouse(home.warehouse, read_only=read_only) as warehouse:
        yield warehouse

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
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from dp_platform.config import CampaignConfig
from dp_platform.faults import fault_point
from dp_platform.privacy.filter import RESIDUAL
from dp_platform.settings import WarehouseConfig
from dp_platform.warehouse.base import StrategyRow, check_remainder_cap
from dp_platform.warehouse.ingest import TIE_ROOM, DimensionLists, IngestReport, ingest_files
from dp_platform.warehouse.store_core import (
    ATTRIBUTED,
    CLIPPED,
    CONTRIBUTIONS,
    FRAME_TABLES,
    US_PER_DAY,
    WarehouseCore,
    WarehouseError,
    days_between,
    require_current,
)

if TYPE_CHECKING:
    from dp_platform.cell_strategy import MarginalWeights
    from dp_platform.home import Home
    from dp_platform.privacy.discrete import IntegerNoiseSource
    from dp_platform.warehouse.base import PeriodBound, ProfileGrid

__all__ = ["Warehouse", "open_at_home"]


class Warehouse(WarehouseCore):
    """The DuckDB warehouse (:class:`~dp_platform.warehouse.base.WarehouseEngine`): every step's
    SQL on the file, scope and partitions of :class:`~.store_core.WarehouseCore`."""

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

    def _store_clipped(
        self,
        campaign: CampaignConfig,
        day: date,
        bound: float,
        publishers: list[str],
        vector: np.ndarray,
    ) -> None:
        """Replace the (campaign, day) partition of the clipped-vector table (schema checks)."""
        self.sql.query(
            f"DELETE FROM {CLIPPED} WHERE campaign = $campaign AND day = $day",
            campaign=campaign.name,
            day=day,
        )
        if publishers:
            # each entry's publisher is the campaign_pubs row of position // entries per
            # publisher (in scope: the vector was just computed); the values go in as a frame
            # (binding 10⁵ list parameters is slower than the clipping itself)
            frame = pd.DataFrame({"position": np.arange(vector.size), "value": vector})
            self.con.register("clipped_entries", frame)
            try:
                self.con.execute(
                    f"INSERT INTO {CLIPPED} "
                    "SELECT $campaign, $day, $bound, v.position, cp.publisher_id, v.value "
                    "FROM clipped_entries AS v "
                    "JOIN campaign_pubs AS cp ON cp.position = v.position // $per",
                    {
                        "campaign": campaign.name,
                        "day": day,
                        "bound": float(bound),
                        "per": len(publishers) // len(set(publishers)),
                    },
                )
            finally:
                self.con.unregister("clipped_entries")

    # -- AdsBPC+: the individual filter's per-user spend (secret state) ------------------------
    # Separate from AdsBPC's methods above; tables in plus_schema.sql, SQL in plus_*.sql.

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
        """Day's per-publisher sums after the AdsBPC+ filter clip at (r, σ), in publisher order;
        the users' spends are updated in the same transaction (privacy/filter.py). With a
        correlated strategy's ``row`` (C_tt and the earlier days' C_tj), the day's *row* of
        C·x̄ instead, each user's earlier kept days carried through C (plus_filter.sql, which
        runs the diagonal strategy as the identity row). ``marginals``: the registered plan's
        residual workload — each user is then charged ‖encode(row)‖², the norm of what the
        Gaussian is added to (the layout's Gram); None: independent cells, Σ row².

        ``remainder_cap`` E: also the day's remainder X_t = Σ_u min(c_ut − k_ut, E), what the
        filter clipped off each user capped at E (plus_remainder.sql), stored with the day and
        read by :meth:`plus_remainder`.

        Write-once per (campaign, day): a re-run with the same (r, σ, cap, E) returns the
        stored vector and leaves the spends alone; other parameters are refused. Days run in
        order.
        """
        if not (bound > 0 and sigma > 0 and cap > 0 and np.isfinite([bound, sigma, cap]).all()):
            raise ValueError("bound, sigma and cap must be finite numbers > 0")
        check_remainder_cap(remainder_cap)
        index = campaign.day_index(day)
        self._version(ATTRIBUTED, campaign, day)
        whole = int(np.floor(bound))
        with self.sql.transaction():
            self.sql.run("plus_schema")
            stored = self.sql.query(
                "SELECT bound, sigma, cap FROM plus_spend_days WHERE campaign = $c AND day = $d",
                c=campaign.name,
                d=day,
            )
            if stored:
                if tuple(stored[0]) != (float(bound), float(sigma), float(cap)):
                    raise WarehouseError(
                        f"campaign {campaign.name}, {day}: already filtered with (r, σ, cap) = "
                        f"{tuple(stored[0])}; a day's spend is applied once"
                    )
                if self._remainder_cap(campaign, day) != remainder_cap:
                    raise WarehouseError(
                        f"campaign {campaign.name}, {day}: already filtered with remainder cap "
                        f"{self._remainder_cap(campaign, day)}; a day's spend is applied once"
                    )
                return self._stored_vector(campaign, day)
            if index > 1 and not self.sql.query(
                "SELECT 1 FROM plus_spend_days WHERE campaign = $c AND day = $d",
                c=campaign.name,
                d=day - timedelta(days=1),
            ):
                raise WarehouseError(
                    f"campaign {campaign.name}: the filter needs {day - timedelta(days=1)} "
                    "first (spends carry over, days run in order)"
                )
            earlier = [campaign.start + timedelta(days=i) for i in range(index - 1)]
            strategy = (row or StrategyRow.identity(index - 1)).sql_parameters(earlier)
            layout = self._cell_scope(campaign, publishers, marginals)
            publishers = layout.cell_publishers()
            vector = self._layout_sums(
                layout,
                "plus_filter",
                **self._gram_scope(layout),
                campaign=campaign.name,
                day=day,
                whole=whole,
                fraction=float(bound - whole),
                two_var=2.0 * float(sigma) ** 2,
                cap=float(cap),
                residual=RESIDUAL,
                **strategy,
            )
            if remainder_cap is not None:  # reads plus_filter's plus_kept: same transaction
                (remainder,) = self.sql.run(
                    "plus_remainder", campaign=campaign.name, day=day, excess_cap=remainder_cap
                )[0]
                self.sql.query(
                    "INSERT INTO plus_remainders VALUES ($c, $d, $e, $x)",
                    c=campaign.name,
                    d=day,
                    e=float(remainder_cap),
                    x=float(remainder),
                )
            users, top = self.sql.query(
                "SELECT count(*), coalesce(max(spend), 0.0) FROM plus_user_spend "
                "WHERE campaign = $c AND day = $d",
                c=campaign.name,
                d=day,
            )[0]
            if top > cap * (1.0 + 1e-12):  # the filter makes this impossible; never release
                raise WarehouseError(f"campaign {campaign.name}, {day}: a spend passed the cap")
            self.sql.query(
                "INSERT INTO plus_spend_days VALUES ($c, $d, $r, $s, $cap, $users, $top)",
                c=campaign.name,
                d=day,
                r=float(bound),
                s=float(sigma),
                cap=float(cap),
                users=int(users),
                top=float(top),
            )
            self._store_clipped(campaign, day, bound, publishers, vector)
        return vector

    def _remainder_cap(self, campaign: CampaignConfig, day: date) -> float | None:
        rows = self.sql.query(
            "SELECT cap FROM plus_remainders WHERE campaign = $c AND day = $d",
            c=campaign.name,
            d=day,
        )
        return float(rows[0][0]) if rows else None

    def plus_remainder(self, campaign: CampaignConfig, day: date) -> float:
        """The day's remainder X_t as :meth:`plus_clipped_vector` stored it (a true value:
        only the mechanism's draw reads it)."""
        self.sql.run("plus_schema")
        rows = self.sql.query(
            "SELECT value FROM plus_remainders WHERE campaign = $c AND day = $d",
            c=campaign.name,
            d=day,
        )
        if not rows:
            raise WarehouseError(
                f"campaign {campaign.name}, {day}: no remainder stored; the day's filter "
                "computes it (plus_clipped_vector with remainder_cap)"
            )
        return float(rows[0][0])

    def _stored_vector(self, campaign: CampaignConfig, day: date) -> np.ndarray:
        rows = self.sql.query(
            f"SELECT position, value FROM {CLIPPED} WHERE campaign = $c AND day = $d "
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
        the cross-day term of a correlated strategy, adsbpc_plus_plan.profile_cross), in the
        norm the filter charges (``marginals``: as :meth:`plus_clipped_vector`)."""
        if not (len(days) == len(bounds) == len(factors)) or not days:
            raise ValueError("need one bound and one factor per day, and at least one day")
        for day in days:
            campaign.day_index(day)
            self._version(ATTRIBUTED, campaign, day)
        whole = [int(np.floor(b)) for b in bounds]
        hist = np.zeros(grid.bins, dtype=np.int64)
        with self.sql.transaction():
            layout = self._cell_scope(campaign, publishers, marginals)
            rows = self.sql.run(
                "plus_profile",
                **self._gram_scope(layout),
                campaign=campaign.name,
                first=min(days),
                last=max(days),
                days=list(days),
                whole=whole,
                fraction=[float(b - w) for b, w in zip(bounds, whole, strict=True)],
                factor=[float(f) for f in factors],
                cross=float(cross),
                **grid.sql_parameters(cap),
            )
        for bin_, users in rows:
            hist[bin_] = users
        return hist

    def plus_spend_summary(self, campaign: CampaignConfig) -> dict:
        """Aggregates of the filter's state (monitoring/tests): days filtered, users, max spend."""
        self.sql.run("plus_schema")
        days, users, top = self.sql.query(
            "SELECT count(DISTINCT day), count(DISTINCT user_key), coalesce(max(spend), 0.0) "
            "FROM plus_user_spend WHERE campaign = $c",
            c=campaign.name,
        )[0]
        return {"days": int(days), "users": int(users), "max_spend": float(top)}

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

"""AdsBPC+'s secret state in the Spark warehouse, as DuckDB's plus_store.py: the filter's
per-user spends, a correlated strategy's kept values, the day's remainder and vector (Delta
tables beside the private data, each run's rows of a day appended in one commit per table,
tagged with the run and counted once plus_spend_days records the day with that run:
records.py) and the profile histogram.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import date, timedelta
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from dp_platform.config import CampaignConfig
from dp_platform.privacy.filter import RESIDUAL
from dp_platform.warehouse.base import StrategyRow, check_remainder_cap
from dp_platform.warehouse.spark.store_core import REMAINDERS, SPEND, SparkWarehouseCore
from dp_platform.warehouse.store_core import (
    ATTRIBUTED,
    CLIPPED,
    WarehouseError,
    check_filtered_alike,
)

if TYPE_CHECKING:
    from dp_platform.cell_strategy import MarginalWeights
    from dp_platform.cells import CellLayout
    from dp_platform.warehouse.base import ProfileGrid

__all__ = ["DAY_VECTORS", "SparkPlusStore"]

DAY_VECTORS = "plus_day_vectors"


class SparkPlusStore(SparkWarehouseCore):
    """AdsBPC+'s steps of :class:`~.store.SparkWarehouse` (module doc)."""

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
        """The AdsBPC+ filter clip of the day (as DuckDB's): write-once per (campaign, day).
        A run appends its spends, values, remainder (at ``remainder_cap``) and vector tagged
        with its own id, then commits the day with that id unless another run's already
        counts (records.commit_spend_day); either way it returns the vector of the run that
        counts, so two runs of one day at once release one vector and charge each user once.
        With a correlated strategy's ``row``, the day's row of C·x̄; with ``marginals``, each
        user charged their encoded row's norm (plus_filter.sql, as DuckDB's)."""
        if not (bound > 0 and sigma > 0 and cap > 0 and np.isfinite([bound, sigma, cap]).all()):
            raise ValueError("bound, sigma and cap must be finite numbers > 0")
        check_remainder_cap(remainder_cap)
        index = campaign.day_index(day)
        read = self._version(ATTRIBUTED, campaign, day)[1]  # the load the filter reads
        self._use()
        asked = (float(bound), float(sigma), float(cap))
        committed = self.records.spend_day(campaign.name, day)
        if committed is not None:
            return self._committed_vector(
                campaign,
                day,
                asked,
                remainder_cap,
                lambda: self._cell_scope(campaign, publishers, day, day, marginals),
            )
        previous = day - timedelta(days=1)
        if index > 1 and self.records.spend_day(campaign.name, previous) is None:
            raise WarehouseError(
                f"campaign {campaign.name}: the filter needs {previous} first "
                "(spends carry over, days run in order)"
            )
        run = uuid.uuid4().hex
        whole = int(np.floor(bound))
        layout = self._cell_scope(campaign, publishers, day, day, marginals)
        gram = self._gram_scope(layout)
        earlier = [campaign.start + timedelta(days=i) for i in range(index - 1)]
        strategy = (row or StrategyRow.identity(index - 1)).sql_parameters(earlier)
        try:
            vector = self._cell_sums(
                layout,
                "plus_filter",
                **gram,
                campaign=campaign.name,
                day=day,
                run=run,
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
                    run=run,
                    excess_cap=float(remainder_cap),
                )
        finally:
            self.sql.release()
        top = self.sql.query(
            f"SELECT coalesce(max(spend), 0.0D) FROM {SPEND} "
            "WHERE campaign = :c AND day = :d AND run = :run",
            c=campaign.name,
            d=day,
            run=run,
        )[0][0]
        if top > cap * (1.0 + 1e-12):  # the filter makes this impossible; never release
            raise WarehouseError(f"campaign {campaign.name}, {day}: a spend passed the cap")
        frame = pd.DataFrame(
            {
                "position": np.arange(len(vector), dtype=np.int32),
                "value": vector,
                "read_load": read,
                "campaign": campaign.name,
                "day": day,
                "run": run,
            }
        )
        self.sql.write(
            self.spark.createDataFrame(
                frame,
                schema="position INT, value DOUBLE, read_load BIGINT, campaign STRING, "
                "day DATE, run STRING",
            ),
            DAY_VECTORS,
        )
        self.records.commit_spend_day(campaign.name, day, *asked, run)
        return self._committed_vector(campaign, day, asked, remainder_cap, lambda: layout, run)

    def _committed_vector(
        self,
        campaign: CampaignConfig,
        day: date,
        asked: tuple[float, float, float],
        remainder_cap: float | None,
        scope: Callable[[], CellLayout],
        run: str | None = None,
    ) -> np.ndarray:
        """The vector of the run the committed day counts (after checking it was filtered
        with the parameters asked now), written to clipped_daily_vectors and recorded when
        that run is this one (``run``), or when the day's partition is not recorded (the run
        that committed it stopped before): ``scope`` puts the day's layout in scope then."""
        committed = self.records.spend_day(campaign.name, day)
        if committed is None:  # commit_spend_day returned: a day is committed
            raise WarehouseError(f"campaign {campaign.name}, {day}: the filter day is lost")
        check_filtered_alike(
            campaign.name,
            day,
            committed.parameters,
            asked,
            self._stored_remainder(campaign, day)[0],
            remainder_cap,
        )
        if committed.run is None:  # committed by an earlier release: its clip is the vector
            return self._stored_vector(campaign, day)
        rows = self.sql.query(
            f"SELECT position, value, read_load FROM {DAY_VECTORS} WHERE campaign = :c "
            "AND day = :d AND run = :run ORDER BY position",
            c=campaign.name,
            d=day,
            run=committed.run,
        )
        vector = np.array([value for _, value, _ in rows], dtype=np.float64)
        if committed.run == run or self.records.version(CLIPPED, campaign.name, day) is None:
            read = rows[0][2] if rows else None  # the load the committed run's filter read
            self._store_clipped(campaign, day, committed.bound, scope(), vector, read)
        return vector

    def _stored_remainder(
        self, campaign: CampaignConfig, day: date
    ) -> tuple[float | None, float | None]:
        """(E, X_t) of a committed filter day; (None, None) if it computed no remainder."""
        rows = self.sql.query(
            f"SELECT r.cap, r.value FROM {REMAINDERS} AS r JOIN plus_spend_days AS d "
            "ON d.campaign = r.campaign AND d.day = r.day AND d.run <=> r.run "
            "WHERE r.campaign = :c AND r.day = :d",
            c=campaign.name,
            d=day,
        )
        return (float(rows[0][0]), float(rows[0][1])) if rows else (None, None)

    def plus_remainder(self, campaign: CampaignConfig, day: date) -> float:
        """The day's remainder X_t as :meth:`plus_clipped_vector` stored it (a true value:
        only the mechanism's draw reads it); that of the run the committed day counts."""
        self._use()
        value = None
        if self.records.spend_day(campaign.name, day) is not None:
            value = self._stored_remainder(campaign, day)[1]
        if value is None:
            raise WarehouseError(
                f"campaign {campaign.name}, {day}: no remainder stored; the day's filter "
                "computes it (plus_clipped_vector with remainder_cap)"
            )
        return value

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
        days = self.records.spend_day_list(campaign.name)
        if not days:
            return {"days": 0, "users": 0, "max_spend": 0.0}
        users, top = self.sql.query(
            f"SELECT count(DISTINCT s.user_key), coalesce(max(s.spend), 0.0D) FROM {SPEND} AS s "
            "JOIN plus_spend_days AS d ON d.campaign = s.campaign AND d.day = s.day "
            "AND d.run <=> s.run WHERE s.campaign = :c",
            c=campaign.name,
        )[0]
        return {"days": len(days), "users": int(users), "max_spend": float(top)}

"""AdsBPC+'s secret state in the DuckDB warehouse: the individual filter's per-user spends, a
correlated strategy's kept values, the day's remainder and the profile histogram.

Tables in plus_schema.sql, SQL in plus_*.sql; separate from AdsBPC's steps (store.py), which
share only the clipped-vector table (store_core.py). Every write is one DuckDB transaction.
"""

from __future__ import annotations

from datetime import date, timedelta
from typing import TYPE_CHECKING

import numpy as np

from dp_platform.config import CampaignConfig
from dp_platform.privacy.filter import RESIDUAL
from dp_platform.warehouse.base import StrategyRow, check_remainder_cap
from dp_platform.warehouse.store_core import (
    ATTRIBUTED,
    WarehouseCore,
    WarehouseError,
    check_filtered_alike,
)

if TYPE_CHECKING:
    from dp_platform.cell_strategy import MarginalWeights
    from dp_platform.warehouse.base import ProfileGrid

__all__ = ["PlusStore"]


class PlusStore(WarehouseCore):
    """AdsBPC+'s steps of :class:`~.store.Warehouse` (module doc)."""

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
                check_filtered_alike(
                    campaign.name,
                    day,
                    tuple(stored[0]),
                    (float(bound), float(sigma), float(cap)),
                    self._stored_remainder(campaign, day)[0],
                    remainder_cap,
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

    def _stored_remainder(
        self, campaign: CampaignConfig, day: date
    ) -> tuple[float | None, float | None]:
        """(E, X_t) of a filtered day; (None, None) if it computed no remainder."""
        rows = self.sql.query(
            "SELECT cap, value FROM plus_remainders WHERE campaign = $c AND day = $d",
            c=campaign.name,
            d=day,
        )
        return (float(rows[0][0]), float(rows[0][1])) if rows else (None, None)

    def plus_remainder(self, campaign: CampaignConfig, day: date) -> float:
        """The day's remainder X_t as :meth:`plus_clipped_vector` stored it (a true value:
        only the mechanism's draw reads it)."""
        self.sql.run("plus_schema")
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

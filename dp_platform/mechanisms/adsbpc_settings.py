"""AdsBPC's catalogue block, ``mechanism: {kind: adsbpc, bounds: {…}}``: its fields, their
ranges and the rules a campaign must meet, refused when the catalogue loads (before any plan).
The mechanism is :mod:`dp_platform.mechanisms.adsbpc`.
"""

from __future__ import annotations

import math
from typing import ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from dp_platform.cell_strategy import MARGINALS_HELP, check_marginals
from dp_platform.config import (
    MAX_BOUND_CAP,
    MAX_REACHABLE_BOUND,
    CampaignConfig,
    MechanismSettings,
)

__all__ = ["AdsbpcSettings", "BoundsConfig"]


class BoundsConfig(BaseModel):
    """Private choice of the daily contribution bound (docs/algorithm.md#bounds)."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    quantile_days: int = Field(default=7, ge=1, description="l: days chosen by PrivateQuantile")
    p: float = Field(default=0.99, gt=0, lt=1)
    cap: int = Field(
        default=10, ge=1, le=MAX_BOUND_CAP, description="Λ: upper end of the quantile's range"
    )
    min_bound: float = Field(
        default=0.01,
        gt=0,
        description="floor on every chosen bound r_i (free post-processing), so σ_i > 0 always",
    )
    s_up: float = 1.3
    s_down: float = 0.8
    t_up: float = Field(default=50.0, ge=0)
    t_down: float = Field(default=50.0, ge=0)
    max_reports: int = Field(default=7, ge=1, description="k: positive reports per SVT")

    @field_validator("s_up")
    @classmethod
    def _s_up(cls, value: float) -> float:
        if not value > 1:
            raise ValueError("s_up must be > 1")
        return value

    @field_validator("s_down")
    @classmethod
    def _s_down(cls, value: float) -> float:
        if not 0 < value < 1:
            raise ValueError("s_down must be in (0, 1)")
        return value

    @model_validator(mode="after")
    def _floor_below_cap(self) -> BoundsConfig:
        if not self.min_bound <= self.cap:
            raise ValueError(f"min_bound must be <= cap ({self.cap})")
        if self._log_largest_bound() > math.log(MAX_REACHABLE_BOUND):
            raise ValueError(
                f"cap·s_up^max_reports (the largest bound the SVT can reach) must be <= "
                f"{MAX_REACHABLE_BOUND:g}; lower cap, s_up or max_reports"
            )
        return self

    def _log_largest_bound(self) -> float:
        # The SVT raises τ by s_up at most k times, so a bound never exceeds Λ·s_up^k (in logs:
        # s_up^k itself may overflow a float before the check above refuses it).
        return math.log(self.cap) + self.max_reports * math.log(self.s_up)

    @property
    def largest_bound(self) -> float:
        """Λ·s_up^k: the largest bound the SVT can reach (at most MAX_REACHABLE_BOUND)."""
        return math.exp(self._log_largest_bound())


class AdsbpcSettings(MechanismSettings):
    """``mechanism: {kind: adsbpc, bounds: {…}}`` — the older top-level ``bounds:`` is folded in."""

    kind: Literal["adsbpc"]  # required, so a dump that leaves out defaults still names it
    bounds: BoundsConfig = BoundsConfig()
    legacy_blocks: ClassVar[tuple[str, ...]] = ("bounds",)
    privacy_keys: ClassVar[tuple[str, ...]] = ("split",)  # ρ1 / l·ρ2 / ρ3: AdsBPC's split only
    cell_norm: ClassVar[Literal[1, 2] | None] = 2  # Gaussian noise: ℓ2 sensitivity
    marginals: dict[str, float | dict[str, float]] | None = Field(
        default=None, description=MARGINALS_HELP
    )

    def check(self, campaign: CampaignConfig) -> None:
        super().check(campaign)
        check_marginals(campaign, self.marginals)
        if self.bounds.quantile_days >= campaign.days:
            raise ValueError(
                f"bounds.quantile_days: l must be < days (l = {self.bounds.quantile_days}, "
                f"days = {campaign.days})"
            )
        split = campaign.privacy.split
        if split.quantile == 0 or split.svt == 0:
            raise ValueError("privacy.split: quantile and svt must be > 0 for adsbpc")

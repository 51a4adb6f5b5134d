"""A toy daily mechanism, to show what adding one takes: this file and one registry line.

``FixedBound``: the operator fixes the daily contribution bound r in the catalogue
(``mechanism: {kind: toy_fixed, bound: 2}``), so choosing it reads no data and costs nothing;
each day's clipped vector gets Gaussian noise calibrated to an equal share ρ/n of the campaign's
ρ. Privacy unit: one user, add/remove; a user's clipped row has L1 ≤ r, hence ℓ2 sensitivity
≤ r; cost r²/(2σ²) ≤ ρ/n per day, ρ over the campaign (composition). Not for production: the
bound is a guess about the data that the data never corrects.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import date
from fractions import Fraction
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import Field

from dp_platform.config import CampaignConfig, MechanismSettings
from dp_platform.mechanisms.base import BoundInputs, Chain, Measurement
from dp_platform.privacy.accounting import Rho, gaussian_sigma
from dp_platform.privacy.allotment import Allotment
from dp_platform.privacy.noise import NoiseSource, resolve
from dp_platform.records import JsonValue
from dp_platform.warehouse.base import WarehouseEngine
from dp_platform.workload import workload_matrix


class FixedBoundSettings(MechanismSettings):
    kind: Literal["toy_fixed"]
    bound: float = Field(gt=0, description="the public daily contribution bound r")


@dataclass(frozen=True)
class FixedBoundPlan:
    campaign: str
    days: int
    queries: np.ndarray
    bound: float
    rho: Fraction

    @property
    def day_rho(self) -> Fraction:
        return self.rho / self.days

    @property
    def sigma(self) -> float:
        return gaussian_sigma(self.bound, self.day_rho)

    @property
    def total(self) -> Rho:
        return Rho(self.rho)


@dataclass(frozen=True)
class FixedChoice:
    day: int
    bound: float
    method: str
    charges: dict[str, Rho]


@dataclass(frozen=True)
class FixedState:
    day: int = 0
    bounds: tuple[float, ...] = ()


class FixedBoundMechanism:
    name = "toy_fixed"
    settings = FixedBoundSettings
    plan_type = FixedBoundPlan
    chain = Chain(FixedChoice, FixedState)
    carries_spend = False

    def make_plan(self, campaign: CampaignConfig, base_dir: str | Path | None) -> FixedBoundPlan:
        assert isinstance(campaign.mechanism, FixedBoundSettings)
        return FixedBoundPlan(
            campaign=campaign.name,
            days=campaign.days,
            queries=workload_matrix(campaign, base_dir),
            bound=campaign.mechanism.bound,
            rho=Fraction(campaign.privacy.rho),
        )

    def bound_charges(self, plan: FixedBoundPlan, day: int) -> dict[str, Rho]:
        return {}  # the bound is public: choosing it reads no data

    def bound_inputs(
        self,
        plan: FixedBoundPlan,
        campaign: CampaignConfig,
        day: date,
        warehouse: WarehouseEngine,
        earlier_bounds: Callable[[], list[float]],
    ) -> BoundInputs:
        return BoundInputs(np.zeros(1, dtype=np.int64))  # reads nothing

    def choose_bound(
        self,
        plan: FixedBoundPlan,
        state: FixedState,
        inputs: BoundInputs,
        *,
        publishers: int,
        noise: NoiseSource | None,
    ) -> tuple[FixedChoice, FixedState]:
        day = state.day + 1
        choice = FixedChoice(day, plan.bound, "fixed", {})
        return choice, FixedState(day, (*state.bounds, plan.bound))

    def clip(
        self,
        plan: FixedBoundPlan,
        choice: FixedChoice,
        warehouse: WarehouseEngine,
        campaign: CampaignConfig,
        day: date,
    ) -> np.ndarray:
        return np.asarray(warehouse.clipped_vector(campaign, day, choice.bound), dtype=np.float64)

    def remainder(
        self,
        plan: FixedBoundPlan,
        warehouse: WarehouseEngine,
        campaign: CampaignConfig,
        day: date,
    ) -> None:
        return None

    def release_charges(self, plan: FixedBoundPlan, choice: FixedChoice) -> dict[str, Rho]:
        return {"gaussian": Rho(plan.day_rho)}

    def declare(self, plan: FixedBoundPlan, choice: FixedChoice, state: FixedState) -> Allotment:
        # the catalogue's bound (not the choice's) and the day's share: the plan's own figures
        return Allotment(plan.bound, plan.day_rho)

    def measure(
        self,
        plan: FixedBoundPlan,
        choice: FixedChoice,
        clipped: np.ndarray,
        *,
        allotment: Allotment,
        noise: NoiseSource | None,
        earlier: tuple[Measurement, ...] = (),  # independent days: not needed
        remainder: float | None = None,
    ) -> Measurement:
        values = resolve(noise).add_gaussian(
            clipped, plan.sigma, l2_sensitivity=allotment.sensitivity, rho=allotment.loss
        )
        charges = self.release_charges(plan, choice)
        return Measurement(choice.day, choice.bound, plan.sigma, tuple(map(float, values)), charges)

    def summary(self, plan: FixedBoundPlan) -> dict[str, JsonValue]:
        return {"rho": float(plan.rho), "bound": plan.bound, "sigma": plan.sigma}

    def describe(self, plan: FixedBoundPlan) -> list[str]:
        return [f"campaign {plan.campaign}: fixed bound {plan.bound:g}, σ {plan.sigma:.4g}"]


MECHANISM = FixedBoundMechanism()

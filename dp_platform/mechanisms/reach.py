"""Reach and k+-frequency of a campaign over its whole period (Ghazi & Manurangsi), user-level DP.

Reach = users who saw at least one of the campaign's impressions; n_{≥k} = users who saw at
least k; the (≥k)-frequency is n_{≥k}/reach. We release the *frequency histogram*
h = (h_1, …, h_{K−1}, h_{≥K}) — each user sits in exactly one bin — with discrete Gaussian noise
(OpenDP, exact, integer), and derive reach and every n_{≥k} from it by summation (free
post-processing, consistent by construction).

Privacy unit: the user; adjacency add/remove (one bin ±1: ℓ2 sensitivity 1) or replace (one
bin −1, another +1: ℓ2 = √2). Cost: ρ = Δ₂²/(2σ²) zCDP (Canonne–Kamath–Steinke: the discrete
Gaussian costs what the continuous one does), σ the smallest float with that cost ≤ the
configured ρ. Charged to the same user-level ledger as the daily releases.

Error: each bin has variance σ²_ℤ ≤ σ²; n_{≥k} sums K − k + 1 bins, so its standard error is
≤ σ·√(K − k + 1) (reach: σ·√K).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Literal

import numpy as np
from pydantic import Field

from dp_platform.config import RHO_FLOOR, CampaignConfig, MechanismSettings
from dp_platform.display import RHO_DIGITS, significant
from dp_platform.mechanisms.base import CanaryPlacement, Markdown, Shown
from dp_platform.privacy.accounting import Rho, gaussian_rho, gaussian_sigma
from dp_platform.privacy.allotment import Allotment, root_above
from dp_platform.privacy.discrete import IntegerNoiseSource, resolve_integer
from dp_platform.records import JsonValue

if TYPE_CHECKING:
    from dp_platform.privacy.noise import NoiseSource
    from dp_platform.warehouse.base import WarehouseEngine

__all__ = [
    "ReachPlan",
    "ReachRelease",
    "declare",
    "plan_from_config",
    "plan_reach",
    "release_reach",
    "warehouse_histogram",
]


class ReachSettings(MechanismSettings):
    """A ``reach: {rho: …, max_frequency: …}`` block: reach and k+-frequency over the whole
    period, released once after the last day, on its own ρ (reserved with the campaign)."""

    kind: Literal["reach"]  # required, so a dump that leaves out defaults still names it
    rho: float = Field(
        ge=RHO_FLOOR, description="zCDP budget of the reach release (on the account)"
    )
    max_frequency: int = Field(default=10, ge=1, description="K: frequencies >= K pooled")

    def check(self, campaign: CampaignConfig) -> None:
        """Reach reads impressions only: no attribution rule to check."""


@dataclass(frozen=True)
class ReachPlan:
    max_frequency: int
    l2_sensitivity: float
    sigma: float
    rho: Fraction

    def to_json(self) -> dict:
        return {
            "max_frequency": self.max_frequency,
            "l2_sensitivity": self.l2_sensitivity,
            "sigma": self.sigma,
            "rho": float(self.rho),
            "reach_std": self.sigma * math.sqrt(self.max_frequency),
        }


def histogram_sensitivity(max_frequency: int, adjacency: str) -> float:
    """ℓ2 sensitivity of the frequency histogram that σ is sized for: one bin ±1 (add/remove),
    one bin −1 and another +1 (replace, K > 1)."""
    return math.sqrt(2.0) if adjacency == "replace" and max_frequency > 1 else 1.0


def declare(max_frequency: int, adjacency: str, rho: float | Fraction) -> Allotment:
    """The release as the registered configuration states it (privacy/allotment.py): ℓ2
    sensitivity √(bins a user can move), 1 under add/remove, √2 under replace with K > 1, and
    the configured ρ (the plan's charge Δ²/(2σ²) is at most it). Restated here, not read from
    the plan's σ, Δ or ρ (all computed together in :func:`plan_reach`), so a bug there is
    refused by the sampler."""
    moved = 2 if adjacency == "replace" and max_frequency > 1 else 1  # bins one user changes
    budget = rho if isinstance(rho, Fraction) else Rho.of(rho).value
    return Allotment(root_above(Fraction(moved)), budget)


def plan_reach(
    rho: float | Fraction,
    max_frequency: int = 10,
    adjacency: Literal["add_remove", "replace"] = "add_remove",
) -> ReachPlan:
    """σ for the histogram so that its exact cost Δ₂²/(2σ²) is at most ρ."""
    if max_frequency < 1:
        raise ValueError("max_frequency must be >= 1")
    delta = histogram_sensitivity(max_frequency, adjacency)
    budget = Fraction(rho) if isinstance(rho, Fraction) else Fraction(repr(float(rho)))
    sigma = gaussian_sigma(delta, budget)
    return ReachPlan(max_frequency, delta, sigma, gaussian_rho(delta, sigma))


@dataclass(frozen=True)
class ReachRelease:
    """DP values only."""

    histogram: tuple[int, ...]
    sigma: float
    rho: Fraction

    @property
    def at_least(self) -> tuple[int, ...]:
        """n_{≥k} for k = 1..K (n_{≥1} is the reach)."""
        return tuple(int(v) for v in np.cumsum(self.histogram[::-1])[::-1])

    @property
    def reach(self) -> int:
        return self.at_least[0]

    def frequencies(self) -> tuple[float, ...]:
        """(≥k)-frequency n_{≥k}/reach, clamped to [0, 1] (0 when the noisy reach is ≤ 0)."""
        reach = self.reach
        if reach <= 0:
            return tuple(0.0 for _ in self.histogram)
        return tuple(min(1.0, max(0.0, n / reach)) for n in self.at_least)

    def to_json(self) -> dict:
        k = len(self.histogram)
        return {
            "histogram": list(self.histogram),
            "reach": self.reach,
            "at_least": list(self.at_least),
            "frequency_at_least": list(self.frequencies()),
            "sigma": self.sigma,
            "std_at_least": [self.sigma * math.sqrt(k - j) for j in range(k)],
            "rho_charged": float(self.rho),
            "rho_exact": str(self.rho),
        }


def release_reach(
    histogram: np.ndarray,
    plan: ReachPlan,
    *,
    allotment: Allotment,
    noise: IntegerNoiseSource | None = None,
) -> ReachRelease:
    """Noisy frequency histogram (from :func:`warehouse_histogram`); charges ``plan.rho``.

    ``allotment`` (:func:`declare`: the registered ℓ2 sensitivity and ρ) is declared to the
    sampler, which refuses the draw if OpenDP's map of the discrete Gaussian at the plan's σ
    says more.
    """
    counts = np.asarray(histogram, dtype=np.int64)
    if counts.shape != (plan.max_frequency,):
        raise ValueError(f"histogram must have {plan.max_frequency} bins")
    noisy = resolve_integer(noise).add_discrete_gaussian(
        counts, plan.sigma, l2_sensitivity=allotment.sensitivity, rho=allotment.loss
    )
    return ReachRelease(tuple(int(v) for v in noisy), plan.sigma, plan.rho)


def plan_from_config(campaign: CampaignConfig) -> ReachPlan:
    """The reach plan of a campaign with a ``reach:`` block."""
    options = campaign.releases.get(MECHANISM.name)
    if not isinstance(options, ReachSettings):
        raise ValueError(f"campaign {campaign.name} has no reach block")
    return plan_reach(options.rho, options.max_frequency, campaign.privacy.adjacency)


def warehouse_histogram(
    warehouse: WarehouseEngine,
    campaign: CampaignConfig,
    max_frequency: int,
    publishers: list[str] | None = None,
) -> np.ndarray:
    """True frequency histogram of the campaign's period (PRIVATE: for release_reach only)."""
    return warehouse.reach_histogram(campaign, max_frequency, publishers=publishers)


class ReachMechanism:
    """Reach and frequency as a campaign-level mechanism, added beside the daily stream."""

    name = "reach"
    settings = ReachSettings
    plan_type = ReachPlan
    replaces_stream = False
    asset = "reach_and_frequency"
    reads = "raw_impressions"
    description = (
        "How many users saw the campaign's ads, and how many at least k times, over the whole "
        "period (noisy histogram; its own ρ on the account)."
    )

    def make_plan(self, campaign: CampaignConfig) -> ReachPlan | None:
        return plan_from_config(campaign) if self.name in campaign.releases else None

    def charge(self, plan: ReachPlan) -> Rho:
        return Rho(plan.rho)

    def declare(self, plan: ReachPlan, campaign: CampaignConfig) -> Allotment:
        options = campaign.releases.get(self.name)
        if not isinstance(options, ReachSettings):
            raise ValueError(f"campaign {campaign.name} has no reach block")
        return declare(plan.max_frequency, campaign.privacy.adjacency, options.rho)

    def release(
        self,
        plan: ReachPlan,
        warehouse: WarehouseEngine,
        campaign: CampaignConfig,
        publishers: list[str],
        *,
        allotment: Allotment,
        noise: NoiseSource | None,
        integer_noise: IntegerNoiseSource | None,
    ) -> dict[str, JsonValue]:
        histogram = warehouse_histogram(warehouse, campaign, plan.max_frequency, publishers)
        return release_reach(histogram, plan, allotment=allotment, noise=integer_noise).to_json()

    def shown(self, payload: dict[str, JsonValue]) -> Shown:
        at_least: list[int] = payload.get("at_least", [])
        rows = [f"| {k}+ | {v} |" for k, v in enumerate(at_least, start=1)]
        return {
            "noisy_reach": float(payload["reach"]),
            "rho_charged": significant(float(payload["rho_charged"]), RHO_DIGITS),
            "frequency": Markdown(
                "\n".join(["| seen at least | noisy users |", "|---|---|", *rows])
            ),
        }

    def summary(self, plan: ReachPlan) -> dict[str, JsonValue]:
        return plan.to_json()

    def describe(self, plan: ReachPlan) -> list[str]:
        r = plan.to_json()
        return [
            f"  reach & frequency: ρ {r['rho']:.6g}, up to {r['max_frequency']}+, reach std "
            f"{r['reach_std']:.4g}"
        ]

    def describe_release(self, payload: dict[str, JsonValue]) -> str:
        at_least = ", ".join(f"{k}+: {v}" for k, v in enumerate(payload["at_least"], 1))
        return f"reach (ρ {payload['rho_charged']:.6g}): {payload['reach']} users; {at_least}"

    def canary_placement(self, plan: ReachPlan) -> CanaryPlacement:
        """One canary per bin of the frequency histogram (seen 1, 2, … K times): the bins are
        the only cells reach releases."""
        return CanaryPlacement(frequencies=tuple(range(1, plan.max_frequency + 1)))

    def canary_evidence(
        self, payload: dict[str, JsonValue], publisher: str, frequency: int
    ) -> float:
        histogram = payload["histogram"]
        assert isinstance(histogram, list)
        return float(histogram[frequency - 1]) / float(payload["sigma"])  # type: ignore[arg-type]


MECHANISM = ReachMechanism()

"""Reach and k+-frequency of a campaign over its whole period (seed 003), user-level DP.

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

from dp_platform.privacy.accounting import gaussian_rho, gaussian_sigma
from dp_platform.privacy.discrete import IntegerNoiseSource, resolve_integer

if TYPE_CHECKING:
    from dp_platform.config import CampaignConfig
    from dp_platform.warehouse.base import WarehouseEngine

__all__ = [
    "ReachPlan",
    "ReachRelease",
    "frequency_histogram",
    "plan_from_config",
    "plan_reach",
    "release_reach",
    "warehouse_histogram",
]


def frequency_histogram(impressions_per_user: np.ndarray, max_frequency: int) -> np.ndarray:
    """h[k−1] = users with exactly k impressions (k < K), h[K−1] = users with ≥ K; zeros
    (users who saw nothing) are in no bin. Reference for the SQL and for sensitivity tests."""
    counts = np.asarray(impressions_per_user, dtype=np.int64)
    counts = counts[counts > 0]
    return np.bincount(np.minimum(counts, max_frequency) - 1, minlength=max_frequency)[
        :max_frequency
    ]


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


def plan_reach(
    rho: float | Fraction,
    max_frequency: int = 10,
    adjacency: Literal["add_remove", "replace"] = "add_remove",
) -> ReachPlan:
    """σ for the histogram so that its exact cost Δ₂²/(2σ²) is at most ρ."""
    if max_frequency < 1:
        raise ValueError("max_frequency must be >= 1")
    delta = math.sqrt(2.0) if adjacency == "replace" and max_frequency > 1 else 1.0
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
    histogram: np.ndarray, plan: ReachPlan, *, noise: IntegerNoiseSource | None = None
) -> ReachRelease:
    """Noisy frequency histogram (from :func:`warehouse_histogram`); charges ``plan.rho``."""
    counts = np.asarray(histogram, dtype=np.int64)
    if counts.shape != (plan.max_frequency,):
        raise ValueError(f"histogram must have {plan.max_frequency} bins")
    noisy = resolve_integer(noise).add_discrete_gaussian(counts, plan.sigma)
    return ReachRelease(tuple(int(v) for v in noisy), plan.sigma, plan.rho)


def plan_from_config(campaign: CampaignConfig) -> ReachPlan:
    """The reach plan of a campaign with a ``reach:`` block."""
    options = campaign.reach
    if options is None:
        raise ValueError(f"campaign {campaign.name} has no reach block")
    return plan_reach(options.rho, options.max_frequency, campaign.privacy.adjacency)


def warehouse_histogram(
    warehouse: WarehouseEngine, campaign: CampaignConfig, max_frequency: int
) -> np.ndarray:
    """True frequency histogram of the campaign's period (PRIVATE: for release_reach only)."""
    return warehouse.reach_histogram(campaign, max_frequency)

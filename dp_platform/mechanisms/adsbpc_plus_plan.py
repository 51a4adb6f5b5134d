"""AdsBPC+'s plan: its settings, its budget split and everything else fixed before day 1.

All of it is public and data-independent (shown and audited before any data is read). The
derivation of the budget and of the profile grid is in docs/algorithm.md#adsbpc-plus; the
mechanism is :mod:`dp_platform.mechanisms.adsbpc_plus`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from statistics import NormalDist
from typing import ClassVar, Literal

import numpy as np
from pydantic import Field, model_validator

from dp_platform.cell_strategy import MARGINALS_HELP, MarginalWeights, check_marginals
from dp_platform.config import (
    MAX_BOUND_CAP,
    SHARE_FLOOR,
    CampaignConfig,
    MechanismSettings,
)
from dp_platform.errors import ConfigError
from dp_platform.privacy.accounting import Rho, epsilon_at_deltas
from dp_platform.privacy.strategy import bandwidth
from dp_platform.warehouse.base import ProfileGrid, StrategyRow
from dp_platform.workload import query_ends

__all__ = [
    "DEFAULT_PRIOR_FRACTION",
    "DEFAULT_REMAINDER_SHARE",
    "PROFILE_BINS",
    "PROFILE_EDGES",
    "PROFILE_GRID",
    "PROFILE_LOW",
    "SCALE_ALPHA",
    "SCALE_Z",
    "PlusBudget",
    "PlusPlan",
    "PlusSettings",
    "check_sigma_range",
    "profile_bins",
    "profile_cross",
    "profile_edge",
    "profile_factors",
    "profile_top",
    "strategy_row",
]


# ρ_R's share where the remainder applies (plans made since issue 27; unset before: none)
DEFAULT_REMAINDER_SHARE = 0.05
# s0 ÷ Λ where no scale_prior is written (plans made since 2026-11-29; before: ψ0)
DEFAULT_PRIOR_FRACTION = 0.35


class PlusSettings(MechanismSettings):
    """AdsBPC+ (``mechanism: {kind: adsbpc_plus, …}``): individual filter, cheap bounds.

    Shares of ρ: ``histogram`` for the n daily noisy count histograms, ``profile`` for the one
    noisy profile histogram after ``profile_days``; the rest (ρ1) is each user's filter budget.
    """

    kind: Literal["adsbpc_plus"]  # required, so a dump that leaves out defaults still names it
    cell_norm: ClassVar[Literal[1, 2] | None] = 2  # Gaussian noise: ℓ2 sensitivity
    histogram_share: float = Field(default=0.03, ge=SHARE_FLOOR, lt=1)
    profile_share: float = Field(default=0.02, ge=0, lt=1)
    profile_days: int = Field(
        default=3,
        ge=0,
        description="m: days the profile is read from (3 since issue 27; registered: theirs)",
    )
    quantile: float = Field(
        default=0.9,
        gt=0,
        lt=1,
        description="q of the per-user profile: s is at or above it (0.9 since issue 27)",
    )
    prior_scale: float = Field(
        default=0.5, gt=0, le=1, description="ψ0: σ_i = σ̄_i·ψ0·r_i on days 1..m (public prior)"
    )
    cap: int = Field(default=10, ge=1, le=MAX_BOUND_CAP, description="Λ: largest daily bound r_i")
    pool_days: int = Field(default=7, ge=1, description="noisy histograms pooled for r_i")
    scale_prior: float | None = Field(
        default=None,
        gt=0,
        description=(
            "s0: profile scale kept when the noisy profile cannot rule it out "
            f"(default {DEFAULT_PRIOR_FRACTION:g}·Λ since 2026-11-29, ψ0·Λ before; set Λ to fall "
            "back on cutting nobody)"
        ),
    )
    scale_rule: Literal["quantile", "objective"] | None = Field(
        default=None,
        description=(
            "how s is read from the noisy profile: quantile = the q-quantile's confidence bound; "
            "objective = the least planned error per publisher and on the total, at or above "
            "the quantile (default)"
        ),
    )
    total_weight: float | None = Field(
        default=None,
        ge=0,
        description="λ: weight of the all-publisher total's error in the objective rule (1)",
    )
    strategy: Literal["auto", "diagonal", "sqrt", "banded"] = Field(
        default="auto",
        description=(
            "noise strategy C (rows C·x + N(0, σ²)): diagonal = independent noise per day, "
            "sqrt = the square-root factorization of prefix sums (correlated noise), banded = "
            "that factorization kept to its first `band` lags; auto = the one with the lowest "
            "planned error for the workload (banded with every band)"
        ),
    )
    band: int | None = Field(
        default=None,
        ge=1,
        description="b: lags a banded row carries (default: the lowest planned error's band)",
    )
    marginals: dict[str, float | dict[str, float]] | None = Field(
        default=None, description=MARGINALS_HELP
    )
    remainder_share: float | None = Field(
        default=None,
        ge=0,
        lt=1,
        description=(
            "share of ρ for the daily remainder: X_t = Σ_u min(c_ut − k_ut, E), the "
            "conversions the filter and the bound clipped off each user that day, capped at E, "
            f"released with its own Gaussian noise (0: none; default {DEFAULT_REMAINDER_SHARE:g} "
            "for a campaign that counts conversions on several publishers without a breakdown, "
            "0 elsewhere)"
        ),
    )
    remainder_cap: float = Field(
        default=2.0,
        gt=0,
        le=MAX_BOUND_CAP,
        description="E: one user's most in X_t a day (2 since 2026-11-29; 3 before)",
    )
    early_scale: float | None = Field(
        default=0.3,
        gt=0,
        le=1,
        description=(
            "ε0: on days 1..m a row's noise unit is min(ψ0·r_i, ε0·Λ), so the days before the "
            "profile run at most at that scale whatever bound the noisy histograms leave "
            "(0.3 since issue 27); null: ψ0·r_i, as for plans registered before"
        ),
    )
    pace: float | None = Field(
        default=0.0,
        ge=0,
        description=(
            "β: through day t no user's spend may pass ρ1·min(1, W_t + β), W_t a flat "
            "profile's share of ρ1 by then, so a heavy user is clipped day by day instead of "
            "cut for good part-way (costs nothing: it only lowers a day's room; 0 since issue "
            "27); null: the filter's cap is ρ1 every day, as for plans registered before"
        ),
    )

    @property
    def profile_prior(self) -> float:
        """s0 in conversions for a plan made now: the configured prior, or 0.35·Λ — below
        ψ0·Λ, the scale days 1..m plan for, because workloads want different scales where the
        profile cannot read the tail: on the Facebook campaign (docs/results.md) sliding
        windows beat the hindsight-tuned fixed bound only at s ≤ 0.39·Λ and prefix sums only
        above 0.3·Λ; at 0.35·Λ both do (0.82 and 0.91 × the fixed bound's error), at 0.5·Λ
        sliding windows do not (1.57 ×)."""
        if self.scale_prior is not None:
            return self.scale_prior
        return DEFAULT_PRIOR_FRACTION * self.cap

    def counts_conversions(self, campaign: CampaignConfig) -> bool:
        """Whether the remainder applies: it adds clipped conversions back to one count per
        publisher, so only a count-only campaign without breakdown or marginals has one."""
        return not campaign.breakdown and campaign.measures == ["count"] and not self.marginals

    def share_of_remainder(self, campaign: CampaignConfig) -> float:
        """The remainder's share of ρ for ``campaign``: as written, else the default where it
        pays (docs/results.md measures why 5 %) and 0 elsewhere. It pays on the all-publisher
        total, where every publisher's clipping bias adds up while the noise grows as √k: with
        one listed publisher the total is that publisher's answer, whose bias the bound's
        objective rule already weighs against its noise, so the default leaves it out."""
        if self.remainder_share is not None:
            return self.remainder_share
        applies = self.counts_conversions(campaign) and campaign.several_publishers
        return DEFAULT_REMAINDER_SHARE if applies else 0.0

    @model_validator(mode="after")
    def _shares(self) -> PlusSettings:
        if self.scale_prior is not None and self.scale_prior > self.cap:
            raise ValueError(f"scale_prior must be <= cap ({self.cap})")
        for name in ("profile_share", "remainder_share"):
            if 0 < (getattr(self, name) or 0.0) < SHARE_FLOOR:
                raise ValueError(f"{name} is 0 or at least {SHARE_FLOOR:g}")
        if (self.profile_days == 0) != (self.profile_share == 0):
            raise ValueError("profile_share must be > 0 exactly when profile_days > 0")
        return self

    def check(self, campaign: CampaignConfig) -> None:
        super().check(campaign)
        check_marginals(campaign, self.marginals)
        if campaign.privacy.adjacency == "replace":
            raise ValueError(
                "privacy.adjacency: adsbpc_plus supports add_remove only (its individual filter "
                "bounds each user's own loss; under replace a pair of users can lose up to 4x "
                "rho1); use add_remove or mechanism adsbpc"
            )
        if (self.remainder_share or 0.0) > 0 and not self.counts_conversions(campaign):
            raise ValueError(
                "adsbpc_plus.remainder_share: the remainder counts conversions, so it is "
                "released for count-only campaigns without a breakdown; leave it unset or 0 here"
            )
        share = self.share_of_remainder(campaign)  # as written, or the default here
        if self.histogram_share + self.profile_share + share >= 1:
            written = "" if self.remainder_share is not None else " (the default here)"
            raise ValueError(
                f"adsbpc_plus: histogram_share + profile_share + remainder_share {share:g}"
                f"{written} must be < 1 (rho1 needs a share); lower a share or set "
                "remainder_share: 0"
            )
        if self.band is not None and (self.strategy != "banded" or self.band > campaign.days):
            raise ValueError(
                f"adsbpc_plus.band: set only with strategy banded, at most days ({campaign.days})"
            )
        if self.profile_days >= campaign.days:
            raise ValueError(
                f"adsbpc_plus.profile_days: m must be < days (m = {self.profile_days}, "
                f"days = {campaign.days})"
            )


PROFILE_LOW = 1e-4
PROFILE_BINS = 48
PROFILE_EDGES = np.geomspace(PROFILE_LOW, 1.0, PROFILE_BINS + 1)  # × Λ²: public edges
PROFILE_GRID = ProfileGrid(PROFILE_LOW, PROFILE_BINS)  # the same edges, as engines take them
SCALE_ALPHA = NormalDist().cdf(-2.0)  # ≈ 2.3 %: allowed chance that s undershoots (2σ level)
SCALE_Z = NormalDist().inv_cdf(1.0 - SCALE_ALPHA / PROFILE_BINS)  # Bonferroni, 48 bins: ≈ 3.31


def profile_bins(values: np.ndarray, cap: float) -> np.ndarray:
    """Bin of profiles T ∈ (0, Λ²] on the public edges Λ²·PROFILE_EDGES (same rule as SQL)."""
    low = PROFILE_LOW * cap * cap
    t = np.maximum(np.asarray(values, dtype=np.float64), low)
    step = math.log(1.0 / PROFILE_LOW) / PROFILE_BINS
    return np.clip(np.floor(np.log(t / low) / step), 0, PROFILE_BINS - 1).astype(np.int64)


def profile_edge(cap: float, index: int) -> float:
    """√ of the public profile edge ``index`` in conversions: Λ·√PROFILE_EDGES[index]."""
    return float(cap * math.sqrt(PROFILE_EDGES[index]))


@dataclass(frozen=True)
class PlusBudget:
    """ρ = ρ1 + n·ρ_h + ρ_p + ρ_R, exact; ``quantile_days``/``rho2``/``rho3`` do not exist here.
    ρ_R, the remainder's (0 for every plan registered before it existed), is n equal days."""

    rho: Rho
    rho1: Rho
    histogram_day: Rho
    profile: Rho
    days: int
    remainder: Rho = field(default_factory=Rho.zero)

    @classmethod
    def from_config(cls, campaign: CampaignConfig) -> PlusBudget:
        cfg = campaign.mechanism
        total = Rho.of(campaign.privacy.rho)
        hist = total * Fraction(repr(cfg.histogram_share)) / campaign.days
        profile = total * Fraction(repr(cfg.profile_share))
        remainder = total * Fraction(repr(cfg.share_of_remainder(campaign)))
        rho1 = total - hist * campaign.days - profile - remainder
        return cls(total, rho1, hist, profile, campaign.days, remainder)

    @property
    def remainder_day(self) -> Rho:
        """ρ_R/n: what each day's remainder draw is charged."""
        return self.remainder / self.days

    @property
    def total(self) -> Rho:
        return self.rho1 + self.histogram_day * self.days + self.profile + self.remainder


@dataclass(frozen=True)
class PlusPlan:
    """Everything fixed before day 1 (public): split, σ̄ shape, weights, histogram noise."""

    campaign: str
    days: int
    budget: PlusBudget
    config: PlusSettings
    allotments: tuple[Fraction, ...]  # AdsBPC's per-day shares of ρ1 (shape of σ̄)
    sigma_bar: tuple[float, ...]  # Σ_i 1/(2σ̄_i²) ≤ ρ1
    day_weights: tuple[float, ...]  # w_i = g_i/ρ1, Σ = 1: a day's share of a flat profile
    variance_weights: tuple[float, ...]  # a_i
    bias_weights: tuple[float, ...]  # α_i
    sigma_histogram: float
    sigma_profile: float | None
    filter_cap: float
    queries: np.ndarray = field(repr=False)
    adjacency: str = "add_remove"
    factor: int = 1
    # A plan registered before strategies existed has none of the three below: it reads back
    # as the diagonal strategy (C = I, κ = 0), exactly what it ran with.
    strategy_kind: str = "diagonal"
    strategy: np.ndarray | None = field(default=None, repr=False)  # C; None = the identity
    cross_weight: float = 0.0  # κ (privacy/strategy.py): 0 for the diagonal strategy
    # A plan registered before issue 27 has none of the three below: it reads back with the
    # quantile rule for s, exactly what it ran with.
    scale_rule: str = "quantile"
    total_weight: float = 0.0  # λ of the objective rule
    scale_weights: tuple[float, ...] | None = None  # w_q = γ_q² (wsum); None: the worst query
    # the residual workload the cells are measured by, whose Gram is the norm the filter charges;
    # None (every plan registered before, and one count per publisher): cells one by one
    marginals: MarginalWeights | None = None
    pace: float | None = None  # β; None (every plan registered before it existed): unpaced
    # ε0·Λ: the most days 1..m's noise unit can be (None, every plan registered before: ψ0·r_i)
    early_cap: float | None = None
    # the daily remainder (None: not released, as for every plan registered before it): its cap
    # E — one user's most in X_t — and the σ_R of its Gaussian, E²/(2σ_R²) ≤ ρ_R/n
    remainder_cap: float | None = None
    remainder_sigma: float | None = None
    # s0 in conversions (None, every plan registered before it was recorded: the configured
    # scale_prior, or ψ0·Λ as then): :attr:`prior`
    scale_prior: float | None = None

    @property
    def prior(self) -> float:
        """s0: the profile scale kept where the noisy profile cannot rule it out."""
        if self.scale_prior is not None:
            return self.scale_prior
        cfg = self.config
        return cfg.scale_prior if cfg.scale_prior is not None else cfg.prior_scale * cfg.cap

    def early_unit(self, bound: float | np.ndarray) -> float | np.ndarray:
        """Days 1..m's noise unit for the bound r_i (σ_i = σ̄_i·unit): ψ0·r_i, at most ε0·Λ
        when the plan caps it. Public: r_i is a DP output, ψ0 and ε0 are the plan's."""
        unit = self.config.prior_scale * bound
        return unit if self.early_cap is None else np.minimum(unit, self.early_cap)

    def day_cap(self, day: int) -> float:
        """The filter's cap on day ``day`` (1-based): ``filter_cap``·min(1, W_day + β), W_day
        = Σ_{t≤day} w_t (``day_weights``: the share of ρ1 a flat profile's day t commits,
        its row's cost and, under a correlated strategy, the later rows that carry it; W_n =
        1, taken exactly); ``filter_cap`` itself when the plan is not paced. Public and fixed
        before day 1, never above ``filter_cap``: each user's loss stays ≤ ρ1."""
        if self.pace is None or day >= self.days:
            return self.filter_cap
        share = math.fsum(self.day_weights[:day]) + self.pace
        return self.filter_cap * min(1.0, share)

    @property
    def largest_bound(self) -> float:
        """The largest daily bound r_i the plan can choose: Λ."""
        return float(self.config.cap)

    @property
    def query_ends(self) -> np.ndarray:
        return query_ends(self.queries)

    @property
    def matrix(self) -> np.ndarray:
        """The strategy C (n × n, lower-triangular): the identity for the diagonal strategy."""
        return np.eye(self.days) if self.strategy is None else np.asarray(self.strategy)

    @property
    def correlated(self) -> bool:
        """True when a day's row carries earlier days (C has entries below the diagonal)."""
        return self.strategy is not None and bool(np.any(np.tril(self.strategy, -1) != 0))

    @property
    def total(self) -> Rho:
        """Everything the stream can charge: ρ1 + n·ρ_h + ρ_p."""
        return self.budget.total

    @property
    def profile_day(self) -> int | None:
        """The day whose bound choice reads (and pays for) the profile histogram: m + 1."""
        return self.config.profile_days + 1 if self.config.profile_days > 0 else None

    def needs_profile(self, day: int) -> bool:
        return day == self.profile_day

    def bound_charges(self, day: int) -> dict[str, Rho]:
        """What the bound phase of ``day`` charges (the Gaussian part comes with the choice)."""
        charges = {"histogram": self.budget.histogram_day}
        if self.needs_profile(day):
            charges["profile"] = self.budget.profile
        return charges

    def to_json(self) -> dict:
        cfg = self.config
        return {
            "mechanism": "adsbpc_plus",
            "rho": float(self.budget.rho),
            "rho1": float(self.budget.rho1),
            "rho_histogram_per_day": float(self.budget.histogram_day),
            "rho_profile": float(self.budget.profile),
            "adjacency": self.adjacency,
            "sigma_bar": list(self.sigma_bar),
            "sigma_histogram": self.sigma_histogram,
            "sigma_profile": self.sigma_profile,
            "profile_days": cfg.profile_days,
            "quantile": cfg.quantile,
            "prior_scale": cfg.prior_scale,
            "scale_prior": self.prior,
            "scale_z": SCALE_Z,
            "cap": cfg.cap,
            "scale_rule": self.scale_rule,
            "total_weight": self.total_weight,
            "strategy": self.strategy_kind,
            "band": bandwidth(self.matrix),
            "cross_weight": self.cross_weight,
            "pace": self.pace,
            "early_cap": self.early_cap,
            "rho_remainder": float(self.budget.remainder),
            "remainder_cap": self.remainder_cap,
            "remainder_sigma": self.remainder_sigma,
            "epsilon_at_delta": epsilon_at_deltas(float(self.budget.total)),
        }


def check_sigma_range(cfg: PlusSettings, sigma_bar: tuple[float, ...]) -> None:
    """Every σ_i the plan can choose — σ̄_i·min(ψ0·r, ε0·Λ) (r ∈ [1, Λ]) before the profile,
    σ̄_i·min(s, r) after, s ≥ the lowest profile edge — must be a positive finite float:
    refused at plan time, before anything is reserved, if the budget makes it underflow or
    overflow."""
    early = cfg.cap if cfg.early_scale is None else cfg.early_scale * cfg.cap
    lowest = min(cfg.prior_scale, profile_edge(cfg.cap, 0), 1.0, early)
    for day, unit in enumerate(sigma_bar, start=1):
        if not (unit * lowest > 0 and math.isfinite(unit * cfg.cap)):
            raise ConfigError(
                f"privacy.rho: day {day}'s noise σ̄·r is not a positive finite number for every "
                f"bound in [1, {cfg.cap}] (σ̄ = {unit:g}); choose a rho that gives finite noise"
            )


def profile_factors(plan: PlusPlan) -> tuple[float, ...]:
    """φ_i = w_i/W_m for days 1..m: T_u = Σ_i φ_i ‖clip_{r_i}(c_{u,i})‖₂², a weighted mean of
    the user's squared daily contribution (≤ Λ²), read as the profile of the whole campaign."""
    weights = plan.day_weights[: plan.config.profile_days]
    total = sum(weights)
    return tuple(w / total for w in weights)


def profile_cross(plan: PlusPlan) -> float:
    """The factor of a user's cross-day term in their profile, κ/(m(m − 1)) (0 without one).

    A correlated strategy charges a user Σ_jk X̃_jk ⟨c_j, c_k⟩: days that share a publisher
    (or cell) cost more than days that do not. Read as exchangeable days, days 1..m estimate
    the mean of ⟨c_j, c_k⟩ over j ≠ k by O_u = (‖Σ_{j≤m} c_j‖² − Σ_{j≤m} ‖c_j‖²)/(m(m − 1)), and
    the whole campaign costs ρ1·(D_u + κ·O_u) at unit scale, D_u the weighted mean of
    :func:`profile_factors`. So T_u = D_u + κ·O_u; this returns κ/(m(m − 1)), the factor of
    ‖Σ_j c_j‖² − Σ_j ‖c_j‖² (with m < 2 there is no pair of days to read: 0)."""
    m = plan.config.profile_days
    if plan.cross_weight == 0.0 or m < 2:
        return 0.0
    return plan.cross_weight / (m * (m - 1))


def strategy_row(plan: PlusPlan, day: int) -> StrategyRow | None:
    """Row ``day`` of a correlated strategy as the warehouse takes it; None for the diagonal
    strategy (the day's filtered vector is its row)."""
    if not plan.correlated:
        return None
    c = plan.matrix[day - 1]
    return StrategyRow(float(c[day - 1]), tuple(float(v) for v in c[: day - 1]))


def profile_top(plan: PlusPlan) -> float:
    """The top of the profile's public range in conversions, Λ·√(1 + κ): the most a user at the
    cap every day on one publisher can show (Λ for the diagonal strategy)."""
    cap = plan.config.cap
    return float(cap) if plan.cross_weight == 0.0 else cap * math.sqrt(1.0 + plan.cross_weight)

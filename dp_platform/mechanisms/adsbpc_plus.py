"""AdsBPC+: AdsBPC with individual privacy accounting and cheap, histogram-based bounds.

Privacy unit: one user (all their conversions). Adjacency: add/remove one user only (the config
refuses ``replace``). Budget (zCDP, exact): ρ = ρ1 + n·ρ_h + ρ_p, fixed before day 1.

- **Daily noisy histogram** (every day, ρ_h = histogram_share·ρ/n): the day's per-user counts,
  capped at Λ, one bin per user, L2 sensitivity 1 → N(0, σ_h²) per bin costs 1/(2σ_h²) ≤ ρ_h
  (:mod:`dp_platform.privacy.noisy_histogram`).
- **Profile histogram** (once, before day m+1, ρ_p = profile_share·ρ): per user
  T_u = Σ_{i≤m} (w_i/W_m)·‖clip_{r_i}(c_{u,i})‖₂² (a weighted mean of their squared daily
  contribution, ≤ Λ²) binned on public log edges Λ²·:data:`PROFILE_EDGES`; one bin per user →
  1/(2σ_p²) ≤ ρ_p. s² is the profile of a user the filter must not cut: an upper confidence
  bound on its q-quantile (threshold (1 − q)·K̃, K̃ the noisy number of users; z =
  :data:`SCALE_Z` standard deviations of the noisy excess), lowered to the public prior s0
  (``scale_prior``, default ψ0·Λ) when the confidence interval does not exclude s0 — so a tail
  too small for the noise to resolve gives the planned s0, not a random one.
- **Gaussian release with an individual filter** (every day, ρ1 per user in total): day i adds
  N(0, σ_i² I) with σ_i = σ̄_i·ψ0·r_i on days ≤ m (ψ0 a public prior) and σ̄_i·min(s, r_i)
  after. σ̄ is AdsBPC's workload shape at ρ1 (Σ_i 1/(2σ̄_i²) ≤ ρ1, weights w_i = 1/(2σ̄_i²ρ1)),
  so a user with Σ_i w_i‖c̄_{u,i}‖² ≤ s² spends ≤ ρ1 and is never cut; heavier users are cut in
  conversion order once their own spend Σ ‖c̄_{u,i}‖₂²/(2σ_i²) would pass ρ1
  (:mod:`dp_platform.privacy.filter`). r_i and σ_i depend only on earlier DP outputs (this
  day's noisy histogram included) and the config, never on the data directly.

- **Noise strategy** (``strategy``, :mod:`dp_platform.privacy.strategy`; default ``auto``: the
  one with the lower planned error for the workload). Day i releases the row
  y_i = Σ_{j≤i} C_ij x̄_j + N(0, σ_i² I) of a public lower-triangular C ≥ 0 and publishes the
  decoded x̂_i = (C⁻¹y)_i (post-processing). The filter charges user u the squared norm of their
  whole row, ‖α_{u,i}(Σ_{j<i} C_ij c̄_{u,j} + C_ii c̄_{u,i})‖²/(2σ_i²); when their earlier days
  alone pass their remaining budget the row is scaled to it (α < 1) and every later row of
  theirs is 0. The row's ℓ2 sensitivity (declared to the sampler) and the ledger's worst case
  are Δ_i = Σ_{j≤i} C_ij r_j. ``diagonal`` (C = I) is the mechanism before strategies: Δ_i = r_i
  and x̂_i = y_i; a plan registered before strategies reads back as it.

Cells (docs/algorithm.md#cells): with a breakdown or the value measure the filter's vector is
the cell vector (each conversion of L2 norm ≤ 1); each user is charged ‖c̄_u‖₂²/(2σ_i²) over
the cells they filled, and the profile reads the same vectors (tests/test_cells.py: removing a
user changes the release by a vector whose squared norm is exactly their recorded spend ×2σ²).

The day's bound r_i ∈ [1, Λ] minimises α_i·E[B(r)²]/k² + a_i·σ_i(r)²: B(r) the conversions the
cap r cuts, estimated from the mean of the last ``pool_days`` noisy histograms, with its noise
variance added to B̃² (so an unreadable tail is treated as a risk, not as empty); k the
publishers; a_i = Σ_j γ_j² Q_ji² the workload's variance weight of day i and α_i = Σ_j γ_j²
|Q_ji|·L_j its bias weight (bias adds up coherently over a query's L_j days). Once s is known,
σ_i no longer grows with r_i above s, so r_i rises to where it stops cutting.

Ledger charges: ρ_h every day, ρ_p on day m+1, and as the Gaussian part the rise of
min(ρ1, Σ_{t≤i} Δ_t²/(2σ_t²)) — the most any single user can have lost so far — with whatever
is left of ρ1 on day n, so a finished campaign is charged exactly ρ and a stopped one never less
than what it may have cost.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import date, timedelta
from fractions import Fraction
from pathlib import Path
from statistics import NormalDist
from typing import TYPE_CHECKING, ClassVar, Literal

import numpy as np
from pydantic import Field, model_validator

from dp_platform.config import (
    MAX_BOUND_CAP,
    SHARE_FLOOR,
    CampaignConfig,
    ConfigError,
    MechanismSettings,
)
from dp_platform.mechanisms.adsbpc import (
    clipped_vector,
    gaussian_allotments,
)
from dp_platform.mechanisms.base import BoundInputs, Chain, Measurement
from dp_platform.privacy.accounting import (
    Rho,
    epsilon_at_deltas,
    gaussian_rho,
    gaussian_sigma,
)
from dp_platform.privacy.allotment import Allotment, float_above
from dp_platform.privacy.filter import filter_cap, worst_case_charge
from dp_platform.privacy.noise import SLACK, AllotmentExceeded, NoiseSource, resolve
from dp_platform.privacy.noisy_histogram import (
    histogram_sigma,
    noisy_histogram,
    tail_counts,
)
from dp_platform.privacy.quantile import cap_histogram
from dp_platform.privacy.strategy import (
    column_weights,
    cross_weight,
    decode_day,
    decoded_std,
    planned_error,
    sqrt_matrix,
    worst_row_norm,
)
from dp_platform.warehouse.base import ProfileGrid, StrategyRow
from dp_platform.workload import (
    answer_queries,
    campaign_scales,
    query_ends,
    query_weights,
    workload_matrix,
)

if TYPE_CHECKING:
    from dp_platform.warehouse.base import WarehouseEngine

__all__ = [
    "PROFILE_EDGES",
    "PROFILE_GRID",
    "SCALE_ALPHA",
    "SCALE_Z",
    "PlusBudget",
    "PlusChoice",
    "PlusPlan",
    "PlusRelease",
    "PlusState",
    "choose_bound",
    "decide",
    "declare",
    "estimate_scale",
    "make_plan",
    "measure",
    "profile_bins",
    "profile_factors",
    "run_stream",
    "select_bound",
    "step",
]


class PlusSettings(MechanismSettings):
    """AdsBPC+ (``mechanism: {kind: adsbpc_plus, …}``): individual filter, cheap bounds.

    Shares of ρ: ``histogram`` for the n daily noisy count histograms, ``profile`` for the one
    noisy profile histogram after ``profile_days``; the rest (ρ1) is each user's filter budget.
    """

    kind: Literal["adsbpc_plus"]  # required, so a dump that leaves out defaults still names it
    cell_norm: ClassVar[Literal[1, 2] | None] = 2  # Gaussian noise: ℓ2 sensitivity
    histogram_share: float = Field(default=0.03, ge=SHARE_FLOOR, lt=1)
    profile_share: float = Field(default=0.02, ge=0, lt=1)
    profile_days: int = Field(default=7, ge=0, description="m: days the profile is read from")
    quantile: float = Field(default=0.99, gt=0, lt=1, description="q of the per-user profile")
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
            "(default ψ0·Λ; set Λ to fall back on cutting nobody)"
        ),
    )
    strategy: Literal["auto", "diagonal", "sqrt"] = Field(
        default="auto",
        description=(
            "noise strategy C (rows C·x + N(0, σ²)): diagonal = independent noise per day, "
            "sqrt = the square-root factorization of prefix sums (correlated noise); auto = "
            "the one with the lower planned error for the workload"
        ),
    )

    @property
    def profile_prior(self) -> float:
        """s0 in conversions: the configured prior, or ψ0·Λ (the scale days 1..m plan for)."""
        return self.scale_prior if self.scale_prior is not None else self.prior_scale * self.cap

    @model_validator(mode="after")
    def _shares(self) -> PlusSettings:
        if self.scale_prior is not None and self.scale_prior > self.cap:
            raise ValueError(f"scale_prior must be <= cap ({self.cap})")
        if self.histogram_share + self.profile_share >= 1:
            raise ValueError("histogram_share + profile_share must be < 1 (rho1 needs a share)")
        if 0 < self.profile_share < SHARE_FLOOR:
            raise ValueError(f"profile_share is 0 or at least {SHARE_FLOOR:g}")
        if (self.profile_days == 0) != (self.profile_share == 0):
            raise ValueError("profile_share must be > 0 exactly when profile_days > 0")
        return self

    def check(self, campaign: CampaignConfig) -> None:
        super().check(campaign)
        if campaign.privacy.adjacency == "replace":
            raise ValueError(
                "privacy.adjacency: adsbpc_plus supports add_remove only (its individual filter "
                "bounds each user's own loss; under replace a pair of users can lose up to 4x "
                "rho1); use add_remove or mechanism adsbpc"
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
BOUND_STEP = 0.01  # grid of candidate r_i
SCALE_ALPHA = NormalDist().cdf(-2.0)  # ≈ 2.3 %: allowed chance that s undershoots (2σ level)
SCALE_Z = NormalDist().inv_cdf(1.0 - SCALE_ALPHA / PROFILE_BINS)  # Bonferroni, 48 bins: ≈ 3.31


def profile_bins(values: np.ndarray, cap: float) -> np.ndarray:
    """Bin of profiles T ∈ (0, Λ²] on the public edges Λ²·PROFILE_EDGES (same rule as SQL)."""
    low = PROFILE_LOW * cap * cap
    t = np.maximum(np.asarray(values, dtype=np.float64), low)
    step = math.log(1.0 / PROFILE_LOW) / PROFILE_BINS
    return np.clip(np.floor(np.log(t / low) / step), 0, PROFILE_BINS - 1).astype(np.int64)


@dataclass(frozen=True)
class PlusBudget:
    """ρ = ρ1 + n·ρ_h + ρ_p, exact; ``quantile_days``/``rho2``/``rho3`` do not exist here."""

    rho: Rho
    rho1: Rho
    histogram_day: Rho
    profile: Rho
    days: int

    @classmethod
    def from_config(cls, campaign: CampaignConfig) -> PlusBudget:
        cfg = campaign.mechanism
        total = Rho.of(campaign.privacy.rho)
        hist = total * Fraction(repr(cfg.histogram_share)) / campaign.days
        profile = total * Fraction(repr(cfg.profile_share))
        rho1 = total - hist * campaign.days - profile
        return cls(total, rho1, hist, profile, campaign.days)

    @property
    def total(self) -> Rho:
        return self.rho1 + self.histogram_day * self.days + self.profile


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
            "scale_prior": cfg.profile_prior,
            "scale_z": SCALE_Z,
            "cap": cfg.cap,
            "strategy": self.strategy_kind,
            "cross_weight": self.cross_weight,
            "epsilon_at_delta": epsilon_at_deltas(float(self.budget.total)),
        }


def _workload_weights(
    campaign: CampaignConfig, matrix: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(a_i, α_i): variance and coherent-bias weight of each day for the workload."""
    if campaign.objective.kind == "wsum":
        gamma2 = query_weights(campaign.objective, matrix.shape[0])
    else:
        gamma2 = np.ones(matrix.shape[0])
    lengths = np.abs(matrix).sum(axis=1)
    variance = (gamma2[:, None] * matrix**2).sum(axis=0)
    bias = (gamma2[:, None] * np.abs(matrix) * lengths[:, None]).sum(axis=0)
    return variance, bias


def make_plan(campaign: CampaignConfig, base_dir: str | Path | None = None) -> PlusPlan:
    """Plan an adsbpc_plus campaign: data-independent, shown and audited before day 1."""
    if not isinstance(campaign.mechanism, PlusSettings):
        raise ConfigError(f"campaign {campaign.name}: mechanism is {campaign.mechanism.kind}")
    if campaign.privacy.adjacency != "add_remove":  # the config refuses it too
        raise ConfigError("adsbpc_plus supports add_remove adjacency only")
    budget = PlusBudget.from_config(campaign)
    matrix = workload_matrix(campaign, base_dir)
    scales = campaign_scales(campaign.objective, matrix, float(budget.rho1))
    allotments = gaussian_allotments(budget.rho1.value, scales.variances)
    sigma_bar = tuple(gaussian_sigma(1.0, g) for g in allotments)
    variance, bias = _workload_weights(campaign, matrix)
    cfg = campaign.mechanism
    _check_sigma_range(cfg, sigma_bar)
    plan = PlusPlan(
        campaign=campaign.name,
        days=campaign.days,
        budget=budget,
        config=cfg,
        allotments=allotments,
        sigma_bar=sigma_bar,
        day_weights=tuple(float(g / budget.rho1.value) for g in allotments),
        variance_weights=tuple(float(v) for v in variance),
        bias_weights=tuple(float(b) for b in bias),
        sigma_histogram=histogram_sigma(budget.histogram_day.value),
        sigma_profile=histogram_sigma(budget.profile.value) if cfg.profile_days else None,
        filter_cap=filter_cap(budget.rho1.value),
        queries=matrix,
    )
    kind = cfg.strategy
    if kind == "auto":
        kind = _auto_strategy(campaign, plan)
    return plan if kind == "diagonal" else _with_sqrt_strategy(campaign, plan)


def _objective(campaign: CampaignConfig, plan: PlusPlan, matrix: np.ndarray, sigma: tuple) -> float:
    objective = campaign.objective
    weights = query_weights(objective, plan.queries.shape[0]) if objective.kind == "wsum" else None
    kind = "maxvar" if objective.kind == "maxvar" else "wsum"
    return planned_error(plan.queries, matrix, np.asarray(sigma), objective=kind, weights=weights)


def _auto_strategy(campaign: CampaignConfig, plan: PlusPlan) -> str:
    """``sqrt`` when it plans a lower error than ``diagonal`` for the campaign's workload and
    objective (wsum or maxvar) at the same reference user (privacy/strategy.py): public, fixed
    before day 1, the same rule for every campaign. ``min_budget`` keeps the diagonal."""
    if campaign.objective.kind == "min_budget":
        return "diagonal"
    diagonal = _objective(campaign, plan, np.eye(plan.days), plan.sigma_bar)
    sqrt = _with_sqrt_strategy(campaign, plan)
    return (
        "sqrt" if _objective(campaign, sqrt, sqrt.matrix, sqrt.sigma_bar) < diagonal else "diagonal"
    )


def _with_sqrt_strategy(campaign: CampaignConfig, plan: PlusPlan) -> PlusPlan:
    """The plan with the square-root strategy: one σ̄ for every row, Σ_t ‖C_t‖²/(2σ̄²) ≤ ρ1
    (the normalisation of privacy/strategy.py), row shares g_t ∝ ‖C_t‖² summing to ρ1 exactly,
    w_j and κ from X̃, a_t = Σ_q γ_q² (QC⁻¹)_qt²."""
    rho1 = plan.budget.rho1.value
    c = sqrt_matrix(plan.days)
    rows = [Fraction(float(v)) for v in (c**2).sum(axis=1)]
    total = sum(rows, Fraction(0))
    allotments = tuple(rho1 * r / total for r in rows)
    sigma = gaussian_sigma(math.sqrt(float(total)), rho1)
    sigma_bar = (sigma,) * plan.days
    _check_sigma_range(plan.config, sigma_bar)
    objective = campaign.objective
    gamma2 = (
        query_weights(objective, plan.queries.shape[0])
        if objective.kind == "wsum"
        else np.ones(plan.queries.shape[0])
    )
    decoder = np.linalg.solve(c.T, plan.queries.T).T  # Q C⁻¹
    variance = (gamma2[:, None] * decoder**2).sum(axis=0)
    return replace(
        plan,
        allotments=allotments,
        sigma_bar=sigma_bar,
        day_weights=tuple(float(w) for w in column_weights(c, np.asarray(sigma_bar))),
        variance_weights=tuple(float(v) for v in variance),
        strategy_kind="sqrt",
        strategy=c,
        cross_weight=cross_weight(c, np.asarray(sigma_bar)),
    )


def _check_sigma_range(cfg: PlusSettings, sigma_bar: tuple[float, ...]) -> None:
    """Every σ_i the plan can choose — σ̄_i·ψ0·r (r ∈ [1, Λ]) before the profile, σ̄_i·min(s, r)
    after, s ≥ the lowest profile edge — must be a positive finite float: refused at plan time,
    before anything is reserved, if the budget makes it underflow or overflow."""
    lowest = min(cfg.prior_scale, _edge(cfg.cap, 0), 1.0)
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


@dataclass(frozen=True)
class PlusState:
    """Public-parameter chain after ``day``. Secret by policy (ledger only), like AdsBPC's."""

    day: int = 0
    bounds: tuple[float, ...] = ()
    scales: tuple[float, ...] = ()
    histograms: tuple[tuple[float, ...], ...] = ()  # noisy daily histograms (DP outputs)
    scale_estimate: float | None = None
    gaussian_charged: Fraction = Fraction(0)
    sigmas: tuple[float, ...] = ()  # rows' σ_1..σ_day (correlated strategies only)


@dataclass(frozen=True)
class PlusChoice:
    """Day i's public parameters (r_i, σ_i, ψ_i), what choosing them cost, its Gaussian charge."""

    day: int
    bound: float
    sigma: float
    scale: float
    charges: dict[str, Rho]
    gaussian: Rho
    method: str = "histogram"
    # correlated strategies only (None otherwise: a diagonal day's row is its release)
    row_bound: float | None = None  # the row's L2 sensitivity Σ_{j≤i} C_ij r_j
    release_sigma: float | None = None  # σ of each entry of the decoded x̂_i


def estimate_scale(
    noisy_profile: np.ndarray,
    quantile: float,
    cap: float,
    *,
    sigma: float,
    prior: float,
    z: float = SCALE_Z,
) -> float:
    """s: the profile scale the filter must not cut — an upper confidence bound on the
    profile's q-quantile, or the public prior s0 where the noisy profile cannot rule s0 out.

    With t_j the number of bins above j and B = :data:`PROFILE_BINS`, the excess
    E_j = N(>j) − (1 − q)·K = q·N(>j) − (1 − q)·N(≤j) is a signed sum of the bins, so its noisy
    value Ẽ_j (from the noisy tail and the noisy user count K̃ = Σ h̃) has the exact standard
    deviation sd_j = σ·√(q²·t_j + (1 − q)²·(B − t_j)) — K̃'s noise is counted once, jointly
    with the tail's, not bounded a second time.

    - Upper bound U: √ of the upper edge of the first j with Ẽ_j + z·sd_j ≤ 0 (z = 0 is the
      plain rule N(>j) ≤ (1 − q)·K̃). Let j* be the first bin whose *true* excess is ≤ 0; E_j
      falls with j, so every j < j* passes only if its noise is below −z·sd_j, probability
      Φ(−z); over at most B bins P(U below j*'s edge) ≤ B·Φ(−z) = :data:`SCALE_ALPHA` ≈ 2.3 %
      at the default z = :data:`SCALE_Z` (Bonferroni: the first crossing of B tests). No
      qualifying bin: U = Λ; K̃ ≤ 0 (no signal at all): s = s0.
    - Lower bound L: √ of the lower edge of the first j with Ẽ_j − z·sd_j ≤ 0; every bin below
      it has, at confidence, more than (1 − q) of the users above it.

    s = min(U, s0), except s = U when L > s0 (the profile shows, at confidence, that the
    quantile is above the prior); s0 = Λ gives U itself. So s ≠ U only when s0 < U and
    the profile cannot tell s0 from the quantile — with many users L and U are one bin apart
    and s = U whenever s0 ≥ U. Whenever s0 is at or above the true quantile, s is too, except
    with probability ≤ SCALE_ALPHA (as for U). A prior below the quantile that the profile
    cannot resolve cuts the users above s0: bias (never privacy), the cost of trusting s0.

    Privacy: reads only the noisy histogram (a DP output) and public values (q, Λ, z, s0 and
    σ = the plan's σ_p): post-processing, free; the ledger charges ρ_p exactly as before.
    """
    h = np.asarray(noisy_profile, dtype=np.float64)
    if h.shape != (PROFILE_BINS,):
        raise ValueError(f"the profile histogram has {PROFILE_BINS} bins")
    if not sigma > 0 or not z >= 0:
        raise ValueError("sigma must be > 0 and z >= 0")
    if not 0 < prior <= cap:
        raise ValueError(f"prior must be in (0, {cap}]")
    active = float(h.sum())
    if not active > 0:
        return float(prior)
    above = np.arange(PROFILE_BINS - 1, -1, -1, dtype=np.float64)  # t_j: bins above bin j
    sd = sigma * np.sqrt(quantile**2 * above + (1.0 - quantile) ** 2 * (PROFILE_BINS - above))
    excess = tail_counts(h) - (1.0 - quantile) * active
    upper_bins = np.flatnonzero(excess + z * sd <= 0.0)
    upper = float(cap) if upper_bins.size == 0 else _edge(cap, upper_bins[0] + 1)
    if upper <= prior:
        return upper
    lower_bins = np.flatnonzero(excess - z * sd <= 0.0)
    lower = float(cap) if lower_bins.size == 0 else _edge(cap, lower_bins[0])
    return upper if lower > prior else float(prior)


def _edge(cap: float, index: int) -> float:
    """√ of the public profile edge ``index`` in conversions: Λ·√PROFILE_EDGES[index]."""
    return float(cap * math.sqrt(PROFILE_EDGES[index]))


def day_sigma(plan: PlusPlan, day: int, bound: float, scale: float | None) -> float:
    """σ_i = σ̄_i·ψ0·r_i before the profile estimate, σ̄_i·min(s, r_i) after (s absolute).

    With a correlated strategy a row carries earlier days too, so its norm is not capped by
    r_i: after the profile σ_i = σ̄_i·s."""
    sigma_bar = plan.sigma_bar[day - 1]
    if scale is None:
        return sigma_bar * plan.config.prior_scale * bound
    return sigma_bar * (scale if plan.correlated else min(scale, bound))


def select_bound(
    plan: PlusPlan,
    day: int,
    pooled: np.ndarray,
    pooled_sigma: float,
    scale: float | None,
    k: int,
) -> float:
    """r_i on a 0.01 grid in [1, Λ] minimising α_i·E[B(r)²]/k² + a_i·σ_i(r)² (module doc).

    E[B(r)²] ≈ max(B̃(r), 0)² + Var B̃(r): the noise of the pooled histogram counts as
    uncertainty about the cut, so where the histogram cannot see the tail, r grows (cautious).
    """
    cap = plan.config.cap
    grid = np.arange(round(1 / BOUND_STEP), round(cap / BOUND_STEP) + 1) * BOUND_STEP
    counts = np.arange(1, cap + 1, dtype=np.float64)
    excess = np.maximum(counts[None, :] - grid[:, None], 0.0)
    cut = excess @ np.asarray(pooled, dtype=np.float64)
    cut_sq = np.maximum(cut, 0.0) ** 2 + pooled_sigma**2 * (excess**2).sum(axis=1)
    sigma_bar = plan.sigma_bar[day - 1]
    if scale is None:
        sigmas = sigma_bar * plan.config.prior_scale * grid
    elif plan.correlated:
        sigmas = np.full_like(grid, sigma_bar * scale)
    else:
        sigmas = sigma_bar * np.minimum(scale, grid)
    i = day - 1
    objective = (
        plan.bias_weights[i] * cut_sq / max(k, 1) ** 2 + plan.variance_weights[i] * sigmas**2
    )
    return float(grid[int(np.argmin(objective))])


def choose_bound(
    plan: PlusPlan,
    state: PlusState,
    histogram: np.ndarray,
    *,
    publishers: int,
    profile: np.ndarray | None = None,
    noise: NoiseSource | None = None,
) -> tuple[PlusChoice, PlusState]:
    """Day ``state.day + 1``'s (r_i, σ_i): noisy histogram (+ the profile on day m+1), then r_i.

    ``histogram[c]`` = users with exactly c attributed conversions that day (uncapped, index 0
    ignored); ``profile`` = users per :data:`PROFILE_EDGES` bin of T_u (needed on day m+1 only;
    compute it with :func:`profile_factors`). Costs ρ_h (+ ρ_p on day m+1); the Gaussian charge
    for :func:`measure` is fixed here, from public values.
    """
    source = resolve(noise)
    day = state.day + 1
    if day > plan.days:
        raise ValueError(f"campaign {plan.campaign} has {plan.days} days; day {day} is past it")
    cfg = plan.config
    capped = cap_histogram(histogram, cfg.cap)[1:]
    noisy = noisy_histogram(
        capped, plan.sigma_histogram, rho=plan.budget.histogram_day, noise=source
    )
    estimate = state.scale_estimate
    if plan.needs_profile(day):
        if profile is None:
            raise ValueError(f"day {day} needs the profile histogram of days 1..{day - 1}")
        if plan.sigma_profile is None:
            raise ValueError(f"day {day} needs the profile, and the plan has no profile σ")
        noisy_profile = noisy_histogram(
            profile, plan.sigma_profile, rho=plan.budget.profile, noise=source
        )
        estimate = estimate_scale(
            noisy_profile,
            cfg.quantile,
            profile_top(plan),
            sigma=plan.sigma_profile,
            prior=cfg.profile_prior,
        )
    elif profile is not None:
        raise ValueError(f"day {day} takes no profile histogram (only day {plan.profile_day})")
    return decide(plan, state, noisy, estimate, publishers=publishers)


def row_sensitivity(plan: PlusPlan, bounds: tuple[float, ...]) -> float:
    """The ℓ2 bound of one user's row on day t = len(bounds), what the day is charged at: r_t
    for the diagonal strategy (L1 ≤ r_t), Σ_{j≤t} C_tj r_j for a correlated one."""
    if not plan.correlated:
        return bounds[-1]
    return worst_row_norm(plan.matrix, np.asarray(bounds), len(bounds))


def decide(
    plan: PlusPlan,
    state: PlusState,
    noisy: np.ndarray,
    estimate: float | None,
    *,
    publishers: int,
    histogram_sigma: float | None = None,
) -> tuple[PlusChoice, PlusState]:
    """Day ``state.day + 1``'s (r_i, σ_i) and charges from the day's noisy capped histogram
    (bins 1..Λ) and the profile scale s (None before day m+1): post-processing of DP outputs
    and public values. ``histogram_sigma`` is the histograms' noise σ (the plan's σ_h; the
    non-private oracle of the evaluation passes 0 with exact histograms)."""
    day = state.day + 1
    cfg = plan.config
    sigma_h = plan.sigma_histogram if histogram_sigma is None else histogram_sigma
    histograms = (*state.histograms, tuple(float(v) for v in noisy))
    window = np.asarray(histograms[-cfg.pool_days :])
    pooled_sigma = sigma_h / math.sqrt(len(window))
    bound = select_bound(plan, day, window.mean(axis=0), pooled_sigma, estimate, publishers)
    sigma = day_sigma(plan, day, bound, estimate)
    scale = sigma / (plan.sigma_bar[day - 1] * bound)  # ψ_i = σ_i/(σ̄_i r_i)
    bounds = (*state.bounds, bound)
    row_bound, release_sigma, sigmas = None, None, state.sigmas
    sensitivity = row_sensitivity(plan, bounds)
    if plan.correlated:
        if len(sigmas) != day - 1:
            raise ValueError(f"day {day}: the chain holds {len(sigmas)} earlier rows' σ")
        sigmas = (*sigmas, sigma)
        row_bound = sensitivity
        release_sigma = decoded_std(plan.matrix, np.asarray(sigmas), np.eye(day)[day - 1])
    rho1 = plan.budget.rho1.value
    worst = gaussian_rho(sensitivity, sigma)
    if day == plan.days:
        gaussian = rho1 - state.gaussian_charged  # the rest of ρ1: totals are exact
    else:
        gaussian = worst_case_charge(state.gaussian_charged, worst, rho1)
    choice = PlusChoice(
        day,
        bound,
        sigma,
        scale,
        plan.bound_charges(day),
        Rho(gaussian),
        row_bound=row_bound,
        release_sigma=release_sigma,
    )
    new_state = PlusState(
        day=day,
        bounds=bounds,
        scales=(*state.scales, scale),
        histograms=histograms,
        scale_estimate=estimate,
        gaussian_charged=state.gaussian_charged + gaussian,
        sigmas=sigmas,
    )
    return choice, new_state


def _planned_rows(plan: PlusPlan, state: PlusState) -> tuple[np.ndarray, np.ndarray]:
    """Rows 1..t's ℓ2 sensitivity Δ_j = Σ_{k≤j} C_jk r_k and noise unit u_j (σ_j = σ̄_j·u_j)
    from the plan and the chain's DP outputs (bounds, profile scale s): u_j = ψ0·r_j before
    the profile, min(s, r_j) after, s with a correlated strategy (the plan's rule, restated
    apart from :func:`day_sigma`)."""
    bounds = np.asarray(state.bounds, dtype=np.float64)
    t = bounds.size
    deltas = np.tril(plan.matrix[:t, :t]) @ bounds
    s = state.scale_estimate
    after = np.arange(1, t + 1) >= (plan.profile_day or t + 1)
    if s is None:
        units = plan.config.prior_scale * bounds
    else:
        measured = np.full(t, s) if plan.correlated else np.minimum(s, bounds)
        units = np.where(after, measured, plan.config.prior_scale * bounds)
    return deltas, units


def declare(plan: PlusPlan, choice: PlusChoice, state: PlusState) -> Allotment:
    """Day t's Gaussian as the registered plan states it (privacy/allotment.py), from the plan
    and the stored chain after day t — bounds r_1..r_t and the profile scale s, DP outputs —
    never from the σ_t, Δ_t or charge :func:`decide` computed: ℓ2 sensitivity
    Δ_t = Σ_{j≤t} C_tj r_j (r_t for the diagonal strategy) and loss Δ_t²/(2(σ̄_t·u_t)²), the
    worst case any one user's row can cost (the filter charges each user their own row).

    Refuses (AllotmentExceeded, before any draw) a chain whose Gaussian charges through day t
    fall below min(ρ1, Σ_{j≤t} Δ_j²/(2(σ̄_j·u_j)²)), the most any one user can have lost: a
    sensitivity understated where the days were charged.
    """
    t = choice.day
    if state.day != t or state.bounds[-1:] != (choice.bound,):
        raise ValueError(f"day {t}'s declaration needs the chain's state after day {t}")
    deltas, units = _planned_rows(plan, state)
    sigmas = np.asarray(plan.sigma_bar[:t]) * units
    rho1 = plan.budget.rho1.value
    owed = min(float(rho1), float(np.sum(deltas**2 / (2.0 * sigmas**2))))
    if float(state.gaussian_charged) < owed * (1.0 - SLACK):
        raise AllotmentExceeded(
            f"AdsBPC+ day {t}: the ledger's Gaussian charges through this day are below the "
            "most the registered plan lets one user lose by then; nothing was drawn"
        )
    row = [Fraction(float(c)) for c in plan.matrix[t - 1, :t]]
    delta = float_above(sum((c * Fraction(r) for c, r in zip(row, state.bounds, strict=True))))
    sigma = Fraction(plan.sigma_bar[t - 1]) * Fraction(float(units[-1]))
    return Allotment(delta, Fraction(delta) ** 2 / (2 * sigma * sigma))


def measure(
    plan: PlusPlan,
    choice: PlusChoice,
    clipped: np.ndarray,
    *,
    allotment: Allotment,
    noise: NoiseSource | None = None,
    earlier: tuple[Measurement, ...] = (),
) -> Measurement:
    """Release row y_i = (C x̄)_i + N(0, σ_i² I); ``clipped`` must be the filter's row at
    (r_i, σ_i) — for the diagonal strategy the day's filtered vector x̄_i itself.

    Privacy unit one user, add/remove: a user's part of the row has ℓ2 ≤ Σ_{j≤i} C_ij r_j
    (r_i for the diagonal strategy: L1 ≤ r_i), and the filter charges them at most that squared
    over 2σ_i². ``allotment`` is :func:`declare`'s statement of both from the registered plan;
    the sampler refuses the draw if OpenDP's map of it at σ_i says more. With a correlated
    strategy the published values are the decoded x̂_i = (y_i − Σ_{j<i} C_ij x̂_j)/C_ii from
    ``earlier`` (days 1..i−1 as released): post-processing; ``sigma`` is then each entry's σ
    and ``row_sigma`` the row's σ_i.
    """
    vector = clipped_vector(clipped)
    if choice.day > plan.days or not choice.sigma > 0:
        raise ValueError("choice does not belong to this plan")
    release_sigma: float | None = None  # a correlated strategy's days are decoded
    if plan.correlated:  # refused before the draw: no noise is spent on a refused day
        if [m.day for m in earlier] != list(range(1, choice.day)):
            raise ValueError(
                f"day {choice.day} decodes from the releases of days 1..{choice.day - 1}"
            )
        if choice.release_sigma is None:
            raise ValueError(
                f"day {choice.day}: a correlated strategy's choice needs its release σ"
            )
        release_sigma = choice.release_sigma
    noisy = resolve(noise).add_gaussian(
        vector, choice.sigma, l2_sensitivity=allotment.sensitivity, rho=allotment.loss
    )
    if release_sigma is None:
        values = tuple(float(v) for v in noisy)
        return Measurement(
            choice.day, choice.bound, choice.sigma, values, {"gaussian": choice.gaussian}
        )
    decoded = decode_day(plan.matrix, noisy, [np.asarray(m.values) for m in earlier])
    return Measurement(
        choice.day,
        choice.bound,
        release_sigma,
        tuple(float(v) for v in decoded),
        {"gaussian": choice.gaussian},
        row_sigma=choice.sigma,
    )


@dataclass(frozen=True)
class PlusRelease:
    """One day's published output: DP values only (no true count, no user's spend)."""

    measurement: Measurement
    choice: PlusChoice
    answers: dict[int, tuple[float, ...]]

    @property
    def rho_charged(self) -> Rho:
        parts = {**self.choice.charges, **self.measurement.charges}
        return sum(parts.values(), Rho.zero())


ClipDay = Callable[[int, float, float], np.ndarray]
"""``clip(day, r_i, σ_i)`` → the day's filtered row (the per-publisher vector for the diagonal
strategy) and the spend update."""


def step(
    plan: PlusPlan,
    state: PlusState,
    released: tuple[Measurement, ...],
    histogram: np.ndarray,
    clip: ClipDay,
    profile: Callable[[tuple[float, ...]], np.ndarray] | None = None,
    *,
    publishers: int,
    noise: NoiseSource | None = None,
) -> tuple[PlusRelease, PlusState]:
    """Release day ``state.day + 1``: histogram(s) → r_i, σ_i → filter clip → noise → answers."""
    source = resolve(noise)
    day = state.day + 1
    prof = None
    if plan.needs_profile(day):
        if profile is None:
            raise ValueError(f"day {day} needs a profile source")
        prof = profile(profile_factors(plan))
    choice, new_state = choose_bound(
        plan, state, histogram, publishers=publishers, profile=prof, noise=source
    )
    clipped = np.asarray(clip(day, choice.bound, choice.sigma), dtype=np.float64)
    if clipped.size != publishers:
        raise ValueError(f"day {day}: {clipped.size} clipped values for {publishers} publishers")
    allotment = declare(plan, choice, new_state)
    measurement = measure(
        plan, choice, clipped, allotment=allotment, noise=source, earlier=released
    )
    answers = answer_queries(plan.queries, [*(m.values for m in released), measurement.values])
    return PlusRelease(measurement, choice, answers), new_state


def run_stream(
    plan: PlusPlan,
    histograms: list[np.ndarray],
    clip: ClipDay,
    profile: Callable[[tuple[float, ...]], np.ndarray] | None = None,
    *,
    publishers: int,
    noise: NoiseSource | None = None,
) -> tuple[list[PlusRelease], PlusState]:
    """All days in order (simulation and tests); ``clip`` applies the filter and keeps spends."""
    state = PlusState()
    released: tuple[Measurement, ...] = ()
    out = []
    for histogram in histograms:
        release, state = step(
            plan, state, released, histogram, clip, profile, publishers=publishers, noise=noise
        )
        released = (*released, release.measurement)
        out.append(release)
    return out, state


class PlusMechanism:
    """AdsBPC+ as a :class:`~dp_platform.mechanisms.base.StreamMechanism` (module doc)."""

    name = "adsbpc_plus"
    settings = PlusSettings
    plan_type = PlusPlan
    chain = Chain(PlusChoice, PlusState)
    carries_spend = True  # the filter's per-user spends carry from day to day

    def make_plan(self, campaign: CampaignConfig, base_dir: str | Path | None) -> PlusPlan:
        return make_plan(campaign, base_dir)

    def bound_charges(self, plan: PlusPlan, day: int) -> dict[str, Rho]:
        return plan.bound_charges(day)

    def bound_inputs(
        self,
        plan: PlusPlan,
        campaign: CampaignConfig,
        day: date,
        warehouse: WarehouseEngine,
        earlier_bounds: Callable[[], list[float]],
    ) -> BoundInputs:
        histogram = np.asarray(warehouse.day_histogram(campaign, day), dtype=np.int64)
        index = campaign.day_index(day)
        if not plan.needs_profile(index):
            return BoundInputs(histogram)
        # T_u over days 1..m at their (public) bounds: the profile histogram of day m+1
        earlier = [campaign.start + timedelta(days=i) for i in range(index - 1)]
        profile = warehouse.plus_profile_histogram(
            campaign,
            earlier,
            earlier_bounds(),
            list(profile_factors(plan)),
            profile_top(plan),
            grid=PROFILE_GRID,
            cross=profile_cross(plan),
        )
        return BoundInputs(histogram, np.asarray(profile))

    def choose_bound(
        self,
        plan: PlusPlan,
        state: PlusState,
        inputs: BoundInputs,
        *,
        publishers: int,
        noise: NoiseSource | None,
    ) -> tuple[PlusChoice, PlusState]:
        return choose_bound(
            plan,
            state,
            inputs.histogram,
            publishers=publishers,
            profile=inputs.profile,
            noise=noise,
        )

    def clip(
        self,
        plan: PlusPlan,
        choice: PlusChoice,
        warehouse: WarehouseEngine,
        campaign: CampaignConfig,
        day: date,
    ) -> np.ndarray:
        vector = warehouse.plus_clipped_vector(
            campaign,
            day,
            choice.bound,
            choice.sigma,
            plan.filter_cap,
            row=strategy_row(plan, choice.day),
        )
        return np.asarray(vector, dtype=np.float64)

    def release_charges(self, plan: PlusPlan, choice: PlusChoice) -> dict[str, Rho]:
        return {"gaussian": choice.gaussian}

    def declare(self, plan: PlusPlan, choice: PlusChoice, state: PlusState) -> Allotment:
        return declare(plan, choice, state)

    def measure(
        self,
        plan: PlusPlan,
        choice: PlusChoice,
        clipped: np.ndarray,
        *,
        allotment: Allotment,
        noise: NoiseSource | None,
        earlier: tuple[Measurement, ...] = (),
    ) -> Measurement:
        return measure(plan, choice, clipped, allotment=allotment, noise=noise, earlier=earlier)

    def summary(self, plan: PlusPlan) -> dict[str, object]:
        return plan.to_json()

    def describe(self, plan: PlusPlan) -> list[str]:
        data = plan.to_json()
        lines = [
            f"campaign {plan.campaign}: {plan.days} days, mechanism {self.name}, ρ "
            f"{data['rho']:.6g} (ρ1 {data['rho1']:.6g}, histograms "
            f"{data['rho_histogram_per_day']:.6g}/day, profile {data['rho_profile']:.6g})"
        ]
        if data["profile_days"]:
            lines.append(
                f"  profile after day {data['profile_days']}: q {data['quantile']:g}, scale prior "
                f"s0 {data['scale_prior']:g} (kept unless the noisy profile rules it out), "
                f"cap {data['cap']}"
            )
        if plan.correlated:
            lines += [
                f"  noise strategy {plan.strategy_kind}: day t releases Σ_j C_tj x_j + N(0, σ_t²)"
                " and publishes the decoded day",
                "    (noise correlated across days); each user is charged their whole row "
                f"(cross-day weight κ {plan.cross_weight:.3g})",
            ]
        else:
            lines.append("  noise strategy diagonal: independent noise per day")
        return lines


MECHANISM = PlusMechanism()

"""AdsBPC+: AdsBPC with individual privacy accounting and cheap, histogram-based bounds.

Privacy unit: one user (all their conversions). Adjacency: add/remove one user only (the config
refuses ``replace``). Budget (zCDP, exact): ρ = ρ1 + n·ρ_h + ρ_p + ρ_R, fixed before day 1.

- Daily noisy histogram (ρ_h a day): per-user counts capped at Λ, one bin per user, L2
  sensitivity 1, N(0, σ_h²) per bin costs 1/(2σ_h²) ≤ ρ_h.
- Profile histogram (once, on day m+1, ρ_p): one bin per user, 1/(2σ_p²) ≤ ρ_p.
- Gaussian release with an individual filter (ρ1 per user in total): day i's row has ℓ2
  sensitivity Δ_i = Σ_{j≤i} C_ij r_j (r_i for the diagonal strategy); the filter charges each
  user their own row's ‖·‖²/(2σ_i²) and cuts them before they pass ρ1. The ledger is charged
  the rise of min(ρ1, Σ_{t≤i} Δ_t²/(2σ_t²)), and the rest of ρ1 on day n.
- Remainder (optional, ρ_R/n a day): X_t = Σ_u min(c_ut − k_ut, E), what the clipping left
  out of each user's day capped at E; removing a user moves it by at most E (ℓ2 sensitivity
  E), N(0, σ_R²) with E²/(2σ_R²) ≤ ρ_R/n (adsbpc_plus_accounting.remainder_allotment).

The derivation (profile scale, noise strategies, cells, the bound's objective, the ledger's
charges) is in docs/algorithm.md#adsbpc-plus. The parts: the plan
(:mod:`~dp_platform.mechanisms.adsbpc_plus_plan`), the noise strategy
(:mod:`~dp_platform.mechanisms.adsbpc_plus_strategies`), the daily bound choice
(:mod:`~dp_platform.mechanisms.adsbpc_plus_bound`) and the declared, checked Gaussian release
(:mod:`~dp_platform.mechanisms.adsbpc_plus_accounting`); this module makes the plan, runs a day
and is the registry's :class:`PlusMechanism`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from dp_platform.cell_strategy import planned_marginals
from dp_platform.config import CampaignConfig
from dp_platform.errors import ConfigError
from dp_platform.mechanisms.adsbpc import gaussian_allotments
from dp_platform.mechanisms.adsbpc_plus_accounting import declare, measure, release_charges
from dp_platform.mechanisms.adsbpc_plus_bound import (
    PlusChoice,
    PlusState,
    choose_bound,
)
from dp_platform.mechanisms.adsbpc_plus_plan import (
    PROFILE_GRID,
    PlusBudget,
    PlusPlan,
    PlusSettings,
    check_sigma_range,
    profile_cross,
    profile_factors,
    profile_top,
    strategy_row,
)
from dp_platform.mechanisms.adsbpc_plus_strategies import auto_strategy, strategy_plan
from dp_platform.mechanisms.base import BoundInputs, Chain, Measurement
from dp_platform.privacy.accounting import Rho, gaussian_sigma
from dp_platform.privacy.allotment import Allotment
from dp_platform.privacy.filter import filter_cap
from dp_platform.privacy.noise import NoiseSource, resolve
from dp_platform.privacy.noisy_histogram import histogram_sigma
from dp_platform.workload import (
    answer_queries,
    campaign_scales,
    query_weights,
    workload_matrix,
)

if TYPE_CHECKING:
    from dp_platform.warehouse.base import WarehouseEngine

__all__ = ["MECHANISM", "PlusMechanism", "PlusRelease", "make_plan", "run_stream", "step"]


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


DEFAULT_SCALE_RULE = "objective"  # plans made since issue 27 (older records: "quantile")
DEFAULT_TOTAL_WEIGHT = 1.0  # λ: the total weighs as much as the publishers' mean, per 1/k


def _scale_weights(campaign: CampaignConfig, matrix: np.ndarray) -> tuple[float, ...] | None:
    """w_q of the objective rule for s: γ² for wsum, None (the worst query) for maxvar, equal
    weights for min_budget — the same reading of the objective as the strategy's."""
    if campaign.objective.kind == "maxvar":
        return None
    if campaign.objective.kind == "wsum":
        return tuple(float(w) for w in query_weights(campaign.objective, matrix.shape[0]))
    return (1.0,) * matrix.shape[0]


def _remainder(cfg: PlusSettings, budget: PlusBudget) -> dict[str, float]:
    """The remainder's cap E and σ_R (the smallest with E²/(2σ_R²) ≤ ρ_R/n), if it has a share."""
    if budget.remainder == Rho.zero():
        return {}
    cap = float(cfg.remainder_cap)
    return {
        "remainder_cap": cap,
        "remainder_sigma": gaussian_sigma(cap, budget.remainder_day.value),
    }


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
    check_sigma_range(cfg, sigma_bar)
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
        scale_rule=cfg.scale_rule or DEFAULT_SCALE_RULE,
        total_weight=DEFAULT_TOTAL_WEIGHT if cfg.total_weight is None else cfg.total_weight,
        scale_weights=_scale_weights(campaign, matrix),
        marginals=planned_marginals(campaign, cfg.marginals),
        pace=cfg.pace,
        early_cap=None if cfg.early_scale is None else cfg.early_scale * cfg.cap,
        scale_prior=cfg.profile_prior,
        **_remainder(cfg, budget),
    )
    if cfg.strategy == "auto":
        return auto_strategy(campaign, plan)
    if cfg.strategy == "diagonal":
        return plan
    return strategy_plan(campaign, plan, cfg.strategy, cfg.band)


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
    remainder: Callable[[int], float] | None = None,
) -> tuple[PlusRelease, PlusState]:
    """Release day ``state.day + 1``: histogram(s) → r_i, σ_i → filter clip → noise → answers.
    ``remainder(day)``: the day's X_t after the clip, for a plan that releases it."""
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
        plan,
        choice,
        clipped,
        allotment=allotment,
        noise=source,
        earlier=released,
        remainder=None if remainder is None else remainder(day),
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
    remainder: Callable[[int], float] | None = None,
) -> tuple[list[PlusRelease], PlusState]:
    """All days in order (simulation and tests); ``clip`` applies the filter and keeps spends."""
    state = PlusState()
    released: tuple[Measurement, ...] = ()
    out = []
    for histogram in histograms:
        release, state = step(
            plan,
            state,
            released,
            histogram,
            clip,
            profile,
            publishers=publishers,
            noise=noise,
            remainder=remainder,
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
            marginals=plan.marginals,  # the norm the filter will charge
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
            plan.day_cap(choice.day),
            row=strategy_row(plan, choice.day),
            marginals=plan.marginals,  # the norm each user is charged: their encoded row's
            remainder_cap=plan.remainder_cap,  # X_t too, if the plan releases it
        )
        return np.asarray(vector, dtype=np.float64)

    def remainder(
        self, plan: PlusPlan, warehouse: WarehouseEngine, campaign: CampaignConfig, day: date
    ) -> float | None:
        if plan.remainder_cap is None:
            return None
        return warehouse.plus_remainder(campaign, day)

    def release_charges(self, plan: PlusPlan, choice: PlusChoice) -> dict[str, Rho]:
        return release_charges(plan, choice)

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
        remainder: float | None = None,
    ) -> Measurement:
        return measure(
            plan,
            choice,
            clipped,
            allotment=allotment,
            noise=noise,
            earlier=earlier,
            remainder=remainder,
        )

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
            if plan.early_cap is not None:
                lines.append(
                    f"  days 1..{data['profile_days']}: noise σ̄_i·min(ψ0·r_i, "
                    f"{plan.early_cap:g}) (the early cap ε0·Λ)"
                )
        if plan.correlated:
            lines += [
                f"  noise strategy {data['strategy']}"
                + (f" ({data['band']} lags)" if data["strategy"] == "banded" else "")
                + ": day t releases Σ_j C_tj x_j + N(0, σ_t²)"
                " and publishes the decoded day",
                "    (noise correlated across days); each user is charged their whole row "
                f"(cross-day weight κ {plan.cross_weight:.3g})",
            ]
        else:
            lines.append("  noise strategy diagonal: independent noise per day")
        if plan.remainder_cap is not None:
            lines.append(
                f"  remainder: each day Σ_u min(clipped-off conversions, {plan.remainder_cap:g}) "
                f"+ N(0, {plan.remainder_sigma:.6g}²), ρ {data['rho_remainder']:.6g} over the days"
            )
        if plan.pace is not None:
            lines.append(
                f"  paced filter: through day t no user spends more than ρ1·min(1, W_t + "
                f"{plan.pace:g}), W_t a flat profile's share by then"
            )
        return lines


MECHANISM = PlusMechanism()

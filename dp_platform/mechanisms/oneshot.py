"""One-shot release of a campaign (Delaney et al., Lemma 1): per-publisher attributed conversion
counts or values over the whole period, with Laplace noise of scale C0·r·Δ(f)/ε.

Privacy unit: the user (the ledger's unit); adjacency add/remove (or replace) of all of one
user's records. Each user's attributed contribution over the period is bounded to r before or
after attribution (``enforcement``), each conversion's value to Δ(f) (``value_cap``; 1 for
counts). The configuration (rule, user, enforcement) is C0-valid (docs/validity.md: C0 = 1 for
every rule), so the ℓ1 sensitivity of the per-publisher vector is C0·r·Δ(f) — twice that under
``replace`` with several publishers (one user's r·Δ(f) moves from one publisher to another).

Noise: continuous Laplace (OpenDP, through :mod:`dp_platform.privacy.noise`) or, for integer
counts, discrete Laplace (OpenDP, :mod:`dp_platform.privacy.discrete`), both at scale
Δ₁/ε ⇒ ε-DP ⇒ ρ = ε·tanh(ε/2) zCDP, the amount charged to the ledger. ε is the largest float
whose rounded-up cost fits the campaign's ρ, so the charge never exceeds the plan.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from fractions import Fraction
from typing import TYPE_CHECKING, Literal

import numpy as np
from pydantic import Field

from dp_platform.config import (
    MAX_REACHABLE_BOUND,
    CampaignConfig,
    MechanismSettings,
    check_attribution,
)
from dp_platform.display import round_to_noise, significant
from dp_platform.mechanisms.base import Markdown, Shown
from dp_platform.privacy.accounting import Rho, epsilon_for_pure_rho, pure_dp_rho_tanh
from dp_platform.privacy.discrete import IntegerNoiseSource, resolve_integer
from dp_platform.privacy.noise import NoiseSource, resolve
from dp_platform.records import JsonValue
from dp_platform.validity import check
from dp_platform.warehouse.base import PeriodBound

if TYPE_CHECKING:
    from dp_platform.warehouse.base import WarehouseEngine

__all__ = [
    "OneShotPlan",
    "OneShotRelease",
    "plan_from_config",
    "plan_one_shot",
    "release_one_shot",
    "validity_rule",
    "warehouse_sums",
]


class OneShotSettings(MechanismSettings):
    """``mechanism: {kind: one_shot, …}`` (or ``mode: one_shot`` with a ``one_shot:`` block):
    one Laplace release of the whole period instead of daily releases."""

    kind: Literal["one_shot"]  # required, so a dump that leaves out defaults still names it
    enforcement: Literal["pre", "post"] = "post"
    bound: float = Field(
        default=1.0, gt=0, le=MAX_REACHABLE_BOUND, description="r: conversions kept per user"
    )
    measure: Literal["count", "value"] = "count"
    value_cap: float = Field(
        default=1.0, gt=0, le=MAX_REACHABLE_BOUND, description="Δ(f): largest value counted"
    )
    noise: Literal["laplace", "discrete_laplace"] = "laplace"

    def check(self, campaign: CampaignConfig) -> None:
        check_attribution(campaign, self.enforcement)
        rule = campaign.attribution.rule
        rule = "lta" if rule == "private_last_touch" else rule
        if self.enforcement == "pre" and self.bound != int(self.bound):
            raise ValueError("one_shot.bound: a pre-attribution bound counts conversions (integer)")
        if self.noise == "discrete_laplace" and (
            self.measure != "count" or self.bound != int(self.bound) or rule not in {"lta", "fta"}
        ):
            raise ValueError(
                "one_shot.noise: discrete_laplace needs integer sums (measure count, an integer "
                "bound and a single-touch rule)"
            )


SINGLE_TOUCH = {"lta", "fta", "private_last_touch"}


def validity_rule(rule: str) -> str:
    """The rule the validity table knows: ``private_last_touch`` is lta with a random touch —
    single-touch, weight 1 — for every draw, so its validity is lta's (docs/validity.md)."""
    return "lta" if rule == "private_last_touch" else rule


@dataclass(frozen=True)
class OneShotPlan:
    """Everything about a one-shot release fixed before any data is read (all public)."""

    rule: str
    enforcement: Literal["pre", "post"]
    bound: float
    value_cap: float
    use_value: bool
    noise: Literal["laplace", "discrete_laplace"]
    c0: float
    sensitivity_factor: int
    epsilon: float
    rho: Fraction

    @property
    def l1_sensitivity(self) -> float:
        """C0·r·Δ(f), doubled under replace with several publishers."""
        return self.c0 * self.bound * self.value_cap * self.sensitivity_factor

    @property
    def scale(self) -> float:
        """Laplace scale C0·r·Δ(f)/ε (per publisher)."""
        return self.l1_sensitivity / self.epsilon

    @property
    def period_bound(self) -> PeriodBound:
        """How the warehouse bounds each user's contribution to the period's sums."""
        return PeriodBound(self.bound, self.enforcement, self.use_value, float(self.value_cap))

    def to_json(self) -> dict:
        return {
            "rule": self.rule,
            "enforcement": self.enforcement,
            "bound": self.bound,
            "value_cap": self.value_cap,
            "measure": "value" if self.use_value else "count",
            "noise": self.noise,
            "c0": self.c0,
            "sensitivity_factor": self.sensitivity_factor,
            "epsilon": self.epsilon,
            "rho": float(self.rho),
            "scale": self.scale,
        }


def plan_one_shot(
    *,
    rho: float | Fraction,
    rule: str,
    enforcement: Literal["pre", "post"] = "post",
    bound: float = 1.0,
    value_cap: float = 1.0,
    use_value: bool = False,
    noise: Literal["laplace", "discrete_laplace"] = "laplace",
    adjacency: Literal["add_remove", "replace"] = "add_remove",
    several_publishers: bool = True,
) -> OneShotPlan:
    """The plan: C0 from the validity table, ε from ρ, the noise scale; refuses what is unsound."""
    if not (bound > 0 and math.isfinite(bound)):
        raise ValueError("bound must be a finite number > 0")
    if not (value_cap > 0 and math.isfinite(value_cap)):
        raise ValueError("value_cap must be a finite number > 0")
    if enforcement == "pre" and bound != int(bound):
        raise ValueError("a pre-attribution bound counts conversions: it must be an integer")
    if noise == "discrete_laplace" and (
        use_value or bound != int(bound) or validity_rule(rule) not in SINGLE_TOUCH
    ):
        raise ValueError(
            "discrete_laplace needs integer sums: counts, an integer bound and a single-touch rule"
        )
    cell = check(validity_rule(rule), "user", enforcement)
    if not cell.valid or cell.c0 is None:
        raise ValueError(
            f"({rule}, user, {enforcement}) is not a valid configuration: {cell.reason}"
        )
    epsilon = epsilon_for_pure_rho(rho)
    factor = 2 if adjacency == "replace" and several_publishers else 1
    return OneShotPlan(
        rule=rule,
        enforcement=enforcement,
        bound=float(bound),
        value_cap=float(value_cap) if use_value else 1.0,
        use_value=use_value,
        noise=noise,
        c0=cell.c0,
        sensitivity_factor=factor,
        epsilon=epsilon,
        rho=pure_dp_rho_tanh(epsilon),
    )


def plan_from_config(campaign: CampaignConfig) -> OneShotPlan:
    """The plan of a campaign configured ``mode: one_shot`` (its whole ρ goes to the release)."""
    options = campaign.mechanism
    if not isinstance(options, OneShotSettings):
        raise ValueError(f"campaign {campaign.name} is not a one-shot campaign")
    return plan_one_shot(
        rho=campaign.privacy.rho,
        rule=campaign.attribution.rule,
        enforcement=options.enforcement,
        bound=options.bound,
        value_cap=options.value_cap,
        use_value=options.measure == "value",
        noise=options.noise,
        adjacency=campaign.privacy.adjacency,
        several_publishers=campaign.several_publishers,
    )


@dataclass(frozen=True)
class OneShotRelease:
    """DP values only: safe to store, show and put in metadata."""

    publishers: tuple[str, ...]
    values: tuple[float, ...]
    scale: float
    epsilon: float
    rho: Fraction
    noise: str

    def to_json(self) -> dict:
        return {
            "values": dict(zip(self.publishers, self.values, strict=True)),
            "total": float(sum(self.values)),
            "scale": self.scale,
            "std": self.scale * math.sqrt(2.0),
            "epsilon": self.epsilon,
            "rho_charged": float(self.rho),
            "rho_exact": str(self.rho),
            "noise": self.noise,
        }


def release_one_shot(
    sums: Sequence[float] | np.ndarray,
    publishers: Sequence[str],
    plan: OneShotPlan,
    *,
    noise: NoiseSource | None = None,
    integer_noise: IntegerNoiseSource | None = None,
) -> OneShotRelease:
    """Noisy per-publisher sums; ``sums`` must already be bounded as the plan says
    (:func:`warehouse_sums`). Charges exactly ``plan.rho``.

    Privacy unit one user, the campaign's adjacency: the plan's ℓ1 sensitivity and ε are
    declared to the sampler, which refuses the draw if OpenDP's map says more than ε.
    """
    vector = np.asarray(sums, dtype=np.float64)
    if vector.shape != (len(publishers),):
        raise ValueError("one sum per publisher is needed")
    if plan.noise == "discrete_laplace":
        rounded = np.round(vector)
        if np.any(np.abs(vector - rounded) > 1e-9):
            raise ValueError("discrete_laplace needs integer sums")
        noisy = resolve_integer(integer_noise).add_discrete_laplace(
            rounded.astype(np.int64),
            plan.scale,
            l1_sensitivity=plan.l1_sensitivity,
            epsilon=plan.epsilon,
        )
        values = tuple(float(v) for v in noisy)
    else:
        drawn = resolve(noise).add_laplace(
            vector, plan.scale, l1_sensitivity=plan.l1_sensitivity, epsilon=plan.epsilon
        )
        values = tuple(float(v) for v in drawn)
    return OneShotRelease(
        publishers=tuple(publishers),
        values=values,
        scale=plan.scale,
        epsilon=plan.epsilon,
        rho=plan.rho,
        noise=plan.noise,
    )


def warehouse_sums(
    warehouse: WarehouseEngine,
    campaign: CampaignConfig,
    plan: OneShotPlan,
    publishers: list[str] | None = None,
) -> np.ndarray:
    """True per-publisher sums of the campaign's period after the plan's bounding (PRIVATE:
    feed them to :func:`release_one_shot` only). Needs attribute_days over the whole period."""
    return warehouse.one_shot_sums(campaign, plan.period_bound, publishers=publishers)


class OneShotMechanism:
    """The one-shot release as a campaign-level mechanism; it replaces the daily stream."""

    name = "one_shot"
    settings = OneShotSettings
    plan_type = OneShotPlan
    replaces_stream = True
    asset = "one_shot_release"
    reads = "attributed_conversions"
    description = (
        "The whole period's attributed conversions per publisher with Laplace noise of scale "
        "C0·r·Δ(f)/ε, drawn once (ledger)."
    )

    def make_plan(self, campaign: CampaignConfig) -> OneShotPlan | None:
        return (
            plan_from_config(campaign) if isinstance(campaign.mechanism, OneShotSettings) else None
        )

    def charge(self, plan: OneShotPlan) -> Rho:
        return Rho(plan.rho)

    def release(
        self,
        plan: OneShotPlan,
        warehouse: WarehouseEngine,
        campaign: CampaignConfig,
        publishers: list[str],
        *,
        noise: NoiseSource | None,
        integer_noise: IntegerNoiseSource | None,
    ) -> dict[str, JsonValue]:
        for offset in range(campaign.days):  # the whole period's attribution
            warehouse.attribute_day(campaign, campaign.start + timedelta(days=offset))
        sums = warehouse_sums(warehouse, campaign, plan, publishers)
        release = release_one_shot(sums, publishers, plan, noise=noise, integer_noise=integer_noise)
        return release.to_json()

    def shown(self, payload: dict[str, JsonValue]) -> Shown:
        std = float(payload["std"])
        values: dict[str, float] = payload.get("values", {})
        rows = [f"| {p} | {round_to_noise(v, std):g} |" for p, v in list(values.items())[:20]]
        return {
            "noisy_total": round_to_noise(float(payload["total"]), std * len(values) ** 0.5),
            "noise_scale": significant(float(payload["scale"])),
            "std_per_publisher": significant(std),
            "epsilon": significant(float(payload["epsilon"])),
            "rho_charged": significant(float(payload["rho_charged"])),
            "noisy_values": Markdown(
                "\n".join(["| publisher | noisy value |", "|---|---|", *rows])
            ),
        }

    def summary(self, plan: OneShotPlan) -> dict[str, JsonValue]:
        return plan.to_json()

    def describe(self, plan: OneShotPlan) -> list[str]:
        o = plan.to_json()
        return [
            f"  one-shot release: ρ {o['rho']:.6g} (ε {o['epsilon']:.4f}), C0 {o['c0']:g}, "
            f"bound {o['bound']:g}, Laplace scale {o['scale']:.4g} per publisher"
        ]

    def describe_release(self, payload: dict[str, JsonValue]) -> str:
        return (
            f"one-shot release (whole period, ρ {payload['rho_charged']:.6g}): noisy total "
            f"{payload['total']:.1f} ± {payload['std']:.1f} per publisher"
        )


MECHANISM = OneShotMechanism()

"""One-shot release of a campaign (Delaney et al., Lemma 1): per-publisher attributed conversion
counts or values over the whole period, with Laplace noise of scale C0·r·Δ(f)/ε.

Privacy unit: the user (the ledger's unit); adjacency add/remove (or replace) of all of one
user's records. Each user's attributed contribution over the period is bounded to r before or
after attribution (``enforcement``), each conversion's value to Δ(f) (``value_cap``; 1 for
counts). The configuration (rule, user, enforcement) is C0-valid (docs/validity.md: C0 = 1 for
every rule), so the ℓ1 sensitivity of the per-publisher vector is C0·r·Δ(f) — twice that under
``replace`` with several publishers (one user's r·Δ(f) moves from one publisher to another).

Cells (docs/algorithm.md#cells): with a breakdown or ``measures: [count, value]`` the vector is
the campaign's cell vector, each measure scaled by s = 1/m for m measures (``cell_norm`` 1:
Laplace noise needs ℓ1), so one conversion's cells have ℓ1 norm ≤ s·m·Σ_p w_p ≤ 1 and the ℓ1
sensitivity is C0·r with Δ(f) = 1 — twice that under ``replace`` with more than one cell; the
published cell is the noisy entry × 1/s (counts) or × cap/s (values), its standard deviation
and 95 % interval the noise law's (Laplace: ± b·ln 20) times the same factor
(tests/test_oneshot_cells.py checks the ℓ1 bound by removing each user).

Noise: continuous Laplace (OpenDP, through :mod:`dp_platform.privacy.noise`) or, for integer
counts, discrete Laplace (OpenDP, :mod:`dp_platform.privacy.discrete`), both at scale
Δ₁/ε ⇒ ε-DP ⇒ ρ = ε·tanh(ε/2) zCDP, the amount charged to the ledger. ε is the largest float
whose rounded-up cost fits the campaign's ρ, so the charge never exceeds the plan.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from fractions import Fraction
from typing import TYPE_CHECKING, ClassVar, Literal

import numpy as np
from pydantic import Field

from dp_platform.cells import CellLayout, cell_records, largest_cells, layout_of, publisher_counts
from dp_platform.config import (
    MAX_REACHABLE_BOUND,
    CampaignConfig,
    MechanismSettings,
    check_attribution,
)
from dp_platform.display import round_to_noise, significant
from dp_platform.mechanisms.base import CanaryPlacement, Markdown, Shown
from dp_platform.privacy.accounting import Rho, epsilon_for_pure_rho, pure_dp_rho_tanh
from dp_platform.privacy.allotment import Allotment
from dp_platform.privacy.discrete import (
    IntegerNoiseSource,
    discrete_laplace_variance,
    resolve_integer,
)
from dp_platform.privacy.noise import NoiseSource, resolve
from dp_platform.records import JsonValue
from dp_platform.validity import check
from dp_platform.warehouse.base import PeriodBound

if TYPE_CHECKING:
    from dp_platform.warehouse.base import WarehouseEngine

__all__ = [
    "OneShotPlan",
    "OneShotRelease",
    "declare",
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
    cell_norm: ClassVar[Literal[1, 2] | None] = 1  # Laplace noise: ℓ1 sensitivity

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
        if campaign.cells_per_publisher > 1:
            if self.measure != "count" or self.value_cap != _DEFAULT_VALUE_CAP:
                raise ValueError(
                    "one_shot.measure, one_shot.value_cap: a campaign with a breakdown or "
                    "measures [count, value] releases its cells' measures; set the campaign's "
                    "measures and value_cap instead"
                )
            if self.noise == "discrete_laplace" and campaign.measures != ["count"]:
                raise ValueError(
                    "one_shot.noise: discrete_laplace needs integer sums; the value measure's "
                    "cells are not"
                )


_DEFAULT_VALUE_CAP = OneShotSettings.model_fields["value_cap"].default
SINGLE_TOUCH = {"lta", "fta", "private_last_touch"}
INTERVAL_LEVEL = 0.95


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
    cell_units: dict[str, float] = field(default_factory=dict)
    """A campaign with cells: per measure, the published units of one released entry (1/s
    for counts, cap/s for values: dp_platform/cells.py); empty for one value per publisher."""
    cells_per_publisher: int = 1

    @property
    def l1_sensitivity(self) -> float:
        """C0·r·Δ(f), doubled under replace with several publishers (or cells)."""
        return self.c0 * self.bound * self.value_cap * self.sensitivity_factor

    @property
    def scale(self) -> float:
        """Laplace scale C0·r·Δ(f)/ε (per publisher, or per released cell entry)."""
        return self.l1_sensitivity / self.epsilon

    @property
    def entry_std(self) -> float:
        """Standard deviation of one released entry's noise: √2·b for Laplace(b), and for the
        discrete Laplace its exact √Var."""
        if self.noise == "discrete_laplace":
            return math.sqrt(discrete_laplace_variance(self.scale))
        return self.scale * math.sqrt(2.0)

    @property
    def interval_z(self) -> float:
        """z with P(|noise| ≤ z·std) ≥ 95 %, exactly for the plan's law: Laplace(b) has
        P(|X| > t) = e^{−t/b}, so t = b·ln 20; the discrete Laplace (p = e^{−1/b}) has
        P(|X| > t) = 2p^{t+1}/(1 + p) for integers t, the smallest t that reaches 5 %."""
        b = self.scale
        if self.noise == "discrete_laplace":
            p = math.exp(-1.0 / b)
            t = max(0, math.ceil(math.log((1 - INTERVAL_LEVEL) / 2 * (1 + p)) / math.log(p)) - 1)
            return t / self.entry_std
        return b * math.log(1.0 / (1.0 - INTERVAL_LEVEL)) / self.entry_std

    @property
    def period_bound(self) -> PeriodBound:
        """How the warehouse bounds each user's contribution to the period's sums."""
        return PeriodBound(self.bound, self.enforcement, self.use_value, float(self.value_cap))

    def to_json(self) -> dict:
        document = {
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
        if self.cell_units:
            del document["measure"]
            document["measures"] = list(self.cell_units)
            document["cells_per_publisher"] = self.cells_per_publisher
            document["scale_per_cell"] = {m: self.scale * u for m, u in self.cell_units.items()}
            document["half_width_per_cell"] = {
                m: self.interval_z * self.entry_std * u for m, u in self.cell_units.items()
            }
        return document


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
    cells: CellLayout | None = None,
) -> OneShotPlan:
    """The plan: C0 from the validity table, ε from ρ, the noise scale; refuses what is unsound.
    ``several_publishers``: more than one released entry (publishers, or ``cells``: a layout
    scaled for ℓ1, whose entries then carry the values — ``use_value`` must be False)."""
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
    with_cells = cells is not None and not cells.plain
    if with_cells and (use_value or cells.norm != 1):
        raise ValueError("cells carry the values themselves and must be scaled for ℓ1")
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
        cell_units={m: cells.unscale(m) for m in cells.measures} if with_cells else {},
        cells_per_publisher=cells.combinations * len(cells.measures) if with_cells else 1,
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
        several_publishers=campaign.several_cells,
        cells=layout_of(campaign, []),
    )


@dataclass(frozen=True)
class OneShotRelease:
    """DP values only: safe to store, show and put in metadata. ``values``: per publisher (a
    campaign with cells: its count cells summed over the breakdown), ``std`` the standard
    deviation of each; ``cells`` every published cell (dp_platform/cells.py)."""

    publishers: tuple[str, ...]
    values: tuple[float, ...]
    scale: float
    epsilon: float
    rho: Fraction
    noise: str
    std: float
    cells: list[dict[str, str | float]] = field(default_factory=list)

    def to_json(self) -> dict:
        document = {
            "values": dict(zip(self.publishers, self.values, strict=True)),
            "total": float(sum(self.values)),
            "scale": self.scale,
            "std": self.std,
            "epsilon": self.epsilon,
            "rho_charged": float(self.rho),
            "rho_exact": str(self.rho),
            "noise": self.noise,
        }
        if self.cells:
            document["cells"] = self.cells
        return document


def declare(plan: OneShotPlan, *, adjacency: str, several_cells: bool) -> Allotment:
    """The release as the registered plan states it (dp_platform/privacy/allotment.py): ℓ1
    sensitivity C0·r·Δ(f) — ×2 under ``replace`` with more than one released entry, from the
    campaign's registered adjacency — and ε, the plan's figure whose ε·tanh(ε/2) the ledger
    charges. Restated here, not read from :attr:`OneShotPlan.l1_sensitivity` or ``scale``
    (what sizes the noise), so a bug there is refused by the sampler."""
    moved = 2 if adjacency == "replace" and several_cells else 1
    sensitivity = Fraction(plan.c0) * Fraction(plan.bound) * Fraction(plan.value_cap) * moved
    return Allotment.exact(sensitivity, Fraction(plan.epsilon))


def release_one_shot(
    sums: Sequence[float] | np.ndarray,
    publishers: Sequence[str],
    plan: OneShotPlan,
    *,
    allotment: Allotment,
    noise: NoiseSource | None = None,
    integer_noise: IntegerNoiseSource | None = None,
    layout: CellLayout | None = None,
) -> OneShotRelease:
    """Noisy per-publisher sums — or, with a ``layout`` that has cells, noisy cells; ``sums``
    must already be bounded as the plan says (:func:`warehouse_sums`). Charges exactly
    ``plan.rho``.

    Privacy unit one user, the campaign's adjacency: ``allotment`` (:func:`declare`: the
    registered ℓ1 sensitivity and ε) is declared to the sampler, which refuses the draw if
    OpenDP's map at the plan's scale says more than ε.
    """
    with_cells = layout is not None and not layout.plain
    vector = np.asarray(sums, dtype=np.float64)
    size = layout.size if with_cells else len(publishers)
    if vector.shape != (size,):
        raise ValueError(f"one sum per released entry is needed ({size})")
    if with_cells and layout.publishers != tuple(publishers):
        raise ValueError("the layout's publishers are not the release's")
    if plan.noise == "discrete_laplace":
        rounded = np.round(vector)
        if np.any(np.abs(vector - rounded) > 1e-9):
            raise ValueError("discrete_laplace needs integer sums")
        noisy = resolve_integer(integer_noise).add_discrete_laplace(
            rounded.astype(np.int64),
            plan.scale,
            l1_sensitivity=allotment.sensitivity,
            epsilon=allotment.loss,
        )
        values = tuple(float(v) for v in noisy)
    else:
        drawn = resolve(noise).add_laplace(
            vector, plan.scale, l1_sensitivity=allotment.sensitivity, epsilon=allotment.loss
        )
        values = tuple(float(v) for v in drawn)
    common = {"scale": plan.scale, "epsilon": plan.epsilon, "rho": plan.rho, "noise": plan.noise}
    if not with_cells:
        return OneShotRelease(
            publishers=tuple(publishers), values=values, std=plan.scale * math.sqrt(2.0), **common
        )
    assert layout is not None
    return OneShotRelease(
        publishers=layout.publishers,
        values=tuple(float(v) for v in publisher_counts(layout, values)),
        std=plan.entry_std * layout.unscale("count") * math.sqrt(layout.combinations),
        cells=cell_records(layout, values, plan.entry_std, z=plan.interval_z),
        **common,
    )


def warehouse_sums(
    warehouse: WarehouseEngine,
    campaign: CampaignConfig,
    plan: OneShotPlan,
    publishers: list[str] | None = None,
) -> np.ndarray:
    """True per-publisher (or per-cell) sums of the campaign's period after the plan's bounding
    (PRIVATE: feed them to :func:`release_one_shot` only). Needs attribute_days over the whole
    period."""
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
        "The whole period's attributed conversions per publisher (or per cell) with Laplace "
        "noise of scale C0·r·Δ(f)/ε, drawn once (ledger)."
    )

    def make_plan(self, campaign: CampaignConfig) -> OneShotPlan | None:
        return (
            plan_from_config(campaign) if isinstance(campaign.mechanism, OneShotSettings) else None
        )

    def charge(self, plan: OneShotPlan) -> Rho:
        return Rho(plan.rho)

    def declare(self, plan: OneShotPlan, campaign: CampaignConfig) -> Allotment:
        adjacency = campaign.privacy.adjacency
        return declare(plan, adjacency=adjacency, several_cells=campaign.several_cells)

    def release(
        self,
        plan: OneShotPlan,
        warehouse: WarehouseEngine,
        campaign: CampaignConfig,
        publishers: list[str],
        *,
        allotment: Allotment,
        noise: NoiseSource | None,
        integer_noise: IntegerNoiseSource | None,
    ) -> dict[str, JsonValue]:
        for offset in range(campaign.days):  # the whole period's attribution
            warehouse.attribute_day(campaign, campaign.start + timedelta(days=offset))
        sums = warehouse_sums(warehouse, campaign, plan, publishers)
        release = release_one_shot(
            sums,
            publishers,
            plan,
            allotment=allotment,
            noise=noise,
            integer_noise=integer_noise,
            layout=layout_of(campaign, publishers),
        )
        return release.to_json()

    def shown(self, payload: dict[str, JsonValue]) -> Shown:
        std = float(payload["std"])
        values: dict[str, float] = payload.get("values", {})
        rows = [f"| {p} | {round_to_noise(v, std):g} |" for p, v in list(values.items())[:20]]
        shown: Shown = {
            "noisy_total": round_to_noise(float(payload["total"]), std * len(values) ** 0.5),
            "noise_scale": significant(float(payload["scale"])),
            "std_per_publisher": significant(std),
            "epsilon": significant(float(payload["epsilon"])),
            "rho_charged": significant(float(payload["rho_charged"])),
            "noisy_values": Markdown(
                "\n".join(["| publisher | noisy value |", "|---|---|", *rows])
            ),
        }
        cells: list[dict[str, str | float]] = payload.get("cells", [])
        if cells:
            shown["cells"] = len(cells)
            keys, largest = largest_cells(cells, 20)
            for measure, top in largest.items():
                sigma = float(top[0]["sigma"])
                table = [
                    f"| {' | '.join(str(c[k]) for k in keys)} | "
                    f"{round_to_noise(float(c['value']), sigma):g} | "
                    f"{round_to_noise(float(c['ci_low']), sigma):g} .. "
                    f"{round_to_noise(float(c['ci_high']), sigma):g} |"
                    for c in top
                ]
                header = f"| {' | '.join(keys)} | noisy {measure} | 95 % interval |"
                rule = "|" + "---|" * (len(keys) + 2)
                shown[f"std_per_{measure}_cell"] = significant(sigma)
                shown[f"top_{measure}_slices"] = Markdown("\n".join([header, rule, *table]))
        return shown

    def summary(self, plan: OneShotPlan) -> dict[str, JsonValue]:
        return plan.to_json()

    def describe(self, plan: OneShotPlan) -> list[str]:
        o = plan.to_json()
        lines = [
            f"  one-shot release: ρ {o['rho']:.6g} (ε {o['epsilon']:.4f}), C0 {o['c0']:g}, "
            f"bound {o['bound']:g}, Laplace scale {o['scale']:.4g} per "
            f"{'released entry' if plan.cell_units else 'publisher'}"
        ]
        for measure, scale in o.get("scale_per_cell", {}).items():
            lines.append(
                f"  one-shot cells: publishers × {plan.cells_per_publisher}; Laplace scale of "
                f"a {measure} cell {scale:.4g} (95 % interval ± "
                f"{o['half_width_per_cell'][measure]:.4g})"
            )
        return lines

    def describe_release(self, payload: dict[str, JsonValue]) -> str:
        cells = payload.get("cells", [])
        what = f", {len(cells)} cells" if cells else ""
        return (
            f"one-shot release (whole period, ρ {payload['rho_charged']:.6g}{what}): noisy total "
            f"{payload['total']:.1f} ± {payload['std']:.1f} per publisher"
        )

    def canary_placement(self, plan: OneShotPlan) -> CanaryPlacement:
        """A canary per publisher key of its own, over the period's bound Δ(f) every day."""
        return CanaryPlacement(frequencies=None, largest_bound=plan.bound)

    def canary_evidence(
        self, payload: dict[str, JsonValue], publisher: str, frequency: int
    ) -> float:
        values = payload["values"]
        assert isinstance(values, dict)
        return float(values[publisher]) / float(payload["scale"])  # type: ignore[arg-type]


MECHANISM = OneShotMechanism()

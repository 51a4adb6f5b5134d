"""AdsBPC, the streaming mechanism: plan → state → one ``step`` per day → release.

Privacy unit: one user (all their conversions). Adjacency: the campaign's ``privacy.adjacency``.

Budget (zCDP, exact): ρ = ρ1 + l·ρ2 + ρ3 (:class:`~dp_platform.privacy.accounting.BudgetSplit`).
Day i ≤ l pays ρ2 for PrivateQuantile (ε2-DP exponential mechanism, utility sensitivity 1). Day l+1
pays ρ3 once for the two sparse-vector tests that set every later bound (ε3-DP together). Every day
pays its Gaussian allotment g_i, fixed before day 1 with Σ_i g_i = ρ1 exactly: on day i the clipped
k-vector x[i] (each user's row has L1 ≤ r_i, hence L2 ≤ r_i) gets N(0, σ_i² I_k) with σ_i =
σ̄_i·r_i, so its cost factor·r_i²/(2σ_i²) equals factor/(2σ̄_i²) ≤ g_i whatever r_i the private
bound selection returned. ``factor`` is 1 under add/remove, and 2 under ``replace`` with several
publishers (correction docs/algorithm.md#replace: moving a user's r_i from publisher A to B changes
the row by (r_i, −r_i), L2 norm √2·r_i); one publisher under replace is factor 1. σ̄ comes from
:mod:`dp_platform.privacy.scales` for the workload and objective, and is rounded up so that the
float σ used never costs more than its exact allotment.

Cells (docs/algorithm.md#cells): with a breakdown or the value measure, x[i] has one entry per
cell and each conversion contributes a vector of L2 norm ≤ 1 (scale 1/√m for m measures; also
when a multi-touch rule splits it over impressions of several creatives' cells), so a
clipped user row still has L2 ≤ r_i and every figure above holds with k = the number of cells;
``replace`` pays factor 2 as soon as there is more than one cell (tests/test_cells.py checks
the sensitivity by removing each user in turn, tests/test_cells_touch.py with impression
dimensions under every multi-touch rule).

Streaming: day i reads only that day's histogram and clipped vector, and the state of day i−1.
Query answers are post-processing of released vectors (free). The state holds secret parts (the
SVT's noisy thresholds) and is persisted by the ledger; a :class:`Release` holds DP values only.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from dp_platform.cell_strategy import MarginalWeights, planned_marginals
from dp_platform.config import (
    CampaignConfig,
)
from dp_platform.errors import ConfigError
from dp_platform.mechanisms.adsbpc_settings import AdsbpcSettings, BoundsConfig
from dp_platform.mechanisms.base import BoundInputs, Chain, Measurement
from dp_platform.privacy.accounting import (
    BudgetSplit,
    Rho,
    charges_from_json,
    charges_to_json,
    epsilon_at_deltas,
    epsilon_for_exponential_rho,
    epsilon_for_pure_rho,
    gaussian_rho,
)
from dp_platform.privacy.allotment import Allotment, root_above
from dp_platform.privacy.noise import NoiseSource, resolve
from dp_platform.privacy.quantile import private_quantile
from dp_platform.privacy.svt import SvtState, update_bound
from dp_platform.workload import answer_queries, campaign_scales, query_ends, workload_matrix

if TYPE_CHECKING:
    from dp_platform.warehouse.base import WarehouseEngine

__all__ = [
    "AdsbpcPlan",
    "AdsbpcState",
    "BoundChoice",
    "BoundState",
    "Measurement",
    "Release",
    "choose_bound",
    "clipped_vector",
    "declare",
    "gaussian_allotments",
    "initial_state",
    "make_plan",
    "measure",
    "run_stream",
    "step",
]


def sensitivity_factor(campaign: CampaignConfig) -> int:
    """How many times ½Σ r_i²/σ_i² one user can move: 2 under replace with > 1 released cell
    (publishers, or a breakdown / the value measure within one publisher: moving a user from
    region A to B is the same (r, −r) move as from publisher A to B)."""
    return 2 if campaign.privacy.adjacency == "replace" and campaign.several_cells else 1


def _sigma_for_allotment(bound: float, allotment: Fraction, factor: int) -> float:
    """Smallest float σ with factor·bound²/(2σ²) ≤ allotment, exactly. A bound must be > 0: a
    zero bound would release the data without noise (the config's floor prevents it)."""
    if not (bound > 0 and math.isfinite(bound)):
        raise ValueError(f"a bound must be finite and > 0 to draw noise, got {bound!r}")
    sigma = bound * math.sqrt(factor / (2.0 * float(allotment)))
    while factor * gaussian_rho(bound, sigma) > allotment:
        sigma = math.nextafter(sigma, math.inf)
    return sigma


def _check_sigma_range(bounds: BoundsConfig, sigma_bar: tuple[float, ...]) -> None:
    """σ_i = σ̄_i·r_i must be a positive finite float for every r_i in [min_bound, Λ]: refused
    at plan time (before anything is reserved) if a budget makes it underflow or overflow."""
    for day, unit in enumerate(sigma_bar, start=1):
        low, high = unit * bounds.min_bound, unit * bounds.cap
        if not (low > 0 and math.isfinite(high)):
            raise ConfigError(
                f"bounds.min_bound: day {day}'s noise σ̄·r is not a positive finite number for "
                f"every r in [{bounds.min_bound:g}, {bounds.cap}] (σ̄ = {unit:g}); lower rho or "
                "raise min_bound"
            )


@dataclass(frozen=True)
class AdsbpcPlan:
    """Everything fixed before day 1: budget split, ε's, per-day σ̄ and allotments, workload."""

    campaign: str
    days: int
    adjacency: str
    factor: int
    budget: BudgetSplit
    eps_quantile: float
    eps_svt: float
    allotments: tuple[Fraction, ...]
    sigma_bar: tuple[float, ...]
    queries: np.ndarray = field(repr=False)
    query_std: tuple[float, ...]
    bounds: BoundsConfig
    rho1_needed: float | None = None
    marginals: MarginalWeights | None = None
    """The residual workload the cells are measured by (dp_platform/cell_strategy.py); None:
    each cell on its own — every plan registered before residual strategies reads back so."""

    @property
    def query_ends(self) -> np.ndarray:
        """1-based last day of each query's support (a query is answered from that day on)."""
        return query_ends(self.queries)

    @property
    def total(self) -> Rho:
        """Everything the stream can charge: ρ1 + l·ρ2 + ρ3."""
        return self.budget.total

    @property
    def largest_bound(self) -> float:
        """The largest daily bound r_i the plan can choose: Λ raised by every SVT report."""
        return self.bounds.largest_bound

    def gaussian_cost(self, bound: float, sigma: float) -> Fraction:
        """Exact zCDP cost of one day's Gaussian release: factor·r²/(2σ²)."""
        return self.factor * gaussian_rho(bound, sigma)

    def day_charge(self, day: int) -> dict[str, Rho]:
        """What day ``day`` (1-based) is charged, by part; sums over the campaign to ρ exactly."""
        charges = {"gaussian": Rho(self.allotments[day - 1])}
        if day <= self.budget.quantile_days:
            charges["quantile"] = self.budget.rho2
        elif day == self.budget.quantile_days + 1:
            charges["svt"] = self.budget.rho3
        return charges

    def epsilon_at_delta(self) -> dict[str, float]:
        """(ε, δ)-DP equivalents of the whole campaign's ρ (Canonne–Kamath–Steinke)."""
        return epsilon_at_deltas(float(self.budget.total))

    def to_json(self) -> dict:
        """The ``dp-platform plan`` view (docs/operators.md): public, data-independent numbers."""
        return {
            "rho": float(self.budget.rho),
            "rho1": float(self.budget.rho1),
            "rho2": float(self.budget.rho2),
            "rho3": float(self.budget.rho3),
            "quantile_days": self.budget.quantile_days,
            "adjacency": self.adjacency,
            "sensitivity_factor": self.factor,
            "eps_quantile": self.eps_quantile,
            "eps_svt": self.eps_svt,
            "sigma_bar": list(self.sigma_bar),
            "query_std": list(self.query_std),
            "epsilon_at_delta": self.epsilon_at_delta(),
            **({"rho1_needed": self.rho1_needed} if self.rho1_needed is not None else {}),
        }


def gaussian_allotments(rho1: Fraction, variances: np.ndarray) -> tuple[Fraction, ...]:
    """Day i's exact share g_i of ρ1 for the workload's variance shape v_i: g_i ∝ 1/v_i and
    Σ g_i = ρ1 exactly (Fractions), so the Gaussian days of a finished campaign add up to ρ1."""
    precision = [Fraction(float(p)) for p in 1.0 / np.asarray(variances, dtype=np.float64)]
    total = sum(precision, Fraction(0))
    return tuple(rho1 * p / total for p in precision)


def make_plan(campaign: CampaignConfig, base_dir: str | Path | None = None) -> AdsbpcPlan:
    """Plan a campaign: data-independent, so it can be shown and audited before anything runs."""
    split = campaign.privacy.split
    budget = BudgetSplit.from_split(
        campaign.privacy.rho,
        split.measurement,
        split.quantile,
        split.svt,
        campaign.mechanism.bounds.quantile_days,
    )
    factor = sensitivity_factor(campaign)
    matrix = workload_matrix(campaign, base_dir)
    scales = campaign_scales(campaign.objective, matrix, float(budget.rho1) / factor)
    allotments = gaussian_allotments(budget.rho1.value, scales.variances)
    sigma_bar = tuple(_sigma_for_allotment(1.0, g, factor) for g in allotments)
    _check_sigma_range(campaign.mechanism.bounds, sigma_bar)
    query_std = np.sqrt((matrix**2) @ np.square(sigma_bar))
    return AdsbpcPlan(
        campaign=campaign.name,
        days=campaign.days,
        adjacency=campaign.privacy.adjacency,
        factor=factor,
        budget=budget,
        eps_quantile=epsilon_for_exponential_rho(budget.rho2.value),
        eps_svt=epsilon_for_pure_rho(budget.rho3.value),
        allotments=allotments,
        sigma_bar=sigma_bar,
        queries=matrix,
        query_std=tuple(float(s) for s in query_std),
        bounds=campaign.mechanism.bounds,
        rho1_needed=None if scales.rho1_needed is None else scales.rho1_needed * factor,
        marginals=planned_marginals(campaign, campaign.mechanism.marginals),
    )


@dataclass(frozen=True)
class BoundState:
    """The bound chain's state after day ``day``. Secret (SVT thresholds): ledger-only."""

    day: int = 0
    bounds: tuple[float, ...] = ()
    svt: SvtState | None = None


@dataclass(frozen=True)
class BoundChoice:
    """Day i's private bound r_i (a DP output) and what choosing it cost."""

    day: int
    bound: float
    method: str
    charges: dict[str, Rho]


def choose_bound(
    plan: AdsbpcPlan,
    state: BoundState,
    histogram: np.ndarray,
    *,
    noise: NoiseSource | None = None,
) -> tuple[BoundChoice, BoundState]:
    """Day ``state.day + 1``'s bound: PrivateQuantile for days ≤ l, UpdateBoundSVT after.

    ``histogram[c]`` is the number of users active that day with exactly c attributed
    conversions (uncapped; index 0 ignored). Costs ρ2 on days ≤ l, ρ3 once on day l + 1.
    """
    source = resolve(noise)
    day = state.day + 1
    if day > plan.days:
        raise ValueError(f"campaign {plan.campaign} has {plan.days} days; day {day} is past it")
    counts = np.asarray(histogram, dtype=np.int64)
    if counts.ndim != 1 or np.any(counts < 0):
        raise ValueError("histogram must be a 1-d array of non-negative user counts")
    cfg = plan.bounds
    svt = state.svt
    if day <= cfg.quantile_days:
        bound = private_quantile(
            counts, p=cfg.p, cap=cfg.cap, epsilon=plan.eps_quantile, noise=source
        )
        method = "quantile"
    else:
        svt = svt or SvtState.create(
            epsilon=plan.eps_svt,
            t_up=cfg.t_up,
            t_down=cfg.t_down,
            s_up=cfg.s_up,
            s_down=cfg.s_down,
            max_reports=cfg.max_reports,
        )
        bound, decision, svt = update_bound(
            svt, counts, list(state.bounds), cfg.quantile_days, source
        )
        method = f"svt_{decision}"
    bound = max(bound, cfg.min_bound)  # post-processing of a DP output: free; keeps σ_i > 0
    charges = {k: v for k, v in plan.day_charge(day).items() if k != "gaussian"}
    choice = BoundChoice(day=day, bound=bound, method=method, charges=charges)
    return choice, BoundState(day=day, bounds=(*state.bounds, bound), svt=svt)


def clipped_vector(clipped: np.ndarray) -> np.ndarray:
    """The day's clipped per-publisher sums as a float vector; refuses what cannot be released."""
    vector = np.asarray(clipped, dtype=np.float64)
    if vector.ndim != 1 or vector.size == 0 or not np.all(np.isfinite(vector)):
        raise ValueError("the clipped vector must be finite, non-empty and 1-d")
    return vector


def declare(plan: AdsbpcPlan, choice: BoundChoice) -> Allotment:
    """Day i's Gaussian as the registered plan states it (privacy/allotment.py): ℓ2
    sensitivity r_i·√factor — a user's clipped row has L1 ≤ r_i, moved once (add/remove) or
    from one cell to another (replace, factor 2) — and loss g_i, the very figure the ledger
    charges (``day_charge``). Restated here, not taken from the σ computation of
    :func:`measure`, so a bug there is refused by the sampler."""
    sensitivity = root_above(plan.factor * Fraction(choice.bound) ** 2)  # √(Δ²), rounded up
    return Allotment(sensitivity, plan.day_charge(choice.day)["gaussian"].value)


def measure(
    plan: AdsbpcPlan,
    choice: BoundChoice,
    clipped: np.ndarray,
    *,
    allotment: Allotment,
    noise: NoiseSource | None = None,
) -> Measurement:
    """Release x[i] + N(0, σ_i² I_k), σ_i = σ̄_i·r_i; costs day i's Gaussian allotment g_i.

    Privacy unit one user, adjacency the plan's: a user's clipped row has L1 ≤ r_i, so the ℓ2
    sensitivity is r_i·√factor and the zCDP cost factor·r_i²/(2σ_i²) ≤ g_i. ``allotment`` is
    :func:`declare`'s statement of both; the sampler refuses the draw if OpenDP's map of it
    says more.
    """
    vector = clipped_vector(clipped)
    sigma = _sigma_for_allotment(choice.bound, plan.allotments[choice.day - 1], plan.factor)
    noisy = resolve(noise).add_gaussian(
        vector, sigma, l2_sensitivity=allotment.sensitivity, rho=allotment.loss
    )
    values = tuple(noisy.tolist())  # Python floats
    charges = {"gaussian": plan.day_charge(choice.day)["gaussian"]}
    return Measurement(choice.day, choice.bound, sigma, values, charges)


@dataclass(frozen=True)
class Release:
    """One day's published output (bound, σ, noisy vector, query answers, ρ charged).

    Only DP values: no true count, no SVT threshold.
    """

    day: int
    bound: float
    sigma: float
    values: tuple[float, ...]
    answers: dict[int, tuple[float, ...]]
    charges: dict[str, Rho]
    bound_method: str

    @property
    def rho_charged(self) -> Rho:
        return sum(self.charges.values(), Rho.zero())

    def to_json(self) -> dict:
        return {
            "day": self.day,
            "bound": self.bound,
            "sigma": self.sigma,
            "values": list(self.values),
            "answers": {str(j): list(a) for j, a in self.answers.items()},
            "charges": charges_to_json(self.charges),
            "rho_charged": float(self.rho_charged),
            "bound_method": self.bound_method,
        }

    @classmethod
    def from_json(cls, data: dict) -> Release:
        return cls(
            day=int(data["day"]),
            bound=float(data["bound"]),
            sigma=float(data["sigma"]),
            values=tuple(float(v) for v in data["values"]),
            answers={int(j): tuple(float(v) for v in a) for j, a in data["answers"].items()},
            charges=charges_from_json(data["charges"]),
            bound_method=str(data["bound_method"]),
        )


@dataclass(frozen=True)
class AdsbpcState:
    """Both chains after day ``day``: the secret bound state, released vectors, ρ spent."""

    bound_state: BoundState = field(default_factory=BoundState)
    released: tuple[tuple[float, ...], ...] = ()
    spent: Rho = field(default_factory=Rho.zero)

    @property
    def day(self) -> int:
        return len(self.released)

    def to_json(self) -> dict:
        return {
            "bound_state": self.bound_state.to_json(),
            "released": [list(v) for v in self.released],
            "spent": self.spent.to_json(),
        }

    @classmethod
    def from_json(cls, data: dict) -> AdsbpcState:
        return cls(
            bound_state=BoundState.from_json(data["bound_state"]),
            released=tuple(tuple(float(v) for v in row) for row in data["released"]),
            spent=Rho.from_json(data["spent"]),
        )


def initial_state() -> AdsbpcState:
    return AdsbpcState()


def step(
    plan: AdsbpcPlan,
    state: AdsbpcState,
    histogram: np.ndarray,
    clipped_sums: Callable[[float], np.ndarray],
    *,
    noise: NoiseSource | None = None,
) -> tuple[Release, AdsbpcState]:
    """Release day ``state.day + 1``: choose the bound, clip with it, add noise, answer queries.

    ``clipped_sums(r)`` returns the day's per-publisher sums after clipping every user to r
    (docs/algorithm.md#clipping), a float vector of fixed length k (the data layer supplies it).
    """
    source = resolve(noise)
    if state.bound_state.day != state.day:
        raise ValueError("state is between phases: the bound of the next day is already chosen")
    choice, bound_state = choose_bound(plan, state.bound_state, histogram, noise=source)
    clipped = np.asarray(clipped_sums(choice.bound), dtype=np.float64)
    if state.released and clipped.size != len(state.released[0]):
        raise ValueError(
            f"day {choice.day} has {clipped.size} publishers, earlier days had "
            f"{len(state.released[0])}"
        )
    measurement = measure(plan, choice, clipped, allotment=declare(plan, choice), noise=source)
    released = (*state.released, measurement.values)
    charges = {**choice.charges, **measurement.charges}
    release = Release(
        day=choice.day,
        bound=choice.bound,
        sigma=measurement.sigma,
        values=measurement.values,
        answers=answer_queries(plan.queries, released),
        charges=charges,
        bound_method=choice.method,
    )
    spent = state.spent + release.rho_charged
    return release, AdsbpcState(bound_state=bound_state, released=released, spent=spent)


def run_stream(
    plan: AdsbpcPlan,
    days: list[tuple[np.ndarray, Callable[[float], np.ndarray]]],
    *,
    noise: NoiseSource | None = None,
) -> tuple[list[Release], AdsbpcState]:
    """Run ``step`` over consecutive days from the start (simulation and tests)."""
    state = initial_state()
    releases = []
    for histogram, clipped_sums in days:
        release, state = step(plan, state, histogram, clipped_sums, noise=noise)
        releases.append(release)
    return releases, state


class AdsbpcMechanism:
    """AdsBPC as a :class:`~dp_platform.mechanisms.base.StreamMechanism` (module doc)."""

    name = "adsbpc"
    settings = AdsbpcSettings
    plan_type = AdsbpcPlan
    chain = Chain(BoundChoice, BoundState)
    carries_spend = False

    def make_plan(self, campaign: CampaignConfig, base_dir: str | Path | None) -> AdsbpcPlan:
        return make_plan(campaign, base_dir)

    def bound_charges(self, plan: AdsbpcPlan, day: int) -> dict[str, Rho]:
        return {part: rho for part, rho in plan.day_charge(day).items() if part != "gaussian"}

    def bound_inputs(
        self,
        plan: AdsbpcPlan,
        campaign: CampaignConfig,
        day: date,
        warehouse: WarehouseEngine,
        earlier_bounds: Callable[[], list[float]],
    ) -> BoundInputs:
        return BoundInputs(np.asarray(warehouse.day_histogram(campaign, day), dtype=np.int64))

    def choose_bound(
        self,
        plan: AdsbpcPlan,
        state: BoundState,
        inputs: BoundInputs,
        *,
        publishers: int,
        noise: NoiseSource | None,
    ) -> tuple[BoundChoice, BoundState]:
        return choose_bound(plan, state, inputs.histogram, noise=noise)

    def clip(
        self,
        plan: AdsbpcPlan,
        choice: BoundChoice,
        warehouse: WarehouseEngine,
        campaign: CampaignConfig,
        day: date,
    ) -> np.ndarray:
        return np.asarray(warehouse.clipped_vector(campaign, day, choice.bound), dtype=np.float64)

    def remainder(
        self, plan: AdsbpcPlan, warehouse: WarehouseEngine, campaign: CampaignConfig, day: date
    ) -> None:
        return None  # AdsBPC releases no side series

    def release_charges(self, plan: AdsbpcPlan, choice: BoundChoice) -> dict[str, Rho]:
        return {"gaussian": plan.day_charge(choice.day)["gaussian"]}

    def declare(self, plan: AdsbpcPlan, choice: BoundChoice, state: BoundState) -> Allotment:
        return declare(plan, choice)  # independent days: the chain's state is not needed

    def measure(
        self,
        plan: AdsbpcPlan,
        choice: BoundChoice,
        clipped: np.ndarray,
        *,
        allotment: Allotment,
        noise: NoiseSource | None,
        earlier: tuple[Measurement, ...] = (),  # independent days: not needed
        remainder: float | None = None,
    ) -> Measurement:
        if remainder is not None:
            raise ValueError("AdsBPC releases no remainder")
        return measure(plan, choice, clipped, allotment=allotment, noise=noise)

    def summary(self, plan: AdsbpcPlan) -> dict[str, object]:
        return plan.to_json()

    def describe(self, plan: AdsbpcPlan) -> list[str]:
        data = plan.to_json()
        eps = ", ".join(f"ε={e:.3f} at δ={d}" for d, e in data["epsilon_at_delta"].items())
        lines = [
            f"campaign {plan.campaign}: {plan.days} days, adjacency {plan.adjacency}"
            + (" (×2 Gaussian cost: several publishers)" if plan.factor == 2 else ""),
            f"  ρ = {data['rho']:.6g} = ρ1 {data['rho1']:.6g} + {plan.budget.quantile_days}·ρ2 "
            f"{data['rho2']:.6g} + ρ3 {data['rho3']:.6g}   ({eps})",
            f"  ε quantile (per day) = {data['eps_quantile']:.4f}, ε SVT (total) = "
            f"{data['eps_svt']:.4f}",
            "  day  σ̄_i (r=1)   query std (r=1)",
        ]
        for day, sigma in enumerate(plan.sigma_bar, start=1):
            std = plan.query_std[day - 1] if day <= len(plan.query_std) else float("nan")
            lines.append(f"  {day:>3}  {sigma:>10.4f}   {std:>12.4f}")
        for j in range(plan.days, len(plan.query_std)):
            lines.append(f"  q{j + 1:<3}             {plan.query_std[j]:>12.4f}")
        return lines


MECHANISM = AdsbpcMechanism()

"""What a mechanism is to the rest of the platform: one interface for every implementation.

- A **stream mechanism** (AdsBPC, AdsBPC+) releases one noisy vector per campaign day. Each day
  it chooses a bound privately (a secret *chain* state carried from day to day), the warehouse
  clips the day's data at that bound, and it adds noise: :class:`StreamMechanism`.
- A **campaign-level mechanism** (the one-shot release, reach & frequency) releases once, after
  the last day: :class:`CampaignMechanism`.

``daily.py``, the ledger, plans, the commands and the asset factory use mechanisms only through
these protocols and the registry (``dp_platform/mechanisms/__init__.py``); nothing outside a
mechanism's own module branches on its name. Adding a mechanism is one new module (its
settings, plan and the protocol's methods, exposing ``MECHANISM``) and one registry line.

The types here are the shared vocabulary — a mechanism's catalogue block extends
:class:`dp_platform.config.MechanismSettings` — the write-once daily release
(:class:`Measurement`), and what the ledger needs to store a mechanism's bound chain without
knowing the mechanism (:class:`Chain`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Generic, Protocol, TypeVar

import numpy as np

from dp_platform.privacy.accounting import Rho
from dp_platform.records import JsonValue

if TYPE_CHECKING:
    from dp_platform.cell_strategy import MarginalWeights
    from dp_platform.config import CampaignConfig, MechanismSettings
    from dp_platform.privacy.allotment import Allotment
    from dp_platform.privacy.noise import IntegerNoiseSource, NoiseSource
    from dp_platform.warehouse.base import WarehouseEngine

__all__ = [
    "BoundChoice",
    "BoundInputs",
    "BoundState",
    "CampaignMechanism",
    "Chain",
    "Markdown",
    "Measurement",
    "Shown",
    "StreamMechanism",
    "StreamPlan",
    "plan_marginals",
]


@dataclass(frozen=True)
class Measurement:
    """Day i's noisy per-publisher vector x[i] + N(0, σ_i² I): the write-once daily release.
    For a campaign with cells (dp_platform/cells.py) x[i] is the scaled cell vector; published
    values are ``values`` and ``sigma`` times each cell's public factor.

    DP values only — the bound, σ, the noisy values and what the release was charged.

    ``row_sigma`` is set when the values are decoded from a correlated-noise row (an AdsBPC+
    strategy, dp_platform/privacy/strategy.py): the row's σ_i, while ``sigma`` is each value's
    own σ. Days are then not independent: the standard error of a sum over days comes from the
    registered plan's strategy and the rows' σ (publication.py). None: independent days."""

    day: int
    bound: float
    sigma: float
    values: tuple[float, ...]
    charges: dict[str, Rho]
    row_sigma: float | None = None
    # A mechanism's side series of the day (AdsBPC+'s remainder: the conversions its clipping
    # left out, capped per user, docs/privacy.md), with its own σ; None: it releases none.
    remainder: float | None = None
    remainder_sigma: float | None = None


class BoundChoice(Protocol):
    """Day i's privately chosen bound (a DP output) and what choosing it cost."""

    @property
    def day(self) -> int: ...
    @property
    def bound(self) -> float: ...
    @property
    def method(self) -> str: ...
    @property
    def charges(self) -> dict[str, Rho]: ...


class BoundState(Protocol):
    """The bound chain after day i: secret (the ledger keeps it; it is never shown)."""

    @property
    def day(self) -> int: ...
    @property
    def bounds(self) -> tuple[float, ...]: ...


ChoiceT = TypeVar("ChoiceT", bound=BoundChoice)
StateT = TypeVar("StateT", bound=BoundState)
PlanT = TypeVar("PlanT", bound="StreamPlan")
CampaignPlanT = TypeVar("CampaignPlanT")


@dataclass(frozen=True)
class Chain(Generic[ChoiceT, StateT]):
    """How a mechanism's bound chain is stored: the types the ledger writes as records
    (dp_platform/records.py) and reads back. The chain starts from ``state()``."""

    choice: type[ChoiceT]
    state: type[StateT]


@dataclass(frozen=True)
class BoundInputs:
    """What a day's bound choice reads from the data — and only through its own DP mechanism:
    the day's histogram of per-user counts, and for some mechanisms a profile histogram."""

    histogram: np.ndarray
    profile: np.ndarray | None = None


class StreamPlan(Protocol):
    """Everything a stream mechanism fixes before day 1 (public, data-independent)."""

    @property
    def campaign(self) -> str: ...
    @property
    def days(self) -> int: ...
    @property
    def queries(self) -> np.ndarray: ...
    @property
    def total(self) -> Rho: ...
    @property
    def largest_bound(self) -> float:
        """The largest daily bound r_i the plan can ever choose (public, data-independent)."""
        ...


def plan_marginals(plan: StreamPlan) -> MarginalWeights | None:
    """The residual workload a stream plan measures its cells by (dp_platform/cell_strategy.py):
    its optional ``marginals`` attribute. Optional so that a plug-in mechanism written without
    residual strategies keeps working — its cells are measured one by one."""
    marginals: MarginalWeights | None = getattr(plan, "marginals", None)
    return marginals


class Markdown(str):
    """A value to show as markdown (a table) rather than as text."""


Shown = dict[str, float | int | str]
"""What a UI or a report may show of a DP output: plain numbers and text (Markdown for tables)."""


class StreamMechanism(Protocol[PlanT, ChoiceT, StateT]):
    """A daily mechanism. Privacy unit, adjacency, sensitivity and cost are stated in each
    implementation's module docstring, with the tests that check them."""

    name: str
    settings: type[MechanismSettings]
    plan_type: type[PlanT]
    chain: Chain[ChoiceT, StateT]
    carries_spend: bool
    """True when clipping day d needs day d−1's clip (a per-user filter carries spends)."""

    def make_plan(self, campaign: CampaignConfig, base_dir: str | Path | None) -> PlanT:
        """The campaign's whole plan, before day 1; refuses (ConfigError) what cannot run."""
        ...

    def bound_charges(self, plan: PlanT, day: int) -> dict[str, Rho]:
        """What choosing day ``day``'s bound charges, by part (fixed by the plan)."""
        ...

    def bound_inputs(
        self,
        plan: PlanT,
        campaign: CampaignConfig,
        day: date,
        warehouse: WarehouseEngine,
        earlier_bounds: Callable[[], list[float]],
    ) -> BoundInputs:
        """Read what day ``day``'s choice needs from the warehouse (``earlier_bounds`` gives
        the stored bounds of days 1..d−1 when it needs them)."""
        ...

    def choose_bound(
        self,
        plan: PlanT,
        state: StateT,
        inputs: BoundInputs,
        *,
        publishers: int,
        noise: NoiseSource | None,
    ) -> tuple[ChoiceT, StateT]:
        """Day ``state.day + 1``'s bound and the chain's next state."""
        ...

    def clip(
        self,
        plan: PlanT,
        choice: ChoiceT,
        warehouse: WarehouseEngine,
        campaign: CampaignConfig,
        day: date,
    ) -> np.ndarray:
        """The day's clipped per-publisher vector at the chosen bound (true values)."""
        ...

    def remainder(
        self, plan: PlanT, warehouse: WarehouseEngine, campaign: CampaignConfig, day: date
    ) -> float | None:
        """The day's side series as :meth:`clip` left it in the warehouse (a true value), for
        :meth:`measure`; None when the plan releases none."""
        ...

    def release_charges(self, plan: PlanT, choice: ChoiceT) -> dict[str, Rho]:
        """What the day's release charges, by part."""
        ...

    def declare(self, plan: PlanT, choice: ChoiceT, state: StateT) -> Allotment:
        """What the day's draw may cost — its sensitivity and loss — restated from the
        registered plan and the stored chain (``state``: after the choice's day), apart from
        the code that sizes the noise (dp_platform/privacy/allotment.py)."""
        ...

    def measure(
        self,
        plan: PlanT,
        choice: ChoiceT,
        clipped: np.ndarray,
        *,
        allotment: Allotment,
        noise: NoiseSource | None,
        earlier: tuple[Measurement, ...] = (),
        remainder: float | None = None,
    ) -> Measurement:
        """The day's noisy release of ``clipped`` (drawn once: the ledger calls this), declared
        to the sampler as ``allotment`` (from :meth:`declare`); ``earlier`` are the campaign's
        releases of days 1..d−1 (a correlated strategy decodes the day from them;
        independent-noise mechanisms ignore them); ``remainder``: :meth:`remainder`'s value."""
        ...

    def summary(self, plan: PlanT) -> dict[str, JsonValue]:
        """The public plan as ``dp-platform plan --json`` shows it."""
        ...

    def describe(self, plan: PlanT) -> list[str]:
        """The public plan as ``dp-platform plan`` prints it."""
        ...


@dataclass(frozen=True)
class CanaryPlacement:
    """Where the empirical audit's canaries (dp_platform/audit) show in a campaign-level
    release. ``frequencies`` None: converting canaries, each in a publisher key of its own, more
    than ``largest_bound`` conversions a day; otherwise one canary seen each given number of
    times (one per cell the release has, e.g. a frequency histogram's bins)."""

    frequencies: tuple[int, ...] | None
    largest_bound: float = 0.0


class CampaignMechanism(Protocol[CampaignPlanT]):
    """A release of the whole period, drawn once after the last day, on its own ρ."""

    name: str
    settings: type[MechanismSettings]
    plan_type: type[CampaignPlanT]
    replaces_stream: bool
    """True when the campaign has no daily releases at all (the one-shot mode)."""
    asset: str
    """The release's asset name in the Dagster layer."""
    reads: str
    """The daily asset whose data it reads (its lineage parent)."""
    description: str

    def make_plan(self, campaign: CampaignConfig) -> CampaignPlanT | None:
        """Its plan, or None when the campaign does not ask for it."""
        ...

    def charge(self, plan: CampaignPlanT) -> Rho:
        """What the release charges (all of its plan)."""
        ...

    def declare(self, plan: CampaignPlanT, campaign: CampaignConfig) -> Allotment:
        """What the draw may cost — sensitivity and loss — restated from the registered plan
        and configuration, apart from the code that sizes the noise (privacy/allotment.py)."""
        ...

    def release(
        self,
        plan: CampaignPlanT,
        warehouse: WarehouseEngine,
        campaign: CampaignConfig,
        publishers: list[str],
        *,
        allotment: Allotment,
        noise: NoiseSource | None,
        integer_noise: IntegerNoiseSource | None,
    ) -> dict[str, JsonValue]:
        """The release as stored (DP values only), declared to the sampler as ``allotment``."""
        ...

    def shown(self, payload: dict[str, JsonValue]) -> Shown:
        """What the UI shows of a stored release."""
        ...

    def summary(self, plan: CampaignPlanT) -> dict[str, JsonValue]: ...

    def describe(self, plan: CampaignPlanT) -> list[str]: ...

    def describe_release(self, payload: dict[str, JsonValue]) -> str:
        """One line for ``dp-platform releases``."""
        ...

    def canary_placement(self, plan: CampaignPlanT) -> CanaryPlacement:
        """How the audit places its canaries so that each has a released number of its own."""
        ...

    def canary_evidence(
        self, payload: dict[str, JsonValue], publisher: str, frequency: int
    ) -> float:
        """The released number of a canary's own cell, in noise units (the audit reads it)."""
        ...

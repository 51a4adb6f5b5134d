"""One campaign day, phase by phase: the library behind every Dagster asset (no Dagster here).

Each function does one box of the daily flow (README, docs/operators.md) and is safe to re-run:
warehouse steps rebuild their (campaign, day) partition idempotently; the private steps go
through the ledger, which returns the stored result if the day was already drawn. Every
function that draws, clips under a filter or charges takes the campaign's
:class:`~dp_platform.registration.Registration` — the configuration, plan and publisher keys
read back from the ledger — never the catalogue's current YAML. The Dagster layer (``assets/``)
only calls these and turns their DP outputs into metadata.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from dp_platform import mechanisms
from dp_platform.cells import CellLayout, publisher_counts
from dp_platform.config import AccountConfig, CampaignConfig, Catalogue
from dp_platform.errors import ConfigError
from dp_platform.faults import fault_point
from dp_platform.ledger import Ledger, LedgerError, MissingPreviousDay
from dp_platform.mechanisms.base import BoundChoice, Measurement, StreamMechanism, StreamPlan
from dp_platform.plans import CampaignPlan
from dp_platform.privacy.noise import IntegerNoiseSource, NoiseSource
from dp_platform.registration import Registration, registered_campaign
from dp_platform.warehouse_binding import require_warehouse
from dp_platform.workload import answer_queries

if TYPE_CHECKING:
    from dp_platform.warehouse.base import WarehouseEngine

__all__ = [
    "CampaignAnswers",
    "answers_through",
    "bound_day",
    "campaign_days",
    "campaign_release",
    "clipped_day",
    "register_alone",
    "register_campaigns",
    "release_day",
]


def register_campaigns(
    catalogue: Catalogue,
    plans: dict[str, CampaignPlan],
    ledger: Ledger,
    *,
    advertiser_publishers: Callable[[str], list[str]],
    warehouse_identity: Callable[[], str],
    base_dir: str | Path | None = None,
) -> dict[str, Registration]:
    """Register every campaign of ``catalogue`` (reserve its plan, freeze its publisher keys) or
    check it against its registration; refuses an edited one (PlanMismatch) and one with
    per-user state bound to another warehouse (WarehouseMismatch). Name → registration.

    ``advertiser_publishers(advertiser)`` lists an advertiser's publishers in the warehouse; it
    is asked only for a new ``publishers: all`` campaign. ``warehouse_identity()`` is the
    home's warehouse identity, asked only for a campaign with per-user state.
    """
    return {
        campaign.name: registered_campaign(
            ledger,
            campaign,
            plans[campaign.name],
            catalogue.account(campaign.account),
            advertiser_publishers=lambda c=campaign: advertiser_publishers(c.advertiser),
            warehouse_identity=warehouse_identity,
            base_dir=base_dir,
        )
        for campaign in catalogue.campaigns
    }


def register_alone(
    campaign: CampaignConfig,
    account: AccountConfig,
    plan: CampaignPlan,
    ledger: Ledger,
    warehouse: WarehouseEngine,
    base_dir: str | Path | None = None,
) -> Registration:
    """Register ``campaign`` alone on its account in a throwaway run's ledger (a rehearsal, an
    audit run): its publisher keys are the warehouse's, its per-user state bound to it."""
    return register_campaigns(
        Catalogue(accounts=[account], campaigns=[campaign]),
        {campaign.name: plan},
        ledger,
        advertiser_publishers=warehouse.advertiser_publishers,
        warehouse_identity=lambda: warehouse.identity,
        base_dir=base_dir,
    )[campaign.name]


def stream_of(registration: Registration) -> tuple[StreamMechanism, StreamPlan]:
    """The campaign's daily mechanism and its registered plan."""
    plan, name = registration.plan.stream, registration.plan.mechanism
    if plan is None or name is None:
        raise ConfigError(f"campaign {registration.name} has no daily releases")
    return mechanisms.stream(name), plan


def bound_day(
    warehouse: WarehouseEngine,
    ledger: Ledger,
    registration: Registration,
    day: date,
    *,
    noise: NoiseSource | None = None,
) -> tuple[BoundChoice, bool]:
    """Day's private contribution bound r_i, chosen once (ledger) from the day's data."""
    campaign = registration.config
    mechanism, plan = stream_of(registration)
    index = campaign.day_index(day)
    stored = ledger.bound_choice(campaign.name, index, mechanism.chain)
    if stored is not None:  # fast path; the ledger re-checks under its lock anyway
        return stored, False
    require_warehouse(ledger, registration, lambda: warehouse.identity)

    def earlier_bounds() -> list[float]:
        bounds = []
        for number in range(1, index):
            choice = ledger.bound_choice(campaign.name, number, mechanism.chain)
            if choice is None:
                raise MissingPreviousDay(
                    f"campaign {campaign.name}: day {number} has no bound; day {index} needs it"
                )
            bounds.append(choice.bound)
        return bounds

    inputs = mechanism.bound_inputs(plan, campaign, day, warehouse, earlier_bounds)
    keys = len(registration.publishers)  # k: the frozen keys, public — never the data's
    return ledger.bound_for_day(
        campaign.name,
        index,
        mechanism.bound_charges(plan, index),
        lambda state: mechanism.choose_bound(plan, state, inputs, publishers=keys, noise=noise),
        mechanism.chain,
    )


def clipped_day(
    warehouse: WarehouseEngine, ledger: Ledger, registration: Registration, day: date
) -> np.ndarray:
    """The day's clipped per-publisher vector at its stored bound (true values: never shown).

    A mechanism with a per-user filter (AdsBPC+) also updates every user's spend here, once per
    day (a re-run returns the stored vector and leaves the spends alone) — only in the
    warehouse the campaign is bound to (refused, before reading anything, in any other).
    """
    campaign = registration.config
    mechanism, plan = stream_of(registration)
    require_warehouse(ledger, registration, lambda: warehouse.identity)
    choice = ledger.bound_choice(campaign.name, campaign.day_index(day), mechanism.chain)
    if choice is None:
        raise MissingPreviousDay(
            f"campaign {campaign.name}: {day} has no contribution bound yet; materialise "
            "contribution_bound for that day first"
        )
    clipped = np.asarray(mechanism.clip(plan, choice, warehouse, campaign, day), dtype=np.float64)
    fault_point("clip.written")
    return clipped


def release_day(
    warehouse: WarehouseEngine,
    ledger: Ledger,
    registration: Registration,
    day: date,
    *,
    noise: NoiseSource | None = None,
) -> tuple[Measurement, bool]:
    """Day's noisy per-publisher vector: the stored one, or drawn now exactly once."""
    campaign = registration.config
    mechanism, plan = stream_of(registration)
    index = campaign.day_index(day)
    stored = ledger.releases(campaign.name, through=index)
    if stored and stored[-1].day == index:
        return stored[-1], False
    clipped = clipped_day(warehouse, ledger, registration, day)
    publishers = registration.publishers
    layout = registration.layout
    cells = layout.size
    if cells != clipped.size:
        raise LedgerError(
            f"campaign {campaign.name}: {clipped.size} clipped values for {cells} released cells"
        )
    choice = ledger.bound_choice(campaign.name, index, mechanism.chain)
    assert choice is not None  # clipped_day needed it
    # write-once: days 1..d−1 cannot change once stored; the ledger requires day d−1 before
    # drawing day d, and a correlated mechanism checks it got every earlier day
    earlier = tuple(ledger.releases(campaign.name, through=index - 1))
    chain_state = ledger.bound_state(campaign.name, index, mechanism.chain)  # write-once too
    remainder = mechanism.remainder(plan, warehouse, campaign, day)  # a side series, if any

    def draw(stored_choice: BoundChoice) -> Measurement:
        # the declaration comes from the registered plan and the stored chain, not from the
        # computation that sizes the noise (dp_platform/privacy/allotment.py); the noise is
        # added to the cells as the strategy encodes them, and the stored release is decoded
        # (post-processing), so every reader sees cells
        allotment = mechanism.declare(plan, stored_choice, chain_state)
        measured = mechanism.measure(
            plan,
            stored_choice,
            layout.strategy.encode(clipped),
            allotment=allotment,
            noise=noise,
            earlier=tuple(encoded(layout, m) for m in earlier),
            remainder=remainder,
        )
        return decoded(layout, measured)

    return ledger.release_for_day(
        campaign.name,
        index,
        mechanism.release_charges(plan, choice),
        draw,
        publishers,
        mechanism.chain,
    )


def encoded(layout: CellLayout, release: Measurement) -> Measurement:
    """A stored release as its strategy measured it (what a correlated mechanism decodes from)."""
    values = layout.strategy.encode(np.asarray(release.values))
    return dataclasses.replace(release, values=tuple(values.tolist()))


def decoded(layout: CellLayout, release: Measurement) -> Measurement:
    """A fresh release's cells, decoded from what the strategy measured (post-processing)."""
    values = layout.strategy.decode(np.asarray(release.values))
    return dataclasses.replace(release, values=tuple(values.tolist()))


@dataclass(frozen=True)
class CampaignAnswers:
    """Answers to the campaign's queries from the releases of days 1..day (post-processing):
    per publisher, of its count (summed over a breakdown's cells, dp_platform/cells.py)."""

    day: int
    publishers: list[str]
    releases: list[Measurement]
    answers: dict[int, tuple[float, ...]]

    def totals(self) -> dict[int, float]:
        """Each answered query summed over publishers."""
        return {j: float(sum(values)) for j, values in self.answers.items()}


def answers_through(ledger: Ledger, registration: Registration, day: date) -> CampaignAnswers:
    """Query answers through ``day``, from stored releases only; every earlier day must exist."""
    campaign = registration.config
    _, plan = stream_of(registration)
    index = campaign.day_index(day)
    releases = ledger.releases(campaign.name, through=index)
    have = [r.day for r in releases]
    if have != list(range(1, index + 1)):
        missing = sorted(set(range(1, index + 1)) - set(have))
        raise MissingPreviousDay(
            f"campaign {campaign.name}: days {missing[:5]} have no release; cumulative answers "
            f"through day {index} need every day before it"
        )
    publishers = registration.publishers
    layout = registration.layout
    if releases and len(releases[0].values) != layout.size:
        raise LedgerError("the registered cells and stored releases disagree in length")
    counts = [publisher_counts(layout, r.values) for r in releases]
    answers = answer_queries(plan.queries, counts)
    return CampaignAnswers(day=index, publishers=publishers, releases=releases, answers=answers)


def campaign_days(campaign: CampaignConfig, through: date | None = None) -> list[date]:
    """The campaign's days in order, up to ``through`` (inclusive) if given."""
    last = campaign.end if through is None else min(through, campaign.end)
    if last < campaign.start:
        raise ConfigError(f"campaign {campaign.name} starts on {campaign.start}, after {last}")
    return [campaign.start + timedelta(days=i) for i in range((last - campaign.start).days + 1)]


def campaign_release(
    warehouse: WarehouseEngine,
    ledger: Ledger,
    registration: Registration,
    name: str,
    *,
    noise: NoiseSource | None = None,
    integer_noise: IntegerNoiseSource | None = None,
) -> tuple[dict, bool]:
    """The campaign-level release ``name`` (one-shot, reach …): stored, or drawn once now."""
    campaign = registration.config
    plan = registration.plan.releases.get(name)
    if plan is None:
        raise ConfigError(f"campaign {campaign.name} has no {name} release")
    stored = ledger.campaign_releases(campaign.name).get(name)
    if stored is not None:
        return stored, False
    require_warehouse(ledger, registration, lambda: warehouse.identity)
    mechanism = mechanisms.campaign_level(name)

    def draw() -> dict:
        return mechanism.release(
            plan,
            warehouse,
            campaign,
            registration.publishers,
            allotment=mechanism.declare(plan, campaign),  # the registered plan's figures
            noise=noise,
            integer_noise=integer_noise,
        )

    return ledger.release_once(campaign.name, name, mechanism.charge(plan), draw)

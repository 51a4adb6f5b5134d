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

from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from dp_platform.config import CampaignConfig, Catalogue, ConfigError
from dp_platform.ledger import Ledger, LedgerError, MissingPreviousDay
from dp_platform.mechanisms.adsbpc import (
    AdsbpcPlan,
    BoundChoice,
    Measurement,
    answer_queries,
    choose_bound,
    measure,
)
from dp_platform.plans import CampaignPlan
from dp_platform.privacy.accounting import Rho
from dp_platform.privacy.noise import NoiseSource
from dp_platform.registration import Registration, registered_campaign

__all__ = [
    "CampaignAnswers",
    "answers_through",
    "bound_day",
    "campaign_days",
    "campaign_one_shot",
    "campaign_reach",
    "clipped_day",
    "register_campaigns",
    "release_day",
]


def register_campaigns(
    catalogue: Catalogue,
    plans: dict[str, CampaignPlan],
    ledger: Ledger,
    *,
    advertiser_publishers: Callable[[str], list[str]],
    base_dir: str | Path | None = None,
) -> dict[str, Registration]:
    """Register every campaign of ``catalogue`` (reserve its plan, freeze its publisher keys) or
    check it against its registration; refuses an edited one (PlanMismatch). Name → registration.

    ``advertiser_publishers(advertiser)`` lists an advertiser's publishers in the warehouse; it
    is asked only for a new ``publishers: all`` campaign.
    """
    return {
        campaign.name: registered_campaign(
            ledger,
            campaign,
            plans[campaign.name],
            catalogue.account(campaign.account),
            advertiser_publishers=lambda c=campaign: advertiser_publishers(c.advertiser),
            base_dir=base_dir,
        )
        for campaign in catalogue.campaigns
    }


def _bound_charges(plan: AdsbpcPlan, day: int) -> dict:
    return {part: rho for part, rho in plan.day_charge(day).items() if part != "gaussian"}


def _is_plus(plan) -> bool:
    """AdsBPC+ (mechanism: adsbpc_plus) has its own choice and state types and filter clip."""
    from dp_platform.mechanisms.adsbpc_plus import PlusPlan

    return isinstance(plan, PlusPlan)


def _types(plan) -> dict:
    if _is_plus(plan):
        from dp_platform.mechanisms.adsbpc_plus import PlusChoice, PlusState

        return {"choice_type": PlusChoice, "state_type": PlusState}
    return {}


def _stream(registration: Registration):  # AdsbpcPlan or adsbpc_plus.PlusPlan
    plan = registration.plan.stream
    if plan is None:
        raise ConfigError(f"campaign {registration.name} has no daily releases (mode: one_shot)")
    return plan


def bound_day(
    warehouse,  # dp_platform.warehouse.Warehouse (duck-typed so tests may pass a fake)
    ledger: Ledger,
    registration: Registration,
    day: date,
    *,
    noise: NoiseSource | None = None,
) -> tuple[Any, bool]:
    """Day's private contribution bound r_i, chosen once (ledger) from the day's histogram."""
    campaign, plan = registration.config, _stream(registration)
    index = campaign.day_index(day)
    types = _types(plan)
    stored = ledger.bound_choice(campaign.name, index, types.get("choice_type", BoundChoice))
    if stored is not None:  # fast path; the ledger re-checks under its lock anyway
        return stored, False
    histogram = np.asarray(warehouse.day_histogram(campaign, day), dtype=np.int64)
    if not _is_plus(plan):
        return ledger.bound_for_day(
            campaign.name,
            index,
            _bound_charges(plan, index),
            lambda state: choose_bound(plan, state, histogram, noise=noise),
        )
    from dp_platform.mechanisms import adsbpc_plus

    profile = None
    if plan.needs_profile(index):
        # T_u over days 1..m at their (public) bounds: the profile histogram of day m+1.
        earlier = campaign_days(campaign)[: index - 1]
        bounds = []
        for number in range(1, index):
            choice = ledger.bound_choice(campaign.name, number, types["choice_type"])
            if choice is None:
                raise MissingPreviousDay(
                    f"campaign {campaign.name}: day {number} has no bound; day {index} needs it"
                )
            bounds.append(choice.bound)
        profile = warehouse.plus_profile_histogram(
            campaign, earlier, bounds, list(adsbpc_plus.profile_factors(plan)), plan.config.cap
        )
    keys = len(registration.publishers)  # k: the frozen keys, public — never the data's
    return ledger.bound_for_day(
        campaign.name,
        index,
        plan.bound_charges(index),
        lambda state: adsbpc_plus.choose_bound(
            plan, state, histogram, publishers=keys, profile=profile, noise=noise
        ),
        **types,
    )


def clipped_day(warehouse, ledger: Ledger, registration: Registration, day: date) -> np.ndarray:
    """The day's clipped per-publisher vector at its stored bound (true values: never shown).

    For AdsBPC+ this is the filter clip at the registered filter cap, which also updates every
    user's spend in the warehouse, once per day (a re-run returns the stored vector and leaves
    the spends alone).
    """
    campaign, plan = registration.config, _stream(registration)
    index = campaign.day_index(day)
    types = _types(plan)
    choice = ledger.bound_choice(campaign.name, index, types.get("choice_type", BoundChoice))
    if choice is None:
        raise MissingPreviousDay(
            f"campaign {campaign.name}: {day} has no contribution bound yet; materialise "
            "contribution_bound for that day first"
        )
    if _is_plus(plan):
        vector = warehouse.plus_clipped_vector(
            campaign, day, choice.bound, choice.sigma, plan.filter_cap
        )
    else:
        vector = warehouse.clipped_vector(campaign, day, choice.bound)
    return np.asarray(vector, dtype=np.float64)


def release_day(
    warehouse,
    ledger: Ledger,
    registration: Registration,
    day: date,
    *,
    noise: NoiseSource | None = None,
) -> tuple[Measurement, bool]:
    """Day's noisy per-publisher vector: the stored one, or drawn now exactly once."""
    campaign, plan = registration.config, _stream(registration)
    index = campaign.day_index(day)
    stored = ledger.releases(campaign.name, through=index)
    if stored and stored[-1].day == index:
        return stored[-1], False
    clipped = clipped_day(warehouse, ledger, registration, day)
    publishers = registration.publishers
    if len(publishers) != clipped.size:
        raise LedgerError(
            f"campaign {campaign.name}: {clipped.size} clipped values for {len(publishers)} "
            "publishers"
        )
    if _is_plus(plan):
        from dp_platform.mechanisms import adsbpc_plus

        choice = ledger.bound_choice(campaign.name, index, _types(plan)["choice_type"])
        return ledger.release_for_day(
            campaign.name,
            index,
            {"gaussian": choice.gaussian},
            lambda c: adsbpc_plus.measure(plan, c, clipped, noise=noise),
            publishers,
            choice_type=_types(plan)["choice_type"],
        )
    gaussian = {"gaussian": plan.day_charge(index)["gaussian"]}
    return ledger.release_for_day(
        campaign.name,
        index,
        gaussian,
        lambda choice: measure(plan, choice, clipped, noise=noise),
        publishers,
    )


@dataclass(frozen=True)
class CampaignAnswers:
    """Answers to the campaign's queries from the releases of days 1..day (post-processing)."""

    day: int
    publishers: list[str]
    releases: list[Measurement]
    answers: dict[int, tuple[float, ...]]

    def totals(self) -> dict[int, float]:
        """Each answered query summed over publishers."""
        return {j: float(sum(values)) for j, values in self.answers.items()}


def answers_through(ledger: Ledger, registration: Registration, day: date) -> CampaignAnswers:
    """Query answers through ``day``, from stored releases only; every earlier day must exist."""
    campaign, plan = registration.config, _stream(registration)
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
    if releases and len(releases[0].values) != len(publishers):
        raise LedgerError("publisher list and stored releases disagree in length")
    answers = answer_queries(plan, [r.values for r in releases])
    return CampaignAnswers(day=index, publishers=publishers, releases=releases, answers=answers)


def campaign_days(campaign: CampaignConfig, through: date | None = None) -> list[date]:
    """The campaign's days in order, up to ``through`` (inclusive) if given."""
    last = campaign.end if through is None else min(through, campaign.end)
    if last < campaign.start:
        raise ConfigError(f"campaign {campaign.name} starts on {campaign.start}, after {last}")
    return [campaign.start + timedelta(days=i) for i in range((last - campaign.start).days + 1)]


def campaign_one_shot(
    warehouse,
    ledger: Ledger,
    registration: Registration,
    *,
    noise=None,
    integer_noise=None,
) -> tuple[dict, bool]:
    """The campaign's one-shot Laplace release (mode: one_shot), drawn once (ledger)."""
    from dp_platform.mechanisms import oneshot

    campaign, plan = registration.config, registration.plan
    if plan.one_shot is None:
        raise ConfigError(f"campaign {campaign.name} is not configured with mode: one_shot")
    stored = ledger.campaign_releases(campaign.name).get("one_shot")
    if stored is not None:
        return stored, False
    for day in campaign_days(campaign):
        warehouse.attribute_day(campaign, day)
    sums = oneshot.warehouse_sums(warehouse, campaign, plan.one_shot)
    publishers = registration.publishers

    def draw() -> dict:
        release = oneshot.release_one_shot(
            sums, publishers, plan.one_shot, noise=noise, integer_noise=integer_noise
        )
        return release.to_json()

    return ledger.release_once(campaign.name, "one_shot", Rho(plan.one_shot.rho), draw)


def campaign_reach(
    warehouse, ledger: Ledger, registration: Registration, *, noise=None
) -> tuple[dict, bool]:
    """Reach and k+-frequency over the whole campaign (a ``reach:`` block), drawn once."""
    from dp_platform.mechanisms import reach

    campaign, plan = registration.config, registration.plan
    if plan.reach is None:
        raise ConfigError(f"campaign {campaign.name} has no reach: block")
    stored = ledger.campaign_releases(campaign.name).get("reach")
    if stored is not None:
        return stored, False
    histogram = reach.warehouse_histogram(warehouse, campaign, plan.reach.max_frequency)

    def draw() -> dict:
        return reach.release_reach(histogram, plan.reach, noise=noise).to_json()

    return ledger.release_once(campaign.name, "reach", Rho(plan.reach.rho), draw)

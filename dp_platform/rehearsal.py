"""A campaign's plan rehearsed on simulated events, through the same code as a real run.

``dp-platform simulate`` asks what a plan buys before any real data is touched. Rather than a
second, simplified implementation of each mechanism, it runs the campaign's registered
mechanism (whichever the registry names) day by day through :mod:`dp_platform.daily` — the
functions behind every Dagster asset — on events generated for it, in a throwaway home (DuckDB
warehouse and ledger in a temporary directory). The data is simulated, so its true answers may
be printed next to the noisy ones; the noise is the secure sampler's, as always.

The generated events use their own advertiser and publisher ids, so the rehearsed campaign is a
copy of the configured one with those ids (same dates, privacy, workload and mechanism). A
campaign with a breakdown gets events that carry its dimensions' columns — each conversion its
user's value of every conversion dimension, each impression a value of every impression
dimension, drawn from the public lists — and every conversion a log-normal order value, so its
cells (and the value measure) are rehearsed as they would run.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from pathlib import Path

import numpy as np

from dp_platform.cells import published_values, publisher_counts
from dp_platform.config import AccountConfig, CampaignConfig
from dp_platform.daily import (
    answers_through,
    bound_day,
    campaign_days,
    campaign_release,
    register_alone,
    release_day,
    stream_of,
)
from dp_platform.events import generate_campaign, write_events
from dp_platform.events.model import EventSet
from dp_platform.ledger import Ledger
from dp_platform.plans import campaign_plan
from dp_platform.privacy.accounting import Rho
from dp_platform.privacy.noise import NoiseSource
from dp_platform.registration import Registration
from dp_platform.warehouse import Warehouse
from dp_platform.warehouse.base import WarehouseEngine

__all__ = [
    "SIMULATED_ADVERTISER",
    "SIMULATED_PUBLISHERS",
    "Rehearsal",
    "RehearsedDay",
    "dimension_lists",
    "ingest_simulated",
    "rehearse",
    "simulated_events",
]

SIMULATED_ADVERTISER = "acme"  # the generator's first advertiser
SIMULATED_PUBLISHERS = 5  # a simulated population's publishers (rehearsal: for ``publishers: all``)


@dataclass(frozen=True)
class RehearsedDay:
    """One simulated day: the DP outputs, and the simulation's truth beside them. Totals are
    attributed conversions over every publisher (a campaign with cells: its count cells); with
    the value measure also the attributed value (each conversion's capped at ``value_cap``)."""

    day: int
    bound: float
    bound_method: str
    sigma: float
    noisy_total: float
    true_total: float
    query: int | None
    noisy_answer: float | None
    true_answer: float | None
    rho_charged: float
    noisy_value_total: float | None = None
    true_value_total: float | None = None


@dataclass(frozen=True)
class Rehearsal:
    campaign: str
    mechanism: str | None
    publishers: int
    rho_planned: float
    rho_spent: float
    days: list[RehearsedDay]
    campaign_level: dict[str, dict]
    cells_per_publisher: int = 1


def _publisher_count(campaign: CampaignConfig) -> int:
    if isinstance(campaign.publishers, list):
        return len(campaign.publishers)
    return SIMULATED_PUBLISHERS


def _truth(
    warehouse: Warehouse, registration: Registration, days: list[date], column: str = "weight"
) -> np.ndarray:
    """Unclipped per-publisher attributed sums, day × publisher (simulated data only):
    ``weight`` counts conversions, ``value`` sums weight × the value capped at value_cap.
    Every simulated event carries a listed value of each dimension, so all of it is in cells."""
    campaign = registration.config
    frame = warehouse.day_frame("attributed", campaign, days)
    if column == "value":
        values = warehouse.day_frame("conversions", campaign, days)
        capped = (
            values.set_index("conversion_id")["value"].fillna(0.0).clip(0.0, campaign.value_cap)
        )
        frame = frame.assign(value=frame["weight"] * frame["conversion_id"].map(capped))
    sums = frame.groupby(["day", "publisher_id"])[column].sum()
    table = sums.unstack(fill_value=0.0).reindex(
        index=days, columns=registration.publishers, fill_value=0.0
    )
    return table.to_numpy(dtype=np.float64)


def dimension_lists(campaign: CampaignConfig, source: str) -> dict[str, list[str]]:
    """The breakdown's dimensions read from ``source``'s events, with their public lists."""
    return {d.name: list(d.cell_values) for d in campaign.breakdown if d.source == source}


def simulated_events(
    campaign: CampaignConfig, *, users: int, publishers: int, data_seed: int
) -> EventSet:
    """Seeded events of ``users`` simulated users of :data:`SIMULATED_ADVERTISER` over the
    campaign's days and look-back (20 impressions and 2 conversions a user), each event
    carrying a listed value of every breakdown dimension of its file."""
    return generate_campaign(
        seed=data_seed,
        users=users,
        publishers=publishers,
        impressions=users * 20,
        conversions=users * 2,
        days=campaign.days,
        start=campaign.start,
        lookback_days=campaign.attribution.lookback_days,
        advertisers=(SIMULATED_ADVERTISER,),
        conversion_dimensions=dimension_lists(campaign, "conversions"),
        impression_dimensions=dimension_lists(campaign, "impressions"),
    )


def ingest_simulated(
    warehouse: WarehouseEngine, campaign: CampaignConfig, impressions: Path, conversions: Path
) -> None:
    """Ingest simulated event files with the campaign's dimensions, as of the day after its
    end: simulated events may lie in the future."""
    after = datetime.combine(campaign.end + timedelta(days=1), time(), tzinfo=UTC)
    warehouse.ingest(
        impressions,
        conversions,
        now=after,
        dimensions=dimension_lists(campaign, "conversions") or None,
        impression_dimensions=dimension_lists(campaign, "impressions") or None,
    )


def rehearse(
    campaign: CampaignConfig,
    account: AccountConfig,
    *,
    users: int,
    data_seed: int,
    base_dir: str | Path | None = None,
    noise: NoiseSource | None = None,
) -> Rehearsal:
    """Run ``campaign``'s plan over ``users`` simulated users (seed ``data_seed``)."""
    with tempfile.TemporaryDirectory(prefix="dp-rehearsal-") as scratch:
        root = Path(scratch)
        events = simulated_events(
            campaign, users=users, publishers=_publisher_count(campaign), data_seed=data_seed
        )
        files = write_events(events, root / "input")
        with (
            Warehouse(root / "warehouse.duckdb") as warehouse,
            Ledger(root / "ledger.db") as ledger,
        ):
            ingest_simulated(warehouse, campaign, files.impressions, files.conversions)
            publishers = warehouse.advertiser_publishers(SIMULATED_ADVERTISER)
            rehearsed = campaign.model_copy(
                update={"advertiser": SIMULATED_ADVERTISER, "publishers": publishers}
            )
            plan = campaign_plan(rehearsed, base_dir)
            registration = register_alone(rehearsed, account, plan, ledger, warehouse, base_dir)
            days = campaign_days(rehearsed)
            for day in days:
                warehouse.attribute_day(rehearsed, day)
            streaming = plan.stream is not None
            rows = _stream(warehouse, ledger, registration, days, noise) if streaming else []
            level = {
                name: campaign_release(warehouse, ledger, registration, name, noise=noise)[0]
                for name in plan.releases
            }
            spent = ledger.campaign_budget(rehearsed.name).spent
    return Rehearsal(
        campaign=campaign.name,
        mechanism=plan.mechanism,
        publishers=len(publishers),
        rho_planned=float(plan.total),
        rho_spent=float(spent),
        days=rows,
        campaign_level=level,
        cells_per_publisher=campaign.cells_per_publisher,
    )


def _stream(
    warehouse: Warehouse,
    ledger: Ledger,
    registration: Registration,
    days: list[date],
    noise: NoiseSource | None,
) -> list[RehearsedDay]:
    campaign = registration.config
    _, plan = stream_of(registration)
    ends = (plan.queries != 0)[:, ::-1].argmax(axis=1)
    ends = plan.queries.shape[1] - ends  # the last day each query reads
    truth = _truth(warehouse, registration, days)
    layout = registration.layout
    measures_value = "value" in layout.measures
    value_truth = _truth(warehouse, registration, days, "value") if measures_value else None
    rows = []
    for index, day in enumerate(days, start=1):
        warehouse.contributions_day(campaign, day)
        choice, _ = bound_day(warehouse, ledger, registration, day, noise=noise)
        release, _ = release_day(warehouse, ledger, registration, day, noise=noise)
        answers = answers_through(ledger, registration, day)
        ending = [j for j in answers.answers if ends[j] == index]
        query = ending[-1] if ending else None
        noisy_value = None
        if value_truth is not None:  # the value cells of the day, in published units
            published = published_values(layout, release.values)
            measure = np.tile(layout.measures, layout.size // len(layout.measures))
            noisy_value = float(published[measure == "value"].sum())
        rows.append(
            RehearsedDay(
                day=index,
                bound=release.bound,
                bound_method=choice.method,
                sigma=release.sigma,
                noisy_total=float(sum(publisher_counts(layout, release.values))),
                true_total=float(truth[index - 1].sum()),
                query=query,
                noisy_answer=None if query is None else float(sum(answers.answers[query])),
                true_answer=None
                if query is None
                else float(plan.queries[query, :index] @ truth[:index].sum(axis=1)),
                rho_charged=float(
                    sum([*choice.charges.values(), *release.charges.values()], Rho.zero())
                ),
                noisy_value_total=noisy_value,
                true_value_total=None
                if value_truth is None
                else float(value_truth[index - 1].sum()),
            )
        )
    return rows

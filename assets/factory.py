"""The asset factory: one campaign → its assets, jobs and schedules, as ``dg.Definitions``.

    raw_impressions ─┐
    raw_conversions ─┴► attributed_conversions ► user_day_contributions ─┬► contribution_bound ─┐
                                                                         │   (needs its day d−1) │
                                                                         └► clipped_daily_vector ◄┘
                                               noisy_daily_release (write-once, ledger) ◄──┘
                                               cumulative_query_answers (needs its day d−1)

Every daily asset loops over the run's partition keys in day order, so one run covers a range
(single-run backfill policy), and records each day's own metadata on that day's partition
(``context.add_asset_metadata(…, partition_key=day)``). Data assets run SQL in the warehouse;
the private steps go through the ledger, which draws each day once. Every asset past the raw
events works on the campaign as registered in the ledger (dp_platform/registration.py).

(No ``from __future__ import annotations`` here: Dagster reads the ``context`` and resource
annotations of asset functions at definition time.)
"""

import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path

import dagster as dg

from assets.checks import (
    ANSWERS,
    BOUND_CHAIN,
    SCHEMA,
    SPENT,
    CheckEvent,
    CheckSpec,
    answers_results,
    bound_chain_results,
    check_events,
    first_shown,
    first_shown_answer,
    schema_results,
    spent_results,
)
from assets.metadata import (
    LINEAGE_KEYS,
    answers_metadata,
    bound_metadata,
    day_metadata,
    lineage_metadata,
    release_metadata,
    run_metadata,
    shown_metadata,
)
from assets.partitions import (
    campaign_partitions,
    daily_job_name,
    final_job_name,
    keys_to_dates,
    previous_day,
)
from assets.resources import LedgerResource, WarehouseResource
from assets.schedules import daily_schedule, final_schedule
from dp_platform import mechanisms
from dp_platform.config import AccountConfig, CampaignConfig
from dp_platform.daily import (
    bound_day,
    campaign_release,
    clipped_day,
    release_day,
    stream_of,
)
from dp_platform.dimension_coverage import require_dimension_data
from dp_platform.errors import ConfigError
from dp_platform.ledger import Ledger
from dp_platform.plans import CampaignPlan
from dp_platform.privacy.noise import IntegerNoiseSource, NoiseSource
from dp_platform.publication import published_days
from dp_platform.registration import Registration, registered_campaign
from dp_platform.warehouse.base import WarehouseEngine


@dataclass(frozen=True)
class Marking:
    """Whether an asset may be shown to an advertiser, where a data engineer looks: a kind the
    lineage graph draws on the asset's node, and the ``privacy`` tag the catalogue filters by."""

    kind: str
    tags: dict[str, str]


PRIVATE = Marking("private", {"privacy": "private"})  # true values: never shown
RELEASE = Marking("released", {"privacy": "release"})  # DP outputs: safe to show an advertiser
Events = Iterator[CheckEvent | dg.MaterializeResult]


@dataclass(frozen=True)
class CampaignScope:
    """What every asset of one campaign shares (noise sources: tests only; None = secure)."""

    campaign: CampaignConfig
    plan: CampaignPlan
    account: AccountConfig
    base_dir: Path | None
    noise: NoiseSource | None = None
    integer_noise: IntegerNoiseSource | None = None
    warehouse_kind: str = "duckdb"  # the engine (catalogue.warehouse.engine), drawn on each node
    ledger_kind: str = "sqlite"  # the ledger's backend: ledger_backends.backend_name

    @property
    def name(self) -> str:
        return self.campaign.name

    def key(self, asset: str) -> dg.AssetKey:
        return dg.AssetKey([self.name, asset])

    def register(self, ledger: Ledger, warehouse: WarehouseEngine) -> Registration:
        """The campaign as registered (registering it on first use); refuses an edit."""
        return registered_campaign(
            ledger,
            self.campaign,
            self.plan,
            self.account,
            advertiser_publishers=lambda: warehouse.advertiser_publishers(self.campaign.advertiser),
            warehouse_identity=lambda: warehouse.identity,
            base_dir=self.base_dir,
        )


def _daily_asset(
    scope: CampaignScope,
    name: str,
    *,
    description: str,
    kinds: set[str],
    deps: list[dg.AssetDep],
    privacy: Marking,
    checks: tuple[CheckSpec, ...] = (),
):
    """Decorator of a daily asset: partitioned by campaign day, one run per range (single-run
    backfill policy), its checks partitioned too so each day gets its own result."""
    partitions = campaign_partitions(scope.campaign)
    key = scope.key(name)
    with warnings.catch_warnings():  # partitioned checks are "preview" in Dagster 1.13; used
        warnings.filterwarnings("ignore", message=".*partitions_def on an AssetCheckSpec.*")
        check_specs = [
            dg.AssetCheckSpec(
                check.name,
                asset=key,
                description=check.description,
                blocking=check.blocking,
                partitions_def=partitions,
            )
            for check in checks
        ]
    return dg.multi_asset(
        name=f"{scope.name}__{name}",
        specs=[
            dg.AssetSpec(
                key,
                description=description,
                deps=deps,
                kinds={*kinds, privacy.kind},
                tags=privacy.tags,
                group_name=scope.name,
                partitions_def=partitions,
            )
        ],
        check_specs=check_specs,
        partitions_def=partitions,
        backfill_policy=dg.BackfillPolicy.single_run(),
        can_subset=True,  # a run may select the asset without its checks (check_events)
    )


def _days(context: dg.AssetExecutionContext, campaign: CampaignConfig) -> list[date]:
    """The run's days in order; each partition gets its own day and the run's span."""
    days = keys_to_dates(context.partition_keys)
    for day in days:
        context.add_asset_metadata(
            {**run_metadata(days), **day_metadata(day, campaign.day_index(day))},
            partition_key=day.isoformat(),
        )
    return days


def _raw_events(scope: CampaignScope, asset: str, table: str, description: str):
    @_daily_asset(
        scope,
        asset,
        description=description,
        kinds={scope.warehouse_kind},
        deps=[],
        privacy=PRIVATE,
        checks=(SCHEMA,),
    )
    def raw_events(context: dg.AssetExecutionContext, warehouse: WarehouseResource) -> Events:
        days = _days(context, scope.campaign)
        with warehouse.open() as wh:
            results = schema_results(wh, table, scope.campaign, days)
        yield dg.MaterializeResult(asset_key=scope.key(asset))
        yield from check_events(context, scope.key(asset), SCHEMA, results)

    return raw_events


def _attributed(scope: CampaignScope):
    rule = scope.campaign.attribution
    key = scope.key("attributed_conversions")

    @_daily_asset(
        scope,
        "attributed_conversions",
        description=f"The day's conversions attributed by {rule.rule}, reading the impressions "
        f"of the day and of the {rule.lookback_days} days before (SQL in the warehouse). "
        "Private.",
        kinds={scope.warehouse_kind},
        # Day d depends on raw_impressions[d] only as far as Dagster knows: the look-back days
        # are read from the warehouse (loaded by `dp-platform ingest`), and declaring them
        # would make a backfill of days X..Y pull in every later day (docs/operators.md).
        deps=[dg.AssetDep(scope.key("raw_conversions")), dg.AssetDep(scope.key("raw_impressions"))],
        privacy=PRIVATE,
        checks=(SCHEMA,),
    )
    def attributed_conversions(
        context: dg.AssetExecutionContext, warehouse: WarehouseResource, ledger: LedgerResource
    ) -> Events:
        days = _days(context, scope.campaign)
        with warehouse.open() as wh, ledger.open() as led:
            require_dimension_data(wh, scope.campaign, days[0], days[-1])  # before registering
            registered = scope.register(led, wh).config
            # a run's partitions are one contiguous range: one range query, not one per day
            wh.attribute_days(registered, days[0], days[-1])
            results = schema_results(wh, "attributed", registered, days)
        yield dg.MaterializeResult(asset_key=key)
        yield from check_events(context, key, SCHEMA, results)

    return attributed_conversions


def _contributions(scope: CampaignScope):
    key = scope.key("user_day_contributions")

    @_daily_asset(
        scope,
        "user_day_contributions",
        description="Each user's attributed conversions of the day, per publisher, and the "
        "day's histogram of per-user counts (input of the private bound). Private.",
        kinds={scope.warehouse_kind},
        deps=[dg.AssetDep(scope.key("attributed_conversions"))],
        privacy=PRIVATE,
        checks=(SCHEMA,),
    )
    def user_day_contributions(
        context: dg.AssetExecutionContext, warehouse: WarehouseResource, ledger: LedgerResource
    ) -> Events:
        days = _days(context, scope.campaign)
        with warehouse.open() as wh, ledger.open() as led:
            registered = scope.register(led, wh).config
            wh.contributions_days(registered, days[0], days[-1])
            results = schema_results(wh, "contributions", registered, days)
        yield dg.MaterializeResult(asset_key=key)
        yield from check_events(context, key, SCHEMA, results)

    return user_day_contributions


def _bound(scope: CampaignScope):
    key = scope.key("contribution_bound")

    @_daily_asset(
        scope,
        "contribution_bound",
        description="The day's contribution bound r_i, chosen privately and stored once in the "
        "ledger with the chain's secret state. Needs the previous day's bound. The bound is a DP "
        "output; its inputs are private.",
        kinds={"python", scope.ledger_kind},
        deps=[
            dg.AssetDep(scope.key("user_day_contributions")),
            dg.AssetDep(key, partition_mapping=previous_day()),
        ],
        privacy=PRIVATE,
        checks=(BOUND_CHAIN,),
    )
    def contribution_bound(
        context: dg.AssetExecutionContext, warehouse: WarehouseResource, ledger: LedgerResource
    ) -> Events:
        days = _days(context, scope.campaign)
        with warehouse.open() as wh, ledger.open() as led:
            registration = scope.register(led, wh)
            for day in days:
                choice, drawn = bound_day(wh, led, registration, day, noise=scope.noise)
                context.add_asset_metadata(
                    bound_metadata(choice.bound, choice.method, choice.charges, drawn),
                    partition_key=day.isoformat(),
                )
            mechanism, plan = stream_of(registration)
            results = bound_chain_results(
                led,
                registration,
                days,
                mechanism.chain,
                lambda index: mechanism.bound_charges(plan, index),
            )
        yield dg.MaterializeResult(asset_key=key)
        yield from check_events(context, key, BOUND_CHAIN, results)

    return contribution_bound


def _clipped(scope: CampaignScope):
    key = scope.key("clipped_daily_vector")
    # A per-user filter (AdsBPC+) carries every user's spend from day to day: days in order.
    carries_spend = mechanisms.stream(scope.campaign.mechanism.kind).carries_spend

    @_daily_asset(
        scope,
        "clipped_daily_vector",
        description="Per-publisher sums after clipping every user's day to r_i (fractional, in "
        "conversion order). True values: never shown. Private.",
        kinds={scope.warehouse_kind},
        deps=[
            dg.AssetDep(scope.key("contribution_bound")),
            dg.AssetDep(scope.key("user_day_contributions")),
            *([dg.AssetDep(key, partition_mapping=previous_day())] if carries_spend else []),
        ],
        privacy=PRIVATE,
        checks=(SCHEMA,),
    )
    def clipped_daily_vector(
        context: dg.AssetExecutionContext, warehouse: WarehouseResource, ledger: LedgerResource
    ) -> Events:
        days = _days(context, scope.campaign)
        with warehouse.open() as wh, ledger.open() as led:
            registration = scope.register(led, wh)
            for day in days:
                clipped_day(wh, led, registration, day)
            results = schema_results(wh, "clipped", registration.config, days)
        yield dg.MaterializeResult(asset_key=key)
        yield from check_events(context, key, SCHEMA, results)

    return clipped_daily_vector


def _what_it_read(
    context: dg.AssetExecutionContext,
    key: dg.AssetKey,
    warehouse: WarehouseEngine,
    campaign: CampaignConfig,
    day: date,
    drawn_now: bool,
) -> dict[str, dg.MetadataValue]:
    """What the day's release read when it was drawn (``read_*``: metadata.lineage_metadata).

    Drawn now: the warehouse's record of the clip it was just drawn from (the same open
    warehouse, under its lock: nothing rebuilt it since). Drawn before: the values its first
    materialisation showed, copied — never the current records, which a later load and rebuild
    move on while the release stays the one drawn. Dagster keeps every materialisation, and
    only the run that draws a release shows ``drawn_now`` (the ledger draws each day once), so
    the first one is the draw's; a release drawn by a run that failed before it materialised
    shows nothing rather than the records of another build. Not kept in the ledger: the
    ledger is the privacy record, shared by every backend and the release journal, and these
    ids belong to the warehouse and its UI."""
    if drawn_now:
        return lineage_metadata(warehouse.release_inputs(campaign, day))
    first = first_shown(context.instance, key, day)
    return {label: value for label, value in first.items() if label in LINEAGE_KEYS}


def _release(scope: CampaignScope):
    key = scope.key("noisy_daily_release")

    @_daily_asset(
        scope,
        "noisy_daily_release",
        description="RELEASE. The day's noisy per-publisher counts x[i] + N(0, σ_i² I), drawn "
        "once and stored in the ledger; a re-run returns the stored release and spends nothing. "
        "Values are shown rounded to their noise; `dp-platform releases --json` has them exact.",
        kinds={"python", scope.ledger_kind},
        deps=[dg.AssetDep(scope.key("clipped_daily_vector"))],
        privacy=RELEASE,
        checks=(SPENT,),
    )
    def noisy_daily_release(
        context: dg.AssetExecutionContext, warehouse: WarehouseResource, ledger: LedgerResource
    ) -> Events:
        days = _days(context, scope.campaign)
        with warehouse.open() as wh, ledger.open() as led:
            registration = scope.register(led, wh)
            drawn, read = {}, {}
            for day in days:
                _, drawn[day] = release_day(wh, led, registration, day, noise=scope.noise)
                read[day] = _what_it_read(context, key, wh, registration.config, day, drawn[day])
            published = {p.day: p for p in published_days(led, scope.name)}
            for day in days:
                shown = release_metadata(published[registration.config.day_index(day)], drawn[day])
                context.add_asset_metadata({**shown, **read[day]}, partition_key=day.isoformat())
            results = spent_results(led, registration, scope.account, days)
        yield dg.MaterializeResult(asset_key=key)
        yield from check_events(context, key, SPENT, results)

    return noisy_daily_release


def _answers(scope: CampaignScope):
    key = scope.key("cumulative_query_answers")

    @_daily_asset(
        scope,
        "cumulative_query_answers",
        description="RELEASE. Answers to the advertiser's workload (e.g. prefix sums, sliding "
        "windows) from the stored noisy releases only: post-processing, costs nothing. Each "
        "day shows the query ending that day ± 2σ and a chart of all answers so far.",
        kinds={"python"},
        deps=[
            dg.AssetDep(scope.key("noisy_daily_release")),
            dg.AssetDep(key, partition_mapping=previous_day()),
        ],
        privacy=RELEASE,
        checks=(ANSWERS,),
    )
    def cumulative_query_answers(
        context: dg.AssetExecutionContext, warehouse: WarehouseResource, ledger: LedgerResource
    ) -> Events:
        days = _days(context, scope.campaign)
        shown = {day: first_shown_answer(context.instance, key, day) for day in days}
        with warehouse.open() as wh, ledger.open() as led:
            registration = scope.register(led, wh)
            results = answers_results(led, registration, days, shown)  # needs every earlier day
            history = published_days(led, scope.name)
        for day in days:
            index = registration.config.day_index(day)
            context.add_asset_metadata(
                answers_metadata(history[:index]), partition_key=day.isoformat()
            )
        yield dg.MaterializeResult(asset_key=key)
        yield from check_events(context, key, ANSWERS, results)

    return cumulative_query_answers


def _campaign_level(scope: CampaignScope, name: str) -> dg.AssetsDefinition:
    """A campaign-level release asset: after the last day, drawn once through the ledger."""
    mechanism = mechanisms.campaign_level(name)

    @dg.asset(
        name=mechanism.asset,
        key_prefix=[scope.name],
        group_name=scope.name,
        kinds={"python", scope.ledger_kind, RELEASE.kind},
        description=f"RELEASE. {mechanism.description}",
        deps=[dg.AssetDep(scope.key(mechanism.reads))],
        tags=RELEASE.tags,
    )
    def campaign_level(warehouse: WarehouseResource, ledger: LedgerResource):
        if datetime.now(UTC).date() <= scope.campaign.end:
            raise ConfigError(
                f"campaign {scope.name} runs until {scope.campaign.end}: its campaign-level "
                "releases cover the whole period and are drawn once, after the last day"
            )
        with warehouse.open() as wh, ledger.open() as led:
            payload, drawn = campaign_release(
                wh,
                led,
                scope.register(led, wh),
                name,
                noise=scope.noise,
                integer_noise=scope.integer_noise,
            )
        return dg.MaterializeResult(metadata=shown_metadata(mechanism.shown(payload), drawn))

    return campaign_level


def campaign_definitions(scope: CampaignScope) -> dg.Definitions:
    """All assets, jobs and schedules of one campaign.

    Daily (partitioned): the raw and attributed data and, for a streaming campaign, the chain
    down to the noisy release and the query answers. Campaign-level (one partition-less asset
    each, after the last day): the one-shot release and reach & frequency.
    """
    campaign = scope.campaign
    daily = [
        _raw_events(
            scope,
            "raw_impressions",
            "impressions",
            f"Impressions of advertiser {campaign.advertiser} on the day (loaded by "
            "`dp-platform ingest`; invalid rows are quarantined there). Private.",
        ),
        _raw_events(
            scope,
            "raw_conversions",
            "conversions",
            f"Conversions of advertiser {campaign.advertiser} on the day. Private.",
        ),
        _attributed(scope),
    ]
    if scope.plan.stream is not None:  # a daily mechanism (none when a release replaces it)
        daily += [_contributions(scope), _bound(scope), _clipped(scope)]
        daily += [_release(scope), _answers(scope)]
    job = dg.define_asset_job(
        daily_job_name(campaign.name),
        selection=dg.AssetSelection.assets(*daily),
        description=f"Materialise one day (or a range) of campaign {campaign.name}, in day order.",
    )
    jobs, schedules = [job], [daily_schedule(campaign, job)]
    final = [_campaign_level(scope, name) for name in scope.plan.releases]
    if final:
        final_job = dg.define_asset_job(
            final_job_name(campaign.name),
            selection=dg.AssetSelection.assets(*final),
            description=f"Campaign-level releases of {campaign.name}, once its last day is over.",
        )
        jobs.append(final_job)
        schedules.append(final_schedule(campaign, final_job))
    return dg.Definitions(assets=[*daily, *final], jobs=jobs, schedules=schedules)

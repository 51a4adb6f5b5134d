"""The asset factory: eight daily-partitioned assets per campaign (key prefix = campaign name).

    raw_impressions ─┐
    raw_conversions ─┴► attributed_conversions ► user_day_contributions ─┬► contribution_bound ─┐
                                                                         │   (needs its day d−1) │
                                                                         └► clipped_daily_vector ◄┘
                                               noisy_daily_release (write-once, ledger) ◄──┘
                                               cumulative_query_answers (needs its day d−1)

Every asset loops over the run's partition keys in day order, so one run can cover a backfill
range (single-run backfill policy). Data assets run SQL in the warehouse and return metadata,
never frames; the two private steps go through the ledger, which draws each day once.

(No ``from __future__ import annotations`` here: Dagster reads the ``context`` and resource
annotations of asset functions at definition time.)
"""

from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import dagster as dg

from assets.checks import schema_check_result, schema_check_specs
from assets.metadata import (
    answers_metadata,
    bound_metadata,
    one_shot_metadata,
    reach_metadata,
    release_metadata,
)
from assets.partitions import campaign_partitions, keys_to_dates, lookback, previous_day
from assets.resources import LedgerResource, WarehouseResource
from dp_platform.config import CampaignConfig, Catalogue, ConfigError
from dp_platform.daily import (
    answers_through,
    bound_day,
    campaign_one_shot,
    campaign_reach,
    clipped_day,
    release_day,
)
from dp_platform.ledger import Ledger
from dp_platform.plans import CampaignPlan
from dp_platform.privacy.noise import IntegerNoiseSource, NoiseSource
from dp_platform.registration import Registration, registered_campaign
from dp_platform.warehouse import Warehouse

WRITER_POOL = "dp_platform_writer"  # size 1 in dagster.yaml: one writer of DuckDB/ledger at a time
SPENT_CHECK = "spent_within_plan"


@dataclass(frozen=True)
class CampaignDefinitions:
    assets: list[dg.AssetsDefinition]
    jobs: list  # unresolved asset jobs (resolved by Definitions)
    schedules: list


def _summary(days: list[date]) -> dict[str, dg.MetadataValue]:
    return {
        "first_day": dg.MetadataValue.text(days[0].isoformat()),
        "last_day": dg.MetadataValue.text(days[-1].isoformat()),
        "days_in_run": dg.MetadataValue.int(len(days)),
    }


def _observe(context: dg.AssetExecutionContext, day: date, metadata: dict) -> None:
    """Per-day metadata when a run covers several days (a backfill range)."""
    context.log_event(
        dg.AssetObservation(
            asset_key=context.asset_key, partition=day.isoformat(), metadata=metadata
        )
    )


def build_campaign(
    campaign: CampaignConfig,
    campaign_plan: CampaignPlan,
    catalogue: Catalogue,
    *,
    base_dir: str | Path | None = None,
    noise: NoiseSource | None = None,
    integer_noise: IntegerNoiseSource | None = None,
) -> CampaignDefinitions:
    """All assets, jobs and schedules of one campaign.

    Daily (partitioned): the raw and attributed data and, for a streaming campaign, the chain
    down to the noisy release and the query answers. Campaign-level (one partition-less asset
    each, after the last day): the one-shot release (``mode: one_shot``) and reach & frequency
    (a ``reach:`` block). ``noise``/``integer_noise`` are for tests only (explicit seeded
    sources); production leaves them None: OpenDP's secure samplers.

    Every asset past the raw events works on the campaign as *registered* in the ledger (its
    first materialisation registers it): the YAML only registers and is compared, and an edited
    campaign is refused before anything is drawn, clipped or charged.
    """
    name = campaign.name
    plan = campaign_plan.stream
    partitions = campaign_partitions(campaign)
    common = {
        "key_prefix": [name],
        "group_name": name,
        "partitions_def": partitions,
        "backfill_policy": dg.BackfillPolicy.single_run(),
    }

    def key(asset: str) -> dg.AssetKey:
        return dg.AssetKey([name, asset])

    def register(ledger: Ledger, warehouse: Warehouse) -> Registration:
        return registered_campaign(
            ledger,
            campaign,
            campaign_plan,
            catalogue.account(campaign.account),
            advertiser_publishers=lambda: warehouse.advertiser_publishers(campaign.advertiser),
            base_dir=base_dir,
        )

    @dg.asset(
        name="raw_impressions",
        kinds={"duckdb"},
        description=f"Impressions of advertiser {campaign.advertiser} on the day (loaded by "
        "`dp-platform ingest`; invalid rows are quarantined there). Private.",
        check_specs=schema_check_specs(key("raw_impressions")),
        pool=WRITER_POOL,
        **common,
    )
    def raw_impressions(context: dg.AssetExecutionContext, warehouse: WarehouseResource):
        days = keys_to_dates(context.partition_keys)
        with warehouse.open() as wh:
            check = schema_check_result(wh, "impressions", campaign, days)
        return dg.MaterializeResult(metadata=_summary(days), check_results=[check])

    @dg.asset(
        name="raw_conversions",
        kinds={"duckdb"},
        description=f"Conversions of advertiser {campaign.advertiser} on the day. Private.",
        check_specs=schema_check_specs(key("raw_conversions")),
        pool=WRITER_POOL,
        **common,
    )
    def raw_conversions(context: dg.AssetExecutionContext, warehouse: WarehouseResource):
        days = keys_to_dates(context.partition_keys)
        with warehouse.open() as wh:
            check = schema_check_result(wh, "conversions", campaign, days)
        return dg.MaterializeResult(metadata=_summary(days), check_results=[check])

    rule = campaign.attribution

    @dg.asset(
        name="attributed_conversions",
        kinds={"duckdb"},
        description=f"The day's conversions attributed by {rule.rule} with a "
        f"{rule.lookback_days}-day look-back (SQL in the warehouse). Private.",
        deps=[
            dg.AssetDep(key("raw_conversions")),
            dg.AssetDep(key("raw_impressions"), partition_mapping=lookback(rule.lookback_days)),
        ],
        check_specs=schema_check_specs(key("attributed_conversions")),
        pool=WRITER_POOL,
        **common,
    )
    def attributed_conversions(
        context: dg.AssetExecutionContext, warehouse: WarehouseResource, ledger: LedgerResource
    ):
        days = keys_to_dates(context.partition_keys)
        with warehouse.open() as wh, ledger.open() as led:
            registered = register(led, wh).config
            # a run's partitions are one contiguous range: one range query, not one per day
            wh.attribute_days(registered, days[0], days[-1])
            check = schema_check_result(wh, "attributed", registered, days)
        return dg.MaterializeResult(metadata=_summary(days), check_results=[check])

    data_assets = [raw_impressions, raw_conversions, attributed_conversions]
    if plan is None:
        stream_assets: list = []
    else:
        stream_assets = _stream_assets(campaign, common, key, register, noise=noise)
    final_assets = _campaign_level_assets(
        campaign, campaign_plan, key, register, noise=noise, integer_noise=integer_noise
    )
    job = dg.define_asset_job(
        f"{name}_daily",
        selection=dg.AssetSelection.assets(*data_assets, *stream_assets),
        description=f"Materialise one day (or a range) of campaign {name}, in day order.",
    )
    schedule = _daily_schedule(campaign, job)
    jobs, schedules = [job], [schedule]
    if final_assets:
        final_job = dg.define_asset_job(
            f"{name}_final",
            selection=dg.AssetSelection.assets(*final_assets),
            description=f"Campaign-level releases of {name}, once its last day is complete.",
        )
        jobs.append(final_job)
        schedules.append(_final_schedule(campaign, final_job))
    return CampaignDefinitions(
        assets=[*data_assets, *stream_assets, *final_assets], jobs=jobs, schedules=schedules
    )


def _daily_schedule(campaign: CampaignConfig, job) -> dg.ScheduleDefinition:
    """02:00 UTC: the previous day, while it is a campaign day (skips before and after)."""

    @dg.schedule(
        name=f"{campaign.name}_daily_0200_utc",
        cron_schedule="0 2 * * *",
        execution_timezone="UTC",
        job=job,
        default_status=dg.DefaultScheduleStatus.RUNNING,
        description=f"02:00 UTC: materialise the previous day of campaign {campaign.name} "
        f"({campaign.start} .. {campaign.end}).",
    )
    def daily(context: dg.ScheduleEvaluationContext):
        yesterday = context.scheduled_execution_time.date() - timedelta(days=1)
        if not campaign.start <= yesterday <= campaign.end:
            return dg.SkipReason(f"{yesterday} is not a day of campaign {campaign.name}")
        key = yesterday.isoformat()
        return dg.RunRequest(run_key=f"{campaign.name}-{key}", partition_key=key)

    return daily


def _final_schedule(campaign: CampaignConfig, job) -> dg.ScheduleDefinition:
    """03:00 UTC daily; asks for the campaign-level run once, the first night after the end."""

    @dg.schedule(
        name=f"{campaign.name}_final_0300_utc",
        cron_schedule="0 3 * * *",
        execution_timezone="UTC",
        job=job,
        default_status=dg.DefaultScheduleStatus.RUNNING,
        description=f"After {campaign.end}: the campaign-level releases of {campaign.name}.",
    )
    def final(context: dg.ScheduleEvaluationContext):
        today = context.scheduled_execution_time.date()
        if today <= campaign.end:
            return dg.SkipReason(f"campaign {campaign.name} runs until {campaign.end}")
        return dg.RunRequest(run_key=f"{campaign.name}-final")  # once: run keys dedupe

    return final


def _campaign_level_assets(
    campaign: CampaignConfig,
    campaign_plan: CampaignPlan,
    key,
    register,
    *,
    noise: NoiseSource | None,
    integer_noise: IntegerNoiseSource | None,
) -> list[dg.AssetsDefinition]:
    name = campaign.name
    assets: list[dg.AssetsDefinition] = []

    def require_ended() -> None:
        if datetime.now(UTC).date() <= campaign.end:
            raise ConfigError(
                f"campaign {name} runs until {campaign.end}: its campaign-level releases cover "
                "the whole period and are drawn once, after the last day"
            )

    def final_asset(asset: str, upstream: str, description: str, release, metadata):
        """A campaign-level release asset: after the last day, drawn once through the ledger."""

        @dg.asset(
            name=asset,
            key_prefix=[name],
            group_name=name,
            kinds={"python", "sqlite"},
            description=description,
            deps=[dg.AssetDep(key(upstream))],
            pool=WRITER_POOL,
        )
        def campaign_level(warehouse: WarehouseResource, ledger: LedgerResource):
            require_ended()
            with warehouse.open() as wh, ledger.open() as led:
                payload, drawn = release(wh, led, register(led, wh))
            return dg.MaterializeResult(metadata=metadata(payload, drawn))

        return campaign_level

    if campaign_plan.one_shot is not None:
        assets.append(
            final_asset(
                "one_shot_release",
                "attributed_conversions",
                "RELEASE. The whole period's attributed conversions per publisher with Laplace "
                "noise of scale C0·r·Δ(f)/ε (mode: one_shot), drawn once (ledger).",
                lambda wh, led, reg: campaign_one_shot(
                    wh, led, reg, noise=noise, integer_noise=integer_noise
                ),
                one_shot_metadata,
            )
        )
    if campaign_plan.reach is not None:
        assets.append(
            final_asset(
                "reach_and_frequency",
                "raw_impressions",
                "RELEASE. How many users saw the campaign's ads, and how many at least k times, "
                "over the whole period (noisy histogram; own ρ on the account).",
                lambda wh, led, reg: campaign_reach(wh, led, reg, noise=integer_noise),
                reach_metadata,
            )
        )
    return assets


def _stream_assets(campaign: CampaignConfig, common: dict, key, register, *, noise):
    """The daily chain from per-user contributions to the noisy release and query answers."""
    name = campaign.name

    @dg.asset(
        name="user_day_contributions",
        kinds={"duckdb"},
        description="Each user's attributed conversions of the day, per publisher, and the "
        "day's histogram of per-user counts (input of the private bound). Private.",
        deps=[dg.AssetDep(key("attributed_conversions"))],
        check_specs=schema_check_specs(key("user_day_contributions")),
        pool=WRITER_POOL,
        **common,
    )
    def user_day_contributions(
        context: dg.AssetExecutionContext, warehouse: WarehouseResource, ledger: LedgerResource
    ):
        days = keys_to_dates(context.partition_keys)
        with warehouse.open() as wh, ledger.open() as led:
            registered = register(led, wh).config
            wh.contributions_days(registered, days[0], days[-1])
            check = schema_check_result(wh, "contributions", registered, days)
        return dg.MaterializeResult(metadata=_summary(days), check_results=[check])

    @dg.asset(
        name="contribution_bound",
        kinds={"python", "sqlite"},
        description="The day's contribution bound r_i, chosen privately (PrivateQuantile for "
        f"the first {campaign.bounds.quantile_days} days, sparse-vector test after) and stored "
        "once in the ledger with the secret SVT state. Needs the previous day's bound.",
        deps=[
            dg.AssetDep(key("user_day_contributions")),
            dg.AssetDep(key("contribution_bound"), partition_mapping=previous_day()),
        ],
        pool=WRITER_POOL,
        **common,
    )
    def contribution_bound(
        context: dg.AssetExecutionContext, warehouse: WarehouseResource, ledger: LedgerResource
    ):
        days = keys_to_dates(context.partition_keys)
        metadata: dict = {}
        with warehouse.open() as wh, ledger.open() as led:
            registration = register(led, wh)
            for day in days:
                choice, drawn = bound_day(wh, led, registration, day, noise=noise)
                metadata = bound_metadata(choice, drawn)
                if len(days) > 1:
                    _observe(context, day, metadata)
        return dg.MaterializeResult(metadata={**_summary(days), **metadata})

    @dg.asset(
        name="clipped_daily_vector",
        kinds={"duckdb"},
        description="Per-publisher sums after clipping every user's day to r_i (fractional, in "
        "conversion order). True values: never shown. Private.",
        deps=[
            dg.AssetDep(key("contribution_bound")),
            dg.AssetDep(key("user_day_contributions")),
            # AdsBPC+'s filter carries every user's spend from day to day: days run in order.
            *(
                [dg.AssetDep(key("clipped_daily_vector"), partition_mapping=previous_day())]
                if campaign.mechanism == "adsbpc_plus"
                else []
            ),
        ],
        check_specs=schema_check_specs(key("clipped_daily_vector")),
        pool=WRITER_POOL,
        **common,
    )
    def clipped_daily_vector(
        context: dg.AssetExecutionContext, warehouse: WarehouseResource, ledger: LedgerResource
    ):
        days = keys_to_dates(context.partition_keys)
        with warehouse.open() as wh, ledger.open() as led:
            registration = register(led, wh)
            for day in days:
                clipped_day(wh, led, registration, day)
            check = schema_check_result(wh, "clipped", registration.config, days)
        return dg.MaterializeResult(metadata=_summary(days), check_results=[check])

    @dg.asset(
        name="noisy_daily_release",
        kinds={"python", "sqlite"},
        description="RELEASE. The day's noisy per-publisher counts x[i] + N(0, σ_i² I), drawn "
        "once and stored in the ledger; a re-run returns the stored release and spends nothing.",
        deps=[dg.AssetDep(key("clipped_daily_vector"))],
        check_specs=[
            dg.AssetCheckSpec(
                SPENT_CHECK,
                asset=key("noisy_daily_release"),
                description="ρ spent by the campaign is at most its plan (and the plan is within "
                "the account's cap).",
            )
        ],
        pool=WRITER_POOL,
        **common,
    )
    def noisy_daily_release(
        context: dg.AssetExecutionContext, warehouse: WarehouseResource, ledger: LedgerResource
    ):
        days = keys_to_dates(context.partition_keys)
        metadata: dict = {}
        with warehouse.open() as wh, ledger.open() as led:
            registration = register(led, wh)
            for day in days:
                release, drawn = release_day(wh, led, registration, day, noise=noise)
                budget = led.campaign_budget(name)
                metadata = release_metadata(release, budget, registration.publishers, drawn)
                if len(days) > 1:
                    _observe(context, day, metadata)
            budget = led.campaign_budget(name)
        spent_ok = budget.spent <= budget.planned
        check = dg.AssetCheckResult(
            check_name=SPENT_CHECK,
            passed=bool(spent_ok),
            metadata={
                "rho_planned": float(budget.planned),
                "rho_spent": float(budget.spent),
            },
        )
        return dg.MaterializeResult(metadata={**_summary(days), **metadata}, check_results=[check])

    @dg.asset(
        name="cumulative_query_answers",
        kinds={"python"},
        description="RELEASE. Answers to the advertiser's workload (e.g. prefix sums, sliding "
        "windows) from the stored noisy releases only: post-processing, costs nothing.",
        deps=[
            dg.AssetDep(key("noisy_daily_release")),
            dg.AssetDep(key("cumulative_query_answers"), partition_mapping=previous_day()),
        ],
        **common,
    )
    def cumulative_query_answers(
        context: dg.AssetExecutionContext, warehouse: WarehouseResource, ledger: LedgerResource
    ):
        days = keys_to_dates(context.partition_keys)
        with warehouse.open() as wh, ledger.open() as led:
            registration = register(led, wh)
            answers = answers_through(led, registration, days[-1])
        metadata = answers_metadata(registration.plan.stream, answers)
        return dg.MaterializeResult(metadata={**_summary(days), **metadata})

    return [
        user_day_contributions,
        contribution_bound,
        clipped_daily_vector,
        noisy_daily_release,
        cumulative_query_answers,
    ]

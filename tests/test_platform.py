"""The Dagster platform end to end: order, equality with the library, write-once, refusals."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import dagster as dg
import numpy as np
import pytest

from assets.definitions import build_definitions
from assets.partitions import daily_job_name
from assets.runner import run_campaigns
from dp_platform.config_loader import load_catalogue
from dp_platform.daily import campaign_days
from dp_platform.display import round_to_noise, significant
from dp_platform.ledger import BudgetExceeded, Ledger, MissingPreviousDay
from dp_platform.mechanisms.adsbpc import initial_state, make_plan, step
from dp_platform.warehouse import Warehouse
from tests.platform_fixtures import (
    DAILY_ASSETS,
    DAYS,
    START,
    PlusRoutedNoise,
    RoutedNoise,
    catalogue,
    copy_home,
    make_home,
)

TODAY = date(2026, 11, 22)  # every campaign day is complete, whatever the wall clock says


@pytest.fixture(scope="module")
def prepared(tmp_path_factory):
    return make_home(tmp_path_factory.mktemp("prepared") / "home")


@pytest.fixture
def home(prepared, tmp_path):
    return copy_home(prepared, tmp_path / "home")


def releases(home) -> list:
    with Ledger.at_home(home.root) as ledger:
        return ledger.releases("spring")


def spent(home):
    with Ledger.at_home(home.root) as ledger:
        return ledger.campaign_budget("spring")


def test_31_days_in_one_backfill_equal_the_library_run_directly(home, tmp_path) -> None:
    direct_home = copy_home(home, tmp_path / "direct")
    instance = dg.DagsterInstance.ephemeral()
    runs = run_campaigns(
        home.root / "campaigns.yaml",
        home.root,
        noise=RoutedNoise(11, 12),
        instance=instance,
        today=TODAY,
    )
    assert [len(r.days) for r in runs] == [DAYS]  # one single-run backfill of 31 days
    via_dagster = releases(home)
    assert [r.day for r in via_dagster] == list(range(1, DAYS + 1))

    config = load_catalogue(direct_home.root / "campaigns.yaml")
    campaign = config.campaign("spring")
    plan = make_plan(campaign)
    noise = RoutedNoise(11, 12)
    state = initial_state()
    with Warehouse(direct_home.warehouse) as warehouse:
        for day, stored in zip(campaign_days(campaign), via_dagster, strict=True):
            warehouse.attribute_day(campaign, day)
            warehouse.contributions_day(campaign, day)
            histogram = warehouse.day_histogram(campaign, day)

            def clip(bound, day=day):
                return warehouse.clipped_vector(campaign, day, bound)

            release, state = step(plan, state, histogram, clip, noise=noise)
            assert (release.bound, release.sigma) == (stored.bound, stored.sigma)
            assert release.values == stored.values
    budget = spent(home)
    assert budget.spent == plan.budget.total == state.spent
    materialized = instance.get_materialized_partitions(
        dg.AssetKey(["spring", "noisy_daily_release"])
    )
    assert len(materialized) == DAYS


def test_rematerialising_days_returns_stored_releases_and_charges_nothing(home) -> None:
    instance = dg.DagsterInstance.ephemeral()
    config = home.root / "campaigns.yaml"
    run_campaigns(config, home.root, instance=instance, today=TODAY, through=START + timedelta(9))
    before, budget_before = releases(home), spent(home)
    definitions = build_definitions(config, home.root)
    job = definitions.resolve_job_def(daily_job_name("spring"))
    again = job.execute_in_process(instance=instance, partition_key="2026-03-05")
    assert again.success
    backfill = job.execute_in_process(
        instance=instance,
        tags={
            "dagster/asset_partition_range_start": "2026-03-03",
            "dagster/asset_partition_range_end": "2026-03-07",
        },
    )
    assert backfill.success
    assert releases(home) == before
    assert spent(home) == budget_before
    events = instance.get_latest_materialization_event(
        dg.AssetKey(["spring", "noisy_daily_release"])
    )
    assert events.asset_materialization.metadata["drawn_now"].value is False


def test_day_without_its_previous_day_fails_and_releases_nothing(home) -> None:
    instance = dg.DagsterInstance.ephemeral()
    definitions = build_definitions(home.root / "campaigns.yaml", home.root)
    job = definitions.resolve_job_def(daily_job_name("spring"))
    with pytest.raises(Exception) as failure:
        job.execute_in_process(instance=instance, partition_key="2026-03-03")
    assert "day 2 has no contribution bound" in str(failure.value) + repr(failure.value.__cause__)
    assert releases(home) == []
    assert spent(home).per_day == {}


def test_run_reports_a_missing_previous_day_as_a_ledger_error(home) -> None:
    instance = dg.DagsterInstance.ephemeral()
    definitions = build_definitions(home.root / "campaigns.yaml", home.root)
    job = definitions.resolve_job_def(daily_job_name("spring"))
    result = job.execute_in_process(
        instance=instance, partition_key="2026-03-02", raise_on_error=False
    )
    assert not result.success
    failure = next(e for e in result.all_events if e.is_step_failure)
    assert MissingPreviousDay.__name__ in str(failure.step_failure_data.error)


def test_campaign_over_the_cap_is_refused_before_any_release(prepared, tmp_path) -> None:
    two = [
        {**catalogue()["campaigns"][0], "name": "first", "privacy": {"rho": 0.7}},
        {**catalogue()["campaigns"][0], "name": "second", "privacy": {"rho": 0.7}},
    ]
    home = copy_home(prepared, tmp_path / "capped")
    import yaml

    (home.root / "campaigns.yaml").write_text(yaml.safe_dump(catalogue(1.0, two)))
    with pytest.raises(
        BudgetExceeded, match=r"second needs ρ = 0.7 but account acme-users has 0.3"
    ):
        run_campaigns(
            home.root / "campaigns.yaml",
            home.root,
            instance=dg.DagsterInstance.ephemeral(),
            today=TODAY,
        )
    with Ledger.at_home(home.root) as ledger:
        assert ledger.releases("first") == []
        assert ledger.budget_report()["accounts"]["acme-users"]["spent"] == 0


def test_definitions_schedules_and_policies(home) -> None:
    definitions = build_definitions(home.root / "campaigns.yaml", home.root)
    dg.Definitions.validate_loadable(definitions)
    graph = definitions.resolve_asset_graph()
    keys = {k.path[-1] for k in graph.get_all_asset_keys()}
    assert keys == set(DAILY_ASSETS)
    for key in graph.get_all_asset_keys():
        node = graph.get(key)
        assert node.backfill_policy == dg.BackfillPolicy.single_run()
        assert node.group_name == "spring"
    bound = graph.get(dg.AssetKey(["spring", "contribution_bound"]))
    assert dg.AssetKey(["spring", "contribution_bound"]) in bound.parent_keys  # day d−1
    schedule = definitions.resolve_schedule_def("spring_daily_0200_utc")
    # ticks only on the day after each campaign day: 2026-03-02 .. 2026-04-01, 02:00 UTC
    assert schedule.cron_schedule == ["0 2 2-31 3 *", "0 2 1 4 *"]
    assert schedule.job_name == daily_job_name("spring")
    assert schedule.default_status == dg.DefaultScheduleStatus.STOPPED  # over by now
    assert schedule.execution_timezone in (None, "UTC")
    tick = datetime(2026, 3, 6, 2, 0, tzinfo=UTC)
    repository = definitions.get_repository_def()
    context = dg.build_schedule_context(scheduled_execution_time=tick, repository_def=repository)
    requests = schedule.evaluate_tick(context).run_requests
    assert [r.partition_key for r in requests] == ["2026-03-05"]  # yesterday, UTC
    after = dg.build_schedule_context(
        scheduled_execution_time=datetime(2026, 4, 2, 2, tzinfo=UTC), repository_def=repository
    )
    assert schedule.evaluate_tick(after).run_requests == []  # the campaign is over: skip


def test_dagster_metadata_of_releases_is_dp_only(home) -> None:
    instance = dg.DagsterInstance.ephemeral()
    config = home.root / "campaigns.yaml"
    run_campaigns(config, home.root, instance=instance, today=TODAY, through=START)
    event = instance.get_latest_materialization_event(
        dg.AssetKey(["spring", "noisy_daily_release"])
    )
    metadata = event.asset_materialization.metadata
    release = releases(home)[0]
    total_std = release.sigma * len(release.values) ** 0.5
    assert metadata["bound_r"].value == significant(release.bound)
    assert metadata["sigma"].value == significant(release.sigma)
    assert metadata["noisy_total"].value == round_to_noise(sum(release.values), total_std)
    assert metadata["rho_remaining"].value == significant(float(spent(home).remaining), 4)
    answers = instance.get_latest_materialization_event(
        dg.AssetKey(["spring", "cumulative_query_answers"])
    ).asset_materialization.metadata
    assert answers["chart"].value.startswith("![answers ±2σ](data:image/svg+xml,")
    assert len(answers["chart"].value) < 1000  # short enough for the UI to draw it inline
    assert np.isfinite(answers["answer"].value)


def test_one_shot_and_reach_are_released_once_through_dagster(prepared, tmp_path) -> None:
    import yaml

    from dp_platform.mechanisms import oneshot, reach
    from dp_platform.privacy.noise import SeededIntegerNoise, SeededNoise

    base = catalogue()["campaigns"][0]
    campaigns = [
        {
            **base,
            "name": "once",
            "mode": "one_shot",
            "privacy": {"rho": 0.5},
            "one_shot": {"bound": 3, "noise": "discrete_laplace"},
            "reach": {"rho": 0.1},
        },
        {
            **base,
            "name": "daily",
            "privacy": {"rho": 0.6},
            "reach": {"rho": 0.1, "max_frequency": 5},
        },
    ]
    home = copy_home(prepared, tmp_path / "final")
    (home.root / "campaigns.yaml").write_text(yaml.safe_dump(catalogue(2.0, campaigns)))
    config = home.root / "campaigns.yaml"
    instance = dg.DagsterInstance.ephemeral()
    run_campaigns(
        config,
        home.root,
        instance=instance,
        today=TODAY,
        noise=SeededNoise(1),
        integer_noise=SeededIntegerNoise(2),
    )
    with Ledger.at_home(home.root) as ledger:
        once = ledger.campaign_releases("once")
        daily = ledger.campaign_releases("daily")
        report = ledger.budget_report()
        assert ledger.releases("once") == []  # one-shot mode has no daily releases
        assert len(ledger.releases("daily")) == DAYS
    assert set(once) == {"one_shot", "reach"} and set(daily) == {"reach"}
    loaded = load_catalogue(config)
    one_shot_plan = oneshot.plan_from_config(loaded.campaign("once"))
    assert once["one_shot"]["rho_exact"] == str(one_shot_plan.rho)
    assert all(float(v) == int(v) for v in once["one_shot"]["values"].values())  # integer noise
    assert report["campaigns"]["once"]["spent"] == pytest.approx(float(one_shot_plan.rho) + 0.1)
    assert report["campaigns"]["daily"]["spent"] == pytest.approx(0.7)
    reach_plan = reach.plan_from_config(loaded.campaign("daily"))
    assert len(daily["reach"]["at_least"]) == reach_plan.max_frequency

    again = run_campaigns(
        config,
        home.root,
        instance=instance,
        today=TODAY,
        noise=SeededNoise(9),
        integer_noise=SeededIntegerNoise(9),
    )
    assert all(not r.days for r in again if r.campaign == "daily")
    with Ledger.at_home(home.root) as ledger:
        assert ledger.campaign_releases("once") == once  # stored, not redrawn
        assert ledger.budget_report() == report
    event = instance.get_latest_materialization_event(dg.AssetKey(["once", "one_shot_release"]))
    metadata = event.asset_materialization.metadata
    std = once["one_shot"]["std"] * len(once["one_shot"]["values"]) ** 0.5
    assert metadata["noisy_total"].value == round_to_noise(once["one_shot"]["total"], std)


def _plus_library_run(direct_home, plan, campaign) -> list:
    """AdsBPC+ by the library alone on a copy of the same home (no Dagster, no ledger): each
    day's values and, if the plan releases one, its remainder X̃_t."""
    from dp_platform.mechanisms import adsbpc_plus, adsbpc_plus_plan

    days = campaign_days(campaign)
    bounds: list[float] = []
    with Warehouse(direct_home.warehouse) as warehouse:
        for day in days:
            warehouse.attribute_day(campaign, day)
            warehouse.contributions_day(campaign, day)
        histograms = [warehouse.day_histogram(campaign, day) for day in days]

        def clip(number, bound, sigma):
            bounds.append(bound)
            row = adsbpc_plus_plan.strategy_row(plan, number)
            return warehouse.plus_clipped_vector(
                campaign,
                days[number - 1],
                bound,
                sigma,
                plan.day_cap(number),
                row=row,
                remainder_cap=plan.remainder_cap,
            )

        def remainder(number):
            return warehouse.plus_remainder(campaign, days[number - 1])

        def profile(factors):
            m = plan.config.profile_days
            return warehouse.plus_profile_histogram(
                campaign,
                days[:m],
                bounds[:m],
                list(factors),
                adsbpc_plus_plan.profile_top(plan),
                grid=adsbpc_plus_plan.PROFILE_GRID,
                cross=adsbpc_plus_plan.profile_cross(plan),
            )

        publishers = len(warehouse.campaign_publishers(campaign))
        releases, _ = adsbpc_plus.run_stream(
            plan,
            histograms,
            clip,
            profile,
            publishers=publishers,
            noise=PlusRoutedNoise(5, 6, 4),
            remainder=None if plan.remainder_cap is None else remainder,
        )
    return [(r.measurement.values, r.measurement.remainder) for r in releases]


@pytest.mark.parametrize("strategy", [None, "diagonal"])
def test_adsbpc_plus_runs_through_the_same_assets_and_ledger(prepared, tmp_path, strategy) -> None:
    """mechanism: adsbpc_plus is a config switch: same assets, ledger, write-once releases; the
    releases equal the library's stream on the same data and seeds — with the default (the
    square-root strategy: correlated rows, decoded days) and with the diagonal one."""
    import yaml

    from dp_platform.mechanisms import adsbpc_plus

    mechanism = {"kind": "adsbpc_plus", **({"strategy": strategy} if strategy else {})}
    plus = {**catalogue()["campaigns"][0], "mechanism": mechanism}
    home = copy_home(prepared, tmp_path / "plus")
    direct_home = copy_home(prepared, tmp_path / "plus_direct")
    for target in (home, direct_home):
        (target.root / "campaigns.yaml").write_text(yaml.safe_dump(catalogue(2.0, [plus])))
    instance = dg.DagsterInstance.ephemeral()
    config = home.root / "campaigns.yaml"
    run_campaigns(config, home.root, instance=instance, today=TODAY, noise=PlusRoutedNoise(5, 6, 4))
    with Ledger.at_home(home.root) as ledger:
        stored = ledger.releases("spring")
        budget = ledger.campaign_budget("spring")
    assert [r.day for r in stored] == list(range(1, DAYS + 1))
    assert budget.spent == budget.planned

    campaign = load_catalogue(direct_home.root / "campaigns.yaml").campaign("spring")
    plan = adsbpc_plus.make_plan(campaign)
    assert plan.strategy_kind == (strategy or "sqrt")
    assert (stored[-1].row_sigma is not None) == (strategy is None)
    assert "histogram" in plan.bound_charges(1)
    # equal up to the order DuckDB's threads add a row's floats in (C's weights are not
    # integers): the releases are drawn once, so this never reaches an advertiser
    assert plan.pace == 0.0 and plan.remainder_cap is not None  # today's defaults
    direct = _plus_library_run(direct_home, plan, campaign)
    np.testing.assert_allclose(
        [values for values, _ in direct], [r.values for r in stored], rtol=1e-12, atol=1e-9
    )
    np.testing.assert_allclose(
        [remainder for _, remainder in direct], [r.remainder for r in stored], rtol=1e-12
    )

    run_campaigns(config, home.root, instance=instance, today=TODAY, noise=RoutedNoise(7, 8))
    with Ledger.at_home(home.root) as ledger:
        assert ledger.releases("spring") == stored  # write-once
        assert ledger.campaign_budget("spring").spent == budget.spent


def test_a_campaign_registered_before_strategies_keeps_its_plan_and_releases(
    prepared, tmp_path
) -> None:
    """An AdsBPC+ campaign registered by a release without noise strategies, pacing or the
    remainder (its plan, config and declaration records have none of their fields) keeps
    running on what it registered — the diagonal strategy, the full filter cap every day, no
    remainder — although the new default for the same catalogue entry is the square-root one,
    paced, with a remainder: its releases are the old plan's, bit for bit, and the catalogue
    entry is not taken for an edit."""
    import yaml

    from dp_platform.ledger_records import CampaignRecord
    from dp_platform.mechanisms import adsbpc_plus
    from dp_platform.plans import campaign_plan
    from dp_platform.registration import declaration

    plus = {**catalogue()["campaigns"][0], "mechanism": {"kind": "adsbpc_plus"}}
    home = copy_home(prepared, tmp_path / "old")
    direct_home = copy_home(prepared, tmp_path / "old_direct")
    for target in (home, direct_home):
        (target.root / "campaigns.yaml").write_text(yaml.safe_dump(catalogue(2.0, [plus])))
    config = home.root / "campaigns.yaml"
    cat = load_catalogue(config)
    campaign = cat.campaign("spring")
    assert adsbpc_plus.make_plan(campaign).strategy_kind == "sqrt"  # the new default
    # what the earlier release registered: the diagonal plan, records without the new fields
    earlier = {"strategy": "diagonal", "pace": None, "remainder_share": 0}
    old = campaign.model_copy(update={"mechanism": campaign.mechanism.model_copy(update=earlier)})
    record = campaign_plan(old).to_record()
    stream = record["stream"]["plan"]
    new_fields = ("strategy", "pace", "remainder_share", "remainder_cap")
    for key in ("strategy_kind", "strategy", "cross_weight", "pace", "remainder_cap"):
        del stream[key]
    del stream["remainder_sigma"], stream["budget"]["remainder"]
    frozen = campaign.model_dump(mode="json")
    for key in new_fields:
        del stream["config"][key], frozen["mechanism"][key]
    with Warehouse(home.warehouse) as warehouse:  # the keys it froze: the advertiser's
        frozen["publishers"] = list(warehouse.campaign_publishers(campaign))
    declared = declaration(campaign, None).to_record()
    for key in new_fields:
        del declared["values"][f"mechanism.{key}"]
    with Ledger.at_home(home.root) as ledger:
        ledger.register(
            CampaignRecord(
                name="spring",
                account=campaign.account,
                days=campaign.days,
                planned=campaign_plan(old).total,
                declared=declared,
                config=frozen,
                plan=record,
            ),
            cat.account(campaign.account),
        )
    instance = dg.DagsterInstance.ephemeral()
    run_campaigns(config, home.root, instance=instance, today=TODAY, noise=PlusRoutedNoise(5, 6, 4))
    with Ledger.at_home(home.root) as ledger:
        stored = ledger.releases("spring")
        registered = ledger.campaign_info("spring")["plan"]["stream"]["plan"]
    assert "strategy" not in registered and "pace" not in registered  # not rewritten
    assert all(r.row_sigma is None for r in stored)  # independent days, as registered
    assert all(r.remainder is None for r in stored)  # and no remainder
    diagonal = adsbpc_plus.make_plan(old)
    assert diagonal.pace is None and diagonal.remainder_cap is None
    assert _plus_library_run(direct_home, diagonal, old) == [(r.values, None) for r in stored]
    # and the same entry registered now runs the new default: different releases
    fresh = copy_home(prepared, tmp_path / "new")
    (fresh.root / "campaigns.yaml").write_text(yaml.safe_dump(catalogue(2.0, [plus])))
    run_campaigns(
        fresh.root / "campaigns.yaml",
        fresh.root,
        instance=dg.DagsterInstance.ephemeral(),
        today=TODAY,
        noise=PlusRoutedNoise(5, 6, 4),
    )
    with Ledger.at_home(fresh.root) as ledger:
        assert all(r.row_sigma is not None for r in ledger.releases("spring"))


def test_a_campaign_registered_as_adsbpc_runs_on_when_its_entry_defaults_to_adsbpc_plus(
    prepared, tmp_path
) -> None:
    """A campaign registered as AdsBPC, the default before issue 27, whose entry names no
    mechanism — AdsBPC+ by default now — is not taken for an edit: its later days are drawn
    through Dagster by the registered AdsBPC plan (charged as AdsBPC charges, quantile and
    Gaussian), though the code location was built from the entry's AdsBPC+ default."""
    import yaml

    home = copy_home(prepared, tmp_path / "home")
    config = home.root / "campaigns.yaml"  # spring, ``mechanism: {kind: adsbpc}`` written
    instance = dg.DagsterInstance.ephemeral()
    two = START + timedelta(days=1)
    run_campaigns(config, home.root, instance=instance, today=TODAY, through=two)
    document = catalogue()
    del document["campaigns"][0]["mechanism"]  # the same entry as an earlier release read it
    config.write_text(yaml.safe_dump(document))
    assert load_catalogue(config).campaign("spring").mechanism.kind == "adsbpc_plus"
    four = START + timedelta(days=3)
    runs = run_campaigns(config, home.root, instance=instance, today=TODAY, through=four)
    assert [len(r.days) for r in runs] == [2]
    with Ledger.at_home(home.root) as ledger:
        assert [r.day for r in ledger.releases("spring")] == [1, 2, 3, 4]
        assert ledger.campaign_info("spring")["plan"]["stream"]["mechanism"] == "adsbpc"
        per_day = ledger.campaign_budget("spring").per_day
    assert all(set(per_day[day]) == {"quantile", "gaussian"} for day in (3, 4))


def test_a_partition_that_breaks_its_schema_fails_the_check_and_blocks_the_release(home) -> None:
    """Rows that got past ingest into the warehouse but break the Pandera model (here a negative
    value written straight into the table) fail the day's blocking check: nothing downstream
    runs, nothing is released, and the check names the rule, neither the value nor a count."""
    with Warehouse(home.warehouse) as warehouse:
        warehouse.con.execute(
            "UPDATE conversions SET value = -12345.5 WHERE conversion_key = (SELECT "
            "min(conversion_key) FROM conversions WHERE CAST(ts AS DATE) = DATE '2026-03-01')"
        )
    instance = dg.DagsterInstance.ephemeral()
    job = build_definitions(home.root / "campaigns.yaml", home.root).resolve_job_def(
        daily_job_name("spring")
    )
    result = job.execute_in_process(
        instance=instance, partition_key="2026-03-01", raise_on_error=False
    )
    checks = [
        e.event_specific_data
        for e in result.all_events
        if e.event_type_value == "ASSET_CHECK_EVALUATION"
    ]
    failed = [c for c in checks if not c.passed]
    assert [c.asset_key.path[-1] for c in failed] == ["raw_conversions"]
    rules = failed[0].metadata["rules_broken"].value
    assert any(rule.startswith("value:") for rule in rules)
    shown = f"{failed[0].metadata} {failed[0].description}"
    assert "12345" not in shown
    # which rules, never how many private rows broke them
    assert set(failed[0].metadata) == {"model", "rules_broken"}
    assert "failures" not in failed[0].description
    assert releases(home) == []

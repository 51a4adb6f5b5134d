"""What the Dagster UI shows, day by day: each partition its own day's release, re-publishing a
range touches exactly that range, checks name the days they covered, schedules stay in range."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from datetime import date, timedelta
from pathlib import Path
from statistics import NormalDist

import dagster as dg
import pytest

from assets.definitions import build_definitions
from assets.partitions import daily_job_name
from assets.runner import run_campaigns, write_instance_config
from assets.schedules import cron_days
from dp_platform.display import round_to_noise, significant
from dp_platform.ledger import Ledger
from dp_platform.mechanisms import adsbpc
from dp_platform.publication import published_days
from tests.platform_fixtures import DAILY_ASSETS, START, catalogue, copy_home, make_home

TODAY = date(2026, 11, 22)
DAYS = 10


def range_tags(first: str, last: str) -> dict[str, str]:
    """The tags of a single run over a partition range (what a job backfill launches)."""
    return {
        "dagster/asset_partition_range_start": first,
        "dagster/asset_partition_range_end": last,
    }


CAMPAIGN = {**catalogue()["campaigns"][0], "days": DAYS, "bounds": {"quantile_days": 3}}
ASSETS = DAILY_ASSETS


@pytest.fixture(scope="module")
def released(tmp_path_factory):
    """All 10 days released by one `dp-platform run` (one single-run range), and its instance."""
    home = make_home(tmp_path_factory.mktemp("ui") / "home", config=catalogue(campaigns=[CAMPAIGN]))
    instance = dg.DagsterInstance.ephemeral()
    runs = run_campaigns(home.root / "campaigns.yaml", home.root, instance=instance, today=TODAY)
    assert [len(r.days) for r in runs] == [DAYS]
    return home, instance


def _partition_metadata(instance, asset: str) -> dict[str, dict]:
    """The latest materialisation's metadata of each partition of ``spring/<asset>``."""
    key = dg.AssetKey(["spring", asset])
    out = {}
    for day in range(DAYS):
        partition = (START + timedelta(days=day)).isoformat()
        records = instance.fetch_materializations(
            dg.AssetRecordsFilter(asset_key=key, asset_partitions=[partition]), limit=1
        ).records
        out[partition] = {k: v.value for k, v in records[0].asset_materialization.metadata.items()}
    return out


def test_a_multi_day_run_records_each_days_own_values_on_its_partition(released) -> None:
    home, instance = released
    with Ledger.at_home(home.root) as ledger:
        published = published_days(ledger, "spring")
        chain = adsbpc.MECHANISM.chain
        choices = [ledger.bound_choice("spring", d, chain) for d in range(1, DAYS + 1)]
    releases = _partition_metadata(instance, "noisy_daily_release")
    answers = _partition_metadata(instance, "cumulative_query_answers")
    bounds = _partition_metadata(instance, "contribution_bound")
    assert len({m["sigma"] for m in releases.values()}) > 1  # not one day's values everywhere
    for day in published:
        partition = (START + timedelta(days=day.day - 1)).isoformat()
        shown = releases[partition]
        assert shown["day"] == str(day.day) and shown["date"] == partition
        assert shown["bound_r"] == significant(day.bound)
        assert shown["sigma"] == significant(day.sigma)
        std = day.sigma * len(day.values) ** 0.5
        assert shown["noisy_total"] == round_to_noise(sum(day.values.values()), std)
        assert shown["rho_charged_today"] == significant(day.rho_charged)
        assert shown["rho_spent"] == significant(day.rho_spent, 4)
        query = max(day.answers, key=int)  # prefix sums: query d ends on day d
        answer = sum(day.answers[query].values())
        assert answers[partition]["answer"] == round_to_noise(answer, day.answer_std[query])
        assert answers[partition]["day"] == str(day.day)
        assert bounds[partition]["bound_r"] == significant(choices[day.day - 1].bound)
    # ρ spent grows day by day on the partitions, to the whole plan on the last one
    spent = [releases[p]["rho_spent"] for p in sorted(releases)]
    assert spent == sorted(spent) and spent[-1] == significant(published[-1].rho_planned, 4)


def _significant_digits(value: float) -> int:
    """Digits of ``repr(value)`` from the first non-zero one (0.2312843375544556 → 16)."""
    mantissa = repr(abs(value)).split("e")[0].replace(".", "").lstrip("0")
    return len(mantissa.rstrip("0")) if "." in repr(abs(value)) else len(mantissa)


def test_every_number_in_a_runs_metadata_is_rounded_for_the_eye(released) -> None:
    """Asset and check metadata of a whole run: ρ to 4 significant digits, released values to
    their noise — no float shows its full 16-digit tail (the ledger and --json keep it)."""
    _, instance = released
    floats: dict[str, list[float]] = {}
    for run in instance.get_runs():
        for entry in instance.all_logs(run.run_id):
            event = entry.dagster_event
            if event is None:
                continue
            if event.event_type_value == "ASSET_MATERIALIZATION":
                metadata = event.step_materialization_data.materialization.metadata
            elif event.event_type_value == "ASSET_CHECK_EVALUATION":
                metadata = event.asset_check_evaluation_data.metadata
            else:
                continue
            for label, value in metadata.items():
                if isinstance(value, dg.FloatMetadataValue):
                    floats.setdefault(label, []).append(value.value)
    assert {"rho_spent_through_day", "rho_spent", "answer", "noisy_total"} <= set(floats)
    for label in ("rho_spent_through_day", "rho_planned", "rho_spent", "rho_remaining"):
        assert all(_significant_digits(v) <= 4 for v in floats[label]), (label, floats[label])
    for label, values in floats.items():  # noisy values: one digit finer than σ, never the tail
        assert all(_significant_digits(v) <= 7 for v in values), (label, values)


def test_re_publishing_five_days_materialises_exactly_those_five(released, tmp_path) -> None:
    """What the UI launches for a range of the campaign's job: one run with range tags. Every
    asset of the chain gets exactly days 3..7; nothing is drawn or charged."""
    source, _ = released
    home = copy_home(source, tmp_path / "home")
    before = sqlite3.connect(home.ledger).execute("SELECT * FROM releases").fetchall()
    instance = dg.DagsterInstance.ephemeral()
    job = build_definitions(home.root / "campaigns.yaml", home.root).resolve_job_def(
        daily_job_name("spring")
    )
    first, last = START + timedelta(days=2), START + timedelta(days=6)
    result = job.execute_in_process(
        instance=instance, tags=range_tags(first.isoformat(), last.isoformat())
    )
    assert result.success
    wanted = {(first + timedelta(days=i)).isoformat() for i in range(5)}
    for asset in ASSETS:
        events = result.asset_materializations_for_node(f"spring__{asset}")
        assert sorted(e.partition for e in events) == sorted(wanted), asset
    assert sqlite3.connect(home.ledger).execute("SELECT * FROM releases").fetchall() == before
    with Ledger.at_home(home.root) as ledger:
        assert {part for day in ledger.campaign_budget("spring").per_day.values() for part in day}
    assert len(instance.get_runs()) == 1  # one run for the whole range


def test_dg_launch_re_publishes_a_range_on_the_homes_instance(released, tmp_path) -> None:
    """`dg launch` (Dagster's command line, [tool.dg] in pyproject.toml) runs the campaign's job
    for a range on the home's own instance: exactly those days, nothing drawn or charged."""
    source, _ = released
    home = copy_home(source, tmp_path / "home")
    write_instance_config(home)
    before = sqlite3.connect(home.ledger).execute("SELECT * FROM releases").fetchall()
    env = {
        **os.environ,
        "DAGSTER_HOME": str(home.dagster),
        "DP_PLATFORM_HOME": str(home.root),
        "DP_PLATFORM_CONFIG": str(home.root / "campaigns.yaml"),
        "VIRTUAL_ENV": str(Path(sys.executable).parent.parent),
    }
    first, last = (START + timedelta(days=2)).isoformat(), (START + timedelta(days=4)).isoformat()
    dg_cli = str(Path(sys.executable).with_name("dg"))
    job = daily_job_name("spring")
    launched = subprocess.run(
        [dg_cli, "launch", "--job", job, "--partition-range", f"{first}...{last}"],
        cwd=Path(__file__).resolve().parents[1],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert launched.returncode == 0, launched.stderr[-3000:]
    with dg.DagsterInstance.from_config(str(home.dagster)) as instance:
        (run,) = instance.get_runs()
        assert run.job_name == job and run.is_success
        records = instance.fetch_materializations(
            dg.AssetKey(["spring", "noisy_daily_release"]), limit=10
        ).records
    middle = (START + timedelta(days=3)).isoformat()
    assert sorted(r.partition_key for r in records) == [first, middle, last]
    assert sqlite3.connect(home.ledger).execute("SELECT * FROM releases").fetchall() == before


def test_the_ui_launches_a_campaigns_assets_under_the_campaigns_own_job(released) -> None:
    """Dagster's UI runs a selection under the first job (sorted) that holds all of it; the
    campaign's job must sort before the implicit ``__ASSET_JOB``, or UI runs and backfills lose
    the campaign's name and a range becomes a pure asset backfill that pulls in later days."""
    home, _ = released
    definitions = build_definitions(home.root / "campaigns.yaml", home.root)
    repository = definitions.get_repository_def()
    for asset in ASSETS:
        key = dg.AssetKey(["spring", asset])
        holding = sorted(
            job.name
            for job in repository.get_all_jobs()
            if key in job.asset_layer.executable_asset_keys
        )
        assert holding[0] == daily_job_name("spring"), (asset, holding)


def test_checks_report_each_day_and_catch_a_changed_answer(released, tmp_path) -> None:
    source, _ = released
    home = copy_home(source, tmp_path / "home")
    instance = dg.DagsterInstance.ephemeral()
    job = build_definitions(home.root / "campaigns.yaml", home.root).resolve_job_def(
        daily_job_name("spring")
    )
    run = job.execute_in_process(instance=instance, tags=range_tags("2026-03-01", "2026-03-10"))
    evaluations: dict[str, list] = {}
    verdicts: dict[str, list] = {}  # a range run's one result per check: no partition
    for event in run.all_events:
        if event.event_type_value == "ASSET_CHECK_EVALUATION":
            data = event.asset_check_evaluation_data
            found = evaluations if data.partition is not None else verdicts
            found.setdefault(data.check_name, []).append(data)
    assert set(evaluations) == {
        "schema",
        "bound_chain",
        "spent_within_plan",
        "answers_match_releases",
    }
    days = [(START + timedelta(days=i)).isoformat() for i in range(DAYS)]
    for name, results in evaluations.items():  # one result per day, on that day's partition
        per_asset = 5 if name == "schema" else 1  # raw x2, attributed, contributions, clipped
        assert sorted(r.partition for r in results) == sorted(days * per_asset), name
        assert all(r.passed for r in results), name
        assert len(verdicts[name]) == per_asset and all(v.passed for v in verdicts[name]), name
        assert all(v.metadata["days_checked"].value == DAYS for v in verdicts[name]), name
    spent = evaluations["spent_within_plan"][-1].metadata
    assert spent["account_rho_cap"].value == 2.0
    assert spent["rho_spent_through_day"].value == pytest.approx(1.0)  # the last day: everything
    # A release rewritten behind the ledger's back: day 3's answer is no longer the one shown.
    with sqlite3.connect(home.ledger) as db:
        stored = json.loads(
            db.execute("SELECT release_json FROM releases WHERE day = 3").fetchone()[0]
        )
        stored["values"][0] += 1000.0
        db.execute("UPDATE releases SET release_json = ? WHERE day = 3", (json.dumps(stored),))

    def answers_of_day_3() -> dg.ExecuteInProcessResult:
        return job.execute_in_process(
            instance=instance,
            tags=range_tags("2026-03-03", "2026-03-03"),
            asset_selection=[dg.AssetKey(["spring", "cumulative_query_answers"])],
            raise_on_error=False,
        )

    # First line of defence: the release journal refuses the changed ledger before any step.
    refused = answers_of_day_3()
    assert not refused.success
    failure = next(e for e in refused.all_events if e.event_type_value == "STEP_FAILURE")
    assert "changed day 3" in str(failure.event_specific_data.error)
    # Second: with the journal gone (it re-learns the tampered ledger), the check still catches it.
    shutil.rmtree(home.root / "journal")
    tampered = answers_of_day_3()
    failed = [
        e.asset_check_evaluation_data
        for e in tampered.all_events
        if e.event_type_value == "ASSET_CHECK_EVALUATION"
    ]
    day, verdict = failed  # the day's own result, then the run's
    assert not day.passed and day.partition == "2026-03-03"
    assert "not the answer first published" in day.description
    assert not verdict.passed and verdict.partition is None
    assert verdict.description.endswith("failed on 2026-03-03")


def test_schedules_tick_only_inside_their_campaign() -> None:
    assert cron_days(date(2026, 3, 2), date(2026, 4, 1), hour=2) == ["0 2 2-31 3 *", "0 2 1 4 *"]
    assert cron_days(date(2026, 12, 30), date(2027, 1, 2), hour=2) == [
        "0 2 30-31 12 *",
        "0 2 1-2 1 *",
    ]
    assert cron_days(date(2026, 2, 27), date(2026, 3, 1), hour=3) == [
        "0 3 27-28 2 *",
        "0 3 1 3 *",
    ]
    assert cron_days(date(2026, 5, 7), date(2026, 5, 7), hour=3) == ["0 3 7 5 *"]


OLD_DAY_KEYS = {"day", "bound", "sigma", "rho_charged", "values", "answers", "cells"}
INTERVAL_KEYS = {"level", "values_ci", "total_ci", "answers_ci"}


def test_releases_json_of_a_count_only_campaign_keeps_its_keys_and_adds_intervals(
    released, capsys
) -> None:
    from dp_platform.cli import main

    home, _ = released
    capsys.readouterr()
    assert main(["releases", "--home", str(home.root), "--campaign", "spring", "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert "cumulative" not in document  # no cells: nothing derived
    for day in document["days"]:
        assert set(day) == OLD_DAY_KEYS | INTERVAL_KEYS
        half = (
            NormalDist().inv_cdf(0.975) * day["sigma"]
        )  # one count per publisher: each value's σ is σ_i
        for publisher, value in day["values"].items():
            interval = day["values_ci"][publisher]
            assert interval["ci_low"] == pytest.approx(value - half, rel=1e-6)
            assert interval["ci_high"] == pytest.approx(value + half, rel=1e-6)
        for query, answers in day["answers"].items():
            whole = day["answers_ci"][query]["total"]
            assert whole["ci_low"] < sum(answers.values()) < whole["ci_high"]


def test_release_and_answer_metadata_show_95_intervals_of_dp_values(released) -> None:
    from dp_platform.release_intervals import day_intervals

    home, instance = released
    with Ledger.at_home(home.root) as ledger:
        published = published_days(ledger, "spring")
    releases = _partition_metadata(instance, "noisy_daily_release")
    answers = _partition_metadata(instance, "cumulative_query_answers")
    for day in published:
        partition = (START + timedelta(days=day.day - 1)).isoformat()
        intervals = day_intervals(day)
        std = day.sigma * len(day.values) ** 0.5
        shown = releases[partition]
        assert shown["noisy_total_ci_low"] == round_to_noise(intervals["total_ci"]["ci_low"], std)
        assert shown["noisy_total_ci_high"] == round_to_noise(intervals["total_ci"]["ci_high"], std)
        table = shown["noisy_values"].splitlines()
        assert table[0] == "| publisher | noisy value | 95 % interval |"
        publisher, value = next(iter(day.values.items()))
        low = round_to_noise(intervals["values_ci"][publisher]["ci_low"], day.sigma)
        high = round_to_noise(intervals["values_ci"][publisher]["ci_high"], day.sigma)
        assert table[2] == (
            f"| {publisher} | {round_to_noise(value, day.sigma):g} | {low:g} .. {high:g} |"
        )
        query = max(day.answers, key=int)
        whole = intervals["answers_ci"][query]["total"]
        std = day.answer_std[query]
        assert answers[partition]["answer_ci_low"] == round_to_noise(whole["ci_low"], std)
        assert answers[partition]["answer_ci_high"] == round_to_noise(whole["ci_high"], std)
        assert answers[partition]["answer_ci_low"] < answers[partition]["answer"]

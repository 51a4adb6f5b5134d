"""Dagster's instance on PostgreSQL, campaigns in parallel, and two hosts.

A home whose ``dagster/dagster.yaml`` is ``examples/dagster-postgres.yaml`` keeps its runs,
event log and schedules in PostgreSQL (a throwaway server). Two campaigns run in parallel, each
launched against the code location and executed in a worker process of the code server; the
warehouse's lock lets one step at a time open it; every day is released once and each campaign
is charged its plan.

Two hosts: two ``dp-platform run`` process groups started together, each on its own home (its
own Dagster instance and DuckDB warehouse holding the same events) and one shared ledger: one
set of releases, each day drawn by exactly one of them, charges = plan. An AdsBPC+ campaign
(per-user spends in the warehouse) runs from the first host only: the second is refused.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from datetime import date, timedelta
from pathlib import Path

import dagster as dg
import pytest
import yaml

from assets.definitions import build_definitions
from assets.partitions import daily_job_name
from assets.runner import instance_for, run_campaigns
from dp_platform.config_loader import parse_campaign
from dp_platform.home import Home
from dp_platform.ledger import Ledger
from dp_platform.warehouse import Warehouse
from tests.dagster_runs import listed_on_job_page, worker_pid
from tests.platform_fixtures import START, catalogue, command_output, make_home
from tests.postgres_server import postgres_binaries
from tests.process_runs import QUANTILE_DAYS, assert_complete_and_charged_once, ledger_counts

REPO = Path(__file__).resolve().parents[1]
TODAY = date(2026, 11, 22)  # every campaign day is complete, whatever the wall clock says
DAYS = 8
CAMPAIGNS = ("spring", "summer")

needs_postgres = pytest.mark.skipif(
    postgres_binaries() is None, reason="PostgreSQL server binaries not installed"
)
CLI = [sys.executable, "-m", "dp_platform.cli"]


def two_campaigns() -> dict:
    """Two campaigns of one advertiser sharing one account (both fit under its cap)."""
    base = catalogue(days=DAYS)["campaigns"][0]
    campaigns = [{**base, "name": name, "privacy": {"rho": 0.5}} for name in CAMPAIGNS]
    return catalogue(2.0, campaigns, days=DAYS)


@pytest.fixture(scope="module")
def prepared(tmp_path_factory):
    root = tmp_path_factory.mktemp("prepared") / "home"
    return make_home(root, seed=7, users=400, days=DAYS, config=two_campaigns())


@pytest.fixture
def postgres_home(prepared, postgres_server, tmp_path, monkeypatch):
    """A copy of the prepared home whose Dagster instance lives in a fresh PostgreSQL database
    (on the session's server)."""
    url = postgres_server.create_database(f"dagster_{uuid.uuid4().hex[:8]}")
    # Dagster's storage speaks psycopg2
    monkeypatch.setenv("DP_DAGSTER_PG_URL", url.replace("postgresql://", "postgresql+psycopg2://"))
    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    shutil.copytree(prepared.root, tmp_path / "home")
    dagster = tmp_path / "home" / "dagster"
    dagster.mkdir(exist_ok=True)
    shutil.copy(REPO / "examples" / "dagster-postgres.yaml", dagster / "dagster.yaml")
    return tmp_path / "home"


def drawn_per_partition(instance: dg.DagsterInstance, campaign: str) -> dict[str, list[bool]]:
    """For each day of a campaign's release: ``drawn_now`` of each of its materialisations."""
    key = dg.AssetKey([campaign, "noisy_daily_release"])
    records = instance.fetch_materializations(key, limit=1000).records
    drawn: dict[str, list[bool]] = {}
    for record in records:
        materialization = record.asset_materialization
        drawn.setdefault(materialization.partition, []).append(
            materialization.metadata["drawn_now"].value
        )
    return {partition: sorted(values) for partition, values in drawn.items()}


@needs_postgres
def test_parallel_campaigns_on_a_postgres_instance(postgres_home) -> None:
    from dagster_postgres import PostgresEventLogStorage, PostgresRunStorage

    config = postgres_home / "campaigns.yaml"
    runs = run_campaigns(config, postgres_home, today=TODAY, parallel=True)
    days = [START + timedelta(days=i) for i in range(DAYS)]
    assert [(r.campaign, r.days) for r in runs] == [(name, days) for name in CAMPAIGNS]

    instance = instance_for(Home.at(postgres_home))
    assert isinstance(instance.run_storage, PostgresRunStorage)
    assert isinstance(instance.event_log_storage, PostgresEventLogStorage)
    records = {r.dagster_run.run_id: r for r in instance.get_run_records()}
    assert set(records) == {r.run_id for r in runs}
    assert {r.dagster_run.job_name for r in records.values()} == {
        daily_job_name(name) for name in CAMPAIGNS
    }
    assert all(r.dagster_run.status == dg.DagsterRunStatus.SUCCESS for r in records.values())
    # each run executed in its own worker process (not this one), and is on its job's page
    pids = {worker_pid(instance, run_id) for run_id in records}
    assert len(pids) == 2 and None not in pids and os.getpid() not in pids
    for name in CAMPAIGNS:
        assert len(listed_on_job_page(instance, daily_job_name(name))) == 1

    with Ledger.at_home(postgres_home) as ledger:
        for name in CAMPAIGNS:
            assert [m.day for m in ledger.releases(name)] == list(range(1, DAYS + 1))
            budget = ledger.campaign_budget(name)
            assert budget.spent == budget.planned  # charges = plan: no day charged twice
            # every day's release materialised once, in the PostgreSQL event log, drawn then
            drawn = drawn_per_partition(instance, name)
            assert drawn == {day.isoformat(): [True] for day in days}
        before = [(m.day, m.values) for name in CAMPAIGNS for m in ledger.releases(name)]
        spent_before = {name: ledger.campaign_budget(name).spent for name in CAMPAIGNS}

    # nothing is due any more; re-materialising a range returns the stored releases
    again = run_campaigns(config, postgres_home, today=TODAY, parallel=True)
    assert [r.days for r in again] == [[], []]
    definitions = build_definitions(config, postgres_home)
    tags = {
        "dagster/asset_partition_range_start": days[2].isoformat(),
        "dagster/asset_partition_range_end": days[5].isoformat(),
    }
    rerun = definitions.resolve_job_def(daily_job_name("summer"))
    assert rerun.execute_in_process(instance=instance, tags=tags).success
    drawn = drawn_per_partition(instance, "summer")
    assert drawn == {
        day.isoformat(): [False, True] if days[2] <= day <= days[5] else [True] for day in days
    }
    with Ledger.at_home(postgres_home) as ledger:
        assert [(m.day, m.values) for n in CAMPAIGNS for m in ledger.releases(n)] == before
        assert {n: ledger.campaign_budget(n).spent for n in CAMPAIGNS} == spent_before


def test_no_step_is_in_a_pool_and_every_job_runs_its_steps_in_one_process(tmp_path) -> None:
    """The one-writer rule is the warehouse's lock, not a Dagster pool; and a process per step
    (Dagster's default executor) cost 15–25 s of start-up per step."""
    for engine in ("duckdb", "spark"):
        path = tmp_path / f"{engine}.yaml"
        path.write_text(yaml.safe_dump(catalogue(days=DAYS, engine=engine)))
        definitions = build_definitions(path, tmp_path / engine)
        assert len(definitions.assets) == 8
        assert {a.op.pool for a in definitions.assets} == {None}
        for job in definitions.jobs:
            resolved = definitions.resolve_job_def(job.name)
            assert resolved.executor_def is dg.in_process_executor, job.name


def test_the_example_instance_is_the_repository_settings_plus_postgres_storage() -> None:
    example = yaml.safe_load((REPO / "examples" / "dagster-postgres.yaml").read_text())
    settings = yaml.safe_load((REPO / "dagster.yaml").read_text())
    assert example.pop("storage") == {"postgres": {"postgres_url": {"env": "DP_DAGSTER_PG_URL"}}}
    assert example == settings


def test_an_instance_file_already_in_the_home_is_used_as_it_is(tmp_path) -> None:
    from assets.runner import write_instance_config
    from dp_platform.home import Home

    home = Home.at(tmp_path / "home")
    mine = "telemetry:\n  enabled: false\n# mine\n"
    (home.dagster / "dagster.yaml").write_text(mine)
    assert write_instance_config(home).read_text() == mine
    assert sorted(p.name for p in home.dagster.iterdir()) == ["dagster.yaml"]


@pytest.fixture
def shared_ledger(postgres_server):
    """The hosts' one ledger: a database on the session's PostgreSQL server, named by each
    home's catalogue (``ledger: {url}``) — the deployment a team with several hosts runs."""
    url = postgres_server.create_database(f"two_hosts_{uuid.uuid4().hex[:8]}")

    def attach(home: Path) -> None:
        assert not (home / "ledger.sqlite").exists(), "the prepared home has no ledger of its own"
        config = home / "campaigns.yaml"
        catalogue_data = yaml.safe_load(config.read_text())
        catalogue_data["ledger"] = {"url": url}
        config.write_text(yaml.safe_dump(catalogue_data))

    return attach


def start_host(home: Path, *options: str) -> subprocess.Popen:
    """One host: ``dp-platform run`` in its own process group, its Dagster instance under its
    own home (no DAGSTER_HOME inherited from the test process)."""
    env = {k: v for k, v in os.environ.items() if k != "DAGSTER_HOME"}
    return subprocess.Popen(
        [*CLI, "run", "--home", str(home), "--config", str(home / "campaigns.yaml"), *options],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**env, "PYTHONWARNINGS": "ignore"},
        start_new_session=True,
    )


def released_json(home: Path, campaign: str) -> dict:
    """`releases --json` of a home, called in this process (the runs are the processes here)."""
    return json.loads(
        command_output("releases", "--home", str(home), "--campaign", campaign, "--json")
    )


def test_two_hosts_with_one_ledger_release_once_and_charge_the_plan(
    prepared, shared_ledger, tmp_path
) -> None:
    hosts = [tmp_path / "host_a", tmp_path / "host_b"]
    for host in hosts:
        shutil.copytree(prepared.root, host)
        assert not (host / "dagster" / "dagster.yaml").exists()  # a fresh instance each
        shared_ledger(host)
    processes = [start_host(host) for host in hosts]
    outputs = [p.communicate(timeout=900) for p in processes]
    for process, (_, err) in zip(processes, outputs, strict=True):
        assert process.returncode == 0, err[-2000:]

    days = [(START + timedelta(days=i)).isoformat() for i in range(DAYS)]
    instances = [instance_for(Home.at(host)) for host in hosts]
    for name in CAMPAIGNS:
        # one set of releases: both homes publish the same, every day once
        published = [released_json(host, name) for host in hosts]
        assert published[0] == published[1]
        assert [d["day"] for d in published[0]["days"]] == list(range(1, DAYS + 1))
        # each host materialised every day; exactly one of them drew each day
        drawn = [drawn_per_partition(instance, name) for instance in instances]
        assert all(set(per_host) == set(days) for per_host in drawn)
        for day in days:
            draws = [value for per_host in drawn for value in per_host[day]]
            assert draws.count(True) == 1, (name, day, draws)
    with Ledger.at_home(hosts[0]) as ledger:
        for name in CAMPAIGNS:
            budget = ledger.campaign_budget(name)
            assert budget.spent == budget.planned  # charges = plan: nothing charged twice


@needs_postgres
def test_two_hosts_on_one_postgres_ledger_run_adsbpc_plus_from_the_first_only(
    postgres_server, tmp_path, monkeypatch
) -> None:
    """The operator's path: ``dp-platform run`` on two homes whose catalogues name one
    PostgreSQL ledger and whose ingests differ. Host A runs the AdsBPC+ campaign; host B's run
    of it stops at registration (one line, exit 2), nothing charged; B runs AdsBPC."""
    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    days = 4
    base = catalogue(days=days)["campaigns"][0]
    config = catalogue(
        2.0,
        [
            {
                **base,
                "name": "plus",
                "privacy": {"rho": 0.5},
                "mechanism": {"kind": "adsbpc_plus", "cap": 5, "profile_days": 2},
            },
            {**base, "name": "spring", "privacy": {"rho": 0.5}, "bounds": {"quantile_days": 2}},
        ],
        days=days,
    )
    config["ledger"] = {"url": postgres_server.create_database(f"plus_{uuid.uuid4().hex[:8]}")}
    host_a = make_home(tmp_path / "a", seed=7, users=300, days=days, config=config)
    host_b = make_home(tmp_path / "b", seed=8, users=300, days=days, config=config)
    run_campaigns(host_a.root / "campaigns.yaml", host_a.root, campaign="plus", today=TODAY)
    with Ledger(config["ledger"]["url"]) as ledger:
        assert [r.day for r in ledger.releases("plus")] == list(range(1, days + 1))
        spent = ledger.campaign_budget("plus").spent

    command = ["run", "--home", str(host_b.root), "--config", str(host_b.root / "campaigns.yaml")]
    refused = subprocess.run(
        [*CLI, *command, "--campaign", "plus"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
    )
    assert refused.returncode == 2, refused.stderr[-2000:]
    message = refused.stderr.strip()
    assert "\n" not in message and "campaign plus keeps per-user privacy spends" in message
    run_campaigns(host_b.root / "campaigns.yaml", host_b.root, campaign="spring", today=TODAY)
    with Ledger(config["ledger"]["url"]) as ledger:
        assert ledger.campaign_budget("plus").spent == spent  # nothing charged from B
        assert [r.day for r in ledger.releases("spring")] == list(range(1, days + 1))
    with Warehouse(host_b.warehouse) as warehouse:
        assert warehouse.plus_spend_summary(parse_campaign(config["campaigns"][0]))["days"] == 0


def test_parallel_runs_killed_mid_way_release_every_day_once_on_the_next_run(
    prepared, tmp_path
) -> None:
    home = tmp_path / "home"
    shutil.copytree(prepared.root, home)
    run = start_host(home, "--parallel")
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        bounds, released = ledger_counts(home)
        if bounds > 0 and released < len(CAMPAIGNS) * DAYS:
            break
        assert run.poll() is None, "the run ended before it could be killed mid-way"
        time.sleep(0.05)
    os.killpg(run.pid, signal.SIGKILL)  # the run and its worker processes
    run.wait(60)
    assert ledger_counts(home)[1] < len(CAMPAIGNS) * DAYS  # it really died part-way

    again = start_host(home, "--parallel")
    _, err = again.communicate(timeout=900)
    assert again.returncode == 0, err[-2000:]

    instance = instance_for(Home.at(home))
    statuses = [r.dagster_run.status for r in instance.get_run_records()]
    # the killed runs never succeeded (their whole process group died, supervisor included);
    # the second command's runs did, one per campaign
    assert statuses.count(dg.DagsterRunStatus.SUCCESS) == len(CAMPAIGNS), statuses
    assert len(statuses) > len(CAMPAIGNS)
    for name in CAMPAIGNS:  # every day released, each draw charged once
        assert_complete_and_charged_once(Home.at(home), DAYS, QUANTILE_DAYS, campaign=name)

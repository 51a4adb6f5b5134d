"""`dp-platform run` with the ledger on PostgreSQL, side by side with the default SQLite ledger:
the same commands, the same shape of output, charges equal to the plan, re-runs draw nothing.

The runs are real processes (each launches its campaign's run through Dagster); `releases`,
`budget` and `campaign end` are called in this process (`dp_platform.cli.main`), as in
tests/test_operator_proof.py; `releases` and `budget` as processes of their own are in
tests/test_platform_processes.py."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys

import pytest
import yaml

from dp_platform.ledger import Ledger
from tests.platform_fixtures import catalogue, command_output, copy_home, make_home

CLI = [sys.executable, "-m", "dp_platform.cli"]
DAYS, QUANTILE_DAYS = 4, 2  # both of AdsBPC's bound phases


def cli(*args: str) -> str:
    done = subprocess.run(
        [*CLI, *args],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def run(home) -> None:
    cli("run", "--home", str(home.root), "--config", str(home.root / "campaigns.yaml"))


def views(home) -> tuple[dict, dict]:
    """What an advertiser and the privacy officer read: releases and budget, as JSON."""
    releases = command_output(
        "releases", "--home", str(home.root), "--campaign", "spring", "--json"
    )
    budget = command_output("budget", "--home", str(home.root), "--json")
    return json.loads(releases), json.loads(budget)


def shape(value: object) -> object:
    """A JSON document with every number replaced by its type (noise differs between runs)."""
    if isinstance(value, dict):
        return {key: shape(item) for key, item in value.items()}
    if isinstance(value, list):
        return [shape(item) for item in value]
    return type(value).__name__


def without_times(report: dict) -> dict:
    """A budget report without its wall-clock timestamps (registration times differ)."""
    report = copy.deepcopy(report)
    for entry in report["campaigns"].values():
        for event in entry["history"]:
            event.pop("at")
    return report


@pytest.fixture(scope="module")
def prepared(tmp_path_factory):
    root = tmp_path_factory.mktemp("prepared") / "home"
    config = catalogue(days=DAYS, quantile_days=QUANTILE_DAYS)
    return make_home(root, seed=7, users=300, days=DAYS, config=config)


def test_run_on_a_postgres_ledger_matches_the_sqlite_run(prepared, tmp_path, postgres_server):
    sqlite_home = copy_home(prepared, tmp_path / "sqlite")
    postgres_home = copy_home(prepared, tmp_path / "postgres")
    url = postgres_server.create_database("platform_run")
    document = yaml.safe_load((postgres_home.root / "campaigns.yaml").read_text())
    document["ledger"] = {"url": url}
    (postgres_home.root / "campaigns.yaml").write_text(yaml.safe_dump(document))

    run(sqlite_home)
    run(postgres_home)

    assert json.loads((postgres_home.root / "ledger.json").read_text()) == {"url": url}
    assert not (postgres_home.root / "ledger.sqlite").exists()
    releases_sqlite, budget_sqlite = views(sqlite_home)
    releases_postgres, budget_postgres = views(postgres_home)
    assert shape(releases_postgres) == shape(releases_sqlite)
    assert len(releases_postgres["days"]) == DAYS
    # the budget is noise-free: the same plan charges the same exact amounts on both backends
    assert without_times(budget_postgres) == without_times(budget_sqlite)
    with Ledger.at_home(postgres_home.root, read_only=True) as ledger:
        budget = ledger.campaign_budget("spring")
        assert budget.spent == budget.planned  # every day charged exactly its plan, once

    run(postgres_home)  # nothing is due: the stored releases are returned, nothing is drawn
    assert views(postgres_home) == (releases_postgres, budget_postgres)
    ended = json.loads(
        command_output("campaign", "end", "spring", "--home", str(postgres_home.root), "--json")
    )
    assert ended["returned"] == 0.0  # a finished campaign spent its whole plan
    assert views(postgres_home)[1]["campaigns"]["spring"]["status"] == "ended"

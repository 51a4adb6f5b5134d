"""Benchmarks (`make bench`): a 31-day single-run backfill through Dagster against the same
work done by the library directly — the difference is Dagster's orchestration overhead."""

from __future__ import annotations

import itertools

import dagster as dg
import pytest

from assets.runner import run_campaigns
from dp_platform.config_loader import load_catalogue
from dp_platform.daily import bound_day, campaign_days, register_campaigns, release_day
from dp_platform.ledger import Ledger
from dp_platform.plans import campaign_plans
from dp_platform.warehouse import Warehouse
from tests.platform_fixtures import DAYS, copy_home, make_home
from tests.test_platform import TODAY

_fresh = itertools.count()


@pytest.fixture(scope="module")
def prepared(tmp_path_factory):
    return make_home(tmp_path_factory.mktemp("bench") / "home", users=5000)


def _copy(prepared, tmp_path):
    return (copy_home(prepared, tmp_path / f"home{next(_fresh)}"),), {}


def test_bench_backfill_through_dagster(benchmark, prepared, tmp_path) -> None:
    def run(home) -> int:
        runs = run_campaigns(
            home.root / "campaigns.yaml",
            home.root,
            instance=dg.DagsterInstance.ephemeral(),
            today=TODAY,
        )
        return len(runs[0].days)

    days = benchmark.pedantic(run, setup=lambda: _copy(prepared, tmp_path), rounds=3)
    assert days == DAYS


def test_bench_same_days_by_the_library_directly(benchmark, prepared, tmp_path) -> None:
    def run(home) -> int:
        catalogue = load_catalogue(home.root / "campaigns.yaml")
        plans = campaign_plans(catalogue)
        with Ledger.at_home(home.root) as ledger, Warehouse(home.warehouse) as warehouse:
            registered = register_campaigns(
                catalogue,
                plans,
                ledger,
                advertiser_publishers=warehouse.advertiser_publishers,
                warehouse_identity=lambda: warehouse.identity,
            )["spring"]
            campaign = registered.config
            for day in campaign_days(campaign):
                warehouse.attribute_day(campaign, day)
                warehouse.contributions_day(campaign, day)
                bound_day(warehouse, ledger, registered, day)
            for day in campaign_days(campaign):
                release_day(warehouse, ledger, registered, day)
            return len(ledger.releases("spring"))

    days = benchmark.pedantic(run, setup=lambda: _copy(prepared, tmp_path), rounds=3)
    assert days == DAYS

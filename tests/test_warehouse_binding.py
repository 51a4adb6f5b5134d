"""Two homes, one ledger: a campaign with per-user state in the warehouse (AdsBPC+'s spends,
private last touch's draws) is bound to one warehouse.

Two DuckDB warehouses whose ingests differ (as on two hosts, one of which got late data) use
one SQLite ledger file. The AdsBPC+ campaign
registers and draws from the first; from the second, registration and every drawing step are
refused before anything is read, written or charged. An AdsBPC campaign of the same catalogue
runs from both homes, each day drawn once (docs/operators.md, "Two hosts, one ledger"). The
same through `dp-platform run` on a PostgreSQL ledger: tests/test_dagster_postgres.py.
"""

from __future__ import annotations

import shutil
from datetime import date, timedelta
from pathlib import Path

import pytest

from dp_platform.config_loader import parse_catalogue
from dp_platform.daily import bound_day, clipped_day, register_campaigns, release_day
from dp_platform.errors import WarehouseMismatch
from dp_platform.events import write_events
from dp_platform.events.paper import paper_dataset
from dp_platform.ledger import Ledger
from dp_platform.plans import campaign_plans
from dp_platform.privacy.noise import SeededNoise
from dp_platform.warehouse import Warehouse
from tests.conftest_data import FAR_FUTURE

START = date(2026, 3, 1)
DAYS = 4
CAMPAIGN = {
    "advertiser": "acme",
    "account": "acct",
    "start": START.isoformat(),
    "days": DAYS,
    "publishers": "all",
    "attribution": {"rule": "lta", "lookback_days": 1},
    "privacy": {"rho": 0.3},
}
CATALOGUE = parse_catalogue(
    {
        "accounts": [{"name": "acct", "rho_cap": 1.0}],
        "campaigns": [
            {
                **CAMPAIGN,
                "name": "plus",
                "mechanism": "adsbpc_plus",
                "adsbpc_plus": {"profile_days": 2, "cap": 5},
            },
            {**CAMPAIGN, "name": "base", "bounds": {"quantile_days": 2}},
            {
                **CAMPAIGN,
                "name": "touch",
                "bounds": {"quantile_days": 2},
                "attribution": {"rule": "private_last_touch", "lookback_days": 1},
            },
        ],
    }
)
PLANS = campaign_plans(CATALOGUE)


def _events(tmp: Path, days: int) -> tuple[Path, Path]:
    data = paper_dataset("zipf", users=300, publishers=4, days=days, seed=11)
    files = write_events(data.to_events(START), tmp, fmt="parquet")
    return files.impressions, files.conversions


@pytest.fixture
def homes(tmp_path):
    """(warehouse A, warehouse B, the shared ledger): their ingests differ (B loaded a
    longer export, as a host that got late data)."""
    late = _events(tmp_path / "late", DAYS + 1)
    a = Warehouse(tmp_path / "a" / "warehouse.duckdb")
    b = Warehouse(tmp_path / "b" / "warehouse.duckdb")
    a.ingest(*_events(tmp_path / "ev", DAYS), now=FAR_FUTURE)
    b.ingest(*late, now=FAR_FUTURE)
    ledger = Ledger(tmp_path / "ledger.sqlite")
    yield a, b, ledger
    for opened in (a, b, ledger):
        opened.close()


def _register(ledger: Ledger, warehouse: Warehouse, name: str):
    catalogue = CATALOGUE.model_copy(update={"campaigns": [CATALOGUE.campaign(name)]})
    return register_campaigns(
        catalogue,
        PLANS,
        ledger,
        advertiser_publishers=warehouse.advertiser_publishers,
        warehouse_identity=lambda: warehouse.identity,
    )[name]


def _draw(warehouse: Warehouse, ledger: Ledger, registration, day: date, seed: int) -> bool:
    """Attribute, choose the bound, clip and release one day; True if the release was drawn."""
    campaign = registration.config
    warehouse.attribute_day(campaign, day)
    warehouse.contributions_day(campaign, day)
    bound_day(warehouse, ledger, registration, day, noise=SeededNoise(seed))
    return release_day(warehouse, ledger, registration, day, noise=SeededNoise(seed + 1))[1]


def _day(number: int) -> date:
    return START + timedelta(days=number - 1)


def test_a_warehouse_keeps_one_identity_and_another_warehouse_has_its_own(tmp_path) -> None:
    first = tmp_path / "one" / "warehouse.duckdb"
    with Warehouse(first) as warehouse:
        identity = warehouse.identity
    with Warehouse(first) as again, Warehouse(first.with_name("other.duckdb")) as other:
        assert again.identity == identity  # reopened: the same
        assert other.identity != identity  # a second warehouse: its own
    moved = tmp_path / "moved" / "warehouse.duckdb"
    moved.parent.mkdir()
    shutil.copy(first, moved)
    with Warehouse(moved, read_only=True) as copy:
        assert copy.identity == identity  # a copied or moved home keeps it
    # the Spark warehouse keeps its own in its meta table: tests/test_spark_delta.py


def test_an_adsbpc_plus_campaign_runs_from_its_own_home_only(homes) -> None:
    a, b, ledger = homes
    plus = _register(ledger, a, "plus")
    assert _draw(a, ledger, plus, _day(1), seed=1)
    spent = ledger.campaign_budget("plus").spent
    a_spends = a.plus_spend_summary(plus.config)
    assert a_spends["days"] == 1

    with pytest.raises(WarehouseMismatch, match="campaign plus keeps per-user privacy spends"):
        _register(ledger, b, "plus")
    # the same registration, handed the other warehouse: every drawing step refuses it, also
    # when day 2's bound was already chosen in A (B would clip at it and write spends)
    plus_config = plus.config
    a.attribute_day(plus_config, _day(2))
    a.contributions_day(plus_config, _day(2))
    bound_day(a, ledger, plus, _day(2), noise=SeededNoise(3))
    spent = ledger.campaign_budget("plus").spent
    for number in (2, 3):
        b.attribute_day(plus_config, _day(number))
        b.contributions_day(plus_config, _day(number))
    for step, number in ((clipped_day, 2), (release_day, 2), (bound_day, 3)):
        with pytest.raises(WarehouseMismatch, match="nothing was drawn or charged"):
            step(b, ledger, plus, _day(number))
    assert ledger.bound_choice("plus", 3, _mechanism_chain(plus)) is None
    assert ledger.releases("plus", through=2)[-1].day == 1
    assert ledger.campaign_budget("plus").spent == spent  # nothing charged
    assert b.plus_spend_summary(plus_config)["days"] == 0  # no filter spends written in B
    # its own home goes on
    assert release_day(a, ledger, plus, _day(2), noise=SeededNoise(4))[1]
    assert a.plus_spend_summary(plus_config)["days"] == 2


def test_an_adsbpc_campaign_runs_from_both_homes_each_day_drawn_once(homes) -> None:
    a, b, ledger = homes
    from_a, from_b = _register(ledger, a, "base"), _register(ledger, b, "base")
    assert from_a.publishers == from_b.publishers  # the keys frozen once, by A
    assert _draw(a, ledger, from_a, _day(1), seed=1)
    assert not _draw(b, ledger, from_b, _day(1), seed=9)  # stored: returned, not redrawn
    assert _draw(b, ledger, from_b, _day(2), seed=3)
    assert not _draw(a, ledger, from_a, _day(2), seed=9)
    budget = ledger.campaign_budget("base")
    assert sorted(budget.per_day) == [1, 2]
    assert ledger.bind_warehouse("base", "unused") == "unused"  # AdsBPC was never bound


def test_private_last_touch_attributes_and_draws_from_its_own_home_only(homes) -> None:
    """Private last touch keeps each conversion's drawn touch in the warehouse: a second
    warehouse would draw it again, so an AdsBPC campaign with that rule is bound like AdsBPC+."""
    a, b, ledger = homes
    touch = _register(ledger, a, "touch")
    assert _draw(a, ledger, touch, _day(1), seed=1)
    with pytest.raises(WarehouseMismatch, match="campaign touch keeps per-user privacy touch"):
        _register(ledger, b, "touch")
    spent = ledger.campaign_budget("touch").spent
    for step in (bound_day, clipped_day):
        with pytest.raises(WarehouseMismatch, match="nothing was drawn or charged"):
            step(b, ledger, touch, _day(2))
    assert ledger.campaign_budget("touch").spent == spent
    assert _draw(a, ledger, touch, _day(2), seed=2)


def test_a_campaign_registered_before_bindings_is_bound_at_its_first_draw(homes) -> None:
    a, b, ledger = homes
    plus = _register(ledger, a, "plus")
    with ledger._transaction() as db:  # as if registered before migration 0002
        db.execute("DELETE FROM campaign_warehouses")
    assert _draw(b, ledger, plus, _day(1), seed=1)  # the first warehouse to draw takes it
    assert ledger.bind_warehouse("plus", a.identity) == b.identity
    with pytest.raises(WarehouseMismatch):
        bound_day(a, ledger, plus, _day(2))


def _mechanism_chain(registration):
    from dp_platform.daily import stream_of

    return stream_of(registration)[0].chain

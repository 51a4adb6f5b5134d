"""A broken-down campaign over events ingested without its dimensions is refused (issue 28):
`dp-platform ingest` without `--config`, then `dp-platform run` of a campaign broken down by
region × device, used to release cells that were noise around nothing. Now `run` exits 2 with
one line naming the campaign, the dimension and how to load it, before anything is reserved,
drawn or charged; a Dagster run of one day fails the same way; with `--config` it runs.

The check reads ingest metadata (which loads were ingested with which dimension columns), on
both engines (tests/test_spark_cells.py compares them)."""

from __future__ import annotations

from datetime import date, timedelta

import dagster as dg
import pytest
import yaml

from assets.definitions import build_definitions
from assets.partitions import daily_job_name
from assets.runner import run_campaigns
from dp_platform.cli import main
from dp_platform.config_loader import load_catalogue
from dp_platform.dimension_coverage import MissingDimensionData, require_dimension_data
from dp_platform.home import Home
from dp_platform.ledger import Ledger
from dp_platform.privacy.noise import SeededNoise
from dp_platform.warehouse import Warehouse
from tests.cells_data import (
    ADVERTISER,
    CONVERSION_LISTS,
    DIMENSIONS,
    IMPRESSION_LISTS,
    NOW,
    START,
    campaign_entry,
    generate,
    write,
)

DAYS = 4
TODAY = date(2026, 11, 22)
NOW_ARG = NOW.strftime("%Y-%m-%dT%H:%M:%SZ")


def _catalogue(path, breakdown: list[str]) -> None:
    entry = campaign_entry(
        "sliced", days=DAYS, breakdown=breakdown, measures=["count"], privacy={"rho": 2.0}
    )
    catalogue = {
        "accounts": [{"name": "acct", "rho_cap": 50}],
        "dimensions": DIMENSIONS,
        "campaigns": [entry],
    }
    path.write_text(yaml.safe_dump(catalogue))


def _ingest(home: Home, files, config=None) -> None:
    imp, conv = files
    argv = ["ingest", "--home", str(home.root), "--impressions", str(imp)]
    argv += ["--conversions", str(conv), "--now", NOW_ARG]
    argv += [] if config is None else ["--config", str(config)]
    assert main(argv) == 0


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("coverage")
    return write(generate(users=40, days=DAYS, seed=5), root / "input")


def _nothing_spent(home: Home) -> None:
    with Ledger.at_home(home.root) as ledger:
        assert ledger.budget_report()["campaigns"] == {}  # nothing reserved, let alone charged
        assert ledger.releases("sliced") == []


def test_run_after_an_ingest_without_config_is_refused_in_one_line(files, tmp_path, capsys) -> None:
    home = Home.at(tmp_path / "home")
    config = tmp_path / "campaigns.yaml"
    _catalogue(config, ["region", "device"])
    _ingest(home, files)  # as a new user would: no --config, so no dimension columns
    capsys.readouterr()
    code = main(["run", "--home", str(home.root), "--config", str(config)])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert "\n" not in err
    assert "campaign sliced" in err and "'region'" in err
    assert "dp-platform ingest --config" in err
    _nothing_spent(home)


def test_a_dagster_day_over_events_without_the_dimension_fails_before_registering(
    files, tmp_path
) -> None:
    home = Home.at(tmp_path / "home")
    config = tmp_path / "campaigns.yaml"
    _catalogue(config, ["region", "device"])
    _ingest(home, files)
    job = build_definitions(config, home.root, noise=SeededNoise(3)).resolve_job_def(
        daily_job_name("sliced")
    )
    result = job.execute_in_process(
        instance=dg.DagsterInstance.ephemeral(),
        partition_key=START.isoformat(),
        raise_on_error=False,
    )
    assert not result.success
    failures = [
        e.event_specific_data.error.cause.message  # the step's own error, under Dagster's
        for e in result.all_events
        if e.event_type_value == "STEP_FAILURE"
    ]
    assert len(failures) == 1 and "MissingDimensionData" in failures[0]
    assert "'region'" in failures[0] and "dp-platform ingest --config" in failures[0]
    _nothing_spent(home)


def test_with_config_the_same_campaign_runs(files, tmp_path) -> None:
    home = Home.at(tmp_path / "home")
    config = tmp_path / "campaigns.yaml"
    _catalogue(config, ["region", "device"])
    _ingest(home, files, config)
    runs = run_campaigns(
        config,
        home.root,
        noise=SeededNoise(4),
        instance=dg.DagsterInstance.ephemeral(),
        today=TODAY,
    )
    assert [len(r.days) for r in runs] == [DAYS]
    with Ledger.at_home(home.root) as ledger:
        assert [r.day for r in ledger.releases("sliced")] == list(range(1, DAYS + 1))


def test_a_later_load_without_the_column_refuses_only_the_days_it_holds(tmp_path) -> None:
    """Per load and per day: a second load without region holding day 3 refuses days 3..4
    and any range reaching them, never days 1..2; an impressions dimension looks at the
    impressions of the look-back window too."""
    events = generate(users=30, days=DAYS, seed=9)
    first = write(events, tmp_path / "first")
    later = [c for c in events.conversions if c[1].date() == START + timedelta(days=2)]
    more = type(events)(
        impressions=[],
        conversions=[(u, ts, cid + "_again", v, r, d) for u, ts, cid, v, r, d in later],
    )
    second = write(more, tmp_path / "second")
    config = tmp_path / "campaigns.yaml"
    _catalogue(config, ["creative", "region"])
    campaign = load_catalogue(config).campaign("sliced")
    with Warehouse(":memory:") as warehouse:
        warehouse.ingest(
            *first, now=NOW, dimensions=CONVERSION_LISTS, impression_dimensions=IMPRESSION_LISTS
        )
        day = [START + timedelta(days=k) for k in range(DAYS)]
        require_dimension_data(warehouse, campaign, day[0], day[-1])  # every column: runs
        warehouse.ingest(*second, now=NOW)  # conversions of day 3, without region
        require_dimension_data(warehouse, campaign, day[0], day[1])
        with pytest.raises(MissingDimensionData, match="'region'"):
            require_dimension_data(warehouse, campaign, day[2], day[2])
        with pytest.raises(MissingDimensionData, match=f"conversions of {day[0]}\\.\\.{day[-1]}"):
            require_dimension_data(warehouse, campaign, day[0], day[-1])
        assert (
            len(warehouse.loads_without("conversions", ADVERTISER, day[2], day[2], "region")) == 1
        )


def test_impressions_loaded_without_the_column_refuse_an_impression_breakdown(
    files, tmp_path
) -> None:
    config = tmp_path / "campaigns.yaml"
    _catalogue(config, ["creative"])
    campaign = load_catalogue(config).campaign("sliced")
    with Warehouse(":memory:") as warehouse:
        warehouse.ingest(*files, now=NOW, dimensions=CONVERSION_LISTS)  # creative not declared
        with pytest.raises(MissingDimensionData, match=r"'creative'.* impressions of"):
            require_dimension_data(warehouse, campaign, START, START)


def test_a_warehouse_made_before_the_record_learns_it_from_its_dimension_rows(
    files, tmp_path
) -> None:
    """Loads made before load_dimensions existed: recorded once on open from their rows."""
    path = tmp_path / "old.duckdb"
    with Warehouse(path) as warehouse:
        warehouse.ingest(*files, now=NOW, dimensions=CONVERSION_LISTS)
        kept = warehouse.sql.query("SELECT * FROM load_dimensions ORDER BY ALL")
        assert [row[1] for row in kept] == ["device", "region"]
        warehouse.sql.query("DELETE FROM load_dimensions")  # as an older platform left it
        warehouse.sql.query("DELETE FROM meta WHERE key = 'load_dimensions_recorded'")
    with Warehouse(path) as warehouse:
        assert warehouse.sql.query("SELECT * FROM load_dimensions ORDER BY ALL") == kept

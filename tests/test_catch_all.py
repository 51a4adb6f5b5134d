"""Catch-all dimension values (docs/operators.md, "Breakdowns"): an unlisted value is stored as
the dimension's catch-all at ingest (default ``other``), so the conversion counts in every
campaign — in a count-only one, and in the catch-all cell of a broken-down one; ``catch_all:
null`` keeps the old quarantine; a registration older than catch-alls keeps its cells.

The end-to-end test runs the operator's path twice (`ingest --config`, then the Dagster run of
two one-shot campaigns with a fixed bound) over the same events and the same seeded noise, once
with three extra conversions whose ``device`` is unlisted: with the same noise draws and a
bound the data cannot move, the two releases differ by exactly those conversions.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import dagster as dg
import duckdb
import pytest
import yaml

from assets.runner import run_campaigns
from dp_platform.cells import layout_of
from dp_platform.config import AccountConfig, CampaignConfig
from dp_platform.config_loader import parse_campaign, parse_catalogue
from dp_platform.errors import ConfigError
from dp_platform.home import Home
from dp_platform.ledger import Ledger, PlanMismatch
from dp_platform.ledger_records import CampaignRecord
from dp_platform.plans import campaign_plan
from dp_platform.privacy.noise import SeededNoise
from dp_platform.registration import declaration, registered_campaign
from tests.cells_data import (
    ADVERTISER,
    DEVICES,
    PUBLISHERS,
    REGIONS,
    START,
    Events,
    campaign_entry,
    generate,
    write,
)
from tests.platform_fixtures import command_output

NOW = "2026-11-01T00:00:00Z"
ACCOUNT = AccountConfig(name="acct", rho_cap=50.0)


def _catalogue(dimensions: dict | None = None, campaigns: list[dict] | None = None) -> dict:
    """Region and device as written by an operator who says nothing of catch-alls."""
    return {
        "accounts": [{"name": "acct", "rho_cap": 50}],
        "dimensions": dimensions
        or {
            "region": {"source": "conversions", "values": REGIONS},
            "device": {"source": "conversions", "values": DEVICES},
        },
        "campaigns": campaigns or [campaign_entry("sliced", breakdown=["region", "device"])],
    }


def _campaign(**catalogue: object) -> CampaignConfig:
    return parse_catalogue(_catalogue(**catalogue)).campaigns[0]


# -- the catalogue -----------------------------------------------------------------------------


def test_a_dimension_ends_in_the_catch_all_unless_the_catalogue_turns_it_off() -> None:
    device = {"source": "conversions", "values": DEVICES}
    dims = {"device": device, "region": {"source": "conversions", "values": REGIONS}}
    default = _campaign(dimensions=dims)
    assert [d.cell_values for d in default.breakdown] == [
        (*REGIONS, "other"),
        (*DEVICES, "other"),
    ]
    assert default.cells_per_publisher == 3 * 4
    named = _campaign(dimensions={**dims, "device": {**device, "catch_all": "unknown"}})
    assert named.breakdown[1].cell_values == (*DEVICES, "unknown")
    off = _campaign(dimensions={**dims, "device": {**device, "catch_all": None}})
    assert off.breakdown[1].cell_values == tuple(DEVICES)
    assert off.cells_per_publisher == 3 * 3
    # a list that already names the catch-all keeps it where it is: no second bucket
    listed = _campaign(dimensions={**dims, "device": {**device, "values": ["other", *DEVICES]}})
    assert listed.breakdown[1].cell_values == ("other", *DEVICES)
    cells = layout_of(default, PUBLISHERS).cells()
    assert {(c.values[0], c.values[1]) for c in cells} >= {("other", "other"), ("north", "other")}


@pytest.mark.parametrize(
    ("catch_all", "message"),
    [("", "catch_all must be non-empty text"), (" other", "without surrounding spaces")],
)
def test_a_bad_catch_all_is_refused_by_its_field(catch_all: str, message: str) -> None:
    device = {"source": "conversions", "values": DEVICES, "catch_all": catch_all}
    with pytest.raises(ConfigError, match=rf"dimensions\.device\.catch_all: .*{message}"):
        parse_catalogue(_catalogue(dimensions={"device": device}))


# -- registrations -----------------------------------------------------------------------------


def _register(ledger: Ledger, campaign: CampaignConfig):
    return registered_campaign(
        ledger,
        campaign,
        campaign_plan(campaign),
        ACCOUNT,
        advertiser_publishers=lambda: [],
        warehouse_identity=lambda: "one warehouse",
    )


def _without_catch_alls(document: dict) -> dict:
    """A campaign's dump as a release before catch-alls wrote it: no such key anywhere."""
    breakdown = [
        {k: v for k, v in item.items() if k != "catch_all"} for item in document["breakdown"]
    ]
    return {**document, "breakdown": breakdown}


@pytest.fixture
def ledger(tmp_path: Path):
    with Ledger(tmp_path / "ledger.sqlite") as opened:
        yield opened


def test_a_registration_older_than_catch_alls_keeps_its_cells(ledger: Ledger) -> None:
    """What an earlier release registered for the same entry: the definitions copied in
    without a catch-all. Re-read now, the entry's default catch-all is not an edit, and the
    registered campaign's cells stay the listed values only."""
    current = _campaign()
    then = parse_campaign(_without_catch_alls(current.model_dump(mode="json")))
    assert [d.catch_all for d in then.breakdown] == [None, None]
    record_config = then.model_dump(mode="json")
    assert all("catch_all" not in item for item in record_config["breakdown"])
    ledger.register(
        CampaignRecord(
            name="sliced",
            account=ACCOUNT.name,
            days=then.days,
            planned=campaign_plan(then).total,
            declared=declaration(then, None).to_record(),
            config=record_config,
            plan=campaign_plan(then).to_record(),
        ),
        ACCOUNT,
    )
    record = ledger.campaign_record("sliced")
    registration = _register(ledger, current)  # no PlanMismatch
    assert [d.cell_values for d in registration.config.breakdown] == [
        tuple(REGIONS),
        tuple(DEVICES),
    ]
    assert registration.config.cells_per_publisher == len(REGIONS) * len(DEVICES)
    assert ledger.campaign_record("sliced") == record  # nothing rewritten
    # writing the catch-all in the catalogue is an edit of the registered cells
    named = {"source": "conversions", "values": DEVICES, "catch_all": "other"}
    dims = {"region": {"source": "conversions", "values": REGIONS}, "device": named}
    with pytest.raises(PlanMismatch, match=r"breakdown: "):
        _register(ledger, _campaign(dimensions=dims))


def test_a_new_registration_keeps_its_catch_all_and_turning_it_off_is_an_edit(
    ledger: Ledger,
) -> None:
    registration = _register(ledger, _campaign())
    assert [d.catch_all for d in registration.config.breakdown] == ["other", "other"]
    assert registration.config.cells_per_publisher == 3 * 4
    assert _register(ledger, _campaign()).config == registration.config
    off = {"source": "conversions", "values": DEVICES, "catch_all": None}
    dims = {"region": {"source": "conversions", "values": REGIONS}, "device": off}
    with pytest.raises(PlanMismatch, match=r"breakdown: "):
        _register(ledger, _campaign(dimensions=dims))


# -- ingest ------------------------------------------------------------------------------------


def _ingest(home: Path, config: Path, imp: Path, conv: Path) -> dict:
    argv = ["ingest", "--home", str(home), "--config", str(config), "--impressions", str(imp)]
    return json.loads(command_output(*argv, "--conversions", str(conv), "--now", NOW, "--json"))


def _odd_rows(directory: Path) -> tuple[Path, Path]:
    """One impression and conversions with a listed, an unlisted, a case-variant and a blank
    device (rows 1..4)."""
    directory.mkdir(parents=True, exist_ok=True)
    imp, conv = directory / "imps.csv", directory / "convs.csv"
    ts = (datetime(START.year, START.month, START.day, tzinfo=UTC) + timedelta(hours=9)).isoformat()
    imp.write_text(
        "impression_id,user_id,publisher_id,advertiser_id,ts,interaction\n"
        f"i1,u1,pubA,{ADVERTISER},{ts},view\n"
    )
    header = "conversion_id,user_id,advertiser_id,ts,value,region,device\n"
    rows = [("c1", "tv"), ("c2", "smartwatch"), ("c3", "TV"), ("c4", "  ")]
    conv.write_text(header + "".join(f"{c},u1,{ADVERTISER},{ts},1,north,{d}\n" for c, d in rows))
    return imp, conv


STORED = (
    "SELECT c.conversion_id, v.value FROM conversion_dimensions AS d "
    "JOIN conversions AS c USING (conversion_key) "
    "JOIN dimension_values AS v ON v.dimension = d.dimension AND v.value_key = d.value_key "
    "WHERE d.dimension = 'device' ORDER BY 1"
)


@pytest.mark.parametrize(
    ("catch_all", "stored", "reasons"),
    [
        (
            {},
            [("c1", "tv"), ("c2", "other"), ("c3", "other")],
            {"missing_device": 1},
        ),
        (
            {"catch_all": None},
            [("c1", "tv")],
            {"missing_device": 1, "unknown_device_value": 2},
        ),
    ],
    ids=["default", "off"],
)
def test_ingest_stores_an_unlisted_value_as_the_catch_all_and_quarantines_only_a_blank(
    tmp_path: Path, catch_all: dict, stored: list, reasons: dict
) -> None:
    """Rows in = accepted + quarantined either way; with the catch-all turned off an unlisted
    value is quarantined with its row number and reason, as before."""
    device = {"source": "conversions", "values": DEVICES, **catch_all}
    config = tmp_path / "catalogue.yaml"
    dims = {"region": {"source": "conversions", "values": REGIONS}, "device": device}
    config.write_text(yaml.safe_dump(_catalogue(dimensions=dims)))
    report = _ingest(tmp_path / "home", config, *_odd_rows(tmp_path / "input"))["conversions"]
    assert report["rows"] == 4 == report["accepted"] + report["quarantined"]
    assert report["reasons"] == reasons
    with duckdb.connect(str(Home.at(tmp_path / "home").warehouse), read_only=True) as con:
        assert con.execute(STORED).fetchall() == stored
        quarantined = con.execute(
            "SELECT source_row, reason FROM quarantine WHERE kind = 'conversions' ORDER BY 1"
        ).fetchall()
    expected = {2: "unknown_device_value", 3: "unknown_device_value", 4: "missing_device"}
    assert quarantined == [(row, r) for row, r in expected.items() if r in reasons]


# -- end to end: the conversion counts in every campaign ------------------------------------------


EXTRA_USERS = {"w000": "pubA", "w001": "pubA", "w002": "pubB"}
"""Users with one impression and one conversion each, on day 1, whose device is unlisted."""


def _with_unlisted(events: Events) -> Events:
    base = datetime(START.year, START.month, START.day, tzinfo=UTC)
    imps = [
        (user, pub, base + timedelta(hours=8), f"iw_{user}", "banner")
        for user, pub in EXTRA_USERS.items()
    ]
    convs = [
        (user, base + timedelta(hours=20), f"cw_{user}", 10.0, "north", "smartwatch")
        for user in EXTRA_USERS
    ]
    return Events(events.impressions + imps, events.conversions + convs)


def _one_shot(name: str, **fields: object) -> dict:
    return campaign_entry(name, mechanism={"kind": "one_shot", "bound": 2}, **fields)


def _released(root: Path, events: Events) -> dict[str, dict]:
    """`ingest --config` then the Dagster run; each campaign's one-shot release as published."""
    imp, conv = write(events, root / "input")
    config = root / "catalogue.yaml"
    campaigns = [_one_shot("total"), _one_shot("sliced", breakdown=["region", "device"])]
    config.write_text(yaml.safe_dump(_catalogue(campaigns=campaigns)))
    home = Home.at(root / "home")
    report = _ingest(home.root, config, imp, conv)["conversions"]
    assert report["rows"] == report["accepted"] + report["quarantined"]
    instance = dg.DagsterInstance.ephemeral()
    run_campaigns(config, home.root, noise=SeededNoise(7), instance=instance)
    releases = {}
    for name in ("total", "sliced"):
        argv = ["releases", "--home", str(home.root), "--campaign", name, "--json"]
        releases[name] = json.loads(command_output(*argv))["one_shot"]
    return {"report": report, **releases}


def test_a_conversion_with_an_unlisted_value_counts_in_a_count_only_campaign_and_the_catch_all_cell(
    tmp_path: Path,
) -> None:
    events = generate(users=12, days=4, seed=41)
    with_unlisted = _released(tmp_path / "with", _with_unlisted(events))
    without = _released(tmp_path / "without", events)
    added = {pub: list(EXTRA_USERS.values()).count(pub) for pub in PUBLISHERS}
    assert with_unlisted["report"]["accepted"] == without["report"]["accepted"] + 3
    assert with_unlisted["report"]["reasons"] == without["report"]["reasons"]
    # count-only: the same noise, so the difference is the three conversions
    for pub in PUBLISHERS:
        difference = with_unlisted["total"]["values"][pub] - without["total"]["values"][pub]
        assert difference == pytest.approx(added[pub], abs=1e-6)
    # broken down: all of it in (publisher, north, other), nothing anywhere else
    keys = ("publisher", "region", "device", "measure")
    cells = {tuple(c[k] for k in keys): c["value"] for c in without["sliced"]["cells"]}
    changed = {
        key: value - cells[key]
        for c in with_unlisted["sliced"]["cells"]
        if abs((value := c["value"]) - cells[(key := tuple(c[k] for k in keys))]) > 1e-6
    }
    assert changed == {
        (pub, "north", "other", "count"): pytest.approx(n, abs=1e-6)
        for pub, n in added.items()
        if n
    }

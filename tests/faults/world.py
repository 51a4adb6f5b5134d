"""The harness's world: one small event set ingested once, a catalogue of two streaming
campaigns (AdsBPC with a campaign-level reach release, AdsBPC+) sharing one account, and a
fresh copy of that home per schedule (copying a few MB is far cheaper than ingesting)."""

from __future__ import annotations

import csv
import shutil
from copy import deepcopy
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path

import yaml

from dp_platform.home import Home
from dp_platform.warehouse import Warehouse
from tests.platform_fixtures import DAILY_ASSETS, campaign_events

START = date(2026, 3, 1)
DAYS = 4
USERS = 300
ACCOUNT_CAP = 3.0
CAMPAIGNS = ("spring", "plus")
STREAM_ASSETS = DAILY_ASSETS[2:]  # a campaign's own: the raw event assets are shared

_BASE = {
    "advertiser": "acme",
    "account": "acme-users",
    "start": START.isoformat(),
    "days": DAYS,
    "publishers": "all",
    "attribution": {"rule": "lta", "lookback_days": 30},
    "privacy": {"rho": 0.5, "adjacency": "add_remove"},
    "workload": {"kind": "prefix"},
}
_CAMPAIGNS = [
    {
        **_BASE,
        "name": "spring",
        "mechanism": {"kind": "adsbpc", "bounds": {"quantile_days": 2}},
        "reach": {"rho": 0.1},
    },
    {**_BASE, "name": "plus", "mechanism": {"kind": "adsbpc_plus", "profile_days": 2}},
]


def campaign_days() -> list[date]:
    return [START + timedelta(days=i) for i in range(DAYS)]


def catalogue(ledger_block: dict | None) -> dict:
    """The catalogue document; ``ledger_block`` is written as its ``ledger:`` field (None: the
    home's own SQLite ledger, the default — nothing is written)."""
    document: dict = {
        "accounts": [{"name": "acme-users", "rho_cap": ACCOUNT_CAP}],
        "campaigns": deepcopy(_CAMPAIGNS),
        "warehouse": {"engine": "duckdb"},
    }
    if ledger_block is not None:
        document["ledger"] = dict(ledger_block)
    return document


def edited_catalogue(ledger_block: dict | None) -> dict:
    """The catalogue with AdsBPC+'s ρ doubled: a registered campaign edited mid-campaign."""
    document = catalogue(ledger_block)
    document["campaigns"][1]["privacy"]["rho"] = 1.0
    return document


@dataclass(frozen=True)
class ExtraLoad:
    """A late load of another advertiser's events (rows with bad values among them): the
    ingest a schedule may run, and kill, while the campaigns run."""

    impressions: Path
    conversions: Path
    rows: int  # data rows per file


def _write_extra(directory: Path) -> ExtraLoad:
    """Events of advertiser ``other`` (not a campaign's), every fifth row with a bad time."""
    directory.mkdir(parents=True, exist_ok=True)
    imps, convs = directory / "late_impressions.csv", directory / "late_conversions.csv"
    rows = 40
    with imps.open("w", newline="") as i_file, convs.open("w", newline="") as c_file:
        i_out, c_out = csv.writer(i_file), csv.writer(c_file)
        i_out.writerow(
            ["impression_id", "user_id", "publisher_id", "advertiser_id", "ts", "interaction"]
        )
        c_out.writerow(["conversion_id", "user_id", "advertiser_id", "ts", "value"])
        for n in range(rows):
            ts = "not-a-time" if n % 5 == 0 else f"2026-03-0{1 + n % 4}T10:{n:02d}:00Z"
            i_out.writerow([f"late_i{n}", f"late_u{n}", "pub_late", "other", ts, "click"])
            c_out.writerow([f"late_c{n}", f"late_u{n}", "other", ts, "2.5"])
    return ExtraLoad(imps, convs, rows)


@dataclass(frozen=True)
class World:
    """The prepared home every schedule copies, and the files a schedule may ingest."""

    base: Path
    extra: ExtraLoad

    @classmethod
    def at(cls, directory: Path) -> World:
        """The world :func:`prepare_world` made in ``directory``."""
        late = directory / "late"
        rows = sum(1 for _ in (late / "late_impressions.csv").open()) - 1
        return cls(
            directory / "base",
            ExtraLoad(late / "late_impressions.csv", late / "late_conversions.csv", rows),
        )

    def copy_to(self, target: Path, ledger_block: dict | None) -> Home:
        """A fresh home for one schedule, its catalogue naming the schedule's ledger."""
        shutil.copytree(self.base, target)
        home = Home.at(target)
        (home.root / "campaigns.yaml").write_text(yaml.safe_dump(catalogue(ledger_block)))
        edited = yaml.safe_dump(edited_catalogue(ledger_block))
        (home.root / "campaigns_edited.yaml").write_text(edited)
        return home


def prepare_world(directory: Path, *, seed: int = 11) -> World:
    """Generate and ingest the event set once (a few seconds)."""
    base = Home.at(directory / "base")
    files = campaign_events(directory / "input", seed=seed, users=USERS, days=DAYS)
    with Warehouse(base.warehouse) as warehouse:
        warehouse.ingest(files.impressions, files.conversions)
    return World(base.root, _write_extra(directory / "late"))

"""What both Spark cell files (tests/test_spark_cells.py: conversion dimensions;
tests/test_spark_impression_cells.py: an impression dimension) write and configure alike: the
event files' headers and appended rows, and their campaigns' catalogue entries."""

from __future__ import annotations

import csv
from datetime import UTC, datetime
from pathlib import Path

from tests.cells_data import ADVERTISER, PUBLISHERS, START

NOW = datetime(2026, 4, 1, tzinfo=UTC)
DAYS = 3
QUOTED = 'east, "quoted"'
REGIONS = ["north", "south", QUOTED, "südwest"]
DEVICES = ["mobile", "desktop", "tv"]
LISTS = {"region": REGIONS, "device": DEVICES}
GROWN = {"region": [*REGIONS, "west"], "device": DEVICES}


def iso(ts: datetime) -> str:
    return ts.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


IMPRESSION_HEADER = [
    "impression_id",
    "user_id",
    "publisher_id",
    "advertiser_id",
    "ts",
    "interaction",
]
CONVERSION_HEADER = ["conversion_id", "user_id", "advertiser_id", "ts", "value"]


def append_rows(path: Path, rows: list[list[str]]) -> None:
    """Rows in the csv module's dialect (CRLF, as tests/cells_data.py writes the files)."""
    with path.open("a", newline="") as handle:
        csv.writer(handle).writerows(rows)


def catalogue(campaigns: list[dict]) -> dict:
    return {
        "accounts": [{"name": "acct", "rho_cap": 100}],
        "dimensions": {
            name: {"source": "conversions", "values": v, "catch_all": None}
            for name, v in GROWN.items()
        },
        "campaigns": campaigns,
        "warehouse": {"engine": "spark"},
    }


def entry(name: str, **fields: object) -> dict:
    return {
        "name": name,
        "advertiser": ADVERTISER,
        "account": "acct",
        "start": START.isoformat(),
        "days": DAYS,
        "publishers": PUBLISHERS,
        "attribution": {"rule": "lta", "lookback_days": 30},
        "mechanism": {"kind": "adsbpc", "bounds": {"quantile_days": 2, "cap": 5}},
        **fields,
    }

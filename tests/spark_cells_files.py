"""What both Spark cell files (tests/test_spark_cells.py: conversion dimensions;
tests/test_spark_impression_cells.py: an impression dimension) write and configure alike: the
event files' headers and appended rows, and their campaigns' catalogue entries."""

from __future__ import annotations

import csv
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from dp_platform.config_loader import parse_catalogue
from dp_platform.events.files import CONVERSION_COLUMNS, IMPRESSION_COLUMNS
from dp_platform.warehouse import Warehouse
from tests.cells_data import ADVERTISER, PUBLISHERS, START

if TYPE_CHECKING:
    from dp_platform.warehouse.spark.store import SparkWarehouse

NOW = datetime(2026, 4, 1, tzinfo=UTC)
DAYS = 3
QUOTED = 'east, "quoted"'
REGIONS = ["north", "south", QUOTED, "südwest"]
DEVICES = ["mobile", "desktop", "tv"]
LISTS = {"region": REGIONS, "device": DEVICES}
GROWN = {"region": [*REGIONS, "west"], "device": DEVICES}


def iso(ts: datetime) -> str:
    return ts.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


IMPRESSION_HEADER = list(IMPRESSION_COLUMNS)
CONVERSION_HEADER = list(CONVERSION_COLUMNS)


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


def assert_same_quarantine(duck: Warehouse, sparkw: SparkWarehouse) -> None:
    """Both engines quarantined the same rows, with the same reasons and fields."""
    camp = parse_catalogue(catalogue([entry("frames")])).campaigns[0]
    quarantine = [
        w.day_frame("quarantine", camp, []).sort_values(["load_id", "source_row"])
        for w in (duck, sparkw)
    ]
    pd.testing.assert_frame_equal(
        *(q.reset_index(drop=True) for q in quarantine), check_dtype=False
    )

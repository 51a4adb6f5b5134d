"""What both Spark cell files (tests/test_spark_cells.py: conversion dimensions;
tests/test_spark_impression_cells.py: an impression dimension) write, configure and compare
alike: the event files' headers and appended rows, their campaigns' catalogue entries, the
quarantine and an AdsBPC+ run on both engines."""

from __future__ import annotations

import csv
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import pytest

from dp_platform.cells import layout_of
from dp_platform.config import CampaignConfig
from dp_platform.config_loader import parse_catalogue
from dp_platform.events.files import CONVERSION_COLUMNS, IMPRESSION_COLUMNS
from dp_platform.mechanisms.adsbpc_plus_plan import PROFILE_GRID
from dp_platform.privacy.strategy import sqrt_matrix
from dp_platform.warehouse import Warehouse
from dp_platform.warehouse.base import StrategyRow
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


def assert_same_plus_run(
    duck: Warehouse, sparkw: SparkWarehouse, camp: CampaignConfig, *, cross: float, sqrt_rows: bool
) -> None:
    """AdsBPC+ over the campaign's attributed days on both engines (plus_filter.sql): the
    profile histogram of the first two days, each day's filter vector (the square-root
    strategy's rows when ``sqrt_rows``, else the diagonal) and the spends are equal."""
    days = [START + timedelta(days=i) for i in range(DAYS)]
    matrix = sqrt_matrix(DAYS)
    profiles = [
        w.plus_profile_histogram(
            camp, days[:2], [2.5, 1.0], [1.0, 0.5], 4, grid=PROFILE_GRID, cross=cross
        )
        for w in (duck, sparkw)
    ]
    assert profiles[1].sum() > 0
    np.testing.assert_array_equal(*profiles)
    for index, (day, bound) in enumerate(zip(days, (2.5, 1.0, 3.0), strict=True)):
        row = None
        if sqrt_rows:
            row = StrategyRow(float(matrix[index, index]), tuple(matrix[index, :index]))
        vectors = [
            w.plus_clipped_vector(camp, day, bound, 0.8, 2.0, row=row) for w in (duck, sparkw)
        ]
        assert vectors[1].shape == (layout_of(camp, PUBLISHERS).size,)
        np.testing.assert_allclose(vectors[0], vectors[1], rtol=0, atol=1e-9)
    summaries = [w.plus_spend_summary(camp) for w in (duck, sparkw)]
    assert summaries[0]["users"] == summaries[1]["users"] > 0
    assert summaries[0]["max_spend"] == pytest.approx(summaries[1]["max_spend"], abs=1e-12)
    assert summaries[1]["max_spend"] == pytest.approx(2.0, rel=1e-9)  # the filter bit

"""pytest-benchmark of AdsBPC+'s filter in the warehouse (`make bench`); a single quick run
otherwise: the diagonal strategy against the square-root strategy's rows (both plus_filter.sql; the
rows carry every user's earlier days), 7 days, same data and parameters."""

from __future__ import annotations

import itertools
from datetime import date, timedelta

import numpy as np
import pytest

from dp_platform.events import generate_campaign, write_events
from dp_platform.privacy.strategy import sqrt_matrix
from dp_platform.warehouse import Warehouse
from dp_platform.warehouse.base import StrategyRow
from tests.conftest_data import FAR_FUTURE, campaign

START = date(2026, 3, 1)
DAYS = 7
NAMES = itertools.count()


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory):
    events = generate_campaign(
        seed=5, users=5000, publishers=50, impressions=200_000, conversions=40_000, days=DAYS
    )
    files = write_events(events, tmp_path_factory.mktemp("bench"), fmt="parquet")
    wh = Warehouse(":memory:", threads=2)
    wh.ingest(files.impressions, files.conversions, now=FAR_FUTURE)
    yield wh
    wh.close()


@pytest.mark.parametrize("strategy", ["diagonal", "sqrt"])
def test_benchmark_plus_filter(benchmark, warehouse, strategy):
    days = [START + timedelta(days=i) for i in range(DAYS)]
    matrix = sqrt_matrix(DAYS)

    def setup():  # the filter is write-once per (campaign, day): a fresh campaign each round
        camp = campaign(
            rule="lta", lookback_days=30, start=START, days=DAYS, name=f"plus{next(NAMES)}"
        )
        warehouse.attribute_days(camp, days[0], days[-1])
        warehouse.contributions_days(camp, days[0], days[-1])
        return (camp,), {}

    def filtered(camp) -> np.ndarray:
        rows = []
        for t, day in enumerate(days):
            row = None
            if strategy == "sqrt":
                row = StrategyRow(float(matrix[t, t]), tuple(float(c) for c in matrix[t, :t]))
            rows.append(warehouse.plus_clipped_vector(camp, day, 2.5, 1.0, 0.5, row=row))
        return np.array(rows)

    rows = benchmark.pedantic(filtered, setup=setup, rounds=5, iterations=1)
    assert rows.shape == (DAYS, 50) and rows.sum() > 0

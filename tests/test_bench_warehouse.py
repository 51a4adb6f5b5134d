"""pytest-benchmark of the warehouse pipeline (`make bench`); a single quick run otherwise.

The full-scale figures come from `dp-platform bench` (see docs/data.md); this keeps a small,
repeatable timing of attribution → contributions → histogram → clipping in the test suite.
"""

from __future__ import annotations

from datetime import date, timedelta

import numpy as np
import pytest

from dp_platform.events import generate_campaign, write_events
from dp_platform.warehouse import Warehouse
from tests.conftest_data import FAR_FUTURE, campaign

START = date(2026, 3, 1)
DAYS = 7


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


@pytest.mark.parametrize("rule", ["lta", "uni"])
def test_benchmark_pipeline(benchmark, warehouse, rule):
    camp = campaign(rule=rule, lookback_days=30, start=START, days=DAYS)
    days = [START + timedelta(days=i) for i in range(DAYS)]

    def pipeline() -> np.ndarray:
        warehouse.attribute_days(camp, days[0], days[-1])
        warehouse.contributions_days(camp, days[0], days[-1])
        for day in days:
            warehouse.day_histogram(camp, day)
        return np.array([warehouse.clipped_vector(camp, day, 2.5) for day in days])

    vectors = benchmark(pipeline)
    assert vectors.shape == (DAYS, 50)
    assert vectors.sum() > 0

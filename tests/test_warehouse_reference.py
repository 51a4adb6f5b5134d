"""The pandas reference used by `dp-platform bench` computes what the SQL computes, for every
rule and both file formats — so the benchmark compares like with like."""

from __future__ import annotations

from datetime import date, timedelta

import numpy as np
import pytest

from dp_platform.events import generate_campaign, write_events
from dp_platform.warehouse import Warehouse
from dp_platform.warehouse.pandas_reference import PandasPipeline
from tests.conftest_data import FAR_FUTURE, campaign

START = date(2026, 3, 1)
DAYS = 4


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    events = generate_campaign(
        seed=11,
        users=400,
        publishers=9,
        impressions=12_000,
        conversions=2500,
        days=DAYS,
        advertisers=("acme", "other"),
    )
    root = tmp_path_factory.mktemp("ref")
    return {fmt: write_events(events, root / fmt, fmt=fmt) for fmt in ("csv", "parquet")}


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
@pytest.mark.parametrize("rule", ["lta", "fta", "uni", "time_decay", "u_shaped"])
def test_pandas_reference_equals_sql(files, fmt, rule):
    camp = campaign(rule=rule, lookback_days=5, half_life_days=0.5, start=START, days=DAYS)
    ref = PandasPipeline(camp)
    ref.ingest(files[fmt].impressions, files[fmt].conversions, now=FAR_FUTURE)
    with Warehouse(":memory:") as wh:
        wh.ingest(files[fmt].impressions, files[fmt].conversions, now=FAR_FUTURE)
        last = START + timedelta(days=DAYS - 1)
        wh.attribute_days(camp, START, last)
        wh.contributions_days(camp, START, last)
        assert wh.campaign_publishers(camp) == ref.publishers()
        for day in ref.days():
            ref.attribute_day(day)
            ref.contributions_day(day)
            np.testing.assert_array_equal(wh.day_histogram(camp, day), ref.day_histogram(day))
            for bound in (1.0, 2.6):
                np.testing.assert_allclose(
                    wh.clipped_vector(camp, day, bound),
                    ref.clipped_vector(day, bound),
                    rtol=0,
                    atol=1e-9,
                )

"""Cells on Spark by an impression dimension: the same ingest and the same cell vectors as
DuckDB.

Both engines ingest the same files with a public creative list (tests/cells_data.py's events plus
hostile impression rows: unlisted, padded, quoted and non-ASCII values, a duplicate id, a
malformed record, an oversized tie group; then impressions loaded without the dimension, and a
file missing the declared column). Reports, quarantine and every stored impression's value must
be identical. Then for every attribution rule the attributed rows with their touch, AdsBPC's
clipped cell vectors, one-shot sums, and AdsBPC+'s profile and strategy vectors must equal
DuckDB's (floating values within 1e-9: Spark sums in another order). Split from
tests/test_spark_cells.py (conversion dimensions) to keep each file inside the suite's per-file
time ceiling (docs/testing.md).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dp_platform.cells import layout_of
from dp_platform.config_loader import parse_catalogue
from dp_platform.errors import ConfigError
from dp_platform.privacy.discrete import SeededIntegerNoise
from dp_platform.warehouse import Warehouse
from dp_platform.warehouse.base import PeriodBound
from tests import cells_data
from tests.cells_data import ADVERTISER, CREATIVES, PUBLISHERS, START, VALUE_CAP
from tests.conftest_data import iso
from tests.spark_cells_files import (
    CONVERSION_HEADER,
    DAYS,
    IMPRESSION_HEADER,
    NOW,
    append_rows,
    assert_same_plus_run,
    assert_same_quarantine,
    catalogue,
    entry,
)

TOUCH_QUOTED = 'car, "ousel"'
TOUCH_LISTS = {"creative": [*CREATIVES, "vidéo", TOUCH_QUOTED]}
TOUCH_CONVERSION_LISTS = {"region": cells_data.REGIONS, "device": cells_data.DEVICES}
TOUCH_STORED = (
    "SELECT i.impression_id, d.dimension, v.value_key, v.value "
    "FROM impression_dimensions AS d "
    "JOIN impressions AS i ON i.load_id = d.load_id AND i.source_row = d.source_row "
    "JOIN dimension_values AS v ON v.dimension = d.dimension AND v.value_key = d.value_key"
)
TIE_GROUP = 1025  # one more than an instant's tie room: the whole group is quarantined


def _impression_hostile(impressions: Path) -> dict[str, str]:
    """Append hostile impression rows (the generated file's columns, creative last); returns
    each one's expected fate."""
    t = datetime(START.year, START.month, START.day, 3, 0, tzinfo=UTC) + timedelta(days=1)
    base = ["u001", "pubA", ADVERTISER, iso(t)]
    rows = {
        "hi_case": ([*base, "view", "Banner"], "unknown_creative_value"),
        "hi_empty": ([*base, "view", ""], "missing_creative"),
        "hi_blank": ([*base, "click", "   "], "missing_creative"),
        "hi_padded": ([*base, "view", " video "], "accepted"),
        "hi_inject": (
            [*base, "view", "banner'); DROP TABLE impressions; --"],
            "unknown_creative_value",
        ),
        "hi_quoted": ([*base, "view", TOUCH_QUOTED], "accepted"),
        "hi_unicode": ([*base, "click", "vidéo"], "accepted"),
        "hi_ascii": ([*base, "view", "video\u0301"], "unknown_creative_value"),
        # an earlier check wins: the interaction's before the dimension's, the dimension's
        # before 'future'
        "hi_two": ([*base[:3], iso(t), "hover", "poster"], "unknown_interaction"),
        "hi_future": (
            [*base[:3], "2099-01-01T00:00:00Z", "view", "poster"],
            "unknown_creative_value",
        ),
    }
    append_rows(impressions, [[iid, *row] for iid, (row, _) in rows.items()])
    # a duplicate of a generated id with another creative (the first copy's is kept), a
    # malformed record (a field too many), and an oversized tie group of listed creatives
    append_rows(impressions, [["i0_0_0", "u000", "pubB", ADVERTISER, iso(t), "view", "native"]])
    append_rows(
        impressions, [["hi_long", "u002", "pubA", ADVERTISER, iso(t), "view", "video", "x"]]
    )
    tied = t + timedelta(hours=1)
    append_rows(
        impressions,
        [
            [f"hi_tie_{k:04d}", "u003", "pubC", ADVERTISER, iso(tied), "view", "banner"]
            for k in range(TIE_GROUP)
        ],
    )
    return {iid: fate for iid, (_, fate) in rows.items()}


@pytest.fixture(scope="module")
def touch_engines(spark, tmp_path_factory):
    """Both warehouses after the same loads with an impression dimension (creative): the
    generated events plus hostile impression rows, then impressions loaded without the
    dimension (in no creative cell), then a file missing the declared column (refused)."""
    from dp_platform.warehouse.spark.store import SparkWarehouse

    root = tmp_path_factory.mktemp("spark_touch")
    events = cells_data.generate(users=30, days=DAYS, seed=41, heavy=2, focused=True)
    imps, convs = cells_data.write(events, root / "input")
    fates = _impression_hostile(imps)
    plain_imps, plain_convs = root / "plain_impressions.csv", root / "plain_conversions.csv"
    t = datetime(START.year, START.month, START.day, 1, 0, tzinfo=UTC) + timedelta(days=2)
    append_rows(
        plain_imps, [IMPRESSION_HEADER, ["p_imp", "u004", "pubB", ADVERTISER, iso(t), "view"]]
    )
    append_rows(plain_convs, [[*CONVERSION_HEADER, "region", "device"]])
    duck = Warehouse(root / "duck.duckdb")
    sparkw = SparkWarehouse(spark, root / "spark" / "tables")
    reports, refusals = {}, {}
    for name, warehouse in (("duckdb", duck), ("spark", sparkw)):
        reports[name] = [
            warehouse.ingest(
                imps,
                convs,
                now=NOW,
                dimensions=TOUCH_CONVERSION_LISTS,
                impression_dimensions=TOUCH_LISTS,
            ).to_json(),
            warehouse.ingest(
                plain_imps, plain_convs, now=NOW, dimensions=TOUCH_CONVERSION_LISTS
            ).to_json(),
        ]
        before = warehouse.table_rows("impressions")
        with pytest.raises(ConfigError) as refused:
            warehouse.ingest(
                plain_imps, plain_convs, now=NOW, impression_dimensions={"format": ["square"]}
            )
        refusals[name] = str(refused.value)
        assert warehouse.table_rows("impressions") == before  # nothing was loaded
    yield duck, sparkw, reports, refusals, fates, events
    duck.close()
    sparkw.close()


def test_impression_dimension_ingest_reports_quarantine_and_stored_values_are_identical(
    touch_engines,
):
    duck, sparkw, reports, refusals, fates, events = touch_engines
    assert reports["duckdb"] == reports["spark"]
    first, plain = reports["spark"]
    impressions = first["impressions"]
    assert impressions["rows"] == impressions["accepted"] + impressions["quarantined"]
    expected: dict[str, int] = {
        "duplicate_in_load": 1,
        "malformed_row": 1,
        "too_many_at_instant": TIE_GROUP,
    }
    for fate in fates.values():
        if fate != "accepted":
            expected[fate] = expected.get(fate, 0) + 1
    assert impressions["reasons"] == expected
    assert first["conversions"]["quarantined"] == 0
    assert plain["impressions"]["accepted"] == 1
    assert refusals["duckdb"] == refusals["spark"]
    assert "impressions file" in refusals["spark"]
    assert (
        "missing column(s) format (declared under the catalogue's dimensions)"
        in (refusals["spark"])
    )
    assert_same_quarantine(duck, sparkw)
    sparkw._use()
    keys = ["impression_id", "dimension"]
    left = duck.con.execute(TOUCH_STORED).df().sort_values(keys).reset_index(drop=True)
    right = sparkw.spark.sql(TOUCH_STORED).toPandas().sort_values(keys).reset_index(drop=True)
    pd.testing.assert_frame_equal(left, right, check_dtype=False)
    # one row per accepted impression of the load made with the dimension, none of the
    # quarantined tie group's nor of the load made without it
    assert len(right) == sparkw.table_rows("impression_dimensions") == impressions["accepted"]
    values = right.set_index("impression_id")["value"]
    assert values["hi_padded"] == "video" and values["hi_quoted"] == TOUCH_QUOTED
    assert values["hi_unicode"] == "vidéo"
    generated = next(i for i in events.impressions if i[3] == "i0_0_0")
    assert values["i0_0_0"] == generated[4]  # the first copy's, not the duplicate's 'native'
    assert "p_imp" not in values.index and not values.index.str.startswith("hi_tie").any()


TOUCH_RULES = ["lta", "fta", "uni", "time_decay", "u_shaped", "private_last_touch"]
TOUCH_LAYOUTS = {
    "creative": {"breakdown": ["creative"], "measures": ["count"]},
    "creative_region": {"breakdown": ["creative", "region"], "measures": ["count", "value"]},
}


def _touch_campaigns(rule: str, mechanism: dict | None = None, suffix: str = ""):
    """The impression-dimension layouts under ``rule`` (the spark catalogue is accepted)."""
    attribution: dict[str, object] = {"rule": rule, "lookback_days": 30}
    if rule == "private_last_touch":
        attribution["private"] = {"epsilon": 2.0, "tau_hours": 1.0}
    entries = []
    for name, fields in TOUCH_LAYOUTS.items():
        cells = {**fields, **({"value_cap": VALUE_CAP} if "value" in fields["measures"] else {})}
        extra = {"mechanism": mechanism} if mechanism else {}
        entries.append(entry(f"{rule}_{name}{suffix}", attribution=attribution, **cells, **extra))
    config = catalogue(entries)
    config["dimensions"] = {
        **{
            n: {"source": "conversions", "values": v, "catch_all": None}
            for n, v in TOUCH_CONVERSION_LISTS.items()
        },
        **{
            n: {"source": "impressions", "values": v, "catch_all": None}
            for n, v in TOUCH_LISTS.items()
        },
    }
    return parse_catalogue(config).campaigns


@pytest.mark.parametrize("rule", TOUCH_RULES)
def test_impression_cells_attribution_and_vectors_are_identical_for_every_rule(touch_engines, rule):
    """Every rule credits each touch's creative (multi-touch rules split a conversion over
    several): the attributed rows with their touch, AdsBPC's clipped cell vectors and one-shot
    cell sums (pre and post) equal DuckDB's."""
    duck, sparkw, *_ = touch_engines
    last = START + timedelta(days=DAYS - 1)
    days = [START + timedelta(days=i) for i in range(DAYS)]
    for camp in _touch_campaigns(rule):
        stats = [
            w.attribute_days(camp, START, last, noise=SeededIntegerNoise(17))
            for w in (duck, sparkw)
        ]
        assert stats[0] == stats[1]
        keys = ["day", "conversion_id", "publisher_id", "touch"]
        rows = [
            w.day_frame("attributed", camp, days).sort_values(keys).reset_index(drop=True)
            for w in (duck, sparkw)
        ]
        exact = [c for c in rows[0].columns if c != "weight"]
        pd.testing.assert_frame_equal(rows[0][exact], rows[1][exact], check_dtype=False)
        np.testing.assert_allclose(rows[0].weight, rows[1].weight, rtol=0, atol=1e-12)
        assert rows[1].touch.notna().sum() > 0
        touches = rows[1].groupby("conversion_id").touch.nunique().max()
        assert touches == 1 if rule in ("lta", "fta", "private_last_touch") else touches > 1
        for w in (duck, sparkw):
            w.contributions_days(camp, START, last)
        layout = layout_of(camp, PUBLISHERS)
        for day in days:
            vectors = [w.clipped_vector(camp, day, 2.6) for w in (duck, sparkw)]
            assert vectors[1].shape == (layout.size,) and vectors[1].sum() > 0
            np.testing.assert_allclose(vectors[0], vectors[1], rtol=0, atol=1e-9)
        for enforcement, bound in (("post", 2.5), ("pre", 2.0)):
            bounding = PeriodBound(bound, enforcement, use_value=False, value_cap=1.0)
            sums = [w.one_shot_sums(camp, bounding) for w in (duck, sparkw)]
            assert sums[1].shape == (layout.size,) and sums[1].sum() > 0
            np.testing.assert_allclose(sums[0], sums[1], rtol=0, atol=1e-9)


@pytest.mark.parametrize(
    ("strategy", "rule"),
    [("diagonal", "uni"), ("sqrt", "lta"), ("sqrt", "private_last_touch")],
)
def test_impression_cells_adsbpc_plus_is_identical(touch_engines, rule, strategy):
    """AdsBPC+ over impression-dimension cells, diagonal and square-root strategies
    (plus_filter.sql): filter vectors, spends and the profile equal DuckDB's. Each strategy
    and each kind of rule (fractional, last touch, private draws) once: the filter reads the
    attributed rows whatever rule wrote them, and every rule's rows are compared above."""
    duck, sparkw, *_ = touch_engines
    last = START + timedelta(days=DAYS - 1)
    plus = {"kind": "adsbpc_plus", "cap": 5, "profile_days": 2, "strategy": strategy}
    for camp in _touch_campaigns(rule, plus, suffix=f"_plus_{strategy}"):
        for w in (duck, sparkw):
            w.attribute_days(camp, START, last, noise=SeededIntegerNoise(17))
        cross = 0.7 if strategy == "sqrt" else 0.0
        assert_same_plus_run(duck, sparkw, camp, cross=cross, sqrt_rows=strategy == "sqrt")


def test_both_engines_name_the_same_impression_loads_without_a_dimension(touch_engines) -> None:
    """The check behind refusing a breakdown over events loaded without its columns
    (dp_platform/dimension_coverage.py) reads the same ingest metadata on both engines: the
    impressions loaded without creative hold day 3 only (conversions: tests/test_spark_cells.py)."""
    day = [START + timedelta(days=k) for k in range(DAYS)]
    duck, sparkw = touch_engines[:2]
    for kind, dimension in (("conversions", "region"), ("impressions", "creative")):
        for first, last in ((day[0], day[0]), (day[1], day[1]), (day[0], day[-1])):
            found = duck.loads_without(kind, ADVERTISER, first, last, dimension)
            assert sparkw.loads_without(kind, ADVERTISER, first, last, dimension) == found
    assert duck.loads_without("impressions", ADVERTISER, day[0], day[1], "creative") == []
    assert len(duck.loads_without("impressions", ADVERTISER, day[2], day[2], "creative")) == 1

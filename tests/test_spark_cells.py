"""Cells on Spark: the same dimension ingest and the same cell vectors as DuckDB.

Both engines ingest the same files with the same public dimension lists (tests/cells_data.py's
events plus hostile rows: unlisted, differently cased, empty, blank, padded, injected and
non-ASCII values, a quoted value with a comma, a duplicate id, a malformed record, a row that
fails two checks; then a second load after the catalogue's list grew, a load made without
dimensions, and a file missing a declared column). Reports, quarantine, the value keys and every
stored conversion's values must be identical, with rows in = accepted + quarantined.

Then, for every layout (a 2-dimension breakdown with [count, value], the breakdown with counts
only, values without breakdown), AdsBPC's clipped cell vector, AdsBPC+'s filter clip, spends and
profile histogram, and the stored clipped rows must equal DuckDB's (floating values within 1e-9:
Spark sums in another order).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dp_platform.cells import layout_of
from dp_platform.config_dimensions import DimensionConfig
from dp_platform.config_loader import parse_catalogue
from dp_platform.errors import ConfigError
from dp_platform.mechanisms.adsbpc_plus_plan import PROFILE_GRID
from dp_platform.privacy.strategy import sqrt_matrix
from dp_platform.warehouse import Warehouse
from dp_platform.warehouse.base import StrategyRow
from tests import cells_data
from tests.cells_data import ADVERTISER, PUBLISHERS, START, VALUE_CAP, generate, write
from tests.conftest_data import iso
from tests.spark_cells_files import (
    CONVERSION_HEADER,
    DAYS,
    DEVICES,
    GROWN,
    IMPRESSION_HEADER,
    LISTS,
    NOW,
    QUOTED,
    append_rows,
    assert_same_plus_run,
    assert_same_quarantine,
    catalogue,
    entry,
)

STORED = (
    "SELECT c.conversion_id, d.dimension, v.value_key, v.value "
    "FROM conversion_dimensions AS d "
    "JOIN conversions AS c ON c.conversion_key = d.conversion_key "
    "JOIN dimension_values AS v ON v.dimension = d.dimension AND v.value_key = d.value_key"
)


def _hostile(conversions: Path) -> dict[str, str]:
    """Append the hostile rows; returns each one's expected fate (a reason, or 'accepted')."""
    t = datetime(START.year, START.month, START.day, 23, 0, tzinfo=UTC) + timedelta(days=1)
    rows = {
        "h_case": (["u001", ADVERTISER, iso(t), "3", "North", "tv"], "unknown_region_value"),
        "h_empty": (["u001", ADVERTISER, iso(t), "3", "", "tv"], "missing_region"),
        "h_blank": (["u001", ADVERTISER, iso(t), "3", "north", "   "], "missing_device"),
        "h_padded": (["u002", ADVERTISER, iso(t), "4", "  south ", " tv"], "accepted"),
        "h_inject": (
            ["u002", ADVERTISER, iso(t), "1", "north'); DROP TABLE conversions; --", "tv"],
            "unknown_region_value",
        ),
        "h_quoted": (["u003", ADVERTISER, iso(t), "2", QUOTED, "mobile"], "accepted"),
        "h_unicode": (["u003", ADVERTISER, iso(t), "", "südwest", "desktop"], "accepted"),
        "h_ascii": (
            ["u003", ADVERTISER, iso(t), "2", "sudwest", "desktop"],
            "unknown_region_value",
        ),
        # an earlier check wins: the value's before the dimensions', the dimensions' before 'future'
        "h_two": (["u004", ADVERTISER, iso(t), "-1", "Mars", "tv"], "negative_value"),
        "h_future": (
            ["u004", ADVERTISER, "2099-01-01T00:00:00Z", "1", "north", "watch"],
            "unknown_device_value",
        ),
    }
    append_rows(conversions, [[cid, *row] for cid, (row, _) in rows.items()])
    # a duplicate of a generated id with other values (the first copy's are kept), a malformed
    # record (a field too many)
    append_rows(conversions, [["c0_0_0", "u000", ADVERTISER, iso(t), "1", "south", "tv"]])
    append_rows(conversions, [["h_long", "u004", ADVERTISER, iso(t), "1", "north", "tv", "x"]])
    return {cid: fate for cid, (_, fate) in rows.items()}


def _second_load(root: Path) -> tuple[Path, Path]:
    """A later load after the region list grew by 'west' (impressions: the header only)."""
    imps, convs = root / "second_impressions.csv", root / "second_conversions.csv"
    append_rows(imps, [IMPRESSION_HEADER])
    t = datetime(START.year, START.month, START.day, 22, 0, tzinfo=UTC) + timedelta(days=2)
    append_rows(
        convs,
        [
            [*CONVERSION_HEADER, "region", "device"],
            ["s_west", "u005", ADVERTISER, iso(t), "7", "west", "tv"],
            ["s_north", "u005", ADVERTISER, iso(t + timedelta(minutes=1)), "8", "north", "tv"],
            ["s_east", "u005", ADVERTISER, iso(t), "9", "east", "tv"],
        ],
    )
    return imps, convs


CAUGHT = {
    "region": DimensionConfig(source="conversions", values=GROWN["region"]),
    "device": DimensionConfig(source="conversions", values=DEVICES),
}
"""The catalogue's definitions with their default catch-all ('other')."""


def _catch_all_load(root: Path) -> tuple[tuple[Path, Path], dict[str, tuple[str, str] | str]]:
    """A load under :data:`CAUGHT`: unlisted values (a case variant, an injected text, a value
    of neither list) are stored as the catch-all, 'other' itself is one, a blank is missing;
    returns the files and each row's stored (region, device) or reason."""
    imps, convs = root / "caught_impressions.csv", root / "caught_conversions.csv"
    append_rows(imps, [IMPRESSION_HEADER])
    t = datetime(START.year, START.month, START.day, 20, 0, tzinfo=UTC) + timedelta(days=2)
    rows = {
        "k_case": (["North", "tv"], ("other", "tv")),
        "k_inject": (["x'); DROP TABLE conversions; --", "watch"], ("other", "other")),
        "k_listed": (["west", "mobile"], ("west", "mobile")),
        "k_other": (["other", " tv "], ("other", "tv")),
        "k_blank": (["north", "  "], "missing_device"),
    }
    append_rows(
        convs,
        [
            [*CONVERSION_HEADER, "region", "device"],
            *(
                [cid, "u008", ADVERTISER, iso(t + timedelta(minutes=n)), "1", *values]
                for n, (cid, (values, _)) in enumerate(rows.items())
            ),
        ],
    )
    return (imps, convs), {cid: fate for cid, (_, fate) in rows.items()}


def _undimensioned_load(root: Path) -> tuple[Path, Path]:
    """Conversions loaded without the catalogue's dimensions: in no cell of a breakdown."""
    imps, convs = root / "plain_impressions.csv", root / "plain_conversions.csv"
    append_rows(imps, [IMPRESSION_HEADER])
    t = datetime(START.year, START.month, START.day, 21, 0, tzinfo=UTC) + timedelta(days=1)
    append_rows(convs, [CONVERSION_HEADER, ["p_plain", "u006", ADVERTISER, iso(t), "5"]])
    return imps, convs


def _parquet_load(root: Path) -> Path:
    """Conversions as Parquet with typed columns: a null region is missing, not a value."""
    import duckdb

    path = root / "typed_conversions.parquet"
    t = datetime(START.year, START.month, START.day, 20, 0) + timedelta(days=1)
    with duckdb.connect() as con:
        con.execute(
            "COPY (SELECT * FROM (VALUES ('pq_ok', 'u007', $a, $t, 2.5, 'west', 'tv'), "
            "('pq_null', 'u007', $a, $t, 1.0, NULL, 'tv')) "
            "AS v(conversion_id, user_id, advertiser_id, ts, value, region, device)) "
            f"TO '{path}' (FORMAT parquet)",
            {"a": ADVERTISER, "t": t},
        )
    return path


@pytest.fixture(scope="module")
def engines(spark, tmp_path_factory):
    """Both warehouses after the same loads; each engine's reports and its refusal message."""
    from dp_platform.warehouse.spark.store import SparkWarehouse

    root = tmp_path_factory.mktemp("spark_cells")
    events = generate(users=40, days=DAYS, seed=31, heavy=2)
    imps, convs = write(events, root / "input")
    fates = _hostile(convs)
    second = _second_load(root)
    plain = _undimensioned_load(root)
    parquet = _parquet_load(root)
    caught, caught_fates = _catch_all_load(root)
    no_device = root / "no_device.csv"
    append_rows(no_device, [[*CONVERSION_HEADER, "region"]])
    duck = Warehouse(root / "duck.duckdb")
    sparkw = SparkWarehouse(spark, root / "spark" / "tables")
    reports, refusals = {}, {}
    for name, warehouse in (("duckdb", duck), ("spark", sparkw)):
        reports[name] = [
            warehouse.ingest(imps, convs, now=NOW, dimensions=LISTS).to_json(),
            warehouse.ingest(*second, now=NOW, dimensions=GROWN).to_json(),
            warehouse.ingest(*plain, now=NOW).to_json(),
            warehouse.ingest(imps, convs, now=NOW, dimensions=LISTS).to_json(),  # again: nothing
            warehouse.ingest(second[0], parquet, now=NOW, dimensions=GROWN).to_json(),
            warehouse.ingest(*caught, now=NOW, dimensions=CAUGHT).to_json(),
        ]
        before = warehouse.table_rows("conversions")
        with pytest.raises(ConfigError) as refused:
            warehouse.ingest(second[0], no_device, now=NOW, dimensions=LISTS)
        refusals[name] = str(refused.value)
        assert warehouse.table_rows("conversions") == before  # nothing was loaded
    yield duck, sparkw, reports, refusals, {**fates, **caught_fates}
    duck.close()
    sparkw.close()


def _stored(duck: Warehouse, sparkw) -> tuple[pd.DataFrame, pd.DataFrame]:
    sparkw._use()
    keys = ["conversion_id", "dimension"]
    left = duck.con.execute(STORED).df().sort_values(keys).reset_index(drop=True)
    right = sparkw.spark.sql(STORED).toPandas().sort_values(keys).reset_index(drop=True)
    return left, right


def test_dimension_ingest_reports_quarantine_and_stored_values_are_identical(engines):
    duck, sparkw, reports, refusals, fates = engines
    assert reports["duckdb"] == reports["spark"]
    first, second, plain, again, typed, caught = reports["spark"]
    conversions = first["conversions"]
    assert conversions["rows"] == conversions["accepted"] + conversions["quarantined"]
    expected: dict[str, int] = {"duplicate_in_load": 1, "malformed_row": 1}
    for cid, fate in fates.items():
        if fate != "accepted" and cid.startswith("h_"):
            expected[fate] = expected.get(fate, 0) + 1
    assert conversions["reasons"] == expected
    assert second["conversions"]["reasons"] == {"unknown_region_value": 1}  # 'east' is unlisted
    assert second["conversions"]["accepted"] == 2
    assert plain["conversions"]["accepted"] == 1
    assert again["conversions"]["already_loaded"] and again["impressions"]["already_loaded"]
    assert typed["conversions"]["reasons"] == {"missing_region": 1}  # a Parquet null
    assert typed["conversions"]["accepted"] == 1
    # with a catch-all only the blank device is quarantined: rows in = accepted + quarantined
    assert caught["conversions"]["reasons"] == {"missing_device": 1}
    assert caught["conversions"]["rows"] == 5 == caught["conversions"]["accepted"] + 1
    assert refusals["duckdb"] == refusals["spark"]
    assert (
        "missing column(s) device (declared under the catalogue's dimensions)"
        in (refusals["spark"])
    )
    assert_same_quarantine(duck, sparkw)
    left, right = _stored(duck, sparkw)
    pd.testing.assert_frame_equal(left, right, check_dtype=False)
    # every accepted conversion of a load made with dimensions has one row per dimension
    accepted = sum(r["conversions"]["accepted"] for r in (first, second, typed, caught))
    assert len(right) == sparkw.table_rows("conversion_dimensions") == 2 * accepted
    # the catch-all of each dimension got a key too
    assert sparkw.table_rows("dimension_values") == len(GROWN["region"]) + len(DEVICES) + 2
    values = right.set_index(keys=["conversion_id", "dimension"])["value"]
    assert values[("h_padded", "region")] == "south" and values[("h_padded", "device")] == "tv"
    assert values[("h_quoted", "region")] == QUOTED
    assert values[("h_unicode", "region")] == "südwest"
    assert values[("s_west", "region")] == "west"
    assert values[("pq_ok", "region")] == "west"
    assert values[("c0_0_0", "region")] == "north"  # the first copy's (the generated row's)
    assert "p_plain" not in set(right.conversion_id)
    for cid, fate in fates.items():
        if isinstance(fate, tuple):  # the catch-all load: the unlisted stored as 'other'
            assert (values[(cid, "region")], values[(cid, "device")]) == fate
    assert "k_blank" not in set(right.conversion_id)
    keys = right.drop_duplicates(["dimension", "value"]).set_index(["dimension", "value"])
    # keys in list order, 'west' appended after the first list's, the catch-all after the
    # list it ends: none renumbered
    assert [keys.value_key[("region", v)] for v in ("north", "south", "west")] == [0, 1, 4]
    assert keys.value_key[("region", "other")] == 5 and keys.value_key[("device", "other")] == 3


LAYOUTS = {
    "both": {"breakdown": ["region", "device"], "measures": ["count", "value"]},
    "counts": {"breakdown": ["region", "device"], "measures": ["count"]},
    "values": {"breakdown": [], "measures": ["count", "value"]},
}


def _campaigns():
    entries = []
    for name, fields in LAYOUTS.items():
        cells = {**fields, **({"value_cap": VALUE_CAP} if "value" in fields["measures"] else {})}
        entries.append(entry(name, **cells))
        plus = {"kind": "adsbpc_plus", "cap": 5, "profile_days": 2}
        entries.append(entry(f"{name}_plus", mechanism=plus, **cells))
    return parse_catalogue(catalogue(entries)).campaigns  # the spark catalogue is accepted


@pytest.mark.parametrize("name", list(LAYOUTS))
def test_adsbpc_cell_vectors_and_stored_rows_are_identical(engines, name):
    duck, sparkw, *_ = engines
    camp = next(c for c in _campaigns() if c.name == name)
    last = START + timedelta(days=DAYS - 1)
    days = [START + timedelta(days=i) for i in range(DAYS)]
    stats = [w.attribute_days(camp, START, last) for w in (duck, sparkw)]
    assert stats[0] == stats[1]
    for w in (duck, sparkw):
        w.contributions_days(camp, START, last)
    layout = layout_of(camp, PUBLISHERS)
    for day in days:
        for bound in (2.6, 1.0):
            vectors = [w.clipped_vector(camp, day, bound) for w in (duck, sparkw)]
            assert vectors[1].shape == (layout.size,)
            assert vectors[1].sum() > 0
            np.testing.assert_allclose(vectors[0], vectors[1], rtol=0, atol=1e-9)
        frames = [
            w.day_frame("clipped", camp, [day]).sort_values("position").reset_index(drop=True)
            for w in (duck, sparkw)
        ]
        exact = [c for c in frames[0].columns if c != "value"]
        pd.testing.assert_frame_equal(frames[0][exact], frames[1][exact], check_dtype=False)
        np.testing.assert_allclose(frames[0].value, frames[1].value, rtol=0, atol=1e-9)
        assert list(frames[1].publisher_id) == layout.cell_publishers()
    frozen = ["pubB", "nobody", "pubA"]  # a frozen list in its own order, one never seen
    vectors = [w.clipped_vector(camp, last, 1.5, publishers=frozen) for w in (duck, sparkw)]
    assert vectors[1].shape == (layout_of(camp, frozen).size,)
    np.testing.assert_allclose(vectors[0], vectors[1], rtol=0, atol=1e-9)


@pytest.mark.parametrize("name", list(LAYOUTS))
def test_adsbpc_plus_cell_filter_spends_and_profile_are_identical(engines, name):
    duck, sparkw, *_ = engines
    camp = next(c for c in _campaigns() if c.name == f"{name}_plus")
    last = START + timedelta(days=DAYS - 1)
    days = [START + timedelta(days=i) for i in range(DAYS)]
    for w in (duck, sparkw):
        w.attribute_days(camp, START, last)
    profiles = [
        w.plus_profile_histogram(camp, days[:2], [2.5, 1.0], [1.0, 0.5], 4, grid=PROFILE_GRID)
        for w in (duck, sparkw)
    ]
    assert profiles[1].sum() > 0
    np.testing.assert_array_equal(*profiles)
    # a small cap so the filter cuts users on the later days
    for day, bound in zip(days, (2.5, 1.0, 3.0), strict=True):
        vectors = [w.plus_clipped_vector(camp, day, bound, 0.8, 2.0) for w in (duck, sparkw)]
        assert vectors[1].shape == (layout_of(camp, PUBLISHERS).size,)
        np.testing.assert_allclose(vectors[0], vectors[1], rtol=0, atol=1e-9)
        again = sparkw.plus_clipped_vector(camp, day, bound, 0.8, 2.0)  # write-once
        np.testing.assert_array_equal(again, vectors[1])
    summaries = [w.plus_spend_summary(camp) for w in (duck, sparkw)]
    assert summaries[0]["days"] == summaries[1]["days"] == DAYS
    assert summaries[0]["users"] == summaries[1]["users"] > 0
    assert summaries[0]["max_spend"] == pytest.approx(summaries[1]["max_spend"], abs=1e-12)
    assert summaries[1]["max_spend"] == pytest.approx(2.0, rel=1e-9)  # the filter bit


# -- the square-root strategy over cells ---------------------------------------------------------


@pytest.mark.parametrize("name", list(LAYOUTS))
def test_adsbpc_plus_correlated_cell_rows_spends_and_profile_are_identical(engines, name):
    """AdsBPC+'s square-root strategy (plus_filter.sql) over each layout's cells: each user's
    earlier days carried per cell through C, the spends and the profile's cross-day term — the
    same on both engines."""
    duck, sparkw, *_ = engines
    base = next(c for c in _campaigns() if c.name == f"{name}_plus")
    camp = base.model_copy(update={"name": f"{name}_rows"})
    last = START + timedelta(days=DAYS - 1)
    for w in (duck, sparkw):
        w.attribute_days(camp, START, last)
    assert_same_plus_run(duck, sparkw, camp, cross=0.7, sqrt_rows=True)
    values = []
    for w, query in ((duck, duck.con.execute), (sparkw, sparkw.spark.sql)):
        if w is sparkw:
            sparkw._use()
        frame = query(KEPT.replace("$c", f"'{camp.name}'"))
        frame = frame.df() if w is duck else frame.toPandas()
        frame["day"] = pd.to_datetime(frame["day"]).dt.date
        values.append(frame.sort_values(["day", "user_key", "position"]).reset_index(drop=True))
    assert len(values[1]) > 0
    exact = ["day", "user_key", "position"]
    pd.testing.assert_frame_equal(values[0][exact], values[1][exact], check_dtype=False)
    np.testing.assert_allclose(values[0].value, values[1].value, rtol=0, atol=1e-9)


KEPT = (
    "SELECT CAST(day AS DATE) AS day, user_key, position, value FROM plus_user_values "
    "WHERE campaign = $c"
)
"""The filter's kept values per (day, user, vector position): what later rows carry."""


# -- cells measured by a residual strategy: the filter charges each user's encoded norm ----------


@pytest.mark.parametrize("name", ["both"])
def test_adsbpc_plus_residual_cell_filter_spends_and_profile_are_identical(engines, name):
    """With the plan's residual marginals (the Gram of plus_filter.sql), diagonal and
    square-root rows: the clipped vectors, every user's recorded cost per day and the profile
    histogram are the same on both engines, and the filter bites. One layout, the one with a
    breakdown and both measures: its Gram has every kind of slot (marginals over each axis,
    the centred value's coefficient −½, negative weights), and the SQL reads only the Gram
    table, so the other layouts add no path (DuckDB checks each: tests/test_cells.py)."""
    from dp_platform.mechanisms.adsbpc_plus import make_plan

    duck, sparkw, *_ = engines
    base = next(c for c in _campaigns() if c.name == f"{name}_plus")
    marginals = make_plan(base).marginals
    assert marginals is not None
    assert not layout_of(base, PUBLISHERS, marginals).strategy.gram().identity
    last = START + timedelta(days=DAYS - 1)
    days = [START + timedelta(days=i) for i in range(DAYS)]
    matrix = sqrt_matrix(DAYS)
    for kind in ("diagonal", "sqrt"):
        camp = base.model_copy(update={"name": f"{name}_residual_{kind}"})
        for w in (duck, sparkw):
            w.attribute_days(camp, START, last)
        profiles = [
            w.plus_profile_histogram(
                camp,
                days[:2],
                [2.5, 1.0],
                [1.0, 0.5],
                4,
                grid=PROFILE_GRID,
                cross=0.7 if kind == "sqrt" else 0.0,
                marginals=marginals,
            )
            for w in (duck, sparkw)
        ]
        assert profiles[1].sum() > 0
        np.testing.assert_array_equal(*profiles)
        for index, (day, bound) in enumerate(zip(days, (2.5, 1.0, 3.0), strict=True)):
            row = None
            if kind == "sqrt":
                row = StrategyRow(float(matrix[index, index]), tuple(matrix[index, :index]))
            vectors = [
                w.plus_clipped_vector(camp, day, bound, 0.8, 2.0, row=row, marginals=marginals)
                for w in (duck, sparkw)
            ]
            np.testing.assert_allclose(vectors[0], vectors[1], rtol=0, atol=1e-9)
        costs = [cells_data.user_costs(w, camp.name) for w in (duck, sparkw)]
        assert [c[:2] for c in costs[0]] == [c[:2] for c in costs[1]] and costs[0]
        np.testing.assert_allclose(
            [c[2] for c in costs[0]], [c[2] for c in costs[1]], rtol=1e-9, atol=1e-12
        )
        top = [w.plus_spend_summary(camp)["max_spend"] for w in (duck, sparkw)]
        assert top[0] == pytest.approx(top[1], abs=1e-12)
        assert top[1] == pytest.approx(2.0, rel=1e-9)  # the filter bit


# -- impression dimensions -----------------------------------------------------------------------


def test_both_engines_name_the_same_conversion_loads_without_a_dimension(engines) -> None:
    """The check behind refusing a breakdown over events loaded without its columns
    (dp_platform/dimension_coverage.py) reads the same ingest metadata on both engines: the
    conversions loaded without region hold day 2 only (impressions:
    tests/test_spark_impression_cells.py)."""
    day = [START + timedelta(days=k) for k in range(DAYS)]
    duck, sparkw = engines[:2]
    for kind, dimension in (("conversions", "region"), ("impressions", "creative")):
        for first, last in ((day[0], day[0]), (day[1], day[1]), (day[0], day[-1])):
            found = duck.loads_without(kind, ADVERTISER, first, last, dimension)
            assert sparkw.loads_without(kind, ADVERTISER, first, last, dimension) == found
    assert duck.loads_without("conversions", ADVERTISER, day[0], day[0], "region") == []
    assert len(duck.loads_without("conversions", ADVERTISER, day[1], day[1], "region")) == 1

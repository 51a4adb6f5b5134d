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

import csv
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
from dp_platform.privacy.discrete import SeededIntegerNoise
from dp_platform.privacy.strategy import sqrt_matrix
from dp_platform.warehouse import Warehouse
from dp_platform.warehouse.base import PeriodBound, StrategyRow
from tests import cells_data
from tests.cells_data import ADVERTISER, CREATIVES, PUBLISHERS, START, VALUE_CAP, generate, write

NOW = datetime(2026, 4, 1, tzinfo=UTC)
DAYS = 3
QUOTED = 'east, "quoted"'
REGIONS = ["north", "south", QUOTED, "südwest"]
DEVICES = ["mobile", "desktop", "tv"]
LISTS = {"region": REGIONS, "device": DEVICES}
GROWN = {"region": [*REGIONS, "west"], "device": DEVICES}
STORED = (
    "SELECT c.conversion_id, d.dimension, v.value_key, v.value "
    "FROM conversion_dimensions AS d "
    "JOIN conversions AS c ON c.conversion_key = d.conversion_key "
    "JOIN dimension_values AS v ON v.dimension = d.dimension AND v.value_key = d.value_key"
)


def _iso(ts: datetime) -> str:
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


def _append(path: Path, rows: list[list[str]]) -> None:
    """Rows in the csv module's dialect (CRLF, as tests/cells_data.py writes the files)."""
    with path.open("a", newline="") as handle:
        csv.writer(handle).writerows(rows)


def _hostile(conversions: Path) -> dict[str, str]:
    """Append the hostile rows; returns each one's expected fate (a reason, or 'accepted')."""
    t = datetime(START.year, START.month, START.day, 23, 0, tzinfo=UTC) + timedelta(days=1)
    rows = {
        "h_case": (["u001", ADVERTISER, _iso(t), "3", "North", "tv"], "unknown_region_value"),
        "h_empty": (["u001", ADVERTISER, _iso(t), "3", "", "tv"], "missing_region"),
        "h_blank": (["u001", ADVERTISER, _iso(t), "3", "north", "   "], "missing_device"),
        "h_padded": (["u002", ADVERTISER, _iso(t), "4", "  south ", " tv"], "accepted"),
        "h_inject": (
            ["u002", ADVERTISER, _iso(t), "1", "north'); DROP TABLE conversions; --", "tv"],
            "unknown_region_value",
        ),
        "h_quoted": (["u003", ADVERTISER, _iso(t), "2", QUOTED, "mobile"], "accepted"),
        "h_unicode": (["u003", ADVERTISER, _iso(t), "", "südwest", "desktop"], "accepted"),
        "h_ascii": (
            ["u003", ADVERTISER, _iso(t), "2", "sudwest", "desktop"],
            "unknown_region_value",
        ),
        # an earlier check wins: the value's before the dimensions', the dimensions' before 'future'
        "h_two": (["u004", ADVERTISER, _iso(t), "-1", "Mars", "tv"], "negative_value"),
        "h_future": (
            ["u004", ADVERTISER, "2099-01-01T00:00:00Z", "1", "north", "watch"],
            "unknown_device_value",
        ),
    }
    _append(conversions, [[cid, *row] for cid, (row, _) in rows.items()])
    # a duplicate of a generated id with other values (the first copy's are kept), a malformed
    # record (a field too many)
    _append(conversions, [["c0_0_0", "u000", ADVERTISER, _iso(t), "1", "south", "tv"]])
    _append(conversions, [["h_long", "u004", ADVERTISER, _iso(t), "1", "north", "tv", "x"]])
    return {cid: fate for cid, (_, fate) in rows.items()}


def _second_load(root: Path) -> tuple[Path, Path]:
    """A later load after the region list grew by 'west' (impressions: the header only)."""
    imps, convs = root / "second_impressions.csv", root / "second_conversions.csv"
    _append(imps, [IMPRESSION_HEADER])
    t = datetime(START.year, START.month, START.day, 22, 0, tzinfo=UTC) + timedelta(days=2)
    _append(
        convs,
        [
            [*CONVERSION_HEADER, "region", "device"],
            ["s_west", "u005", ADVERTISER, _iso(t), "7", "west", "tv"],
            ["s_north", "u005", ADVERTISER, _iso(t + timedelta(minutes=1)), "8", "north", "tv"],
            ["s_east", "u005", ADVERTISER, _iso(t), "9", "east", "tv"],
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
    _append(imps, [IMPRESSION_HEADER])
    t = datetime(START.year, START.month, START.day, 20, 0, tzinfo=UTC) + timedelta(days=2)
    rows = {
        "k_case": (["North", "tv"], ("other", "tv")),
        "k_inject": (["x'); DROP TABLE conversions; --", "watch"], ("other", "other")),
        "k_listed": (["west", "mobile"], ("west", "mobile")),
        "k_other": (["other", " tv "], ("other", "tv")),
        "k_blank": (["north", "  "], "missing_device"),
    }
    _append(
        convs,
        [
            [*CONVERSION_HEADER, "region", "device"],
            *(
                [cid, "u008", ADVERTISER, _iso(t + timedelta(minutes=n)), "1", *values]
                for n, (cid, (values, _)) in enumerate(rows.items())
            ),
        ],
    )
    return (imps, convs), {cid: fate for cid, (_, fate) in rows.items()}


def _undimensioned_load(root: Path) -> tuple[Path, Path]:
    """Conversions loaded without the catalogue's dimensions: in no cell of a breakdown."""
    imps, convs = root / "plain_impressions.csv", root / "plain_conversions.csv"
    _append(imps, [IMPRESSION_HEADER])
    t = datetime(START.year, START.month, START.day, 21, 0, tzinfo=UTC) + timedelta(days=1)
    _append(convs, [CONVERSION_HEADER, ["p_plain", "u006", ADVERTISER, _iso(t), "5"]])
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
    _append(no_device, [[*CONVERSION_HEADER, "region"]])
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
    camp = parse_catalogue(_catalogue([_entry("frames")])).campaigns[0]
    quarantine = [
        w.day_frame("quarantine", camp, []).sort_values(["load_id", "source_row"])
        for w in (duck, sparkw)
    ]
    pd.testing.assert_frame_equal(
        *(q.reset_index(drop=True) for q in quarantine), check_dtype=False
    )
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


def _catalogue(campaigns: list[dict]) -> dict:
    return {
        "accounts": [{"name": "acct", "rho_cap": 100}],
        "dimensions": {
            name: {"source": "conversions", "values": v, "catch_all": None}
            for name, v in GROWN.items()
        },
        "campaigns": campaigns,
        "warehouse": {"engine": "spark"},
    }


def _entry(name: str, **fields: object) -> dict:
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


LAYOUTS = {
    "both": {"breakdown": ["region", "device"], "measures": ["count", "value"]},
    "counts": {"breakdown": ["region", "device"], "measures": ["count"]},
    "values": {"breakdown": [], "measures": ["count", "value"]},
}


def _campaigns():
    entries = []
    for name, fields in LAYOUTS.items():
        cells = {**fields, **({"value_cap": VALUE_CAP} if "value" in fields["measures"] else {})}
        entries.append(_entry(name, **cells))
        plus = {"kind": "adsbpc_plus", "cap": 5, "profile_days": 2}
        entries.append(_entry(f"{name}_plus", mechanism=plus, **cells))
    return parse_catalogue(_catalogue(entries)).campaigns  # the spark catalogue is accepted


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
    days = [START + timedelta(days=i) for i in range(DAYS)]
    matrix = sqrt_matrix(DAYS)
    for w in (duck, sparkw):
        w.attribute_days(camp, START, last)
    profiles = [
        w.plus_profile_histogram(
            camp, days[:2], [2.5, 1.0], [1.0, 0.5], 4, grid=PROFILE_GRID, cross=0.7
        )
        for w in (duck, sparkw)
    ]
    assert profiles[1].sum() > 0
    np.testing.assert_array_equal(*profiles)
    for index, (day, bound) in enumerate(zip(days, (2.5, 1.0, 3.0), strict=True)):
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
    base = ["u001", "pubA", ADVERTISER, _iso(t)]
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
        "hi_two": ([*base[:3], _iso(t), "hover", "poster"], "unknown_interaction"),
        "hi_future": (
            [*base[:3], "2099-01-01T00:00:00Z", "view", "poster"],
            "unknown_creative_value",
        ),
    }
    _append(impressions, [[iid, *row] for iid, (row, _) in rows.items()])
    # a duplicate of a generated id with another creative (the first copy's is kept), a
    # malformed record (a field too many), and an oversized tie group of listed creatives
    _append(impressions, [["i0_0_0", "u000", "pubB", ADVERTISER, _iso(t), "view", "native"]])
    _append(impressions, [["hi_long", "u002", "pubA", ADVERTISER, _iso(t), "view", "video", "x"]])
    tied = t + timedelta(hours=1)
    _append(
        impressions,
        [
            [f"hi_tie_{k:04d}", "u003", "pubC", ADVERTISER, _iso(tied), "view", "banner"]
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
    _append(plain_imps, [IMPRESSION_HEADER, ["p_imp", "u004", "pubB", ADVERTISER, _iso(t), "view"]])
    _append(plain_convs, [[*CONVERSION_HEADER, "region", "device"]])
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
    camp = parse_catalogue(_catalogue([_entry("frames")])).campaigns[0]
    quarantine = [
        w.day_frame("quarantine", camp, []).sort_values(["load_id", "source_row"])
        for w in (duck, sparkw)
    ]
    pd.testing.assert_frame_equal(
        *(q.reset_index(drop=True) for q in quarantine), check_dtype=False
    )
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
        entries.append(_entry(f"{rule}_{name}{suffix}", attribution=attribution, **cells, **extra))
    catalogue = _catalogue(entries)
    catalogue["dimensions"] = {
        **{
            n: {"source": "conversions", "values": v, "catch_all": None}
            for n, v in TOUCH_CONVERSION_LISTS.items()
        },
        **{
            n: {"source": "impressions", "values": v, "catch_all": None}
            for n, v in TOUCH_LISTS.items()
        },
    }
    return parse_catalogue(catalogue).campaigns


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
    days = [START + timedelta(days=i) for i in range(DAYS)]
    plus = {"kind": "adsbpc_plus", "cap": 5, "profile_days": 2, "strategy": strategy}
    matrix = sqrt_matrix(DAYS)
    for camp in _touch_campaigns(rule, plus, suffix=f"_plus_{strategy}"):
        for w in (duck, sparkw):
            w.attribute_days(camp, START, last, noise=SeededIntegerNoise(17))
        cross = 0.7 if strategy == "sqrt" else 0.0
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
            if strategy == "sqrt":
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


def test_both_engines_name_the_same_loads_without_a_dimension(engines, touch_engines) -> None:
    """The check behind refusing a breakdown over events loaded without its columns
    (dp_platform/dimension_coverage.py) reads the same ingest metadata on both engines: the
    conversions loaded without region hold day 2 only; the impressions loaded without creative
    day 3 only."""
    day = [START + timedelta(days=k) for k in range(DAYS)]
    for duck, sparkw in (engines[:2], touch_engines[:2]):
        for kind, dimension in (("conversions", "region"), ("impressions", "creative")):
            for first, last in ((day[0], day[0]), (day[1], day[1]), (day[0], day[-1])):
                found = duck.loads_without(kind, ADVERTISER, first, last, dimension)
                assert sparkw.loads_without(kind, ADVERTISER, first, last, dimension) == found
    duck, sparkw = engines[:2]
    assert duck.loads_without("conversions", ADVERTISER, day[0], day[0], "region") == []
    assert len(duck.loads_without("conversions", ADVERTISER, day[1], day[1], "region")) == 1
    duck, sparkw = touch_engines[:2]
    assert duck.loads_without("impressions", ADVERTISER, day[0], day[1], "creative") == []
    assert len(duck.loads_without("impressions", ADVERTISER, day[2], day[2], "creative")) == 1

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
from dp_platform.config import ConfigError, parse_catalogue
from dp_platform.mechanisms.adsbpc_plus import PROFILE_GRID
from dp_platform.warehouse import Warehouse
from tests.cells_data import ADVERTISER, PUBLISHERS, START, VALUE_CAP, generate, write

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
    no_device = root / "no_device.csv"
    _append(no_device, [[*CONVERSION_HEADER, "region"]])
    duck = Warehouse(root / "duck.duckdb")
    sparkw = SparkWarehouse(spark, root / "spark" / "tables", root / "spark" / "catalog.sqlite")
    reports, refusals = {}, {}
    for name, warehouse in (("duckdb", duck), ("spark", sparkw)):
        reports[name] = [
            warehouse.ingest(imps, convs, now=NOW, dimensions=LISTS).to_json(),
            warehouse.ingest(*second, now=NOW, dimensions=GROWN).to_json(),
            warehouse.ingest(*plain, now=NOW).to_json(),
            warehouse.ingest(imps, convs, now=NOW, dimensions=LISTS).to_json(),  # again: nothing
            warehouse.ingest(second[0], parquet, now=NOW, dimensions=GROWN).to_json(),
        ]
        before = warehouse.table_rows("conversions")
        with pytest.raises(ConfigError) as refused:
            warehouse.ingest(second[0], no_device, now=NOW, dimensions=LISTS)
        refusals[name] = str(refused.value)
        assert warehouse.table_rows("conversions") == before  # nothing was loaded
    yield duck, sparkw, reports, refusals, fates
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
    first, second, plain, again, typed = reports["spark"]
    conversions = first["conversions"]
    assert conversions["rows"] == conversions["accepted"] + conversions["quarantined"]
    expected: dict[str, int] = {"duplicate_in_load": 1, "malformed_row": 1}
    for fate in fates.values():
        if fate != "accepted":
            expected[fate] = expected.get(fate, 0) + 1
    assert conversions["reasons"] == expected
    assert second["conversions"]["reasons"] == {"unknown_region_value": 1}  # 'east' is unlisted
    assert second["conversions"]["accepted"] == 2
    assert plain["conversions"]["accepted"] == 1
    assert again["conversions"]["already_loaded"] and again["impressions"]["already_loaded"]
    assert typed["conversions"]["reasons"] == {"missing_region": 1}  # a Parquet null
    assert typed["conversions"]["accepted"] == 1
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
    accepted = sum(r["conversions"]["accepted"] for r in (first, second, typed))
    assert len(right) == sparkw.table_rows("conversion_dimensions") == 2 * accepted
    assert sparkw.table_rows("dimension_values") == len(GROWN["region"]) + len(DEVICES)
    values = right.set_index(keys=["conversion_id", "dimension"])["value"]
    assert values[("h_padded", "region")] == "south" and values[("h_padded", "device")] == "tv"
    assert values[("h_quoted", "region")] == QUOTED
    assert values[("h_unicode", "region")] == "südwest"
    assert values[("s_west", "region")] == "west"
    assert values[("pq_ok", "region")] == "west"
    assert values[("c0_0_0", "region")] == "north"  # the first copy's (the generated row's)
    assert "p_plain" not in set(right.conversion_id)
    keys = right.drop_duplicates(["dimension", "value"]).set_index(["dimension", "value"])
    # keys in list order, 'west' appended after the first list's: none renumbered
    assert [keys.value_key[("region", v)] for v in ("north", "south", "west")] == [0, 1, 4]


def _catalogue(campaigns: list[dict]) -> dict:
    return {
        "accounts": [{"name": "acct", "rho_cap": 100}],
        "dimensions": {name: {"source": "conversions", "values": v} for name, v in GROWN.items()},
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

"""The Spark ingest's file and row checks (warehouse/spark/ingest_checks.py) against DuckDB's.

Per file of the ingest corpus — the hostile cases (tests/hostile/ingest_cases.py), the rows of
tests/test_ingest.py and probes of the CSV reader, the time grammar and the number grammar —
both engines must give the same rows read, the same reason for every record (row numbers
included), the same ids, UTC microseconds, interactions, values and dimension values for the rows
that pass, and the same one-line refusal (the engine's own error name in parentheses aside).
Whole ingests must give the same reports, quarantine and stored rows, and the Spark path must
read no event on the driver (no DuckDB, only the CSV header row and one byte of a local file).
"""

from __future__ import annotations

import builtins
import csv
import gzip
import io
import math
import re
import shutil
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from dp_platform.config_dimensions import DimensionConfig
from tests.hostile.ingest_cases import CASES, Workspace
from tests.spark_ingest_outcomes import duckdb_outcome, spark_outcome
from tests.test_ingest import CONVERSIONS, IMPRESSIONS

NOW = datetime(2026, 4, 1, tzinfo=UTC)
IMP = ["impression_id", "user_id", "publisher_id", "advertiser_id", "ts", "interaction"]
CONV = ["conversion_id", "user_id", "advertiser_id", "ts", "value"]

USES_CLI = {  # cases that load through the command line before their own files
    "duplicate_id_of_loaded_data",
    "id_of_another_users_loaded_event",
    "same_file_loaded_twice",
    "same_content_under_another_name",
}
FILE_CASES = [
    c
    for c in CASES
    if c.name not in USES_CLI
    and not c.name.startswith(("now_", "home_", "warehouse_", "disk_", "unreadable_"))
]
"""Every hostile case decided by the files alone (the command line's and the warehouse's own
refusals, and the child-process cases, are not the checks' business)."""

TIMES = [
    "2026-03-01T10:00:00Z",
    "2026-03-01T10:00:00.123456Z",
    "2026-03-01T10:00:00.1234567Z",
    "2026-03-01 12:00:00+02:00",
    "2026-03-01T05:00:00-05:00",
    "2026-03-01 10:00:00",
    "2026-03-02",
    "2026-3-1",
    "26-03-01",
    "2026/03/01",
    "2026-03-01T10:00",
    "2026-03-01T1:2:3Z",
    "2026-03-01  10:00:00",
    "2026-03-01T24:00:00Z",
    "2026-03-01T24:00:01Z",
    "2026-03-01T10:60:00Z",
    "2026-03-01T10:00:00+0200",
    "2026-03-01T10:00:00+02",
    "2026-03-01T10:00:00+02:00:30",
    "2026-03-01T10:00:00+99:99",
    "2026-03-01T10:00:00+2",
    "2026-03-01T10:00:00 +02:00",
    "2026-03-01 10:00:00 Z",
    "2026-03-01T10:00:00z",
    "2026-03-01t10:00:00Z",
    "2026-03-01T10:00:00 UTC",
    "2026-03-01T10:00:00 europe/paris",
    "2026-03-01 10:00:00 EST",
    "2026-03-01T10:00:00America/New_York",
    "2026-03-01 10:00:00 Europe/Pariss",
    "2026-03-01T10:00:00.5+02:00",
    "2026-03-01T10:00:00,5Z",
    "2026-03-01T10",
    "2026",
    "2026-03",
    "20260301",
    "2026.03.01",
    "2026-02-29",
    "2024-02-29",
    "1900-02-29",
    "2000-02-29",
    "epoch",
    " EPOCH",
    "infinity",
    "-Infinity",
    "+infinity",
    "now",
    "1600-01-01T00:00:00Z",
    "12026-03-01",
    "-0001-03-01",
    "294248-01-01",
    "1969-12-31T23:00:00-02:00",
    "1969-12-31T23:59:59.999999Z",
    "2199-12-31T23:59:59.999999Z",
    "2200-01-01T00:00:00Z",
    "2026-03-01T10:00:00Z\t\n",
    "\t2026-03-01T10:00:00Z",
    "2026-03-01\n10:00:00",
    "2026-04-01T00:00:00Z",
    "2026-04-01T00:00:00.000001Z",
]
"""Probes of DuckDB's TRY_CAST(text AS TIMESTAMPTZ): what it takes, what it refuses."""

VALUES = [
    "12.5",
    "-0.01",
    "-0",
    "0.1",
    "1e400",
    "1e-400",
    "1d",
    "0x10",
    "0x1p3",
    "1_000",
    "1_000.5",
    "1.5_0",
    "1e1_0",
    "1__0",
    "_1",
    "1_e5",
    "+1",
    ".5",
    "5.",
    "+.5",
    "-.5e-3",
    "5.e3",
    "1e",
    "1,5",
    "inf",
    "-Infinity",
    "nan",
    "+nan",
    "１",
    "1.7976931348623157e308",
    "2e308",
    "4.9e-324",
    "123456789012345678901234567890",
    "\t5",
    "5\n",
]
"""Probes of DuckDB's TRY_CAST(text AS DOUBLE)."""


def _normalised(outcome: dict) -> dict:
    """NaN equal to NaN; a refusal's engine error name in parentheses blanked."""
    if "refused" in outcome:
        text = re.sub(r"\((\w+(?:Exception|Error))\)", "(engine error)", outcome["refused"])
        return {"refused": text, "type": outcome["type"]}
    checked = {
        row: tuple("NaN" if isinstance(v, float) and math.isnan(v) else v for v in values)
        for row, values in outcome["checked"].items()
    }
    return {**outcome, "checked": checked, "sha256": None}


def _assert_same(spark, kind: str, path: Path, dims: dict | None = None) -> dict:
    duck = _normalised(duckdb_outcome(kind, path, NOW, dims or {}))
    ours = _normalised(spark_outcome(spark, kind, path, NOW, dims or {}))
    assert ours == duck
    return duck


def _dimensions(expect_extra: list[str], kind: str) -> dict[str, DimensionConfig]:
    """The case's catalogue dimensions of one file (``--config`` among its arguments)."""
    if "--config" not in expect_extra:
        return {}
    document = yaml.safe_load(Path(expect_extra[expect_extra.index("--config") + 1]).read_text())
    return {
        name: DimensionConfig(**spec)
        for name, spec in document.get("dimensions", {}).items()
        if spec["source"] == kind
    }


@pytest.mark.parametrize("case", FILE_CASES, ids=[c.name for c in FILE_CASES])
def test_hostile_files_give_the_same_rows_and_refusals(spark, tmp_path, case) -> None:
    expect = case.build(Workspace(tmp_path / case.name, case.name))
    outcomes = []
    for kind, path in (("impressions", expect.impressions), ("conversions", expect.conversions)):
        outcomes.append(_assert_same(spark, kind, path, _dimensions(expect.extra, kind)))
    if expect.exit_code == 2:  # the refusal is the checks' (not a passing pair of files)
        assert any("refused" in o for o in outcomes)
    else:
        for kind, outcome in zip(("impressions", "conversions"), outcomes, strict=True):
            assert outcome["rows"] == expect.rows[kind]


def _write(path: Path, header: list[str], rows: list[list[str]]) -> Path:
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)
    return path


def test_the_ingest_tests_rows_and_the_time_and_number_probes(spark, tmp_path) -> None:
    imps = _write(tmp_path / "imps.csv", IMP, [row for row, _ in IMPRESSIONS])
    convs = _write(tmp_path / "convs.csv", CONV, [row for row, _ in CONVERSIONS])
    _assert_same(spark, "impressions", imps)
    _assert_same(spark, "conversions", convs)
    interactions = ["view", "CLICK", " Click ", "VİEW", "hover"]
    times = [
        [f"t{k}", "u", "p", "a", ts, interactions[k % len(interactions)]]
        for k, ts in enumerate(TIMES)
    ]
    probed = _assert_same(spark, "impressions", _write(tmp_path / "times.csv", IMP, times))
    reasons = {values[0] for values in probed["checked"].values()}
    assert {None, "unparsable_ts", "ts_out_of_range", "future_ts"} <= reasons
    values = [[f"v{k}", "u", "a", "2026-03-02T10:00:00Z", v] for k, v in enumerate(VALUES)]
    probed = _assert_same(spark, "conversions", _write(tmp_path / "values.csv", CONV, values))
    assert {None, "unparsable_value", "negative_value"} <= {
        values[0] for values in probed["checked"].values()
    }


def _raw(path: Path, text: str) -> Path:
    path.write_bytes(text.encode())
    return path


def test_csv_reader_edges(spark, tmp_path) -> None:
    """Records as DuckDB's reader numbers and rejects them: quoted line breaks, escaped and
    inner quotes, blank lines, records over 2 000 000 bytes (either side of the limit), invalid
    UTF-8 after a malformed record, a missing final line end."""
    header = ",".join(IMP)

    def row(k: int, user: str = "u1") -> str:
        return f"i{k},{user},p1,acme,2026-03-01T10:00:00Z,view"

    broken, inner, escaped = '"u\nx"', 'u"1', '"u""1"'
    files = {
        "break.csv": f"{header}\n{row(1, 'u')},x\n{row(2, broken)}\n{row(3)}\n",
        "quotes.csv": f"{header}\n{row(1, inner)}\n{row(2, escaped)}\n",
        "blank.csv": f"{header}\n{row(1)}\n\n{row(2)}\n\n",
        "noeol.csv": f"{header}\n{row(1)}\n{row(2)}",
        "long.csv": f"{header}\n{row(1, 'S' * 1_999_963)}\n{row(2, 'S' * 1_999_964)}\n{row(3)}\n",
        "few.csv": f"{header}\ni1,u1\n{row(2)}\n",
    }
    for name, text in files.items():
        _assert_same(spark, "impressions", _raw(tmp_path / name, text))
    bad = (header + "\n" + row(1) + ",x\n").encode() + row(2, "\xe9").encode("latin-1") + b"\n"
    latin = tmp_path / "latin.csv"
    latin.write_bytes(bad + (row(3) + "\n").encode())
    outcome = _assert_same(spark, "impressions", latin)
    assert outcome["malformed"] == {1: ("malformed_row",), 2: ("malformed_row",)}
    packed = tmp_path / "g.csv.gz"
    packed.write_bytes(gzip.compress(files["break.csv"].encode()))
    _assert_same(spark, "impressions", packed)


def test_uris_read_through_spark_give_the_same_outcome(spark, tmp_path, monkeypatch) -> None:
    """A ``file:`` URI taken as a remote one (Spark's ``binaryFile`` listing for the file checks,
    its ``text`` reader for the header row, ingest_probes): the same rows and the same refusals
    as DuckDB on the local path."""
    from dp_platform.warehouse.spark import ingest_checks

    imps = _write(tmp_path / "imps.csv", IMP, [row for row, _ in IMPRESSIONS])
    latin = _raw(tmp_path / "latin.csv", "x")
    latin.write_bytes((",".join(CONV) + ",r\xe9gion\n").encode("latin-1"))
    packed = tmp_path / "imps.csv.gz"
    packed.write_bytes(gzip.compress(imps.read_bytes()))
    blank = _raw(tmp_path / "blank.csv", "\n" + ",".join(IMP) + "\n")
    empty_pq = _raw(tmp_path / "empty.parquet", "")
    monkeypatch.setattr(ingest_checks, "_local", lambda path: None)
    for kind, path in (
        ("impressions", imps),
        ("conversions", latin),
        ("impressions", packed),
        ("impressions", blank),
        ("impressions", empty_pq),
    ):
        duck = _normalised(duckdb_outcome(kind, path, NOW))
        ours = _normalised(spark_outcome(spark, kind, path.as_uri(), NOW))
        if "refused" in duck:  # the message names the file as given
            duck["refused"] = duck["refused"].replace(str(path), path.as_uri())
        assert ours == duck
    gone = _normalised(spark_outcome(spark, "impressions", (tmp_path / "no.csv").as_uri(), NOW))
    assert gone["type"] == "FileNotFoundError" and gone["refused"].endswith(": not found")
    (tmp_path / "d").mkdir()
    shutil.copy(imps, tmp_path / "d" / "imps.csv")
    shutil.copy(imps, tmp_path / "_skipped.csv")
    folder = spark_outcome(spark, "impressions", (tmp_path / "d").as_uri(), NOW)
    assert folder["refused"].endswith(": is a directory, not a file")
    skipped = spark_outcome(spark, "impressions", (tmp_path / "_skipped.csv").as_uri(), NOW)
    assert ": no file Spark reads" in skipped["refused"]


def test_nanosecond_times_are_told_from_integers(spark, tmp_path) -> None:
    """Spark reads INT64 nanosecond times only as integers: the probe (ingest_types) must tell
    them apart from BIGINT columns of the same file — nanoseconds next to integer ids load,
    integer times and nanosecond ids are refused as DuckDB refuses them."""
    nanos = pa.array(
        [datetime(2026, 3, 1, 10, k, tzinfo=UTC) for k in range(2)], pa.timestamp("ns", tz="UTC")
    )
    local = pa.array([datetime(2026, 3, 1, 10, k) for k in range(2)], pa.timestamp("ns"))
    base = {
        "impression_id": pa.array([1, 2], pa.int64()),
        "user_id": pa.array([7, 8], pa.int64()),
        "publisher_id": ["p1", "p2"],
        "advertiser_id": pa.array([3, 3], pa.int64()),
        "ts": nanos,
        "interaction": ["view", "click"],
        "extra": pa.array([5, 6], pa.int64()),
    }
    files = {
        "mixed.parquet": base,
        "local.parquet": {**base, "ts": local},
        "int_ts.parquet": {**base, "ts": pa.array([1, 2], pa.int64())},
        "nanos_id.parquet": {**base, "user_id": nanos},
        "nanos_ignored.parquet": {**base, "ts": local, "extra": nanos},
    }
    outcomes = {}
    for name, columns in files.items():
        pq.write_table(pa.table(columns), tmp_path / name)
        outcomes[name] = _assert_same(spark, "impressions", tmp_path / name)
    assert outcomes["mixed.parquet"]["rows"] == 2 and "refused" not in outcomes["local.parquet"]
    assert "has type BIGINT" in outcomes["int_ts.parquet"]["refused"]
    assert "refused" in outcomes["nanos_id.parquet"]


def test_a_parquet_column_spark_cannot_read_refuses_the_file(spark, tmp_path) -> None:
    """A listed divergence (ingest_types): Spark reads no schema of a file with a UUID column,
    so the file is refused naming that type, though the ingest would ignore the column (DuckDB
    loads it)."""
    import uuid

    columns = {name: ["x1"] for name in IMP} | {"ts": ["2026-03-01T10:00:00Z"]}
    columns["request"] = pa.array([uuid.uuid4().bytes], pa.uuid())
    path = tmp_path / "uuid.parquet"
    pq.write_table(pa.table(columns), path)
    assert duckdb_outcome("impressions", path, NOW)["rows"] == 1
    refused = spark_outcome(spark, "impressions", path, NOW)["refused"]
    assert refused.endswith(
        "has a column of Parquet type FIXED_LEN_BYTE_ARRAY (UUID), which Spark cannot read"
    )


# -- whole ingests -------------------------------------------------------------------------------


def _parquet_pair(directory: Path) -> tuple[Path, Path]:
    """Typed Parquet files with a dimension column each and bad rows of every typed kind."""
    directory.mkdir(parents=True, exist_ok=True)
    n = 6
    imps = pa.table(
        {
            "impression_id": [f"pi{k}" for k in range(n)],
            "user_id": pa.array([7, 8, None, 7, 9, 8], pa.int64()),
            "publisher_id": ["p1", "p2", "p1", " p3 ", "p1", "p2"],
            "advertiser_id": ["acme"] * n,
            "ts": pa.array(
                [datetime(2026, 3, 1, 10, k) for k in range(n - 1)] + [datetime(1600, 1, 1)],
                pa.timestamp("us"),
            ),
            "interaction": ["view", "click", "view", "CLICK", "hover", "view"],
            "creative": ["banner", "video", "banner", "odd", "banner", None],
            "note": pa.array([{"x": k} for k in range(n)]),  # ignored, of a type never read
            "blob": pa.array([b"\x00"] * n),
        }
    )
    convs = pa.table(
        {
            "conversion_id": [f"pc{k}" for k in range(n)],
            "user_id": ["7", "8", "9", "7", "8", "9"],
            "advertiser_id": ["acme"] * n,
            "ts": pa.array(
                [datetime(2026, 3, 2, 10, k, tzinfo=UTC) for k in range(n)],
                pa.timestamp("ns", tz="UTC"),
            ),
            "value": pa.array([1.5, float("nan"), -2.0, None, 3.0, 4.0]),
            "region": ["north", "south", "north", "east", "", "north"],
        }
    )
    pq.write_table(imps, directory / "imps.parquet")
    pq.write_table(convs, directory / "convs.parquet")
    return directory / "imps.parquet", directory / "convs.parquet"


DIMS = {"region": DimensionConfig(source="conversions", values=["north", "south"])}
IMP_DIMS = {
    "creative": DimensionConfig(source="impressions", values=["banner", "video"], catch_all=None)
}


def _stored(warehouse, query: str) -> list[tuple]:
    if hasattr(warehouse, "con"):
        return sorted(tuple(r) for r in warehouse.con.execute(query).fetchall())
    warehouse._use()
    return sorted(tuple(r) for r in warehouse.spark.sql(query).collect())


STORED = {
    "impressions": "SELECT impression_id, user_key, publisher_key, advertiser_key, ts, "
    "interaction, source_row, load_id FROM impressions",
    "conversions": "SELECT conversion_key, conversion_id, user_key, advertiser_key, ts, value, "
    "source_row, load_id FROM conversions",
    "quarantine": "SELECT kind, source_file, source_row, reason, load_id FROM quarantine",
    "users": "SELECT user_key, user_id FROM users",
    "publishers": "SELECT publisher_key, publisher_id FROM publishers",
    "conversion_dimensions": "SELECT conversion_key, dimension, value_key FROM "
    "conversion_dimensions",
    "impression_dimensions": "SELECT source_row, dimension, value_key FROM impression_dimensions",
}


def test_whole_ingests_store_the_same_rows_and_reports(spark, tmp_path) -> None:
    from dp_platform.warehouse import Warehouse
    from dp_platform.warehouse.spark.store import SparkWarehouse

    csv_imps = _write(tmp_path / "imps.csv", IMP, [row for row, _ in IMPRESSIONS])
    csv_convs = _write(tmp_path / "convs.csv", CONV, [row for row, _ in CONVERSIONS])
    pq_imps, pq_convs = _parquet_pair(tmp_path / "pq")
    copy = tmp_path / "copy_of_imps.csv"
    shutil.copy(csv_imps, copy)
    duck = Warehouse(tmp_path / "duck.duckdb")
    ours = SparkWarehouse(spark, tmp_path / "spark" / "tables")
    try:
        reports = {}
        for name, warehouse in (("duckdb", duck), ("spark", ours)):
            reports[name] = [
                warehouse.ingest(csv_imps, csv_convs, now=NOW).to_json(),
                warehouse.ingest(
                    pq_imps, pq_convs, now=NOW, dimensions=DIMS, impression_dimensions=IMP_DIMS
                ).to_json(),
                warehouse.ingest(copy, csv_convs, now=NOW).to_json(),  # both already loaded
            ]
        assert reports["spark"] == reports["duckdb"]
        second = reports["duckdb"][1]
        assert second["impressions"]["quarantined"] >= 3 and second["conversions"]["reasons"]
        assert reports["duckdb"][2]["impressions"]["already_loaded"]
        for table, query in STORED.items():
            assert _stored(ours, query) == _stored(duck, query), table
    finally:
        duck.close()
        ours.close()


class _Counting(io.RawIOBase):
    """A file object that counts the bytes the driver reads from an event file."""

    def __init__(self, inner, seen: dict[str, int], key: str) -> None:
        self.inner, self.seen, self.key = inner, seen, key

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        data = self.inner.read(len(buffer))
        buffer[: len(data)] = data
        self.seen[self.key] += len(data)
        return len(data)

    def close(self) -> None:
        self.inner.close()
        super().close()


def test_the_spark_ingest_reads_no_event_on_the_driver(spark, tmp_path, monkeypatch) -> None:
    """No DuckDB at all; of a CSV file the driver reads the header row's chunk (64 KiB, the
    file is over 25 times that), of any local file one byte (the readability probe, as DuckDB's
    ingest does)."""
    from dp_platform.warehouse.spark.store import SparkWarehouse

    rows = [
        [f"e{k:06d}", f"u{k % 50}", "p1", "acme", "2026-03-01T10:00:00Z", "view"]
        for k in range(40_000)
    ]
    imps = _write(tmp_path / "imps.csv", IMP, rows)
    _, convs = _parquet_pair(tmp_path / "pq")
    events = {str(imps): 0, str(convs): 0}
    real_open = io.open

    def counting_open(file, mode="r", *args, **kwargs):
        handle = real_open(file, mode, *args, **kwargs)
        key = str(file)
        if key in events and "b" in mode:
            return io.BufferedReader(_Counting(handle, events, key))
        if key in events:
            raise AssertionError("an event file opened as text on the driver")
        return handle

    def no_duckdb(*args, **kwargs):
        raise AssertionError("the Spark ingest opened DuckDB")

    monkeypatch.setattr(builtins, "open", counting_open)
    monkeypatch.setattr(io, "open", counting_open)
    monkeypatch.setattr(duckdb, "connect", no_duckdb)
    ours = SparkWarehouse(spark, tmp_path / "spark" / "tables")
    try:
        report = ours.ingest(imps, convs, now=NOW).to_json()
    finally:
        ours.close()
    assert report["impressions"]["accepted"] == 40_000
    assert imps.stat().st_size > 25 * 65_536
    assert 0 < events[str(imps)] <= 65_536 + 8192  # the header's chunk (one buffered read)
    assert events[str(convs)] <= 8192  # one byte asked, one buffer read at most

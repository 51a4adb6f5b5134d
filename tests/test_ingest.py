"""Ingest: every class of bad row is quarantined with its reason and row number, counts are
conserved, a file-level problem loads nothing, re-ingest adds nothing, and no message or report
shows a raw id or value."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dp_platform.warehouse import IngestError, Warehouse
from tests.conftest_data import CONV_HEADER, IMP_HEADER, campaign, write_csv

NOW = datetime(2026, 4, 1, tzinfo=UTC)
SECRET = "u-secret-7"  # a user id that must never appear in a message or a report

# (row, expected reason or None): data row numbers are 1-based, header not counted
IMPRESSIONS = [
    (["i1", SECRET, "p1", "acme", "2026-03-01T10:00:00Z", "view"], None),
    (["", SECRET, "p1", "acme", "2026-03-01T10:00:00Z", "view"], "missing_impression_id"),
    (["i3", "  ", "p1", "acme", "2026-03-01T10:00:00Z", "view"], "missing_user_id"),
    (["i4", SECRET, "", "acme", "2026-03-01T10:00:00Z", "view"], "missing_publisher_id"),
    (["i5", SECRET, "p1", "", "2026-03-01T10:00:00Z", "view"], "missing_advertiser_id"),
    (["i6", SECRET, "p1", "acme", "", "view"], "missing_ts"),
    (["i7", SECRET, "p1", "acme", "2026-03-01T10:00:00Z", ""], "missing_interaction"),
    (["i8", SECRET, "p1", "acme", "yesterday-ish", "view"], "unparsable_ts"),
    (["i9", SECRET, "p1", "acme", "2026-03-01T10:00:00Z", "hover"], "unknown_interaction"),
    (["i1", SECRET, "p2", "acme", "2026-03-01T11:00:00Z", "click"], "duplicate_in_load"),
    (["i11", SECRET, "p1", "acme", "2099-01-01T00:00:00Z", "view"], "future_ts"),
    (["i12", SECRET, "p1", "acme", "2026-03-01T10:00:00Z", "view", "extra"], "malformed_row"),
    (["i13", SECRET, "p2", "acme", "2026-03-01 12:00:00+02:00", " Click "], None),
]
CONVERSIONS = [
    (["c1", SECRET, "acme", "2026-03-02T10:00:00Z", "12.5"], None),
    (["c2", SECRET, "acme", "2026-03-02T10:00:00Z", "-1"], "negative_value"),
    (["c3", SECRET, "acme", "2026-03-02T10:00:00Z", "lots"], "unparsable_value"),
    (["c4", SECRET, "acme", "2026-03-02T10:00:00Z", "nan"], "unparsable_value"),
    (["c5", SECRET, "acme", "2099-03-02T10:00:00Z", "1"], "future_ts"),
    (["", SECRET, "acme", "2026-03-02T10:00:00Z", "1"], "missing_conversion_id"),
    (["c7", SECRET, "acme", "2026-03-02T10:00:00Z"], "malformed_row"),
    (["c8", SECRET, "acme", "2026-03-02T11:00:00Z", ""], None),  # value is optional
    (["c1", SECRET, "acme", "2026-03-02T12:00:00Z", "3"], "duplicate_in_load"),
    (["c10", SECRET, "acme", "2026-02-30T10:00:00Z", "1"], "unparsable_ts"),
]


def _files(tmp_path: Path) -> tuple[Path, Path]:
    imps = write_csv(tmp_path / "imps.csv", IMP_HEADER, [row for row, _ in IMPRESSIONS])
    convs = write_csv(tmp_path / "convs.csv", CONV_HEADER, [row for row, _ in CONVERSIONS])
    return imps, convs


def _expected(rows: list[tuple[list[str], str | None]]) -> dict[int, str]:
    return {n: reason for n, (_, reason) in enumerate(rows, start=1) if reason}


def _quarantine(wh: Warehouse, kind: str) -> dict[int, str]:
    rows = wh.con.execute(
        "SELECT source_row, reason FROM quarantine WHERE kind = ? ORDER BY 1", [kind]
    ).fetchall()
    return dict(rows)


def test_every_bad_row_class_is_quarantined_with_reason_and_row(tmp_path):
    imps, convs = _files(tmp_path)
    with Warehouse(tmp_path / "w.duckdb") as wh:
        report = wh.ingest(imps, convs, now=NOW)
        assert _quarantine(wh, "impressions") == _expected(IMPRESSIONS)
        assert _quarantine(wh, "conversions") == _expected(CONVERSIONS)
        assert wh.table_rows("impressions") == 2
        assert wh.table_rows("conversions") == 2
        ts = wh.con.execute("SELECT ts, interaction FROM impressions ORDER BY ts").fetchall()
    assert ts[-1] == (datetime(2026, 3, 1, 10, 0), "click")  # +02:00 → UTC; " Click " → click
    for kind, rows in (("impressions", IMPRESSIONS), ("conversions", CONVERSIONS)):
        part = report.to_json()[kind]
        assert part["rows"] == len(rows) == part["accepted"] + part["quarantined"]
        expected_reasons: dict[str, int] = {}
        for reason in _expected(rows).values():
            expected_reasons[reason] = expected_reasons.get(reason, 0) + 1
        assert part["reasons"] == expected_reasons
    assert SECRET not in json.dumps(report.to_json())


def test_reingest_adds_nothing_and_overlapping_ids_are_duplicates(tmp_path):
    imps, convs = _files(tmp_path)
    with Warehouse(tmp_path / "w.duckdb") as wh:
        wh.ingest(imps, convs, now=NOW)
        before = {t: wh.table_rows(t) for t in ("impressions", "conversions", "quarantine")}
        again = wh.ingest(imps, convs, now=NOW).to_json()
        assert again["impressions"]["already_loaded"] and again["conversions"]["already_loaded"]
        assert again["impressions"]["accepted"] == again["conversions"]["quarantined"] == 0
        assert {t: wh.table_rows(t) for t in before} == before

        # another file repeating a loaded event (same user, same id): that row is a duplicate;
        # the same id under another user is another event, accepted like the new id
        more = write_csv(
            tmp_path / "more.csv",
            IMP_HEADER,
            [
                ["i1", SECRET, "p1", "acme", "2026-03-01T09:00:00Z", "view"],
                ["i1", "u2", "p1", "acme", "2026-03-01T09:00:00Z", "view"],
                ["i99", "u2", "p1", "acme", "2026-03-01T09:00:00Z", "view"],
            ],
        )
        no_convs = write_csv(tmp_path / "none.csv", CONV_HEADER, [])
        report = wh.ingest(more, no_convs, now=NOW).to_json()
    assert report["impressions"]["reasons"] == {"duplicate_loaded": 1}
    assert report["impressions"]["accepted"] == 2
    assert report["conversions"] == {
        "file": str(no_convs),
        "rows": 0,
        "accepted": 0,
        "quarantined": 0,
        "reasons": {},
        "already_loaded": False,
    }


def test_missing_column_loads_nothing_from_either_file(tmp_path):
    imps, _ = _files(tmp_path)
    broken = write_csv(
        tmp_path / "broken.csv",
        ["conversion_id", "user_id", "advertiser_id", "value"],
        [["c1", SECRET, "acme", "1"]],
    )
    with Warehouse(tmp_path / "w.duckdb") as wh:
        with pytest.raises(IngestError, match=r"broken\.csv: missing column\(s\) ts") as error:
            wh.ingest(imps, broken, now=NOW)
        assert SECRET not in str(error.value)
        for table in ("impressions", "conversions", "quarantine", "loads", "users"):
            assert wh.table_rows(table) == 0, table


def test_failure_midway_rolls_back_everything(tmp_path, monkeypatch):
    """An error after the impressions were written leaves no trace of them."""
    imps, convs = _files(tmp_path)
    import dp_platform.warehouse.ingest as ingest

    real = ingest._load_one

    def fail_on_conversions(runner, source, now, *rest):
        if source.kind == "conversions":
            raise RuntimeError("disk full")
        return real(runner, source, now, *rest)

    monkeypatch.setattr(ingest, "_load_one", fail_on_conversions)
    with Warehouse(tmp_path / "w.duckdb") as wh:
        with pytest.raises(RuntimeError):
            wh.ingest(imps, convs, now=NOW)
        for table in ("impressions", "quarantine", "loads", "users", "publishers"):
            assert wh.table_rows(table) == 0, table
        monkeypatch.setattr(ingest, "_load_one", real)
        assert wh.ingest(imps, convs, now=NOW).impressions.accepted == 2  # nothing half-loaded


def test_file_level_problems_name_the_file_and_the_problem(tmp_path):
    imps, convs = _files(tmp_path)
    garbage = tmp_path / "garbage.parquet"
    garbage.write_bytes(b"PAR1 not really")
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    odd = tmp_path / "events.json"
    odd.write_text("{}")
    with Warehouse(":memory:") as wh:
        with pytest.raises(FileNotFoundError, match=r"impressions file .*nope\.csv: not found"):
            wh.ingest(tmp_path / "nope.csv", convs)
        with pytest.raises(IngestError, match=r"garbage\.parquet: not a readable Parquet file"):
            wh.ingest(garbage, convs)
        with pytest.raises(IngestError, match=r"empty\.csv: empty file, no header row"):
            wh.ingest(imps, empty)
        with pytest.raises(IngestError, match=r"events\.json: unknown format"):
            wh.ingest(odd, convs)
        assert wh.table_rows("loads") == 0


def test_parquet_with_typed_columns_and_bad_rows(tmp_path):
    ts = pa.array(
        [datetime(2026, 3, 1, 9), datetime(2026, 3, 1, 10), None, datetime(2026, 3, 1, 11)],
        pa.timestamp("us", tz="UTC"),
    )
    imps = pa.table(
        {
            "impression_id": ["a", "b", "c", "d"],
            "user_id": ["u1", None, "u1", "u1"],
            "publisher_id": ["p1", "p1", "p1", "p2"],
            "advertiser_id": ["acme"] * 4,
            "ts": ts,
            "interaction": ["view", "view", "click", "click"],
            "campaign_note": ["ignored"] * 4,  # extra columns are ignored
        }
    )
    convs = pa.table(
        {
            "conversion_id": [1, 2, 3],  # integer ids are read as text
            "user_id": ["u1", "u1", "u1"],
            "advertiser_id": ["acme"] * 3,
            "ts": pa.array([datetime(2026, 3, 1, 12)] * 3, pa.timestamp("us")),  # naive = UTC
        }
    )  # no value column: optional
    pq.write_table(imps, tmp_path / "i.parquet")
    pq.write_table(convs, tmp_path / "c.parquet")
    with Warehouse(":memory:") as wh:
        report = wh.ingest(tmp_path / "i.parquet", tmp_path / "c.parquet", now=NOW)
        assert _quarantine(wh, "impressions") == {2: "missing_user_id", 3: "missing_ts"}
        ids = [r[0] for r in wh.con.execute("SELECT conversion_id FROM conversions").fetchall()]
        camp = campaign(start=date(2026, 3, 1))
        wh.attribute_day(camp, date(2026, 3, 1))
        frame = wh.day_frame("attributed", camp, [date(2026, 3, 1)])
    assert report.impressions.accepted == 2 and report.conversions.accepted == 3
    assert sorted(ids) == ["1", "2", "3"]
    assert set(frame.publisher_id) == {"p2"}  # LTA: the 11:00 impression


def test_malformed_rows_do_not_shift_later_row_numbers(tmp_path):
    rows = [
        ["a", "u1", "p1", "acme", "2026-03-01T10:00:00Z", "view"],
        ["b", "u1", "p1"],  # too few fields
        ["c", "u1", "p1", "acme", "2026-03-01T10:00:00Z", "view", "x"],  # too many
        ["d", "u1", "p1", "acme", "bad", "view"],
        ["e", "u1", "p1", "acme", "2026-03-01T10:00:00Z", "wave"],
    ]
    imps = write_csv(tmp_path / "i.csv", IMP_HEADER, rows)
    convs = write_csv(tmp_path / "c.csv", CONV_HEADER, [])
    with Warehouse(":memory:") as wh:
        wh.ingest(imps, convs, now=NOW)
        assert _quarantine(wh, "impressions") == {
            2: "malformed_row",
            3: "malformed_row",
            4: "unparsable_ts",
            5: "unknown_interaction",
        }


def test_same_instant_impressions_across_loads_are_ordered_by_id(tmp_path):
    """A later load adding an impression at the same instant re-ranks the loaded one."""
    at = "2026-03-01T10:00:00Z"
    first = write_csv(tmp_path / "1.csv", IMP_HEADER, [["b", "u1", "p_b", "acme", at, "view"]])
    second = write_csv(tmp_path / "2.csv", IMP_HEADER, [["a", "u1", "p_a", "acme", at, "view"]])
    conv = ["c", "u1", "acme", "2026-03-01T11:00:00Z", ""]
    convs = write_csv(tmp_path / "c.csv", CONV_HEADER, [conv])
    empty = write_csv(tmp_path / "e.csv", CONV_HEADER, [])
    day = date(2026, 3, 1)
    with Warehouse(":memory:") as wh:
        wh.ingest(first, empty, now=NOW)
        wh.ingest(second, convs, now=NOW)
        for rule, publisher in (("lta", "p_b"), ("fta", "p_a")):
            camp = campaign(rule=rule, start=day)
            wh.attribute_day(camp, day)
            assert list(wh.day_frame("attributed", camp, [day]).publisher_id) == [publisher]


def test_more_impressions_at_one_instant_than_the_key_holds(tmp_path):
    """The ordering key has room for TIE_ROOM impressions per user, advertiser and µs."""
    from dp_platform.warehouse.ingest import TIE_ROOM

    at = "2026-03-01T10:00:00Z"
    first = [[f"a{k:05d}", "u1", f"p{k % 3}", "acme", at, "view"] for k in range(TIE_ROOM - 4)]
    second = [[f"b{k:05d}", "u1", "p9", "acme", at, "view"] for k in range(10)]
    second.append(["c00000", "u1", "p9", "acme", "2026-03-01T09:00:00Z", "view"])
    files = [
        write_csv(tmp_path / f"{n}.csv", IMP_HEADER, rows) for n, rows in enumerate([first, second])
    ]
    conv = write_csv(
        tmp_path / "c.csv", CONV_HEADER, [["c", "u1", "acme", "2026-03-01T11:00:00Z", ""]]
    )
    empty = write_csv(tmp_path / "e.csv", CONV_HEADER, [])
    with Warehouse(":memory:") as wh:
        assert wh.ingest(files[0], empty, now=NOW).impressions.accepted == TIE_ROOM - 4
        report = wh.ingest(files[1], conv, now=NOW).impressions
        assert report.reasons == {"too_many_at_instant": 10} and report.accepted == 1
        day = date(2026, 3, 1)
        for rule, publisher in (("lta", f"p{(TIE_ROOM - 5) % 3}"), ("fta", "p9")):
            camp = campaign(rule=rule, start=day)
            wh.attribute_day(camp, day)
            assert list(wh.day_frame("attributed", camp, [day]).publisher_id) == [publisher]


def _bulk_settings(con) -> dict[str, str]:  # type: ignore[no-untyped-def]
    from dp_platform.warehouse.ingest import BULK_SETTINGS

    rows = con.execute(
        "SELECT name, value FROM duckdb_settings() WHERE list_contains(?, name)",
        [list(BULK_SETTINGS)],
    ).fetchall()
    return dict(rows)


def test_the_load_is_written_in_bulk_and_the_connection_gets_its_settings_back(
    tmp_path, monkeypatch
):
    """During the load's writes: no insertion order, no FSST; after it, success or failure,
    the connection's own values (the CSV staging and later queries rely on insertion order)."""
    imps, convs = _files(tmp_path)
    import dp_platform.warehouse.ingest as ingest

    real, during = ingest._load_one, []

    def recording(runner, source, now, *rest):
        during.append(_bulk_settings(runner.con))
        if len(during) > 2:  # the second ingest fails inside its transaction
            raise RuntimeError("disk full")
        return real(runner, source, now, *rest)

    monkeypatch.setattr(ingest, "_load_one", recording)
    with Warehouse(tmp_path / "w.duckdb") as wh:
        before = _bulk_settings(wh.con)
        assert before["preserve_insertion_order"] == "true"
        wh.ingest(imps, convs, now=NOW)
        assert _bulk_settings(wh.con) == before and wh.table_rows("impressions") == 2
        with pytest.raises(RuntimeError):
            wh.ingest(imps, convs, now=NOW)
        assert _bulk_settings(wh.con) == before
    assert len(during) == 3
    for settings in during:
        assert settings["preserve_insertion_order"] == "false"
        assert settings["disabled_compression_methods"].lower() == "fsst,dict_fsst"

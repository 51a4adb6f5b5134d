"""Spark warehouse crashes: an ingest cut before its commit record is rolled back on the next
open, one cut after it is rolled forward — all or nothing, as DuckDB's transaction; an AdsBPC+
day whose spends were written but not committed is recomputed, never charged twice; private
last touch's choices count once committed, and a conversion is never drawn twice after that."""

from __future__ import annotations

import errno
import os
from datetime import UTC, date, datetime, timedelta

import numpy as np
import pandas as pd
import pytest

from dp_platform.privacy.discrete import SeededIntegerNoise
from dp_platform.warehouse.ingest import WarehouseWriteError
from dp_platform.warehouse.spark import ingest as spark_ingest
from tests.conftest_data import Conv, Imp, campaign, write_events

NOW = datetime(2026, 4, 1, tzinfo=UTC)
T0 = datetime(2026, 3, 1, 12, tzinfo=UTC)


class Crash(BaseException):
    """Stands for the process dying here (nothing after it runs)."""


def _events(tmp_path):
    imps = [
        Imp(f"i{k}", f"u{k % 4}", f"p{k % 3}", "acme", T0 + timedelta(hours=k), "view")
        for k in range(12)
    ]
    convs = [Conv(f"c{k}", f"u{k % 4}", "acme", T0 + timedelta(hours=k + 30)) for k in range(8)]
    return write_events(tmp_path / "events", imps, convs)


def _open(spark, tmp_path):
    from dp_platform.warehouse.spark.store import SparkWarehouse

    return SparkWarehouse(spark, tmp_path / "tables", tmp_path / "catalog.sqlite")


def test_ingest_cut_before_its_commit_record_is_rolled_back(spark, tmp_path, monkeypatch):
    files = _events(tmp_path)
    real_load = spark_ingest._load

    def load_then_die(warehouse, source, *rest):
        if source.kind == "conversions":  # impressions' keys and rows are written by now
            raise Crash
        return real_load(warehouse, source, *rest)

    def die(*args):
        raise Crash

    monkeypatch.setattr(spark_ingest, "_load", load_then_die)
    monkeypatch.setattr(spark_ingest, "_roll_back", die)  # died before cleaning up
    warehouse = _open(spark, tmp_path)
    with pytest.raises(Crash):
        warehouse.ingest(*files, now=NOW)
    assert warehouse.table_rows("users") > 0  # the dead load left rows behind
    monkeypatch.undo()
    warehouse = _open(spark, tmp_path)  # the next open rolls it back
    for table in ("users", "publishers", "impressions", "conversions", "quarantine", "loads"):
        assert warehouse.table_rows(table) == 0, table
    report = warehouse.ingest(*files, now=NOW)  # and the files load as if never tried
    assert not report.impressions.already_loaded
    assert warehouse.table_rows("impressions") == 12
    assert warehouse.table_rows("conversions") == 8
    assert warehouse.table_rows("users") == 4


def test_ingest_with_dimensions_cut_before_its_commit_record_leaves_no_dimension_rows(
    spark, tmp_path, monkeypatch
):
    """Conversions, their dimension rows and the new value keys were all written when the
    process died: the next open drops them with the load, and the files load again whole."""
    from tests.cells_data import DEVICES, REGIONS, generate
    from tests.cells_data import write as write_cells

    files = write_cells(generate(users=5, days=1, seed=2), tmp_path / "cells")
    lists = {"region": REGIONS, "device": DEVICES}

    def die(*args):
        raise Crash

    monkeypatch.setattr(spark_ingest, "_roll_back", die)  # died before cleaning up
    warehouse = _open(spark, tmp_path)
    monkeypatch.setattr(warehouse.catalog, "stage_ingest", die)  # every row written by now
    with pytest.raises(Crash):
        warehouse.ingest(*files, now=NOW, dimensions=lists)
    assert warehouse.table_rows("conversion_dimensions") > 0
    assert warehouse.table_rows("dimension_values") == len(REGIONS) + len(DEVICES)
    monkeypatch.undo()
    warehouse = _open(spark, tmp_path)  # the next open rolls it back
    for table in ("conversions", "conversion_dimensions", "dimension_values", "loads"):
        assert warehouse.table_rows(table) == 0, table
    report = warehouse.ingest(*files, now=NOW, dimensions=lists)
    assert warehouse.table_rows("conversion_dimensions") == 2 * report.conversions.accepted > 0
    assert warehouse.table_rows("dimension_values") == len(REGIONS) + len(DEVICES)


def test_ingest_cut_after_its_commit_record_is_rolled_forward(spark, tmp_path, monkeypatch):
    files = _events(tmp_path)

    def die(*args):
        raise Crash

    monkeypatch.setattr(spark_ingest, "_apply_moves", die)
    warehouse = _open(spark, tmp_path)
    with pytest.raises(Crash):
        warehouse.ingest(*files, now=NOW)
    monkeypatch.undo()
    warehouse = _open(spark, tmp_path)  # redo the moves, commit
    assert warehouse.table_rows("impressions") == 12
    assert warehouse.table_rows("loads") == 2
    assert warehouse.ingest(*files, now=NOW).impressions.already_loaded


def test_plus_spends_written_but_not_committed_are_recomputed_once(spark, tmp_path, monkeypatch):
    files = _events(tmp_path)
    warehouse = _open(spark, tmp_path)
    warehouse.ingest(*files, now=NOW)
    camp = campaign(rule="lta", lookback_days=5, start=date(2026, 3, 2), days=3, name="plus")
    day = date(2026, 3, 2)
    warehouse.attribute_days(camp, day, day)

    def die(*args):
        raise Crash

    monkeypatch.setattr(warehouse.catalog, "commit_spend_day", die)
    with pytest.raises(Crash):  # spends of the day written, the day not recorded
        warehouse.plus_clipped_vector(camp, day, 2.0, 0.5, 4.0)
    monkeypatch.undo()
    again = _open(spark, tmp_path)
    assert again.plus_spend_summary(camp)["days"] == 0  # uncommitted spends do not count
    vector = again.plus_clipped_vector(camp, day, 2.0, 0.5, 4.0)
    assert vector.sum() > 0
    spends = again.sql.query(
        "SELECT user_key, count(*), max(spend) FROM plus_user_spend GROUP BY user_key"
    )
    assert spends and all(rows == 1 for _, rows, _ in spends)  # one charge per user, not two
    summary = again.plus_spend_summary(camp)
    assert summary["days"] == 1
    assert summary["max_spend"] == pytest.approx(max(s for _, _, s in spends))
    np.testing.assert_array_equal(again.plus_clipped_vector(camp, day, 2.0, 0.5, 4.0), vector)


class CountingDraws(SeededIntegerNoise):
    """Seeded Exp(1) draws that count how many were drawn (tests only)."""

    def __init__(self, seed: int) -> None:
        super().__init__(seed)
        self.drawn = 0

    def _exponentials(self, size: int) -> np.ndarray:
        self.drawn += size
        return super()._exponentials(size)


def _choices(warehouse) -> dict[int, list[int]]:
    """conversion_key -> every publisher_key stored for it, committed or not."""
    found: dict[int, list[int]] = {}
    for key, publisher in warehouse.sql.query(
        "SELECT conversion_key, publisher_key FROM private_touch_choices"
    ):
        found.setdefault(int(key), []).append(int(publisher))
    return found


def test_private_touch_drawn_but_not_committed_is_drawn_afresh_once(spark, tmp_path, monkeypatch):
    """Choices written but their batch not committed are never read: the next open drops
    them and the conversions are drawn again, once. Choices committed but not yet attributed
    are used as they are by the next run, which draws nothing."""
    files = _events(tmp_path)
    warehouse = _open(spark, tmp_path)
    warehouse.ingest(*files, now=NOW)
    camp = campaign(
        rule="private_last_touch", lookback_days=5, start=date(2026, 3, 2), days=2, name="race"
    )
    day = date(2026, 3, 2)

    def die(*args):
        raise Crash

    monkeypatch.setattr(warehouse.catalog, "finish_touch_batch", die)
    with pytest.raises(Crash):
        warehouse.attribute_days(camp, day, day, noise=CountingDraws(1))
    monkeypatch.undo()
    assert _choices(warehouse)  # the dead run's choices are on disk, uncommitted
    warehouse = _open(spark, tmp_path)  # the next open drops them
    assert not _choices(warehouse)
    drawn = CountingDraws(2)
    warehouse.attribute_days(camp, day, day, noise=drawn)
    assert drawn.drawn > 0
    choices = _choices(warehouse)
    assert choices and all(len(publishers) == 1 for publishers in choices.values())
    attributed = warehouse.day_frame("attributed", camp, [day])
    assert len(attributed) == len(choices)

    real_run = warehouse.sql.run

    def die_before_attributing(name, **params):
        if name == "attribute_private_stored":
            raise Crash
        return real_run(name, **params)

    last = date(2026, 3, 3)
    monkeypatch.setattr(warehouse.sql, "run", die_before_attributing)
    with pytest.raises(Crash):  # the next day's choices are committed, its rows not written
        warehouse.attribute_days(camp, last, last, noise=CountingDraws(3))
    monkeypatch.undo()
    committed = _choices(warehouse)
    assert len(committed) > len(choices)
    warehouse = _open(spark, tmp_path)
    again = CountingDraws(4)
    warehouse.attribute_days(camp, day, last, noise=again)
    assert again.drawn == 0  # every conversion of both days was drawn before
    assert _choices(warehouse) == committed
    rows = warehouse.day_frame("attributed", camp, [day])
    keys = ["conversion_id", "publisher_id"]
    pd.testing.assert_frame_equal(
        rows.sort_values(keys).reset_index(drop=True),
        attributed.sort_values(keys).reset_index(drop=True),
    )


def test_a_failed_write_is_one_line_and_loads_nothing(spark, tmp_path, monkeypatch):
    """A write the file system refuses (a full disk) during the Spark half of an ingest is the
    DuckDB ingest's one line, and the load is rolled back."""
    files = _events(tmp_path)

    def disk_full(*args):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(spark_ingest, "_load", disk_full)
    warehouse = _open(spark, tmp_path)
    with pytest.raises(WarehouseWriteError) as refused:
        warehouse.ingest(*files, now=NOW)
    message = str(refused.value)
    assert message.endswith(f"could not write ({os.strerror(errno.ENOSPC)}); nothing was loaded")
    assert "\n" not in message
    assert warehouse.table_rows("loads") == 0
    assert not list((tmp_path / "tables" / "_staging").glob("*"))

"""Spark warehouse crashes: an ingest cut after any of its Delta commits leaves the old tables or
the new ones on the next open, never a mix — all or nothing, as DuckDB's transaction, with
nothing undone: the rows of loads never committed are in no view (visibility.py); an AdsBPC+
day whose spends were written but not recorded is recomputed, never charged twice; private last
touch's choices are one commit, and a conversion is never drawn twice once they are stored."""

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
from tests.spark_kill_checks import assert_keys_between, event_fingerprint, key_rows

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


def _open_at(spark, root):
    from dp_platform.warehouse.spark.store import SparkWarehouse

    return SparkWarehouse(spark, root)


def _open(spark, tmp_path):
    return _open_at(spark, tmp_path / "tables")


class CutAfter:
    """Counts the engine's writes (every Delta commit goes through SparkSqlRunner: a statement
    that is neither a query nor a view, or ``write``) and dies after the ``cut``-th."""

    def __init__(self, monkeypatch, cut: int | None = None) -> None:
        from dp_platform.warehouse.spark.runner import _COMMENT, _QUERY, _VIEW, SparkSqlRunner

        self.cut, self.writes = cut, 0
        real_execute, real_write = SparkSqlRunner.execute, SparkSqlRunner.write

        def execute(runner, statement, params):
            result = real_execute(runner, statement, params)
            text = _COMMENT.sub("", statement).strip()
            if not (_VIEW.match(text) or _QUERY.match(text)):
                self._wrote()
            return result

        def write(runner, *args, **kwargs):
            real_write(runner, *args, **kwargs)
            self._wrote()

        monkeypatch.setattr(SparkSqlRunner, "execute", execute)
        monkeypatch.setattr(SparkSqlRunner, "write", write)

    def _wrote(self) -> None:
        self.writes += 1
        if self.writes == self.cut:
            raise Crash


def _cell_files(tmp_path, seed: int, users: int):
    from tests.cells_data import generate
    from tests.cells_data import write as write_cells

    return write_cells(generate(users=users, days=2, seed=seed), tmp_path / f"cells{seed}")


def test_an_ingest_cut_after_any_of_its_writes_leaves_the_old_or_the_new_tables(
    spark, tmp_path, monkeypatch
):
    """A second ingest (with dimensions, over the first one's days: its impression days are
    rewritten) is cut after its Delta commits in turn (_cuts), each on the warehouse the cut
    before left; the next open reads every loaded table and the loads exactly as before the
    ingest — or, cut after its last commit (its loads), exactly as after it — and the key
    tables hold every key before and only keys the whole ingest gives. No open commits."""
    import shutil

    from tests.cells_data import CONVERSION_LISTS, IMPRESSION_LISTS

    lists = {"dimensions": CONVERSION_LISTS, "impression_dimensions": IMPRESSION_LISTS}
    first, second = _cell_files(tmp_path, 1, 4), _cell_files(tmp_path, 2, 5)
    base = tmp_path / "base"
    warehouse = _open_at(spark, base)
    warehouse.ingest(*first, now=NOW, **lists)
    before, keys_before = event_fingerprint(warehouse), key_rows(warehouse)
    counted = tmp_path / "counted"
    shutil.copytree(base, counted)
    with monkeypatch.context() as patch:
        counter = CutAfter(patch)
        warehouse = _open_at(spark, counted)
        opened = counter.writes
        warehouse.ingest(*second, now=NOW, **lists)
        writes = counter.writes - opened
    after, keys_after = event_fingerprint(warehouse), key_rows(warehouse)
    assert writes >= 10 and after != before
    assert after["impressions"][0] > before["impressions"][0]
    warehouse = _open_at(spark, base)
    for cut in _cuts(writes):  # each cut leaves base reading as it was: reused
        with monkeypatch.context() as patch:
            CutAfter(patch, cut)
            with pytest.raises(Crash):
                warehouse.ingest(*second, now=NOW, **lists)
        with monkeypatch.context() as patch:
            counter = CutAfter(patch)
            warehouse = _open_at(spark, base)  # the next process's open
            assert counter.writes == 0, cut
        assert event_fingerprint(warehouse) == (after if cut == writes else before), cut
        assert_keys_between(keys_before, key_rows(warehouse), keys_after)
    assert warehouse.ingest(*second, now=NOW, **lists).conversions.already_loaded
    assert key_rows(warehouse) == keys_after


def _cuts(writes: int) -> list[int]:
    """Where the ingest is cut: after its first two commits, one in the middle and its last two
    (the commits between are appends like their neighbours: ~20 s each on two cores); after
    every one of them with ``DP_PLATFORM_KILL_SWEEP=1`` (docs/faults.md)."""
    if os.environ.get("DP_PLATFORM_KILL_SWEEP") == "1":
        return list(range(1, writes + 1))
    return sorted({1, 2, writes // 2, writes - 1, writes})


def _die(*args, **kwargs):
    raise Crash


def test_a_failed_ingest_leaves_nothing_read(spark, tmp_path, monkeypatch):
    """An ingest that fails part way (here after its impressions, before its conversions)
    leaves the same warehouse reading as before, no reopen needed (its views show the
    committed loads again); run again, the files load as if never tried."""
    files = _events(tmp_path)
    real_load = spark_ingest._load

    def load_then_fail(warehouse, source, *rest):
        if source.kind == "conversions":  # impressions' keys and rows are written by now
            raise RuntimeError("failed")
        return real_load(warehouse, source, *rest)

    warehouse = _open(spark, tmp_path)
    before = event_fingerprint(warehouse)
    monkeypatch.setattr(spark_ingest, "_load", load_then_fail)
    with pytest.raises(RuntimeError):
        warehouse.ingest(*files, now=NOW)
    assert event_fingerprint(warehouse) == before
    monkeypatch.undo()
    report = warehouse.ingest(*files, now=NOW)  # and the files load as if never tried
    assert not report.impressions.already_loaded
    assert warehouse.table_rows("impressions") == 12
    assert warehouse.table_rows("conversions") == 8
    assert warehouse.table_rows("users") == 4


def test_the_rows_of_a_cut_ingest_are_stored_but_never_read(spark, tmp_path, monkeypatch):
    """Cut after its impressions' commits, an ingest's rows are in the stored tables and in no
    view; the next open commits nothing (no table's version moves); the files then load under
    new load ids. That ingest keeps the cut one's impressions (a load after the last committed
    one may be an ingest still running), the next rewrite of their days drops them."""
    from dp_platform.warehouse.spark.records import table_version
    from dp_platform.warehouse.spark.visibility import EVENT_TABLES

    warehouse = _open(spark, tmp_path)
    warehouse.ingest(*_events(tmp_path), now=NOW)
    before = event_fingerprint(warehouse)
    imps = [Imp(f"j{k}", f"v{k}", "p0", "acme", T0 + timedelta(hours=k), "view") for k in range(3)]
    convs = [Conv(f"d{k}", f"v{k}", "acme", T0 + timedelta(hours=k + 5)) for k in range(2)]
    second = write_events(tmp_path / "second", imps, convs)

    def stored_impressions(loads: str) -> int:
        query = f"SELECT count(*) FROM impressions_rows WHERE load_id {loads}"
        return int(warehouse.sql.query(query)[0][0])

    with monkeypatch.context() as patch:
        patch.setattr(spark_ingest, "_load", _cut_before_conversions())
        with pytest.raises(Crash):
            warehouse.ingest(*second, now=NOW)
    versions = {table: table_version(spark, table) for table in EVENT_TABLES}
    warehouse = _open(spark, tmp_path)
    assert {table: table_version(spark, table) for table in EVENT_TABLES} == versions
    assert event_fingerprint(warehouse) == before
    assert stored_impressions("> 2") == 3 and warehouse.table_rows("impressions") == 12
    warehouse.ingest(*second, now=NOW)
    assert sorted(row[0] for row in warehouse.records.committed_loads()) == [1, 2, 5, 6]
    assert stored_impressions("= 3") == 3 and warehouse.table_rows("impressions") == 15
    imps = [Imp(f"k{k}", f"v{k}", "p1", "acme", T0 + timedelta(hours=k), "view") for k in range(2)]
    warehouse.ingest(*write_events(tmp_path / "third", imps, []), now=NOW)
    assert stored_impressions("= 3") == 0  # load 3 can no longer commit: dropped
    assert warehouse.table_rows("impressions") == 17


def _cut_before_conversions():
    """``_load`` that dies (the process gone) when the conversions file's turn comes."""
    real = spark_ingest._load

    def load(warehouse, source, *rest):
        if source.kind == "conversions":
            raise Crash
        return real(warehouse, source, *rest)

    return load


def test_an_ingest_that_another_committed_before_stops_and_leaves_nothing_read(
    spark, tmp_path, monkeypatch
):
    """Two ingests at once (in turn here: the second runs whole while the first waits before
    its loads commit): the first to commit its loads wins; the other stops with one line,
    nothing of it is read, and run again it loads its files."""
    from dp_platform.warehouse.ingest import IngestError
    from dp_platform.warehouse.spark.ingest import LOST

    warehouse = _open(spark, tmp_path)
    warehouse.ingest(*_events(tmp_path), now=NOW)
    imps = [Imp(f"j{k}", f"v{k}", "p0", "acme", T0 + timedelta(hours=k), "view") for k in range(3)]
    convs = [Conv(f"d{k}", f"v{k}", "acme", T0 + timedelta(hours=k + 5)) for k in range(2)]
    late = write_events(tmp_path / "late", imps, convs)
    imps = [Imp(f"m{k}", f"w{k}", "p1", "acme", T0 + timedelta(hours=k), "view") for k in range(4)]
    convs = [Conv(f"e{k}", f"w{k}", "acme", T0 + timedelta(hours=k + 6)) for k in range(3)]
    other = write_events(tmp_path / "other", imps, convs)
    records = type(warehouse.records)
    real_commit = records.commit_loads

    def other_ingest_first(self, loads, last):
        monkeypatch.setattr(records, "commit_loads", real_commit)
        _open(spark, tmp_path).ingest(*other, now=NOW)  # the other process's whole ingest
        return real_commit(self, loads, last)

    monkeypatch.setattr(records, "commit_loads", other_ingest_first)
    with pytest.raises(IngestError) as lost:
        warehouse.ingest(*late, now=NOW)
    assert str(lost.value) == f"warehouse {tmp_path / 'tables'}: {LOST}"
    warehouse = _open(spark, tmp_path)
    assert warehouse.table_rows("impressions") == 12 + 4
    assert warehouse.table_rows("conversions") == 8 + 3
    report = warehouse.ingest(*late, now=NOW)
    assert not report.impressions.already_loaded
    assert warehouse.table_rows("impressions") == 12 + 4 + 3


def test_benchmark_reopen_an_ingested_warehouse(benchmark, spark, tmp_path):
    """pytest-benchmark of an open (`make bench`; one quick run otherwise): every Dagster step
    opens the warehouse, and an open of a warehouse whose views show its committed loads
    already is a few queries (docs/scale.md §5)."""
    _open(spark, tmp_path).ingest(*_events(tmp_path), now=NOW)

    def reopen():
        warehouse = _open(spark, tmp_path)
        warehouse.close()
        return warehouse

    assert benchmark(reopen).table_rows("impressions") == 12


def test_plus_spends_written_but_not_committed_are_recomputed_once(spark, tmp_path, monkeypatch):
    files = _events(tmp_path)
    warehouse = _open(spark, tmp_path)
    warehouse.ingest(*files, now=NOW)
    camp = campaign(rule="lta", lookback_days=5, start=date(2026, 3, 2), days=3, name="plus")
    day = date(2026, 3, 2)
    warehouse.attribute_days(camp, day, day)

    monkeypatch.setattr(warehouse.records, "commit_spend_day", _die)
    with pytest.raises(Crash):  # spends of the day written, the day not recorded
        warehouse.plus_clipped_vector(camp, day, 2.0, 0.5, 4.0)
    monkeypatch.undo()
    again = _open(spark, tmp_path)
    assert again.plus_spend_summary(camp)["days"] == 0  # uncommitted spends do not count
    vector = again.plus_clipped_vector(camp, day, 2.0, 0.5, 4.0)
    assert vector.sum() > 0
    spends = again.sql.query(
        "SELECT s.user_key, count(*), max(s.spend) FROM plus_user_spend AS s "
        "JOIN plus_spend_days AS d ON d.campaign = s.campaign AND d.day = s.day "
        "AND d.run <=> s.run GROUP BY s.user_key"
    )
    assert spends and all(rows == 1 for _, rows, _ in spends)  # one charge per user, not two
    runs = again.sql.query("SELECT count(DISTINCT run) FROM plus_user_spend")[0][0]
    assert runs == 2  # the cut run's spends are stored, and never read
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


def test_private_touch_cut_before_its_draws_commit_is_drawn_afresh_once(
    spark, tmp_path, monkeypatch
):
    """A run's draws are one commit: cut just before it, nothing is stored and the next run
    draws those conversions (once). Cut after it but before the attributed rows are written,
    the next run uses the stored choices as they are and draws nothing."""
    files = _events(tmp_path)
    warehouse = _open(spark, tmp_path)
    warehouse.ingest(*files, now=NOW)
    camp = campaign(
        rule="private_last_touch", lookback_days=5, start=date(2026, 3, 2), days=2, name="race"
    )
    day = date(2026, 3, 2)
    real_run = warehouse.sql.run

    def die_at(script):
        def run(name, **params):
            if name == script:
                raise Crash
            return real_run(name, **params)

        return run

    monkeypatch.setattr(warehouse.sql, "run", die_at("attribute_private_select"))
    with pytest.raises(Crash):
        warehouse.attribute_days(camp, day, day, noise=CountingDraws(1))
    monkeypatch.undo()
    assert not _choices(warehouse)  # the dead run stored nothing
    warehouse = _open(spark, tmp_path)
    drawn = CountingDraws(2)
    warehouse.attribute_days(camp, day, day, noise=drawn)
    assert drawn.drawn > 0
    choices = _choices(warehouse)
    assert choices and all(len(publishers) == 1 for publishers in choices.values())
    attributed = warehouse.day_frame("attributed", camp, [day])
    assert len(attributed) == len(choices)

    last = date(2026, 3, 3)
    monkeypatch.setattr(warehouse.sql, "run", die_at("attribute_private_stored"))
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
    assert not list((tmp_path / "tables" / "_staging").glob("*/checks"))

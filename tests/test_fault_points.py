"""dp_platform/faults.py: a fail point does nothing unless the environment names it, then the
process dies by SIGKILL at exactly that point (nothing after it runs)."""

from __future__ import annotations

import multiprocessing
import os
import signal
from pathlib import Path

import pytest

from dp_platform.faults import FAULT_RECORD_VARIABLE, FAULT_VARIABLE, fault_point


def test_an_unset_variable_does_nothing(monkeypatch) -> None:
    monkeypatch.delenv(FAULT_VARIABLE, raising=False)
    for _ in range(3):
        fault_point("release.drawn")  # still alive


def test_another_point_named_does_nothing(monkeypatch) -> None:
    monkeypatch.setenv(FAULT_VARIABLE, "bound.drawn")
    fault_point("release.drawn")
    fault_point("bound.drawnx")


def _pass_points(
    name: str, setting: str, passes: int, marker: str, record: str | None = None
) -> None:
    """Child: pass ``name`` ``passes`` times, writing a line before each pass."""
    os.environ[FAULT_VARIABLE] = setting
    if record:
        os.environ[FAULT_RECORD_VARIABLE] = record
    with Path(marker).open("a") as out:
        for n in range(1, passes + 1):
            out.write(f"{n}\n")
            out.flush()
            fault_point(name)
        out.write("survived\n")


@pytest.mark.parametrize(("setting", "lines"), [("release.drawn", 1), ("release.drawn@3", 3)])
def test_a_named_point_kills_its_process_there(tmp_path, setting, lines) -> None:
    marker = tmp_path / "passes.txt"
    child = multiprocessing.get_context("spawn").Process(
        target=_pass_points, args=("release.drawn", setting, 5, str(marker))
    )
    child.start()
    child.join(60)
    assert child.exitcode == -signal.SIGKILL
    assert marker.read_text().split() == [str(n) for n in range(1, lines + 1)]


def test_the_child_survives_when_nothing_is_named(tmp_path) -> None:
    marker = tmp_path / "passes.txt"
    child = multiprocessing.get_context("spawn").Process(
        target=_pass_points, args=("release.drawn", "", 2, str(marker))
    )
    child.start()
    child.join(60)
    assert child.exitcode == 0
    assert marker.read_text().split() == ["1", "2", "survived"]


def test_a_fired_point_is_recorded_before_the_kill_when_asked(tmp_path) -> None:
    """The harness counts a kill in a run worker (not its own child) from this record."""
    marker, record = tmp_path / "passes.txt", tmp_path / "fired.txt"
    child = multiprocessing.get_context("spawn").Process(
        target=_pass_points, args=("release.drawn", "release.drawn@2", 5, str(marker), str(record))
    )
    child.start()
    child.join(60)
    assert child.exitcode == -signal.SIGKILL
    assert record.read_text() == f"release.drawn@2 {child.pid}\n"


def test_every_spark_commit_is_followed_by_a_named_point() -> None:
    """Each writing statement of the Spark engine's SQL files, and each write its Python makes
    (the record tables' appends, the load-id reservation, the clears), is
    named by a point of SPARK_FAULT_POINTS (warehouse/spark/commits.py); every ``spark.*`` point
    names some commit; a statement of an unknown form is refused before it runs."""
    from importlib import resources

    from dp_platform.faults import SPARK_FAULT_POINTS
    from dp_platform.warehouse.runner import statements
    from dp_platform.warehouse.spark.commits import commit_point, written_table
    from dp_platform.warehouse.spark.runner import _COMMENT, _QUERY, _VIEW

    sites: set[tuple[str, str]] = set()
    for path in resources.files("dp_platform.warehouse.spark").iterdir():
        if path.name.endswith(".sql"):
            for statement in statements(path.read_text()):
                text = _COMMENT.sub("", statement).strip()
                if not (_VIEW.match(text) or _QUERY.match(text)):
                    sites.add(written_table(text))
    python_writes = {
        ("insert", t) for t in ("loads", "load_ids", "meta", "plus_spend_days", "plus_day_vectors")
    }
    python_writes |= {("delete", "partitions"), ("merge", "partitions")}
    # store_core._clear: the delete nothing replaces (an empty clip)
    python_writes |= {("delete", "clipped_daily_vectors")}
    named = {commit_point(*site) for site in sites | python_writes}
    spark_points = set(SPARK_FAULT_POINTS)
    assert named == spark_points
    with pytest.raises(ValueError):
        written_table("UPDATE partitions SET rows = 0")
    # migrate.py: an earlier root's table gains a column, named as a schema commit
    assert commit_point(*written_table("ALTER TABLE plus_user_spend ADD COLUMNS (run STRING)")) == (
        "spark.schema.created"
    )
    with pytest.raises(ValueError):  # nothing is undone any more (visibility.py)
        written_table("RESTORE TABLE users TO VERSION AS OF 1")
    assert written_table("INSERT INTO impressions_rows SELECT 1") == ("insert", "impressions")
    with pytest.raises(ValueError):
        commit_point("insert", "some_new_table")

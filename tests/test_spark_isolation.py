"""What Delta Lake's commits guarantee two writers of one table: the statements the Spark
engine's ingests rely on to run beside each other (docs/scale.md §5).

A statement that reads its own table inside its write — a ``MERGE`` (records.record), an
``INSERT … SELECT`` that takes new keys from ``max + 1`` (ingest_keys.sql), one that appends
only rows not there yet (records.commit_spend_day, attribute_private_select.sql), the
reservation of load ids (records.reserve_loads) and the commit of an ingest's loads only if the
last committed load is still the one it began after (records.commit_loads) — fails
(``ConcurrentAppendException``) when another writer appended to that table after its read
began, at the table's default isolation (``WriteSerializable``) as at ``Serializable``, on
Delta 4.4: the read is part of the write's transaction. (A key read by one statement and
appended by another would be no transaction at all: Delta would see a blind append and commit
both.) So two ingests never share a load id or give one id two keys, of two that would both
commit their loads one does, and two runs of one day never both store a draw of one conversion
or both commit one AdsBPC+ day (tests/test_spark_runs_at_once.py).

The writer under test waits ``PAUSE_S`` on a Python function (``slow``) between its read and
its commit, so the other writer's append (about a second here) lands there every time.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest

PAUSE_S = 8.0
SERIALIZABLE = "TBLPROPERTIES ('delta.isolationLevel' = 'Serializable')"


def _register_slow(spark) -> None:
    from pyspark.sql.functions import udf

    @udf("bigint", useArrow=False)  # the platform installs no pyarrow
    def slow(key: int) -> int:
        time.sleep(PAUSE_S)
        return key

    spark.udf.register("slow", slow)


def _beside_an_append(spark, table: str, write: Callable[[], None]) -> Exception | None:
    """Run ``write`` while another thread appends key 3 to ``table``; its error, or None."""
    failed: list[Exception] = []

    def run() -> None:
        try:
            write()
        except Exception as error:  # the error is what the test reads
            failed.append(error)

    writing = threading.Thread(target=run)
    writing.start()
    time.sleep(PAUSE_S / 4)  # the writer has read the table and waits on ``slow``
    spark.sql(f"INSERT INTO {table} VALUES (3)")
    writing.join()
    return failed[0] if failed else None


def _create(spark, tmp_path, table: str, properties: str = "") -> None:
    spark.sql(
        f"CREATE TABLE {table} (k BIGINT) USING delta LOCATION '{tmp_path / table}' {properties}"
    )
    spark.sql(f"INSERT INTO {table} VALUES (1)")


def _keys(spark, table: str) -> list[int]:
    return sorted(row[0] for row in spark.sql(f"SELECT k FROM {table}").collect())


WRITERS = {
    "merge": (
        "MERGE INTO {t} AS t USING (SELECT slow(id) AS k FROM range(3, 4)) AS s "
        "ON t.k = s.k WHEN NOT MATCHED THEN INSERT (k) VALUES (s.k)"
    ),
    # ingest_keys.sql's form: the next key read from the table inside the INSERT itself
    "insert_select": "INSERT INTO {t} SELECT slow(coalesce(max(k), 0) + 2) FROM {t}",
    # records.reserve_loads: ids after the largest reserved, in the statement that adds them
    "reserve": (
        "INSERT INTO {t} SELECT slow(b.top + s.n) FROM "
        "(SELECT greatest(coalesce(max(k), 0), 0) AS top FROM {t}) AS b "
        "LATERAL VIEW explode(sequence(1, 1)) s AS n"
    ),
    # records.commit_spend_day, attribute_private_select.sql: appended only where no row is
    "insert_unless_present": (
        "INSERT INTO {t} SELECT slow(s.id) FROM range(4, 5) AS s "
        "WHERE NOT EXISTS (SELECT 1 FROM {t} AS o WHERE o.k = s.id)"
    ),
    # records.commit_loads: appended only while the last row is still the one expected
    "commit_if_last": (
        "INSERT INTO {t} SELECT slow(n.id) FROM range(5, 6) AS n "
        "CROSS JOIN (SELECT coalesce(max(k), 0) AS last FROM {t}) AS c WHERE c.last = 1"
    ),
}


@pytest.mark.parametrize("writer", list(WRITERS))
@pytest.mark.parametrize("properties", ["", SERIALIZABLE], ids=["default", "serializable"])
def test_a_write_that_read_its_table_fails_when_another_writer_appended_since(
    spark, tmp_path, properties, writer
) -> None:
    table = f"keys_{writer}"
    _create(spark, tmp_path, table, properties)
    _register_slow(spark)
    try:
        statement = WRITERS[writer].format(t=table)
        error = _beside_an_append(spark, table, lambda: spark.sql(statement))
        assert error is not None and "ConcurrentAppendException" in str(error)
        assert _keys(spark, table) == [1, 3]  # the writer left nothing: key 3 is kept once
    finally:
        spark.sql(f"DROP TABLE IF EXISTS {table}")


def test_a_conflict_delta_reports_is_the_one_line_of_an_ingest_that_lost(tmp_path) -> None:
    """Through Py4J, Delta's conflict reaches the ingest as a ``Py4JJavaError`` whose text
    names the Java class (and may name a partition's values): the ingest stops with the
    loser's one line, naming the warehouse only; any other engine error keeps its own line."""
    from dp_platform.warehouse.ingest import IngestError
    from dp_platform.warehouse.spark.ingest import LOST, _writing

    java_error = type("Py4JJavaError", (Exception,), {"__module__": "py4j.protocol"})

    class Tables:
        root = str(tmp_path / "tables")

    text = (
        "An error occurred while calling o81.sql.\n: io.delta.exceptions."
        "ConcurrentAppendException: [DELTA_CONCURRENT_APPEND.WITH_PARTITION_HINT] Files were "
        "added to partition [day=2026-03-01] by a concurrent update."
    )
    with pytest.raises(IngestError) as lost, _writing(Tables()):
        raise java_error(text)
    assert str(lost.value) == f"warehouse {tmp_path / 'tables'}: {LOST}"
    with pytest.raises(IngestError) as other, _writing(Tables()):
        raise java_error("An error occurred while calling o81.sql.\n: java.lang.OutOfMemoryError")
    assert str(other.value).endswith("ingest failed (Py4JJavaError); nothing was loaded")

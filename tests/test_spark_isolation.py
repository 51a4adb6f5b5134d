"""What Delta Lake's commits guarantee two writers of one table, before the per-home lock goes.

The Spark engine serialises its writers with a lock under the home (``store.py::_spark_lock``).
Retiring it (docs/scale.md §5) rests on Delta's optimistic commits: a ``MERGE`` reads the table
inside its own transaction, so when another writer appends after that read began, the MERGE
fails (``ConcurrentAppendException``) rather than commits — at the table's default isolation
(``WriteSerializable``) as at ``Serializable``, on Delta 4.4; so does an ``INSERT … SELECT``
that reads its own table, as ingest_keys.sql takes new keys from ``max + 1``: the read is part
of the write's transaction. (A key read by one statement and appended by another would be no
transaction at all: Delta would see a blind append and commit both.) What the lock still guards
is the ingest as a whole — many commits, undone by ``RESTORE`` when cut — which the design of
docs/scale.md §5 replaces.

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

"""Per-row outcomes of one event file's checks on each engine, in one shape, for the parity tests
of the Spark ingest's checks (tests/test_spark_ingest_checks.py).

DuckDB: the DuckDB ingest's own ``inspect``, ``stage_file`` and ``check_rows`` on an empty
in-memory warehouse. Spark: ``ingest_checks`` (inspect, read and check) and the views it registers
for the load. Each side gives every record's row number with its reason (None: passed) and, for
the rows that passed, ids, time (UTC microseconds), interaction, value and dimension values.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import duckdb

from dp_platform.config_dimensions import DimensionConfig
from dp_platform.warehouse.ingest import (
    check_rows,
    drop_temporaries,
    reading_file,
    rows_read,
    stage_file,
)
from dp_platform.warehouse.ingest_sources import inspect
from dp_platform.warehouse.runner import SqlRunner

Dimensions = Mapping[str, DimensionConfig | Sequence[str]]
Outcome = dict[str, Any]


def _rows(pairs: list[tuple]) -> dict[int, tuple]:
    return {int(row[0]): tuple(row[1:]) for row in pairs}


def duckdb_outcome(kind: str, path: Path | str, now: datetime, dims: Dimensions = ()) -> Outcome:
    """Rows read, every record's reason, the passing rows' values and their dimension values
    (or ``{"refused": message}``)."""
    dims = dict(dims or {})
    con = duckdb.connect(":memory:")
    try:
        con.execute("SET TimeZone = 'UTC'")
        runner = SqlRunner(con)
        runner.run("schema")
        try:
            source = inspect(con, kind, path, tuple(dims))
            with reading_file(source):
                stage_file(con, source)
        except (OSError, ValueError) as error:
            return {"refused": str(error), "type": type(error).__name__}
        check_rows(runner, source, now, dims)
        interaction = "t.interaction" if kind == "impressions" else "NULL"
        value = "t.value" if kind == "conversions" else "NULL"
        rows = con.execute(
            "SELECT t.source_row, r.reason, "
            + ", ".join(
                f"CASE WHEN r.reason IS NULL THEN {c} END"
                for c in (
                    "t.id",
                    "t.user_id",
                    "t.publisher_id",
                    "t.advertiser_id",
                    "epoch_us(t.ts)",
                    interaction,
                    value,
                )
            )
            + " FROM typed AS t LEFT JOIN rejected AS r ON r.source_row = t.source_row"
        ).fetchall()
        malformed = con.execute("SELECT source_row, reason FROM malformed").fetchall()
        dimension_rows = []
        for name in dims:
            dimension_rows += con.execute(
                f"SELECT s.source_row, '{name}', s.\"dim_{name}\" FROM source AS s "
                "ANTI JOIN rejected AS r ON r.source_row = s.source_row"
            ).fetchall()
        outcome = {
            "rows": rows_read(runner),
            "checked": _rows(rows),
            "malformed": _rows(malformed),
            "dimensions": sorted((int(r[0]), r[1], r[2]) for r in dimension_rows),
        }
        drop_temporaries(con)
        return outcome
    finally:
        con.close()


def spark_outcome(
    spark: Any, kind: str, path: Path | str, now: datetime, dims: Dimensions = ()
) -> Outcome:
    """The same from the Spark checks (ingest_checks), through the views ``_load`` reads."""
    from dp_platform.warehouse.spark.ingest_checks import inspect_file, read_and_check

    dims = dict(dims or {})
    try:
        source = inspect_file(spark, kind, path, tuple(dims))
        checked = read_and_check(spark, source, now, dims)
    except (OSError, ValueError) as error:
        return {"refused": str(error), "type": type(error).__name__}
    try:
        checked.register()
        rows = spark.sql(
            "SELECT source_row, reason, id, user_id, publisher_id, advertiser_id, ts_us, "
            "interaction, value FROM checked_raw"
        ).collect()
        malformed = spark.sql("SELECT source_row, reason FROM malformed").collect()
        dimension_rows = spark.sql(
            "SELECT source_row, dimension, value FROM checked_dimensions"
        ).collect()
        return {
            "rows": checked.rows,
            "checked": _rows([tuple(r) for r in rows]),
            "malformed": _rows([tuple(r) for r in malformed]),
            "dimensions": sorted((int(r[0]), r[1], r[2]) for r in dimension_rows),
            "sha256": checked.source.sha256,
        }
    finally:
        checked.release()

"""The log test's driver, run in a process of its own so that everything Spark's driver and
executor JVMs print is this process's output (tests/test_spark_logging.py reads it).

``python -m tests.spark_logging_job <directory> <secret>``: writes event files whose records hold
``secret`` and break Spark's readers (text after a closing quote: the CSV parser's exception
quotes the record; a quoted field never closed; a malformed record; a Parquet file of
nanosecond times, whose type probe fails a task), runs the Spark ingest's checks on each through
the platform's session and prints one line per file: its refusal, or the rows it read.
"""

from __future__ import annotations

import sys
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from dp_platform.warehouse.spark.ingest_checks import inspect_file, read_and_check
from dp_platform.warehouse.spark.session import private_session
from tests.spark_fixtures import RUN_SETTINGS

HEADER = "impression_id,user_id,publisher_id,advertiser_id,ts,interaction"


def files(directory: Path, secret: str) -> list[Path]:
    row = f"i1,{secret},p1,acme,2026-03-01T10:00:00Z,view"
    texts = {
        "after_quote.csv": f'{HEADER}\n{row}\ni2,"{secret}"{secret},p1,acme,x,view\n{row}\n',
        "unclosed.csv": f'{HEADER}\n{row}\ni2,"{secret},p1,acme,x,view\n',
        "malformed.csv": f"{HEADER}\n{row},{secret}\n{row}\n",
    }
    written = []
    for name, text in texts.items():
        path = directory / name
        path.write_text(text)
        written.append(path)
    nanos = directory / "nanos.parquet"
    moment = datetime(2026, 3, 1, 10, tzinfo=UTC)
    pq.write_table(
        pa.table(
            {
                "impression_id": ["i1"],
                "user_id": [secret],
                "publisher_id": ["p1"],
                "advertiser_id": ["acme"],
                "ts": pa.array([moment], pa.timestamp("ns", tz="UTC")),
                "interaction": ["view"],
            }
        ),
        nanos,
    )
    return [*written, nanos]


def main(directory: Path, secret: str) -> None:
    spark = private_session(RUN_SETTINGS)
    now = datetime(2026, 4, 1, tzinfo=UTC)
    for path in files(directory, secret):
        try:
            source = inspect_file(spark, "impressions", path)
            checked = read_and_check(spark, source, now, {})
            checked.release()
            print(f"{path.name}: read {checked.rows} rows", flush=True)
        except (OSError, ValueError) as error:
            print(f"{path.name}: refused: {error}".replace(secret, "<secret>"), flush=True)
    spark.stop()


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2])

"""No event record's text in Spark's log output: a failed task is logged with its exception's
text, which may quote the record (the CSV parser's "Parsed content"), so the platform's log4j2
configuration (warehouse/spark/log4j2.properties, passed to the driver's and executors' JVMs by
session.py) keeps those loggers off. Checked in a process of its own, whose whole output —
driver and executor JVMs included (a ``local`` master runs both in one JVM) — is read.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from dp_platform.warehouse.spark.session import JAVA_OPTION_KEYS, LOG_CONFIG, java_options

ROOT = Path(__file__).resolve().parents[1]
SECRET = "RecordText7f3a"


def test_the_log_configuration_is_passed_to_driver_and_executors() -> None:
    conf = java_options({"spark.driver.extraJavaOptions": "-XX:+UseSerialGC"})
    for key in JAVA_OPTION_KEYS:
        assert conf[key].endswith(f"-Dlog4j2.configurationFile={LOG_CONFIG.as_uri()}")
    assert conf["spark.driver.extraJavaOptions"].startswith("-XX:+UseSerialGC ")
    assert LOG_CONFIG.is_file()
    text = LOG_CONFIG.read_text()
    for logger in (
        "org.apache.spark.executor.Executor",
        "org.apache.spark.scheduler.TaskSetManager",
    ):
        assert f"name = {logger}\n" in text


def test_a_malformed_records_text_never_reaches_the_log(spark, tmp_path) -> None:
    """``spark``: only so that the test skips (or fails under CI) where Spark cannot run."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-m", "tests.spark_logging_job", str(tmp_path), SECRET],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    refused = [line for line in lines if ": refused: " in line]
    assert [line.split(":")[0] for line in refused] == ["after_quote.csv", "unclosed.csv"]
    assert "malformed.csv: read 2 rows" in lines and "nanos.parquet: read 1 rows" in lines
    assert SECRET not in done.stdout
    assert SECRET not in done.stderr

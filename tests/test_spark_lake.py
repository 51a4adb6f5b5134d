"""Delta Lake tables on an S3-compatible store, written by a real standalone cluster (issue 29's
ground): two workers' JVMs run the executors; a day is overwritten alone, a row merged, the
first version still reads as written, the version number comes from SQL, and the platform's
privacy settings hold on that cluster (tests/spark_cluster.py starts it all on loopback)."""

from __future__ import annotations

import json
import subprocess
import sys
import time

from tests.spark_cluster import spark_lake  # noqa: F401  (the session's cluster and store)


def test_delta_on_s3_through_a_standalone_cluster(spark_lake):  # noqa: F811
    cluster, store, jars = spark_lake
    args = {
        "master": cluster.master,
        "status_url": cluster.status_url,
        "endpoint": store.endpoint,
        "bucket": store.bucket,
        "access_key": store.access_key,
        "secret_key": store.secret_key,
        "jars": [str(jar) for jar in jars],
    }
    started = time.monotonic()
    job = subprocess.run(
        [sys.executable, "-m", "tests.spark_lake_job", json.dumps(args)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert job.returncode == 0, job.stderr[-4000:]
    result = json.loads(job.stdout.strip().splitlines()[-1])
    print(f"lake job {time.monotonic() - started:.1f} s")  # -s shows it

    assert result["private"]["spark.ui.enabled"] == "false"
    assert result["private"]["spark.eventLog.enabled"] == "false"
    assert result["private"]["spark.extraListeners"] == ""
    assert result["ui_url"] is None
    # version 1 is the first insert; the day overwrite and the merge came after it
    assert result["first"] == [
        ["2026-03-01", "a", "1"],
        ["2026-03-01", "b", "2"],
        ["2026-03-02", "c", "3"],
    ]
    assert result["current"] == [
        ["2026-03-01", "a", "10"],
        ["2026-03-01", "b", "2"],
        ["2026-03-02", "d", "4"],
        ["2026-03-01", "e", "5"],
    ]
    assert result["version"] == 3
    assert result["operations"] == ["CREATE TABLE", "WRITE", "WRITE", "MERGE"]
    # the rows were computed in executor JVMs (not the driver's), one on each worker
    assert result["ran_in"] == ["org.apache.spark.executor.CoarseGrainedExecutorBackend"]
    assert result["workers_busy"] == [1, 1]

"""Delta Lake tables on an S3-compatible store, written by a real standalone cluster: two
workers' JVMs run the executors (tests/spark_cluster.py starts it all on loopback).

* The table format on that ground: a day is overwritten alone, a row merged, the first version
  still reads as written, the version number comes from SQL.
* The platform on it: a campaign's event files on the store ingested from ``s3a://`` into
  the warehouse's tables on the store, then run through Dagster with seeded noise, releases
  what the same campaign releases on DuckDB; the session keeps its privacy settings there.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from datetime import date

import dagster as dg
import numpy as np

from assets.runner import run_campaigns
from dp_platform.home import Home
from dp_platform.ledger import Ledger
from tests.platform_fixtures import RoutedNoise, catalogue, make_home
from tests.process_runs import assert_complete_and_charged_once
from tests.spark_cluster import spark_lake  # noqa: F401  (the session's cluster and store)
from tests.spark_lake_campaign_job import RELEASE_SEEDS

# The shortest campaign with both of AdsBPC's bound phases (a quantile day, then a sparse-vector
# test): every day is tens of Spark jobs, each a round trip to the cluster and the store.
CAMPAIGN = {"seed": 9, "users": 200, "days": 2, "quantile_days": 1, "today": "2026-11-22"}


def _run_job(module: str, args: dict, timeout: float) -> dict:
    """Run a driver module in a process of its own (one SparkContext per process); its JSON."""
    job = subprocess.run(
        [sys.executable, "-m", module, json.dumps(args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert job.returncode == 0, job.stderr[-4000:]
    return json.loads(job.stdout.strip().splitlines()[-1])


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
    result = _run_job("tests.spark_lake_job", args, timeout=600)
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


def _store_keys(store, prefix: str) -> list[str]:
    listing = store.client().get_paginator("list_objects_v2")
    pages = listing.paginate(Bucket=store.bucket, Prefix=prefix)
    return [item["Key"] for page in pages for item in page.get("Contents", [])]


def test_a_campaign_on_the_cluster_and_object_store_releases_what_duckdb_does(
    spark_lake,  # noqa: F811
    tmp_path,
):
    cluster, store, jars = spark_lake
    lake_home = tmp_path / "lake"
    args = {
        "master": cluster.master,
        "endpoint": store.endpoint,
        "bucket": store.bucket,
        "access_key": store.access_key,
        "secret_key": store.secret_key,
        "jars": [str(jar) for jar in jars],
        "home": str(lake_home),
        **CAMPAIGN,
    }
    result = _run_job("tests.spark_lake_campaign_job", args, timeout=1200)
    print(f"lake campaign {result['seconds']}")  # -s shows it

    duck = make_home(
        tmp_path / "duckdb",
        seed=CAMPAIGN["seed"],
        users=CAMPAIGN["users"],
        days=CAMPAIGN["days"],
        config=catalogue(days=CAMPAIGN["days"], quantile_days=CAMPAIGN["quantile_days"]),
    )
    run_campaigns(
        duck.root / "campaigns.yaml",
        duck.root,
        noise=RoutedNoise(*RELEASE_SEEDS),
        instance=dg.DagsterInstance.ephemeral(),
        today=date.fromisoformat(CAMPAIGN["today"]),
    )
    with Ledger.at_home(duck.root) as ledger:
        expected = ledger.releases("spring")
    with Ledger.at_home(lake_home) as ledger:
        released = ledger.releases("spring")

    assert result["days"] == [CAMPAIGN["days"]]
    assert [r.day for r in released] == [r.day for r in expected] == [1, 2]
    assert_complete_and_charged_once(
        Home.at(lake_home), CAMPAIGN["days"], CAMPAIGN["quantile_days"]
    )  # both bound phases ran, each draw charged once
    for left, right in zip(expected, released, strict=True):
        assert (left.bound, left.sigma, left.charges) == (right.bound, right.sigma, right.charges)
        np.testing.assert_allclose(left.values, right.values, rtol=0, atol=1e-9)
    # on the cluster: executors in the workers' JVMs, the platform's privacy settings held
    assert result["master"] == cluster.master
    assert result["ran_in"] == ["org.apache.spark.executor.CoarseGrainedExecutorBackend"]
    assert result["private"]["spark.ui.enabled"] == "false"
    assert result["private"]["spark.eventLog.enabled"] == "false"
    assert result["ui_url"] is None
    # the tables are Delta tables on the store; nothing of them on the home's disk
    keys = _store_keys(store, "warehouse/")
    assert any(key.startswith("warehouse/impressions/_delta_log/") for key in keys)
    assert any(key.startswith("warehouse/loads/_delta_log/") for key in keys)
    assert not (lake_home / "spark").exists()  # no lock, no table: all on the store
    assert not list((lake_home / "input").glob("*.parquet"))  # read from s3a:// only

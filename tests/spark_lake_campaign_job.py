"""The cluster campaign's driver, run in a process of its own (tests/spark_cluster.py says why):
a generated campaign's event files put on the S3 endpoint, ingested from their ``s3a://`` URIs
into Delta tables on that endpoint, then the whole campaign run through Dagster with seeded
noise, all on the standalone cluster. The releases land in the home's ledger (local, as the
test reads them); prints one JSON object with what the test checks of the session.

``python -m tests.spark_lake_campaign_job '<json: master, endpoint, bucket, access_key,
secret_key, jars, home, seed, users, days, quantile_days, today>'``
"""

from __future__ import annotations

import json
import sys
import time
from datetime import date
from pathlib import Path

import dagster as dg
import yaml

from assets.runner import run_campaigns
from dp_platform.home import Home
from dp_platform.settings import WarehouseConfig
from dp_platform.warehouse.base import open_warehouse
from tests.platform_fixtures import RoutedNoise, campaign_events, catalogue
from tests.spark_cluster import ObjectStore, lake_conf
from tests.spark_lake_job import SMALL_DATA

RELEASE_SEEDS = (11, 12)
"""RoutedNoise's bound and release streams (the test's DuckDB run uses the same)."""


def lake_catalogue(args: dict, store: ObjectStore) -> dict:
    """The campaign's catalogue with its warehouse on the cluster and the object store."""
    document = catalogue(days=args["days"], engine="duckdb", quantile_days=args["quantile_days"])
    document["warehouse"] = {
        "engine": "spark",
        "spark": {
            "master": args["master"],
            "path": f"s3a://{store.bucket}/warehouse",
            "jars": str(Path(args["jars"][0]).parent),
            "conf": {**lake_conf(store), **SMALL_DATA},
        },
    }
    return document


def upload(store: ObjectStore, folder: Path) -> dict[str, str]:
    """Each event file of ``folder`` put under ``input/`` of the bucket; name → s3a URI."""
    client = store.client()
    uris = {}
    for path in sorted(folder.iterdir()):
        client.upload_file(str(path), store.bucket, f"input/{path.name}")
        uris[path.name] = f"s3a://{store.bucket}/input/{path.name}"
    return uris


def main(argv: list[str]) -> None:
    from pyspark.sql import SparkSession

    from dp_platform.warehouse.spark.session import PRIVATE_CONF, check_private

    args = json.loads(argv[1])
    store = ObjectStore(args["endpoint"], args["bucket"], args["access_key"], args["secret_key"])
    home = Home.at(args["home"])
    seconds: dict[str, float] = {}
    clock = time.monotonic()

    def lap(step: str) -> None:
        nonlocal clock
        seconds[step] = round(time.monotonic() - clock, 1)
        clock = time.monotonic()

    files = campaign_events(
        home.root / "input", seed=args["seed"], users=args["users"], days=args["days"]
    )
    uris = upload(store, home.root / "input")
    for path in (files.impressions, files.conversions):
        path.unlink()  # the warehouse can only read the object store's copies
    document = lake_catalogue(args, store)
    (home.root / "campaigns.yaml").write_text(yaml.safe_dump(document))
    settings = WarehouseConfig.model_validate(document["warehouse"])
    with open_warehouse(settings, home) as warehouse:
        lap("session")
        report = warehouse.ingest(uris[files.impressions.name], uris[files.conversions.name])
    lap("ingest")
    runs = run_campaigns(
        home.root / "campaigns.yaml",
        home.root,
        noise=RoutedNoise(*RELEASE_SEEDS),
        instance=dg.DagsterInstance.ephemeral(),
        today=date.fromisoformat(args["today"]),
    )
    lap("campaign")
    spark = SparkSession.getActiveSession()
    assert spark is not None, "the run's warehouse left no session"
    check_private(spark)
    where = "java.lang.System', 'getProperty', 'sun.java.command"
    ran_in = spark.sql(
        f"SELECT DISTINCT split(reflect('{where}'), ' ')[0] FROM range(0, 8, 1, 8)"
    ).collect()
    conf = spark.sparkContext.getConf()
    result = {
        "master": spark.sparkContext.master,
        "private": {key: conf.get(key) for key in PRIVATE_CONF},
        "ui_url": spark.sparkContext.uiWebUrl,
        "ran_in": sorted(row[0] for row in ran_in),
        "accepted": [report.impressions.accepted, report.conversions.accepted],
        "days": [len(run.days) for run in runs],
        "seconds": seconds,
    }
    spark.stop()
    print(json.dumps(result))


if __name__ == "__main__":
    main(sys.argv)

"""A platform process on Spark Connect, run in a process of its own (tests/spark_connect.py says
why): generate and ingest a campaign's events into a home whose catalogue has ``remote:``, then
materialise its days through Dagster with seeded noise. Prints one JSON object: the session's
class and whether this process ever had a SparkContext (it must not).

``python -m tests.spark_connect_job '<json: url, root, seed, users, days, quantile_days>'``
"""

from __future__ import annotations

import json
import sys
from datetime import date
from pathlib import Path

# the client's session settings: small data (tests/spark_fixtures.py), spark.sql.* only
SESSION_CONF = {"spark.sql.shuffle.partitions": "2", "spark.sql.adaptive.enabled": "false"}


def connect_catalogue(url: str, days: int, quantile_days: int) -> dict:
    """tests/platform_fixtures.py's catalogue with its warehouse on the Connect server."""
    from tests.platform_fixtures import catalogue

    document = catalogue(days=days, engine="duckdb", quantile_days=quantile_days)
    document["warehouse"] = {"engine": "spark", "spark": {"remote": url, "conf": SESSION_CONF}}
    return document


def main(argv: list[str]) -> None:
    import dagster as dg
    from pyspark import SparkContext

    from assets.runner import run_campaigns
    from dp_platform.settings import SparkSettings
    from dp_platform.warehouse.spark.session import private_session
    from tests.platform_fixtures import RoutedNoise, make_home

    args = json.loads(argv[1])
    days = args["days"]
    document = connect_catalogue(args["url"], days, args["quantile_days"])
    home = make_home(
        Path(args["root"]), seed=args["seed"], users=args["users"], days=days, config=document
    )
    runs = run_campaigns(
        home.root / "campaigns.yaml",
        home.root,
        noise=RoutedNoise(11, 12),
        instance=dg.DagsterInstance.ephemeral(),
        today=date.fromisoformat(args["today"]),
    )
    spark = private_session(SparkSettings(remote=args["url"]))
    result = {
        "days": [len(run.days) for run in runs],
        "session": f"{type(spark).__module__}.{type(spark).__name__}",
        "spark_context": SparkContext._active_spark_context is not None,
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main(sys.argv)

"""Platform processes on Spark Connect, each run in a process of its own (tests/spark_connect.py
says why). Prints one JSON object.

* ``campaign``: generate and ingest a campaign's events into a home whose catalogue has
  ``remote:``, then materialise its days through Dagster with seeded noise; reports the
  session's class and whether this process ever had a SparkContext (it must not).
* ``probe``: the statements the engine's records and runner rely on, on a scratch Delta
  table — DataFrameWriter appends, DESCRIBE HISTORY, a view of some rows kept in the
  catalogue (what visibility.py makes of the loaded tables), a pandas frame, a local
  checkpoint — and a query with a bound parameter (which Connect still drops: runner.py).

``python -m tests.spark_connect_job '<json: mode, url, root[, seed, users, days,
quantile_days, today]>'``
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


def probe(url: str, root: Path) -> dict:
    import pandas as pd

    from dp_platform.settings import SparkSettings
    from dp_platform.warehouse.spark.records import table_version
    from dp_platform.warehouse.spark.runner import SparkSqlRunner
    from dp_platform.warehouse.spark.session import private_session

    spark = private_session(SparkSettings(remote=url))
    runner = SparkSqlRunner(spark, {})
    table = f"delta.`{root / 'probe'}`"
    # the table's set-up is the test's, not the engine's (whose writes name platform tables)
    spark.sql(f"CREATE TABLE {table} (day DATE, k STRING, v BIGINT) USING delta")
    rows = pd.DataFrame({"day": [date(2026, 3, 1)] * 2, "k": ["a", "b"], "v": [1, 2]})
    frame = spark.createDataFrame(rows, schema="day DATE, k STRING, v BIGINT")
    for _ in range(2):  # versions 1 and 2
        frame.write.format("delta").mode("append").save(str(root / "probe"))
    version = table_version(spark, table)  # the engine's own reading of DESCRIBE HISTORY
    history = [row["operation"] for row in spark.sql(f"DESCRIBE HISTORY {table}").collect()]
    spark.sql(f"CREATE OR REPLACE VIEW probe_shown AS SELECT * FROM {table} WHERE v = 1")
    runner.execute(f"CACHE TABLE kept AS SELECT k, v FROM {table} WHERE v > :low", {"low": 1})
    kept = runner.query("SELECT k, v FROM kept")
    runner.release()
    try:
        bound = spark.sql("SELECT :x + 1", args={"x": 41}).collect()[0][0]
    except Exception as error:  # the condition's name (Spark's error class)
        condition = getattr(error, "getCondition", None)
        bound = condition() if condition is not None else type(error).__name__
    return {
        "version": version,
        "history": sorted(history),
        "rows_in_view": runner.query("SELECT count(*) FROM probe_shown")[0][0],
        "kept": [list(row) for row in kept],
        "views_after_release": [t.name for t in spark.catalog.listTables() if t.isTemporary],
        "inlined": runner.query("SELECT :x + 1", x=41)[0][0],
        "bound": bound,
    }


def main(argv: list[str]) -> None:
    args = json.loads(argv[1])
    if args["mode"] == "probe":
        print(json.dumps(probe(args["url"], Path(args["root"]))))
        return
    import dagster as dg
    from pyspark import SparkContext

    from assets.runner import run_campaigns
    from dp_platform.settings import SparkSettings
    from dp_platform.warehouse.spark.session import private_session
    from tests.platform_fixtures import RoutedNoise, make_home

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

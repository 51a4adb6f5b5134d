"""The lake smoke test's driver, run in a process of its own (tests/spark_cluster.py says why):
a Delta table on ``s3a://`` written, one day overwritten, a row merged, read back at its first
and current versions, all through Spark SQL on the standalone cluster. Prints one JSON object.

``python -m tests.spark_lake_job '<json: master, status_url, endpoint, bucket, access_key,
secret_key, jars>'``
"""

from __future__ import annotations

import json
import sys
import time
import urllib.request
from pathlib import Path

from dp_platform.settings import SparkSettings
from dp_platform.warehouse.spark.session import PRIVATE_CONF, check_private, private_session
from tests.spark_cluster import ObjectStore, lake_conf

# Test-sized data in short-lived JVMs (tests/spark_fixtures.py measured the same for local[2]):
# compiling generated code, re-planning adaptively and the JIT's optimising tier cost more
# than they save here.
JVM_OPTIONS = "-XX:+UseSerialGC -XX:TieredStopAtLevel=1"
SMALL_DATA = {
    "spark.sql.codegen.wholeStage": "false",
    "spark.sql.codegen.factoryMode": "NO_CODEGEN",
    "spark.sql.adaptive.enabled": "false",
    "spark.driver.extraJavaOptions": JVM_OPTIONS,
    "spark.executor.extraJavaOptions": JVM_OPTIONS,
}
TABLE_DDL = "(day DATE, k STRING, v BIGINT) USING delta PARTITIONED BY (day)"


def _rows(spark, sql: str) -> list[list[object]]:
    return [[str(value) for value in row] for row in spark.sql(sql).collect()]


def main(argv: list[str]) -> None:
    args = json.loads(argv[1])
    store = ObjectStore(args["endpoint"], args["bucket"], args["access_key"], args["secret_key"])
    jars = [Path(jar) for jar in args["jars"]]
    clock = time.monotonic()
    seconds: dict[str, float] = {}

    def lap(step: str) -> None:
        nonlocal clock
        now = time.monotonic()
        seconds[step] = round(now - clock, 2)
        clock = now

    conf = {**lake_conf(store), **SMALL_DATA}
    settings = SparkSettings(master=args["master"], conf=conf, jars=str(jars[0].parent))
    spark = private_session(settings)
    check_private(spark)
    session_conf = spark.sparkContext.getConf()
    root = args.get("root", f"s3a://{store.bucket}")
    table = f"delta.`{root}/smoke/events`"
    lap("session")
    spark.sql(f"CREATE TABLE {table} {TABLE_DDL}")
    lap("create")
    spark.sql(
        f"INSERT INTO {table} VALUES (DATE'2026-03-01', 'a', 1), (DATE'2026-03-01', 'b', 2), "
        "(DATE'2026-03-02', 'c', 3)"
    )
    spark.sql(
        f"INSERT INTO {table} REPLACE WHERE day = DATE'2026-03-02' SELECT DATE'2026-03-02', 'd', 4"
    )
    lap("insert+replace")
    spark.sql(
        f"MERGE INTO {table} t USING (SELECT DATE'2026-03-01' AS day, 'a' AS k, 10L AS v "
        "UNION ALL SELECT DATE'2026-03-01', 'e', 5L) s ON t.day = s.day AND t.k = s.k "
        "WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT *"
    )
    lap("merge")
    where = "java.lang.System', 'getProperty', 'sun.java.command"
    ran_in = spark.sql(
        f"SELECT DISTINCT split(reflect('{where}'), ' ')[0] FROM range(0, 8, 1, 8)"
    ).collect()
    with urllib.request.urlopen(args["status_url"], timeout=10) as response:
        status = json.load(response)
    lap("executors")
    result = {
        "private": {key: session_conf.get(key) for key in PRIVATE_CONF},
        "ui_url": spark.sparkContext.uiWebUrl,
        "first": _rows(spark, f"SELECT day, k, v FROM {table} VERSION AS OF 1 ORDER BY k"),
        "current": _rows(spark, f"SELECT day, k, v FROM {table} ORDER BY k"),
        "version": spark.sql(f"DESCRIBE HISTORY {table} LIMIT 1").first()["version"],
        "operations": [
            row["operation"]
            for row in spark.sql(f"DESCRIBE HISTORY {table}").orderBy("version").collect()
        ],
        "ran_in": sorted(row[0] for row in ran_in),
        "workers_busy": sorted(worker["coresused"] for worker in status["workers"]),
    }
    lap("reads")
    result["seconds"] = seconds
    spark.stop()
    print(json.dumps(result))


if __name__ == "__main__":
    main(sys.argv)

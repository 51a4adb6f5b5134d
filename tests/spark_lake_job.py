"""The lake smoke test's driver, run in a process of its own (tests/spark_cluster.py says why):
a Delta table on ``s3a://`` written, one day overwritten, a row merged, read back at its first
and current versions, all through Spark SQL on the standalone cluster. Prints one JSON object.

``python -m tests.spark_lake_job '<json: master, status_url, endpoint, bucket, access_key,
secret_key, jars>'``
"""

from __future__ import annotations

import json
import sys
import urllib.request
from pathlib import Path

from dp_platform.settings import SparkSettings
from dp_platform.warehouse.spark.session import PRIVATE_CONF, check_private, private_session
from tests.spark_cluster import ObjectStore, lake_conf

TABLE_DDL = "(day DATE, k STRING, v BIGINT) USING delta PARTITIONED BY (day)"


def _rows(spark, sql: str) -> list[list[object]]:
    return [[str(value) for value in row] for row in spark.sql(sql).collect()]


def main(argv: list[str]) -> None:
    args = json.loads(argv[1])
    store = ObjectStore(args["endpoint"], args["bucket"], args["access_key"], args["secret_key"])
    jars = [Path(jar) for jar in args["jars"]]
    spark = private_session(SparkSettings(master=args["master"], conf=lake_conf(store, jars)))
    check_private(spark)
    conf = spark.sparkContext.getConf()
    table = f"delta.`s3a://{store.bucket}/smoke/events`"
    spark.sql(f"CREATE TABLE {table} {TABLE_DDL}")
    spark.sql(
        f"INSERT INTO {table} VALUES (DATE'2026-03-01', 'a', 1), (DATE'2026-03-01', 'b', 2), "
        "(DATE'2026-03-02', 'c', 3)"
    )
    spark.sql(
        f"INSERT INTO {table} REPLACE WHERE day = DATE'2026-03-02' SELECT DATE'2026-03-02', 'd', 4"
    )
    spark.sql(
        f"MERGE INTO {table} t USING (SELECT DATE'2026-03-01' AS day, 'a' AS k, 10L AS v "
        "UNION ALL SELECT DATE'2026-03-01', 'e', 5L) s ON t.day = s.day AND t.k = s.k "
        "WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT *"
    )
    where = "java.lang.System', 'getProperty', 'sun.java.command"
    ran_in = spark.sql(
        f"SELECT DISTINCT split(reflect('{where}'), ' ')[0] FROM range(0, 8, 1, 8)"
    ).collect()
    with urllib.request.urlopen(args["status_url"], timeout=10) as response:
        status = json.load(response)
    result = {
        "private": {key: conf.get(key) for key in PRIVATE_CONF},
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
    spark.stop()
    print(json.dumps(result))


if __name__ == "__main__":
    main(sys.argv)

"""The SparkSession the platform runs on: private by configuration.

Spark's web UI, its event log, the SQL tab and any listener show exact row counts per operator
and per job — for a query over one day of one campaign, those are private values (how many
users converted, how many conversions were attributed). DuckDB never exposes them; on Spark the
session must not either. :data:`PRIVATE_CONF` turns each exposure off and :func:`check_private`
refuses a session where one is on (e.g. one started elsewhere with the UI). The catalogue cannot
override these keys (config.SparkSettings refuses them). docs/operators.md ("Spark") tells
cluster operators what else to keep closed (history server, executor logs at DEBUG).

Start-up: a JVM per process, 20-35 s on two cores. A ``local`` master gets the serial garbage
collector and few shuffle partitions (:data:`FAST_START`; a cluster keeps its defaults). The
JIT keeps its optimising tier: capping it at C1 (``-XX:TieredStopAtLevel=1``, used before)
started the session no sooner (27.6 s against 28.3 s) and made repeated work 10-25 % slower
(docs/testing.md).

Logging: :data:`LOG_CONFIG` (log4j2.properties here) is passed to the driver's and the executors'
JVMs (:func:`java_options`): Spark logs a failed task with its exception's text, which may quote
an event record, so those loggers are off for the whole session — set at JVM start, not through
the JVM while a file is read (a Spark Connect client has no JVM to reach).

Spark Connect (``warehouse.spark.remote: sc://host:port``): the platform's processes start no
JVM; a server started by :func:`connect_server_argv` (``dp-platform spark-connect-server``) holds
PRIVATE_CONF, the jars and the log configuration, and :func:`private_session` refuses, through
the client, a server whose UI, event log, listeners or time zone would break the rules above.
PySpark keeps one kind of session per process (classic or Connect): a process that already has a
classic session cannot open a Connect one.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from dp_platform.errors import ConfigError
from dp_platform.settings import SparkSettings

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = [
    "CONNECT_SERVER_CLASS",
    "FAST_START",
    "JAVA_OPTION_KEYS",
    "LOG_CONFIG",
    "PRIVATE_CONF",
    "check_private",
    "check_server",
    "connect_server_argv",
    "connector_jars",
    "java_options",
    "java_version",
    "private_session",
    "server_conf",
]

PRIVATE_CONF: dict[str, str] = {
    "spark.ui.enabled": "false",  # no web UI (jobs, stages, SQL tab with per-operator rows)
    "spark.ui.showConsoleProgress": "false",  # no progress bars on the console
    "spark.eventLog.enabled": "false",  # no event log for a history server
    "spark.sql.ui.retainedExecutions": "0",  # keep no SQL executions (and their metrics)
    "spark.ui.retainedJobs": "0",
    "spark.ui.retainedStages": "0",
    "spark.ui.retainedTasks": "0",
    "spark.ui.retainedDeadExecutors": "0",
    "spark.sql.streaming.ui.enabled": "false",
    "spark.extraListeners": "",  # no listener sees task metrics
    "spark.sql.queryExecutionListeners": "",
    # storage format, not privacy: UTC days, a day rewritten without touching the others,
    # tables in Delta Lake (docs/scale.md §5)
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.sources.partitionOverwriteMode": "dynamic",
    "spark.sql.hive.manageFilesourcePartitions": "false",
    "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
    # Delta's SQL parser (4.4.0) drops Spark's named parameter markers unless they are
    # substituted as constants (delta-io/delta issue 7640; the statements bind only values);
    # tests/test_spark_delta.py fails once a Delta release binds them without this
    "spark.sql.legacy.parameterSubstitution.constantsOnly": "true",
}
"""Fixed settings of every platform session (the catalogue may not change them)."""

FAST_START: dict[str, str] = {
    "spark.driver.extraJavaOptions": "-XX:+UseSerialGC",
    "spark.sql.shuffle.partitions": "8",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    # Delta rebuilds a table's state from its log in this many tasks (default 50: 50 tiny
    # tasks per first read of each table on two cores)
    "spark.databricks.delta.snapshotPartitions": "2",
}
"""Defaults for a ``local`` master (short jobs, two cores); the catalogue's conf overrides."""

LOG_CONFIG = Path(__file__).with_name("log4j2.properties")
"""Spark's log4j2 configuration: task-failure loggers off (the file says which and why)."""

JAVA_OPTION_KEYS = ("spark.driver.extraJavaOptions", "spark.executor.extraJavaOptions")

_MIN_JAVA = 17
_RUNTIME = (
    "spark.sql.session.timeZone",
    "spark.sql.sources.partitionOverwriteMode",
    "spark.sql.hive.manageFilesourcePartitions",
    "spark.sql.legacy.parameterSubstitution.constantsOnly",
)
_CLASS_PATHS = ("spark.driver.extraClassPath", "spark.executor.extraClassPath")

CONNECT_SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
"""Spark Connect's server (PySpark's spark-connect jar), started through ``spark-submit``."""
_DELTA_EXTENSION = PRIVATE_CONF["spark.sql.extensions"]
_CONNECTED: dict[str, SparkSession] = {}  # the process's Connect session, by URL


def connector_jars(settings: SparkSettings) -> list[Path]:
    """The Delta Lake and object-store jars the session loads: the catalogue's ``jars``
    directory, else the one make fills beside the platform's Python (``.venv/spark-jars``,
    from spark-jars/pom.xml). Without Delta's jar nothing can be read: a one-line refusal."""
    directory = Path(settings.jars) if settings.jars else Path(sys.prefix) / "spark-jars"
    jars = sorted(directory.glob("*.jar")) if directory.is_dir() else []
    if not any(jar.name.startswith("delta-spark") for jar in jars):
        raise ConfigError(
            f"warehouse.engine spark needs the Delta Lake jars in {directory} (none found): "
            "run `make .venv/.spark`, or set warehouse.spark.jars"
        )
    return jars


def _with_jars(conf: dict[str, str], jars: list[Path]) -> dict[str, str]:
    """``conf`` with the jars on the driver's and executors' class paths (after any the
    catalogue gives: each worker holds them at the same path, as the loopback cluster does)."""
    joined = os.pathsep.join(str(jar) for jar in jars)
    extended = dict(conf)
    for key in _CLASS_PATHS:
        extended[key] = os.pathsep.join(p for p in (conf.get(key, ""), joined) if p)
    return extended


def java_version() -> int | None:
    """Major version of the ``java`` on PATH, or None if there is none."""
    java = shutil.which("java")
    if java is None:
        return None
    try:
        output = subprocess.run(
            [java, "-version"], capture_output=True, text=True, timeout=60, check=False
        ).stderr
    except (OSError, subprocess.TimeoutExpired):
        return None
    match = re.search(r'version "(\d+)(?:\.(\d+))?', output)
    if match is None:
        return None
    major = int(match.group(1))
    return int(match.group(2) or 0) if major == 1 else major


def check_private(spark: SparkSession) -> None:
    """Refuse a session whose UI, event log or listeners would show private counts, or whose
    days would not be UTC. Reads ``spark.conf`` only (static settings too), so it holds for a
    Spark Connect client, which has no SparkContext."""

    def setting(key: str, default: str) -> str:
        return (spark.conf.get(key, default) or "").strip().lower()

    if setting("spark.ui.enabled", "true") != "false":
        raise ConfigError("the Spark session has its web UI on; the platform needs it off")
    if setting("spark.eventLog.enabled", "false") != "false":
        raise ConfigError("the Spark session writes an event log; the platform needs it off")
    if setting("spark.extraListeners", "") or setting("spark.sql.queryExecutionListeners", ""):
        raise ConfigError("the Spark session has listeners; the platform allows none")
    if spark.conf.get("spark.sql.session.timeZone") != "UTC":
        raise ConfigError("the Spark session's time zone must be UTC (event days are UTC)")


def java_options(conf: Mapping[str, str]) -> dict[str, str]:
    """``conf`` with ``-Dlog4j2.configurationFile`` (:data:`LOG_CONFIG`) appended to the
    driver's and the executors' JVM options, after any the catalogue or FAST_START gives: the
    last ``-D`` of a name wins, so a catalogue's own log configuration does not turn the
    task-failure loggers back on. Executors on other hosts need the package at the same path
    (an installed wheel in the same environment) or an equivalent file of their own."""
    option = f"-Dlog4j2.configurationFile={LOG_CONFIG.as_uri()}"
    merged = dict(conf)
    for key in JAVA_OPTION_KEYS:
        merged[key] = f"{merged.get(key, '')} {option}".strip()
    return merged


def _require_java() -> None:
    version = java_version()
    if version is None or version < _MIN_JAVA:
        found = "no java on PATH" if version is None else f"java {version}"
        raise ConfigError(
            f"warehouse.engine spark needs Java {_MIN_JAVA} or newer ({found}); install a JDK "
            "(e.g. `apt-get install -y openjdk-17-jre-headless`) or use engine duckdb"
        )


def server_conf(settings: SparkSettings) -> dict[str, str]:
    """Every setting a platform JVM starts with (this process's or a Connect server's): the
    catalogue's conf over FAST_START (``local`` masters), the jars on both class paths, then
    PRIVATE_CONF and the log configuration, which nothing overrides."""
    defaults = FAST_START if settings.master.startswith("local") else {}
    conf = _with_jars({**defaults, **settings.conf}, connector_jars(settings))
    return java_options({**conf, **PRIVATE_CONF})


def connect_server_argv(settings: SparkSettings, host: str, port: int) -> list[str]:
    """The ``spark-submit`` command line of a private Spark Connect server on ``host:port``
    (PySpark's own launcher: the server JVM gets :func:`server_conf`, the platform's sessions
    connect with ``remote: sc://host:port``). ``settings.master`` is the server's master."""
    if settings.remote is not None:
        raise ConfigError("a Connect server is started from master settings, not from remote")
    _require_java()
    try:
        import pyspark
    except ImportError:
        raise ConfigError(
            "a Spark Connect server needs PySpark: pip install -e '.[spark]'"
        ) from None
    submit = Path(pyspark.__file__).parent / "bin" / "spark-submit"
    conf = {
        **server_conf(settings),
        "spark.connect.grpc.binding.address": host,
        "spark.connect.grpc.binding.port": str(port),
    }
    argv = [str(submit), "--class", CONNECT_SERVER_CLASS, "--master", settings.master]
    argv += ["--name", "dp_platform Spark Connect server"]
    for key, value in conf.items():
        argv += ["--conf", f"{key}={value}"]
    return argv


def _local_session(settings: SparkSettings) -> SparkSession:
    """A classic session: this process's JVM, started with :func:`server_conf`. The only code
    of the engine that reaches the SparkContext (a Connect session has none)."""
    if any(not other.is_stopped for other in _CONNECTED.values()):
        raise ConfigError("this process is connected to a Spark Connect server already")
    _require_java()
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        raise ConfigError(
            "warehouse.engine spark needs PySpark: pip install -e '.[spark]'"
        ) from None
    builder = SparkSession.builder.master(settings.master).appName("dp_platform")
    for key, value in server_conf(settings).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    if spark.sparkContext.uiWebUrl:  # started elsewhere in the process with its UI on
        raise ConfigError("the Spark session has its web UI on; the platform needs it off")
    return spark


def _connect_session(url: str) -> SparkSession:
    """A Spark Connect client session on ``url`` (no JVM here), one per process."""
    try:
        import pyspark.sql.connect.session  # noqa: F401  (its gRPC dependencies)
        from pyspark.errors import PySparkException
        from pyspark.sql import SparkSession
    except ImportError:
        raise ConfigError(
            "warehouse.spark.remote needs PySpark's Connect client: pip install -e '.[spark]'"
        ) from None
    known = _CONNECTED.get(url)
    if known is not None and not known.is_stopped:
        return known
    if any(not other.is_stopped for other in _CONNECTED.values()):
        raise ConfigError("this process is connected to another Spark Connect server already")
    try:
        spark = SparkSession.builder.remote(url).getOrCreate()
    except PySparkException as error:  # e.g. a classic session in this process
        raise ConfigError(f"cannot open a Spark Connect session on {url}: {error}") from None
    _CONNECTED[url] = spark
    return spark


def _set(spark: SparkSession, conf: Mapping[str, str], remote: str | None) -> None:
    """Session settings through ``spark.conf`` (a Connect server's first answer: its errors,
    unreachable or a static key, are one line naming the server)."""
    try:
        for key, value in conf.items():
            spark.conf.set(key, value)
    except Exception as error:
        if remote is None:
            raise
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise ConfigError(f"the Spark Connect server {remote}: {first}") from None


def private_session(settings: SparkSettings) -> SparkSession:
    """The process's SparkSession with the platform's settings: its own JVM (started on first
    use), or a Connect client of ``settings.remote``; either refused if not private."""
    remote = settings.remote
    spark = _local_session(settings) if remote is None else _connect_session(remote)
    session = dict(settings.conf) if remote is not None else {}  # a local JVM has them
    # a session started earlier in the process (or the server) keeps its static settings
    _set(spark, {**session, **{key: PRIVATE_CONF[key] for key in _RUNTIME}}, remote)
    check_private(spark)
    if remote is not None:
        check_server(spark, remote)
    return spark


def check_server(spark: SparkSession, remote: str) -> None:
    """Refuse a Connect server started otherwise than :func:`connect_server_argv` would in
    what the platform relies on: Delta Lake's extension, and a log configuration given to its
    driver (the shipped one keeps failed tasks' record text out of its log)."""
    started = "start it with `dp-platform spark-connect-server`"
    if _DELTA_EXTENSION not in (spark.conf.get("spark.sql.extensions", "") or ""):
        raise ConfigError(
            f"the Spark Connect server {remote} lacks Delta Lake's extension: {started}"
        )
    if "-Dlog4j2.configurationFile=" not in (spark.conf.get(JAVA_OPTION_KEYS[0], "") or ""):
        raise ConfigError(f"the Spark Connect server {remote} has no log configuration: {started}")

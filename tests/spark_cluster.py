"""A real Spark cluster and object store on loopback for the tests (issue 29): a standalone
master with two small workers started from PySpark's own ``bin/spark-class`` (the pip package
ships no ``sbin/start-master.sh``), and moto's S3 server with a bucket, which Spark reaches
through hadoop-aws's ``s3a://``. Executors run in the workers' JVMs, not the test's driver.

One driver per process: PySpark keeps one SparkContext per Python process, and the run's
``local[2]`` session (tests/spark_fixtures.py) may already be it, so a test drives the cluster
from a process of its own (tests/spark_lake_job.py). The connector jars come from
``make .venv/.spark`` (spark-jars/pom.xml) into ``<venv>/spark-jars``; every process here is on
the same machine, so they are put on the driver's and executors' class path from that folder
rather than shipped (the AWS SDK bundle alone is ~690 MB).
"""

from __future__ import annotations

import importlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

LOOPBACK = "127.0.0.1"
JARS_DIR = Path(sys.prefix) / "spark-jars"
START_TIMEOUT = 120.0
CI_MESSAGE = "LAKE TESTS NOT RUN"


@dataclass(frozen=True)
class Cluster:
    """A running standalone cluster: its master URL and its JSON status page."""

    master: str
    status_url: str

    def status(self) -> dict[str, object]:
        with urllib.request.urlopen(self.status_url, timeout=10) as response:
            return json.load(response)


@dataclass(frozen=True)
class ObjectStore:
    """A running S3-compatible endpoint and the bucket the tests write to."""

    endpoint: str
    bucket: str
    access_key: str = "testing"  # moto accepts any key; these name no real account
    secret_key: str = "testing"

    def client(self):  # a boto3 S3 client (untyped: boto3 ships no stubs)
        import boto3

        return boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            aws_access_key_id=self.access_key,
            aws_secret_access_key=self.secret_key,
            region_name="us-east-1",
        )


def unavailable(reason: str) -> None:
    """Skip (a developer's machine without Java, PySpark or the jars) or, under CI, fail."""
    if os.environ.get("CI"):
        pytest.fail(f"the lake tests cannot run in CI: {reason}")
    pytest.skip(f"{CI_MESSAGE}: {reason}")


def free_port() -> int:
    """A TCP port free on loopback now (the OS's choice)."""
    with socket.socket() as probe:
        probe.bind((LOOPBACK, 0))
        return probe.getsockname()[1]


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent


def jar_paths() -> list[Path]:
    """The connector jars ``make .venv/.spark`` fetched, or none."""
    return sorted(JARS_DIR.glob("*.jar")) if JARS_DIR.is_dir() else []


def _wait(what: str, ready, processes: list[subprocess.Popen[bytes]], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for process in processes:
            if process.poll() is not None:
                raise RuntimeError(f"{what}: a process exited with code {process.returncode}")
        try:
            if ready():
                return
        except OSError:
            pass
        time.sleep(0.25)
    raise RuntimeError(f"{what} did not start within {timeout:.0f} s")


def _stop(processes: list[subprocess.Popen[bytes]]) -> None:
    for process in processes:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
    for process in processes:
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@contextmanager
def standalone_cluster(
    work_dir: Path, workers: int = 2, cores: int = 1, memory: str = "1g"
) -> Iterator[Cluster]:
    """A master and ``workers`` workers on loopback, each its own JVM; stopped on exit."""
    spark_class = str(spark_home() / "bin" / "spark-class")
    env = {
        **os.environ,
        "SPARK_HOME": str(spark_home()),
        "SPARK_LOCAL_IP": LOOPBACK,
        "SPARK_DAEMON_MEMORY": "256m",  # the daemons' own heaps; executors get the 1 GB
        "PYSPARK_PYTHON": sys.executable,
    }
    log_dir = work_dir / "logs"
    log_dir.mkdir(parents=True, exist_ok=True)
    port, ui_port = free_port(), free_port()
    processes: list[subprocess.Popen[bytes]] = []

    def launch(name: str, *args: str) -> None:
        with (log_dir / f"{name}.log").open("wb") as log:
            processes.append(
                subprocess.Popen(
                    [spark_class, *args],
                    env=env,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                )
            )

    cluster = Cluster(f"spark://{LOOPBACK}:{port}", f"http://{LOOPBACK}:{ui_port}/json")
    try:
        launch(
            "master",
            "org.apache.spark.deploy.master.Master",
            *("--host", LOOPBACK, "--port", str(port), "--webui-port", str(ui_port)),
        )
        for index in range(workers):
            worker_dir = work_dir / f"worker{index}"
            worker_dir.mkdir(exist_ok=True)
            launch(
                f"worker{index}",
                "org.apache.spark.deploy.worker.Worker",
                *("--host", LOOPBACK, "--port", str(free_port())),
                *("--webui-port", str(free_port()), "--cores", str(cores)),
                *("--memory", memory, "--work-dir", str(worker_dir), cluster.master),
            )
        _wait(
            "the Spark standalone cluster",
            lambda: cluster.status().get("aliveworkers") == workers,
            processes,
            START_TIMEOUT,
        )
        yield cluster
    finally:
        _stop(processes)


@contextmanager
def moto_s3(bucket: str = "lake") -> Iterator[ObjectStore]:
    """moto's S3 server on a free loopback port with ``bucket`` created; stopped on exit."""

    port = free_port()
    store = ObjectStore(f"http://{LOOPBACK}:{port}", bucket)
    process = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", LOOPBACK, "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL,
    )
    try:

        def answers() -> bool:
            with urllib.request.urlopen(f"{store.endpoint}/moto-api/", timeout=5):
                return True

        _wait("moto's S3 server", answers, [process], START_TIMEOUT)
        store.client().create_bucket(Bucket=bucket)
        yield store
    finally:
        _stop([process])


def lake_conf(store: ObjectStore) -> dict[str, str]:
    """Spark settings for tables on ``store`` from the loopback cluster: the catalogue's
    ``conf`` block, which :func:`dp_platform.warehouse.spark.session.private_session` merges
    under PRIVATE_CONF (Delta's extension and catalog, and the jars on both class paths, are
    the session's own)."""
    return {
        "spark.driver.host": LOOPBACK,
        "spark.driver.bindAddress": LOOPBACK,
        "spark.executor.cores": "1",
        "spark.executor.memory": "768m",
        "spark.cores.max": "2",
        "spark.sql.shuffle.partitions": "2",
        "spark.hadoop.fs.s3a.endpoint": store.endpoint,
        "spark.hadoop.fs.s3a.endpoint.region": "us-east-1",
        "spark.hadoop.fs.s3a.path.style.access": "true",
        "spark.hadoop.fs.s3a.connection.ssl.enabled": "false",
        "spark.hadoop.fs.s3a.access.key": store.access_key,
        "spark.hadoop.fs.s3a.secret.key": store.secret_key,
        "spark.hadoop.fs.s3a.aws.credentials.provider": (
            "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider"
        ),
    }


def require_spark(missing: Callable[[str], None], *modules: str) -> list[Path]:
    """The connector jars, after checking Java 17+ and ``modules`` are there; ``missing``
    (skip, or fail under CI) is called with what is not."""
    from dp_platform.warehouse.spark.session import java_version

    version = java_version()
    if version is None or version < 17:
        missing("Spark needs Java 17 or newer")
    for module in modules:
        try:
            importlib.import_module(module)
        except ImportError as error:
            missing(f"{error.name} is not installed: make .venv/.spark")
    jars = jar_paths()
    if not any(jar.name.startswith("delta-spark") for jar in jars):
        missing(f"no connector jars in {JARS_DIR}: make .venv/.spark")
    return jars


def require_lake() -> list[Path]:
    """The connector jars, after checking Java 17+, PySpark and boto3 (else skip/fail)."""
    jars = require_spark(unavailable, "boto3", "pyspark")
    if shutil.which("bash") is None:
        unavailable("PySpark's spark-class needs bash")
    return jars


@contextmanager
def lake(work_dir: Path) -> Iterator[tuple[Cluster, ObjectStore, list[Path]]]:
    """The cluster, the store and the jars together (what a lake test needs)."""
    jars = require_lake()
    with ExitStack() as stack:
        cluster = stack.enter_context(standalone_cluster(work_dir / "cluster"))
        store = stack.enter_context(moto_s3())
        yield cluster, store, jars


@pytest.fixture(scope="session")
def spark_lake(tmp_path_factory: pytest.TempPathFactory):
    """One cluster and object store for the test session (stopped at its end)."""
    with lake(tmp_path_factory.mktemp("spark-lake")) as started:
        yield started

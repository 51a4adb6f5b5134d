"""A private Spark Connect server on loopback for the tests, started the one supported way
(``dp-platform spark-connect-server``, which becomes PySpark's ``spark-submit``), and a
deliberately misconfigured one (its web UI on) started from the same command line plus the
settings the command refuses.

PySpark keeps one kind of session per Python process (a Connect client session switches
``pyspark.sql.functions`` to Connect for the whole process), and the run's ``local[2]`` session
(tests/spark_fixtures.py) may live in the test process: so every Connect client of these tests
runs in a process of its own (tests/spark_connect_job.py, or the CLI).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.spark_cluster import LOOPBACK, START_TIMEOUT, _stop, _wait, free_port, require_spark

CI_MESSAGE = "SPARK CONNECT TESTS NOT RUN"
# the server's small-data settings (tests/spark_fixtures.py says why); the client may set only
# spark.sql.* ones (SparkSettings refuses the rest with remote)
SERVER_CONF = {
    "spark.driver.memory": "1g",
    "spark.default.parallelism": "2",
    "spark.sql.shuffle.partitions": "2",
    "spark.sql.codegen.wholeStage": "false",
    "spark.sql.codegen.factoryMode": "NO_CODEGEN",
    "spark.sql.adaptive.enabled": "false",
}


@dataclass(frozen=True)
class Server:
    """A running Connect server: the URL a catalogue's ``remote:`` names, and its log."""

    url: str
    log: Path


def unavailable(reason: str) -> None:
    """Skip (a developer's machine without Java, PySpark's Connect client or the jars) or,
    under CI, fail."""
    if os.environ.get("CI"):
        pytest.fail(f"the Spark Connect tests cannot run in CI: {reason}")
    pytest.skip(f"{CI_MESSAGE}: {reason}")


def require_connect() -> None:
    """Java 17+, PySpark's Connect client (grpcio-status, googleapis, zstandard) and the jars."""
    require_spark(unavailable, "pyspark.sql.connect.session")


def command(port: int) -> list[str]:
    """``dp-platform spark-connect-server`` on ``port`` (this interpreter, this checkout)."""
    argv = [sys.executable, "-m", "dp_platform.cli", "spark-connect-server"]
    argv += ["--host", LOOPBACK, "--port", str(port)]
    for key, value in SERVER_CONF.items():
        argv += ["--conf", f"{key}={value}"]
    return argv


def _answers(port: int) -> bool:
    with socket.create_connection((LOOPBACK, port), timeout=5):
        return True


@contextmanager
def connect_server(log: Path, argv: Callable[[int], list[str]] = command) -> Iterator[Server]:
    """A server on a free loopback port, started by ``argv(port)`` (default: the platform's
    command), ready once its gRPC port answers; stopped on exit."""
    require_connect()
    port = free_port()
    with log.open("wb") as out:
        process = subprocess.Popen(
            argv(port),
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])},
        )
    try:
        _wait("the Spark Connect server", lambda: _answers(port), [process], START_TIMEOUT)
        yield Server(f"sc://{LOOPBACK}:{port}", log)
    finally:
        _stop([process])


def ui_on_argv(port: int, ui_port: int) -> list[str]:
    """The platform's server command line with its web UI turned back on (at ``ui_port``):
    spark-submit keeps a key's last value; the command itself refuses these settings."""
    from dp_platform.settings import SparkSettings
    from dp_platform.warehouse.spark.session import connect_server_argv

    settings = SparkSettings(conf={**SERVER_CONF, "spark.driver.memory": "512m"})
    argv = connect_server_argv(settings, LOOPBACK, port)
    return [*argv, "--conf", "spark.ui.enabled=true", "--conf", f"spark.ui.port={ui_port}"]


@pytest.fixture(scope="session")
def spark_connect(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """One private Connect server for the test session (stopped at its end)."""
    with connect_server(tmp_path_factory.mktemp("spark-connect") / "server.log") as server:
        yield server

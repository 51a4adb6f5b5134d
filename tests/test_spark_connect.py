"""The platform over Spark Connect (``warehouse.spark.remote``): a campaign through Dagster
releases what DuckDB releases under the same seeded noise; a server with its web UI on is
refused in one line; a CLI command against a Connect catalogue runs no Java at all; the
settings refuse a bad URL and what only a JVM start could apply. The server is the one
``dp-platform spark-connect-server`` starts (tests/spark_connect.py); the Connect clients run in
processes of their own (same module says why)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from datetime import date
from pathlib import Path
from types import SimpleNamespace

import dagster as dg
import numpy as np
import pytest
import yaml

from assets.runner import run_campaigns
from dp_platform.config_loader import parse_catalogue
from dp_platform.errors import ConfigError
from dp_platform.events import generate_campaign, write_events
from dp_platform.ledger import Ledger
from dp_platform.warehouse.spark.session import (
    PRIVATE_CONF,
    check_private,
    check_server,
    java_options,
)
from tests.platform_fixtures import START, RoutedNoise, catalogue, make_home
from tests.spark_cluster import LOOPBACK, free_port
from tests.spark_connect import connect_server, spark_connect, ui_on_argv  # noqa: F401
from tests.worker_groups import uses_spark

REPO = Path(__file__).resolve().parents[1]
TODAY = date(2026, 11, 22)
CAMPAIGN_DAYS, QUANTILE_DAYS = 4, 2  # tests/test_spark_platform.py's campaign
JOB_TIMEOUT = 1800


def _env(**extra: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO), **extra}


def _releases(root: Path) -> tuple[list, object]:
    with Ledger.at_home(root) as ledger:
        return ledger.releases("spring"), ledger.campaign_budget("spring")


# -- settings and the privacy check (no JVM) ---------------------------------------------------


@pytest.mark.parametrize(
    ("block", "refusal"),
    [
        (
            {"remote": "http://127.0.0.1:15002"},
            r"warehouse\.spark\.remote: must be a Spark Connect",
        ),
        ({"remote": "sc://"}, r"warehouse\.spark\.remote: must be a Spark Connect"),
        ({"remote": "sc://h:1", "master": "local[2]"}, r"remote and master exclude each other"),
        ({"remote": "sc://h:1", "jars": "/jars"}, r"remote and jars exclude each other"),
        ({"remote": "sc://h:1", "conf": {"spark.driver.memory": "2g"}}, r"spark\.driver\.memory"),
        ({"remote": "sc://h:1/;token=s3cret"}, r"a token in the URL is refused"),
    ],
)
def test_settings_refuse_a_bad_remote(block: dict, refusal: str) -> None:
    document = catalogue()
    document["warehouse"] = {"engine": "spark", "spark": block}
    with pytest.raises(ConfigError, match=refusal) as refused:
        parse_catalogue(document)
    assert "s3cret" not in str(refused.value)


def test_settings_take_a_remote_with_session_settings() -> None:
    document = catalogue()
    session = {
        "spark.sql.shuffle.partitions": "4",
        "spark.databricks.delta.snapshotPartitions": "2",
    }
    document["warehouse"] = {"engine": "spark", "spark": {"remote": "sc://h:1", "conf": session}}
    spark = parse_catalogue(document).warehouse.spark
    assert (spark.remote, spark.conf) == ("sc://h:1", session)


class _Conf:
    def __init__(self, values: dict[str, str]) -> None:
        self.values = values

    def get(self, key: str, default: str | None = None) -> str | None:
        return self.values.get(key, default)


@pytest.mark.parametrize(
    ("setting", "refusal"),
    [
        ({"spark.ui.enabled": "true"}, "the Spark session has its web UI on"),
        ({"spark.eventLog.enabled": "true"}, "the Spark session writes an event log"),
        ({"spark.extraListeners": "x.Listener"}, "the Spark session has listeners"),
        ({"spark.sql.queryExecutionListeners": "x.Q"}, "the Spark session has listeners"),
        ({"spark.sql.session.timeZone": "Europe/Paris"}, "time zone must be UTC"),
    ],
)
def test_check_private_reads_only_spark_conf(setting: dict[str, str], refusal: str) -> None:
    """What a Connect client can reach (``spark.conf``): each exposure refused in one line."""
    private = SimpleNamespace(conf=_Conf(dict(PRIVATE_CONF)))
    check_private(private)  # type: ignore[arg-type]
    exposed = SimpleNamespace(conf=_Conf({**PRIVATE_CONF, **setting}))
    with pytest.raises(ConfigError, match=refusal) as refused:
        check_private(exposed)  # type: ignore[arg-type]
    assert "\n" not in str(refused.value)


def test_check_private_takes_an_unset_ui_for_on() -> None:
    conf = {key: value for key, value in PRIVATE_CONF.items() if key != "spark.ui.enabled"}
    with pytest.raises(ConfigError, match="web UI on"):
        check_private(SimpleNamespace(conf=_Conf(conf)))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("dropped", "refusal"),
    [
        ("spark.sql.extensions", "lacks Delta Lake's extension"),
        ("spark.driver.extraJavaOptions", "has no log configuration"),
    ],
)
def test_check_server_wants_delta_and_the_log_configuration(dropped: str, refusal: str) -> None:
    started = java_options(PRIVATE_CONF)  # what connect_server_argv gives the server
    check_server(SimpleNamespace(conf=_Conf(started)), "sc://h:1")  # type: ignore[arg-type]
    missing = {key: value for key, value in started.items() if key != dropped}
    with pytest.raises(ConfigError, match=f"sc://h:1 {refusal}: start it with"):
        check_server(SimpleNamespace(conf=_Conf(missing)), "sc://h:1")  # type: ignore[arg-type]


def test_parameters_are_inlined_as_typed_literals_outside_quotes_and_comments() -> None:
    """Over Connect the runner writes parameters into the statement (runner.py): each marker
    becomes its value's literal, quotes escaped; text in strings, identifiers and comments and
    a ``::`` cast stay as they are."""
    from dp_platform.warehouse.spark.runner import inline_parameters

    statement = (
        "SELECT ':a', `x:a`, \"y:a\", v::BIGINT FROM t WHERE a = :a AND b IN :days"
        " AND c = :c AND d = :d AND e = :e AND f = :f -- :a\n"
    )
    params = {"a": "it's \\ ok", "days": [date(2026, 3, 1)], "c": -3, "d": 0.5, "e": None}
    inlined = inline_parameters(statement, {**params, "f": float("inf")})
    assert inlined == (
        "SELECT ':a', `x:a`, \"y:a\", v::BIGINT FROM t WHERE a = 'it\\'s \\\\ ok' AND b IN "
        "array(DATE'2026-03-01') AND c = (-3) AND d = (0.5D) AND e = NULL "
        "AND f = CAST('inf' AS DOUBLE) -- :a\n"
    )
    with pytest.raises(TypeError, match="no Spark SQL literal"):
        inline_parameters("SELECT :x", {"x": object()})


def test_the_server_command_refuses_private_settings_and_names_the_server_class() -> None:
    base = [sys.executable, "-m", "dp_platform.cli", "spark-connect-server"]
    refused = subprocess.run(
        [*base, "--conf", "spark.ui.enabled=true"], capture_output=True, text=True, env=_env()
    )
    assert refused.returncode == 2
    assert refused.stderr.strip().startswith(
        "dp-platform spark-connect-server: --conf: spark.ui.enabled is fixed by the platform"
    )
    shown = subprocess.run(
        [*base, "--print", "--port", "15999"], capture_output=True, text=True, env=_env()
    )
    if shown.returncode != 0:  # no Java or no jars here: the refusal is one line
        assert shown.stderr.count("\n") == 1, shown.stderr
        pytest.skip(shown.stderr.strip())
    argv = shown.stdout.split()
    assert argv[0].endswith("spark-submit")
    assert argv[1:3] == ["--class", "org.apache.spark.sql.connect.service.SparkConnectServer"]
    confs = [argv[i + 1] for i, word in enumerate(argv) if word == "--conf"]
    assert "spark.connect.grpc.binding.port=15999" in confs
    assert "spark.connect.grpc.binding.address=127.0.0.1" in confs
    assert {f"{key}={value}" for key, value in PRIVATE_CONF.items()} <= set(confs)
    assert any("log4j2.configurationFile=" in conf for conf in confs)


def test_a_connect_test_file_runs_on_the_spark_worker() -> None:
    assert uses_spark(SimpleNamespace(fixturenames=("spark_connect",)))  # type: ignore[arg-type]


# -- against a running server ------------------------------------------------------------------


def test_a_campaign_over_connect_releases_the_same_as_duckdb(spark_connect, tmp_path):  # noqa: F811
    job = {
        "mode": "campaign",
        "url": spark_connect.url,
        "root": str(tmp_path / "connect"),
        "seed": 9,
        "users": 200,
        "days": CAMPAIGN_DAYS,
        "quantile_days": QUANTILE_DAYS,
        "today": TODAY.isoformat(),
    }
    ran = subprocess.run(
        [sys.executable, "-m", "tests.spark_connect_job", json.dumps(job)],
        capture_output=True,
        text=True,
        timeout=JOB_TIMEOUT,
        env=_env(),
        check=False,
    )
    assert ran.returncode == 0, ran.stderr[-4000:]
    result = json.loads(ran.stdout.strip().splitlines()[-1])
    assert result == {
        "days": [CAMPAIGN_DAYS],
        "session": "pyspark.sql.connect.session.SparkSession",
        "spark_context": False,  # the job process never had a JVM of its own
    }
    config = catalogue(days=CAMPAIGN_DAYS, engine="duckdb", quantile_days=QUANTILE_DAYS)
    duck_home = make_home(tmp_path / "duckdb", seed=9, users=200, days=CAMPAIGN_DAYS, config=config)
    run_campaigns(
        duck_home.root / "campaigns.yaml",
        duck_home.root,
        noise=RoutedNoise(11, 12),
        instance=dg.DagsterInstance.ephemeral(),
        today=TODAY,
    )
    (duck, duck_budget), (remote, remote_budget) = (
        _releases(root) for root in (duck_home.root, tmp_path / "connect")
    )
    assert [r.day for r in duck] == [r.day for r in remote] == list(range(1, CAMPAIGN_DAYS + 1))
    for left, right in zip(duck, remote, strict=True):
        assert left.bound == right.bound
        assert left.sigma == right.sigma
        assert left.charges == right.charges
        np.testing.assert_allclose(left.values, right.values, rtol=0, atol=1e-9)
    assert duck_budget.spent == remote_budget.spent == duck_budget.planned


def _events(root: Path):
    events = generate_campaign(
        seed=5, users=50, publishers=2, impressions=500, conversions=100, days=3, start=START
    )
    return write_events(events, root / "input")


def _fake_java(root: Path) -> tuple[Path, dict[str, str]]:
    """A ``java`` (on PATH and as JAVA_HOME) that records each start and fails: a command that
    tries to start a JVM leaves the record."""
    record = root / "java-started"
    bin_dir = root / "fake-jdk" / "bin"
    bin_dir.mkdir(parents=True)
    java = bin_dir / "java"
    java.write_text(f'#!/bin/sh\necho "$@" >> {record}\nexit 1\n')
    java.chmod(0o755)
    path = os.pathsep.join([str(bin_dir), os.environ.get("PATH", "")])
    return record, _env(PATH=path, JAVA_HOME=str(bin_dir.parent))


def _ingest(root: Path, warehouse: dict, env: dict[str, str]) -> subprocess.CompletedProcess:
    files = _events(root)
    config = root / "campaigns.yaml"
    config.write_text(
        yaml.safe_dump({**catalogue(days=3, quantile_days=2), "warehouse": warehouse})
    )
    argv = [sys.executable, "-m", "dp_platform.cli", "ingest", "--home", str(root / "home")]
    argv += ["--config", str(config), "--json"]
    argv += ["--impressions", str(files.impressions), "--conversions", str(files.conversions)]
    return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=JOB_TIMEOUT)


def test_the_cli_over_connect_starts_no_java(spark_connect, tmp_path):  # noqa: F811
    record, env = _fake_java(tmp_path)
    # the check can fail: a local master's command tries the fake java and is refused
    local = _ingest(tmp_path / "local", {"engine": "spark"}, env)
    assert local.returncode == 2 and "needs Java 17" in local.stderr
    assert record.exists()
    record.unlink()

    remote = {"engine": "spark", "spark": {"remote": spark_connect.url}}
    ran = _ingest(tmp_path / "remote", remote, env)
    assert ran.returncode == 0, ran.stderr[-4000:]
    assert not record.exists()  # no java was started, not even `java -version`
    report = json.loads(ran.stdout)
    assert report["conversions"]["accepted"] > 0 and report["impressions"]["accepted"] > 0


def test_a_connect_server_with_its_ui_on_is_refused(spark_connect, tmp_path):  # noqa: F811
    ui_port = free_port()
    with connect_server(tmp_path / "ui-on.log", lambda port: ui_on_argv(port, ui_port)) as server:
        with urllib.request.urlopen(f"http://{LOOPBACK}:{ui_port}/", timeout=30) as page:
            assert page.status == 200  # the misconfigured server really serves its UI
        remote = {"engine": "spark", "spark": {"remote": server.url}}
        ran = _ingest(tmp_path, remote, _env())
    assert ran.returncode == 2
    assert ran.stderr.strip() == (
        "dp-platform ingest: the Spark session has its web UI on; the platform needs it off"
    )
    assert not (tmp_path / "home" / "spark" / "tables").exists()  # refused before any table


def test_visibility_statements_and_dropped_parameters_over_connect(spark_connect, tmp_path):  # noqa: F811
    """What the engine's views of committed loads and its runner rely on works over Connect;
    and a bound query still fails there — why the runner writes parameters as literals
    (runner.py's module doc). The last assertion fails once a Spark or Delta release binds
    them."""
    job = {"mode": "probe", "url": spark_connect.url, "root": str(tmp_path)}
    ran = subprocess.run(
        [sys.executable, "-m", "tests.spark_connect_job", json.dumps(job)],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=600,
    )
    assert ran.returncode == 0, ran.stderr[-4000:]
    result = json.loads(ran.stdout.strip().splitlines()[-1])
    assert result["version"] == 2
    assert result["history"] == ["CREATE TABLE", "WRITE", "WRITE"]
    assert result["rows_in_view"] == 2  # v = 1: one row of each append
    assert result["kept"] == [["b", 2], ["b", 2]]  # the parameter inlined (one per append)
    assert result["views_after_release"] == []
    assert result["inlined"] == 42
    assert result["bound"] == "UNBOUND_SQL_PARAMETER"


def test_bench_refuses_a_connect_catalogue(tmp_path: Path) -> None:
    """bench measures its own JVM's start-up and memory: a remote catalogue is refused, not
    silently run on a local JVM with the client's settings."""
    from dp_platform.cli import build_parser
    from dp_platform.commands.bench import _spec

    config = tmp_path / "campaigns.yaml"
    remote = {"engine": "spark", "spark": {"remote": "sc://127.0.0.1:15002"}}
    config.write_text(yaml.safe_dump({**catalogue(), "warehouse": remote}))
    argv = ["bench", "--config", str(config)]
    with pytest.raises(ConfigError, match="bench runs Spark in a JVM of its own"):
        _spec(build_parser(argv).parse_args(argv))

"""The Spark session of a test run: one ``local[2]`` session for the whole run (JVM start-up is
20-35 s here), shared by every Spark test through the session-scoped ``spark`` fixture.

Spark tests skip only when Spark cannot run at all (no Java 17+, no PySpark), and say why; under
CI (``CI`` set) they fail instead, so a green CI run has really run them.
"""

from __future__ import annotations

import os

import pytest

from dp_platform.errors import ConfigError
from dp_platform.settings import SparkSettings
from dp_platform.warehouse.spark.session import FAST_START

# the platform's JVM options for a local master (its serial collector), which a catalogue's own
# value replaces rather than extends
LOCAL_JAVA_OPTIONS = FAST_START["spark.driver.extraJavaOptions"]

TEST_SETTINGS = SparkSettings(
    master="local[2]",
    conf={
        "spark.sql.shuffle.partitions": "2",
        "spark.default.parallelism": "2",
        # Test-sized data (tens of rows): compiling each query's generated Java code and
        # re-planning it adaptively cost more than they save. Paired on one session, the
        # cross-user-ids workload took 61-67 s without them against 111-129 s with them
        # (docs/testing.md); the platform's own sessions keep Spark's defaults.
        "spark.sql.codegen.wholeStage": "false",
        "spark.sql.codegen.factoryMode": "NO_CODEGEN",
        "spark.sql.adaptive.enabled": "false",
        # Delta keeps each opened table's log state in the driver; the tests open hundreds of
        # roots in one session (1 GB, the local default, ran out in the crash tests). With 2 GB
        # the old generation filled over a CI run: the serial collector took 26-35 % of each
        # group's JVM CPU, 61 % in the last 16 minutes of one (docs/testing.md)
        "spark.driver.memory": "4g",
    },
)

RUN_SETTINGS = TEST_SETTINGS.model_copy(
    update={
        "conf": {
            **TEST_SETTINGS.conf,
            # A launched run's JVM lives for one run: the JIT's quick tier only. Compiling hot
            # code again with the optimising tier took a third of such a JVM's CPU. The shared
            # session above keeps both tiers: they pay off over its quarter of an hour of
            # queries (docs/testing.md).
            "spark.driver.extraJavaOptions": f"{LOCAL_JAVA_OPTIONS} -XX:TieredStopAtLevel=1",
            "spark.driver.memory": "2g",  # one run's tables, not the session's hundreds of roots
        }
    }
)
"""The Spark settings of a test catalogue's ``warehouse:`` block (tests/platform_fixtures.py):
what the runs it launches start their JVMs with."""


def start_test_session():
    """The platform's private session with small-data settings, or skip/fail loudly."""
    from dp_platform.warehouse.spark.session import private_session

    try:
        return private_session(TEST_SETTINGS)
    except ConfigError as error:
        if os.environ.get("CI"):
            pytest.fail(f"Spark cannot run in CI: {error}")
        pytest.skip(f"SPARK TESTS NOT RUN: {error}")

"""`dp-platform run` on the Spark engine as a real process: SIGKILLed mid-run with its JVM,
then run again, every day charged once. On DuckDB the same kill takes two campaigns' runs at
once (tests/test_dagster_postgres.py, `--parallel`), and the fault harness's timed kill takes a
run holding the warehouse lock (tests/faults/).

A file of its own so that it runs on the test worker that holds the run's Spark session
(tests/worker_groups.py), which prepares the home; the runs start their own JVMs.
"""

from __future__ import annotations

import pytest

from tests.platform_fixtures import catalogue, copy_home, make_home
from tests.process_runs import kill_mid_way_and_restart

# Every Spark day is several Spark jobs in the run's own JVM: the shortest campaign that still
# has both of AdsBPC's bound phases (2 quantile days, then the sparse-vector tests).
DAYS, QUANTILE_DAYS = 4, 2


@pytest.fixture(scope="module")
def prepared_spark(spark, tmp_path_factory):
    root = tmp_path_factory.mktemp("prepared_spark") / "home"
    config = catalogue(days=DAYS, engine="spark", quantile_days=QUANTILE_DAYS)
    return make_home(root, seed=5, users=150, days=DAYS, config=config)


def test_spark_run_killed_mid_way_then_restarted_charges_nothing_twice(
    prepared_spark, tmp_path
) -> None:
    home = copy_home(prepared_spark, tmp_path / "home")
    kill_mid_way_and_restart(home, DAYS, QUANTILE_DAYS)

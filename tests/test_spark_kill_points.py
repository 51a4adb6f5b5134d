"""A SIGKILL at each Spark write point (``spark.*`` in dp_platform/faults.py; every Delta commit
of the engine is followed by one): real ``dp-platform`` processes killed there leave the old
snapshot or the new one, never a mix, and a re-run draws and charges nothing twice.

* Ingest: ``dp-platform ingest`` of a second pair of files killed after an event-table commit
  (``spark.ingest.appended``) leaves the loaded tables reading exactly as before the ingest
  (its rows are in no view: visibility.py), the key tables holding every key before and only
  keys the whole ingest gives; killed after its loads (``spark.ingest.loaded``), exactly as an
  uncrashed ingest left them. No open commits anything.
* Run: one campaign that reaches every run point (private last touch, AdsBPC+, 2 days) is run
  by ``dp-platform run`` processes each killed at the next point, on one home (each run
  recovers from the kill before it); after each kill the home reads as one snapshot, and
  nothing committed before is redrawn or recharged (tests/spark_kill_checks.py); a last clean
  run finishes the campaign, each day released and charged once, with the noise-free columns
  of every partition (which conversions, users, counts) equal to an uncrashed run's.

The noise of launched runs is not seeded, so the releases themselves are compared with the
run's own earlier ones (never changed), not with the reference's.

CI kills at three run points (:data:`CHAIN`) and two ingest points, one launched process each
(about a minute each on two cores). ``DP_PLATFORM_KILL_SWEEP=1`` also kills at every pass of
every point, each from a fresh copy of the prepared home and re-run to the end
(docs/faults.md): two processes per pass, so not CI.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from dp_platform.config_loader import parse_catalogue
from dp_platform.events import generate_campaign, write_events
from dp_platform.home import Home
from dp_platform.ledger import Ledger
from dp_platform.privacy.discrete import SeededIntegerNoise
from dp_platform.warehouse.spark.records import table_version
from dp_platform.warehouse.spark.visibility import EVENT_TABLES
from dp_platform.warehouse.store_core import days_between
from tests.platform_fixtures import START, catalogue, copy_home, make_home
from tests.spark_kill_checks import (
    STABLE,
    State,
    assert_kept,
    assert_keys_between,
    event_fingerprint,
    fired,
    key_rows,
    launch,
    open_tables,
    read_state,
)

DAYS = 2
CAMPAIGN = "plus"
# After each kill the next process recovers and goes one point further: ordered as a run
# passes them (day 1's attribution: forget, draw, write — its rows replaced in one commit —,
# record; its AdsBPC+ filter: spends, a remainder deleted when the day computes none, clip,
# day).
RUN_POINTS = (
    "spark.meta.written",
    "spark.partition.forgotten",
    "spark.partition.deleted",
    "spark.touch.drawn",
    "spark.partition.written",
    "spark.partition.recorded",
    "spark.plus.spends_written",
    "spark.plus.day_committed",
)
# CI kills at the points whose state a re-run must keep or repair: draws committed, rows written
# but not recorded, an AdsBPC+ day committed but not released (a run passes forgotten,
# deleted and recorded on its way; the sweep kills at every pass of every point).
CHAIN = ("spark.touch.drawn", "spark.partition.written", "spark.plus.day_committed")
SWEEP = os.environ.get("DP_PLATFORM_KILL_SWEEP") == "1"
INGEST_POINTS = (
    "spark.ingest.started",
    "spark.ingest.appended",
    "spark.ingest.loaded",
)


def _catalogue() -> dict:
    campaign = {
        "name": CAMPAIGN,
        "advertiser": "acme",
        "account": "acme-users",
        "start": START.isoformat(),
        "days": DAYS,
        "publishers": "all",
        "attribution": {"rule": "private_last_touch", "lookback_days": 30},
        "privacy": {"rho": 1.0},
        "mechanism": {"kind": "adsbpc_plus", "profile_days": 1},
    }
    return catalogue(campaigns=[campaign], days=DAYS, engine="spark")


@pytest.fixture(scope="module")
def prepared(spark, tmp_path_factory) -> Home:
    root = tmp_path_factory.mktemp("kill_prepared") / "home"
    return make_home(root, seed=5, users=150, days=DAYS, config=_catalogue())


@pytest.fixture(scope="module")
def reference(spark, prepared, tmp_path_factory) -> State:
    """The campaign's partitions written uncrashed, in this process (their noise-free columns
    and which conversions are drawn do not depend on the draws: any seed does)."""
    home = copy_home(prepared, tmp_path_factory.mktemp("kill_reference") / "home")
    campaign = parse_catalogue(_catalogue()).campaign(CAMPAIGN)
    warehouse = open_tables(spark, home)
    for day in days_between(campaign.start, campaign.end):
        warehouse.attribute_days(campaign, day, day, noise=SeededIntegerNoise(7))
        warehouse.contributions_days(campaign, day, day)
    return read_state(warehouse, home)


def _run(home: Home, fault: str | None, record: Path) -> int:
    return launch(home, ["run", "--config", str(home.root / "campaigns.yaml")], fault, record)


def _complete(home: Home) -> None:
    with Ledger.at_home(home.root) as ledger:
        assert [r.day for r in ledger.releases(CAMPAIGN)] == list(range(1, DAYS + 1))
        budget = ledger.campaign_budget(CAMPAIGN)
        assert budget.spent == budget.planned  # no day charged twice, none missing


def _same_as_reference(final: State, reference: State) -> None:
    assert final.stable == reference.stable  # every partition, its noise-free columns
    assert {c[:2] for c in final.choices} == {c[:2] for c in reference.choices}  # drawn once
    assert len(final.choices) == len(reference.choices)
    assert len(final.spend_days) == DAYS  # every AdsBPC+ day committed, once


def _kill_chain(spark, home: Home, points: list[str], tmp_path: Path) -> State:
    """Kill a run at each point in turn on ``home``, checking each state; return the last."""
    before = read_state(open_tables(spark, home), home)
    for n, point in enumerate(points):
        record = tmp_path / f"fired{n}"
        code = _run(home, point, record)
        assert fired(record, point) and code != 0, f"{point} did not kill the run"
        after = read_state(open_tables(spark, home), home)
        assert_kept(before, after)
        before = after
    return before


def test_a_run_killed_at_each_spark_write_point_keeps_one_snapshot_and_draws_once(
    spark, prepared, reference, tmp_path
) -> None:
    home = copy_home(prepared, tmp_path / "home")
    killed = _kill_chain(spark, home, list(CHAIN), tmp_path)
    assert killed.choices and killed.spend_days  # the kills got as far as AdsBPC+'s first day
    _run(home, None, tmp_path / "clean")
    final = read_state(open_tables(spark, home), home)
    assert_kept(killed, final)
    _complete(home)
    _same_as_reference(final, reference)


@pytest.fixture(scope="module")
def second_files(tmp_path_factory) -> tuple[Path, Path]:
    events = generate_campaign(
        seed=11, users=40, publishers=4, impressions=600, conversions=80, days=DAYS, start=START
    )
    files = write_events(events, tmp_path_factory.mktemp("kill_second"))
    return files.impressions, files.conversions


def _ingest(home: Home, files: tuple[Path, Path], fault: str | None, record: Path) -> int:
    argv = ["ingest", "--config", str(home.root / "campaigns.yaml")]
    argv += ["--impressions", str(files[0]), "--conversions", str(files[1])]
    return launch(home, argv, fault, record)


def test_an_ingest_killed_at_each_spark_write_point_reads_old_or_new(
    spark, prepared, second_files, tmp_path
) -> None:
    """Killed after an event table's commit: the old tables (nothing of it is read, and no
    open commits anything); killed after its loads: the new ones, and ingesting again loads
    nothing twice."""
    before = event_fingerprint(open_tables(spark, prepared))
    keys_before = key_rows(open_tables(spark, prepared))
    done = copy_home(prepared, tmp_path / "done")
    open_tables(spark, done).ingest(*second_files)
    after = event_fingerprint(open_tables(spark, done))
    keys_after = key_rows(open_tables(spark, done))
    assert after != before

    home = copy_home(prepared, tmp_path / "home")
    for n, (point, expected) in enumerate(
        [("spark.ingest.appended@5", before), ("spark.ingest.loaded", after)]
    ):
        record = tmp_path / f"fired{n}"
        code = _ingest(home, second_files, point, record)
        assert fired(record, point) and code == -signal.SIGKILL, f"{point}: no kill"
        assert event_fingerprint(open_tables(spark, home)) == expected, point
        assert_keys_between(keys_before, key_rows(open_tables(spark, home)), keys_after)
        versions = {table: table_version(spark, table) for table in EVENT_TABLES}
        open_tables(spark, home)  # an open commits nothing
        assert {table: table_version(spark, table) for table in EVENT_TABLES} == versions
    again = open_tables(spark, home).ingest(*second_files)
    assert again.impressions.already_loaded and again.conversions.already_loaded
    assert event_fingerprint(open_tables(spark, home)) == after  # nothing loaded twice
    assert key_rows(open_tables(spark, home)) == keys_after


def test_the_chain_names_spark_points_only() -> None:
    from dp_platform.faults import SPARK_FAULT_POINTS

    assert set(RUN_POINTS) | set(INGEST_POINTS) <= set(SPARK_FAULT_POINTS)
    assert set(CHAIN) <= set(RUN_POINTS)
    assert set(STABLE) == {"attributed_conversions", "user_day_contributions"}


sweep = pytest.mark.skipif(not SWEEP, reason="the full sweep: DP_PLATFORM_KILL_SWEEP=1")


@sweep
@pytest.mark.parametrize("point", RUN_POINTS)
def test_sweep_a_run_killed_at_every_pass_of_a_point(
    spark, prepared, reference, tmp_path, point
) -> None:
    """Each pass n of ``point`` in turn: a fresh copy killed there, checked, then run to the
    end and checked against the reference; until a run passes the point no more."""
    start = read_state(open_tables(spark, prepared), prepared)
    n = 1
    while True:
        home = copy_home(prepared, tmp_path / f"home{n}")
        record = tmp_path / f"fired{n}"
        code = _run(home, f"{point}@{n}", record)
        if not fired(record, f"{point}@{n}"):
            assert code == 0 and n > 1, f"{point}: never passed"
            break
        killed = read_state(open_tables(spark, home), home)
        assert_kept(start, killed)
        _run(home, None, tmp_path / f"clean{n}")
        final = read_state(open_tables(spark, home), home)
        assert_kept(killed, final)
        _complete(home)
        _same_as_reference(final, reference)
        n += 1


@sweep
def test_sweep_an_ingest_killed_at_every_pass_of_its_points(
    spark, prepared, second_files, tmp_path
) -> None:
    """Every event-table commit of the ingest (``spark.ingest.appended@n``), each on a home
    where an ingest was killed at the pass before: the old tables; the ingest then loads once,
    with the keys an uncrashed one gives."""
    before = event_fingerprint(open_tables(spark, prepared))
    keys_before = key_rows(open_tables(spark, prepared))
    done = copy_home(prepared, tmp_path / "done")
    open_tables(spark, done).ingest(*second_files)
    after = event_fingerprint(open_tables(spark, done))
    keys_after = key_rows(open_tables(spark, done))
    home = copy_home(prepared, tmp_path / "home")
    n = 1
    while True:
        point = f"spark.ingest.appended@{n}"
        _ingest(home, second_files, point, tmp_path / f"fired{n}")
        if not fired(tmp_path / f"fired{n}", point):
            assert n > 1 and event_fingerprint(open_tables(spark, home)) == after
            assert key_rows(open_tables(spark, home)) == keys_after
            break
        assert event_fingerprint(open_tables(spark, home)) == before, point
        assert_keys_between(keys_before, key_rows(open_tables(spark, home)), keys_after)
        n += 1


@sweep
def test_sweep_an_ingest_killed_after_its_start_reads_old(
    spark, prepared, second_files, tmp_path
) -> None:
    """Killed after its first commit (``spark.ingest.started``: its load ids reserved, no event
    table moved): the old tables; the files then load once, under later ids."""
    before = event_fingerprint(open_tables(spark, prepared))
    home = copy_home(prepared, tmp_path / "home")
    point = "spark.ingest.started"
    code = _ingest(home, second_files, point, tmp_path / "fired")
    assert fired(tmp_path / "fired", point) and code == -signal.SIGKILL
    warehouse = open_tables(spark, home)
    assert event_fingerprint(warehouse) == before
    reserved = warehouse.sql.query("SELECT max(load_id) FROM load_ids")[0][0]
    warehouse.ingest(*second_files)
    loaded = open_tables(spark, home).sql.query("SELECT max(load_id) FROM loads")[0][0]
    assert reserved is not None and loaded > reserved
    assert event_fingerprint(open_tables(spark, home)) != before

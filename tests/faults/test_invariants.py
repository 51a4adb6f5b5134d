"""Each invariant of the fault harness fails on a home corrupted the way a bug would: a release
changed after publication, a day charged twice, a user's spend off by a little, a conversion
row lost, an attributed row duplicated, a campaign re-registered with an edited plan, a Dagster
run that never ended."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import duckdb
import pytest

from dp_platform.home import Home
from tests.faults import invariants
from tests.faults.harness import forkserver, prepare

pytestmark = pytest.mark.system  # one clean `dp-platform run` through Dagster


@pytest.fixture(scope="module")
def clean(tmp_path_factory) -> tuple[Path, invariants.Golden]:
    workdir = tmp_path_factory.mktemp("faults")
    _, golden = prepare(workdir, forkserver(), None)
    return workdir / "golden", golden


def _copy(clean_home: Path, tmp_path: Path) -> Home:
    shutil.copytree(clean_home, tmp_path / "home")
    return Home.at(tmp_path / "home")


def _all_checks(home: Home, golden: invariants.Golden, observed: list) -> list[str]:
    final = invariants.snapshot(home, None)
    return [
        *invariants.check_history(observed, final, golden),
        *invariants.check_budget(home, None, golden),
        *invariants.check_plus_spends(home, None),
        *invariants.check_dagster_draws(home),
        *invariants.check_warehouse(home, golden, late_loaded=False),
    ]


def test_a_clean_home_passes_every_check(clean, tmp_path) -> None:
    home = _copy(clean[0], tmp_path)
    assert invariants.complete(home, None)
    assert _all_checks(home, clean[1], [invariants.snapshot(home, None)]) == []


def test_a_release_changed_after_publication_is_caught(clean, tmp_path) -> None:
    home = _copy(clean[0], tmp_path)
    published = invariants.snapshot(home, None)
    with sqlite3.connect(home.ledger) as db:
        (text,) = db.execute("SELECT release_json FROM releases WHERE day = 2").fetchone()
        record = json.loads(text)
        record["values"] = [v + 1.0 for v in record["values"]]
        db.execute("UPDATE releases SET release_json = ? WHERE day = 2", (json.dumps(record),))
    problems = invariants.check_history([published], invariants.snapshot(home, None), clean[1])
    assert any("changed or vanished after publication" in p for p in problems)


def test_a_day_charged_twice_is_caught(clean, tmp_path) -> None:
    home = _copy(clean[0], tmp_path)
    with sqlite3.connect(home.ledger) as db:
        db.execute(
            "INSERT INTO charges SELECT campaign, day, part || '_again', rho, created_at "
            "FROM charges WHERE campaign = 'spring' AND day = 3 AND part = 'gaussian'"
        )
    assert any("charged" in p for p in invariants.check_budget(home, None, clean[1]))


def test_an_edited_plan_registered_is_caught(clean, tmp_path) -> None:
    home = _copy(clean[0], tmp_path)
    with sqlite3.connect(home.ledger) as db:
        db.execute("UPDATE campaigns SET planned = '1/1' WHERE name = 'plus'")
    assert any("reserved" in p for p in invariants.check_budget(home, None, clean[1]))


@pytest.mark.parametrize("column", ["spend", "cost"])
def test_a_user_spend_off_by_a_little_is_caught(clean, tmp_path, column) -> None:
    home = _copy(clean[0], tmp_path)
    with duckdb.connect(str(home.warehouse)) as db:
        db.execute(
            f"UPDATE plus_user_spend SET {column} = {column} * (1 + 1e-6) WHERE user_key = "
            "(SELECT min(user_key) FROM plus_user_spend WHERE campaign = 'plus')"
        )
    assert invariants.check_plus_spends(home, None)


def test_a_spend_of_an_unreleased_day_is_caught(clean, tmp_path) -> None:
    home = _copy(clean[0], tmp_path)
    with sqlite3.connect(home.ledger) as db:
        db.execute("DELETE FROM releases WHERE campaign = 'plus' AND day = 4")
    assert any("spends applied on days" in p for p in invariants.check_plus_spends(home, None))


def test_a_lost_conversion_row_is_caught(clean, tmp_path) -> None:
    home = _copy(clean[0], tmp_path)
    with duckdb.connect(str(home.warehouse)) as db:
        db.execute(
            "DELETE FROM conversions WHERE conversion_key = (SELECT min(conversion_key) "
            "FROM conversions)"
        )
    problems = invariants.check_warehouse(home, clean[1], late_loaded=False)
    assert any("conversions:" in p for p in problems)


def test_a_duplicated_derived_row_is_caught(clean, tmp_path) -> None:
    home = _copy(clean[0], tmp_path)
    with duckdb.connect(str(home.warehouse)) as db:
        db.execute(
            "INSERT INTO attributed_conversions SELECT * FROM attributed_conversions "
            "WHERE campaign = 'spring' LIMIT 1"
        )
    problems = invariants.check_warehouse(home, clean[1], late_loaded=False)
    assert any("derived partitions differ" in p for p in problems)


def test_a_draw_shown_twice_in_dagster_is_caught(clean, tmp_path) -> None:
    import dagster as dg

    home = _copy(clean[0], tmp_path)
    assert invariants.check_dagster_draws(home) == []
    instance = dg.DagsterInstance.from_config(str(home.dagster))
    instance.report_runless_asset_event(
        dg.AssetMaterialization(
            asset_key=dg.AssetKey(["plus", "noisy_daily_release"]),
            partition="2026-03-02",
            metadata={"drawn_now": True},
        )
    )
    instance.dispose()
    problems = invariants.check_dagster_draws(home)
    assert problems == ["plus/noisy_daily_release: drawn_now shown twice for ['2026-03-02']"]


def test_a_run_that_never_ended_is_caught_unless_a_process_died_with_it(clean, tmp_path) -> None:
    """A run stays STARTED only when the process waiting on it was SIGKILLed with its worker."""
    import dagster as dg

    home = _copy(clean[0], tmp_path)
    assert invariants.unfinished_runs(home) == []
    instance = dg.DagsterInstance.from_config(str(home.dagster))
    instance.add_run(
        dg.DagsterRun(
            job_name="spring_daily", run_id="left-started", status=dg.DagsterRunStatus.STARTED
        )
    )
    instance.dispose()
    unfinished = invariants.unfinished_runs(home)
    assert unfinished == ["left-started (STARTED)"]
    assert invariants.check_unfinished_runs(unfinished, killed=1) == []
    problems = invariants.check_unfinished_runs(unfinished, killed=0)
    assert problems == ["1 Dagster runs never ended, 0 processes SIGKILLed: left-started (STARTED)"]


def test_a_home_where_nothing_was_registered_is_not_complete(tmp_path) -> None:
    """Every process of seed 63 died or was refused before registering anything: the harness
    must retry, not crash on the empty ledger (it did, on PostgreSQL)."""
    home = Home.at(tmp_path / "empty")
    assert not home.ledger.exists()
    assert invariants.complete(home, None) is False

"""The harness's dead-slot detector on Dagster's pool tables, written as Dagster writes them: a
waiting process is reported only when no live run can ever get the writer slot."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from tests.faults.stuck import PID_TAG, waiting_on_dead_slots

DEAD, LIVE, WAITER, OTHER = 101, 202, 303, 404


def _home(
    tmp_path: Path, slots: list[str | None], pending: list[tuple[str, bool]], pids: dict[str, int]
) -> Path:
    runs = tmp_path / "history" / "runs"
    runs.mkdir(parents=True)
    with sqlite3.connect(runs / "index.db") as db:
        db.execute("CREATE TABLE concurrency_slots (run_id TEXT, deleted BOOLEAN)")
        db.execute("CREATE TABLE pending_steps (run_id TEXT, assigned_timestamp TEXT)")
        db.executemany("INSERT INTO concurrency_slots VALUES (?, 0)", [(r,) for r in slots])
        db.executemany(
            "INSERT INTO pending_steps VALUES (?, ?)",
            [(run, "2026-11-25 19:06:49" if assigned else None) for run, assigned in pending],
        )
    with sqlite3.connect(tmp_path / "history" / "runs.db") as db:
        db.execute("CREATE TABLE run_tags (run_id TEXT, key TEXT, value TEXT)")
        db.executemany(
            "INSERT INTO run_tags VALUES (?, ?, ?)",
            [(run, PID_TAG, str(pid)) for run, pid in pids.items()],
        )
    return tmp_path


PIDS = {"dead": DEAD, "live": LIVE, "waiter": WAITER, "other": OTHER}


def test_a_slot_claimed_by_a_dead_run_strands_every_live_waiter(tmp_path) -> None:
    home = _home(tmp_path, ["dead"], [("dead", True), ("waiter", False)], PIDS)
    assert waiting_on_dead_slots(home, {DEAD}) == {WAITER}


def test_a_live_run_assigned_a_slot_a_dead_run_claimed_waits_too(tmp_path) -> None:
    """Seed 490 (SQLite): Dagster had assigned the one slot twice; the dead run claimed it, and
    the live assigned run and an unassigned one waited on it for 12 minutes, unreported."""
    pending = [("dead", True), ("live", True), ("waiter", False)]
    home = _home(tmp_path, ["dead"], pending, PIDS)
    assert waiting_on_dead_slots(home, {DEAD}) == {LIVE, WAITER}


def test_a_dead_run_killed_between_assignment_and_claim_blocks_the_queue(tmp_path) -> None:
    home = _home(tmp_path, [None], [("dead", True), ("waiter", False)], PIDS)
    assert waiting_on_dead_slots(home, {DEAD}) == {WAITER}


def test_no_waiter_is_stuck_while_a_live_run_can_move(tmp_path) -> None:
    cases = {
        "a live claim frees its slot when it ends": (["live"], [("live", True), ("waiter", False)]),
        "a live run assigned to a free slot claims it": (
            [None],
            [("live", True), ("waiter", False)],
        ),
        "a free slot with nothing assigned gets assigned": ([None], [("waiter", False)]),
        "a second slot is free": (["dead", None], [("dead", True), ("waiter", False)]),
    }
    for n, (slots, pending) in enumerate(cases.values()):
        home = _home(tmp_path / str(n), slots, pending, PIDS)
        assert waiting_on_dead_slots(home, {DEAD}) == set(), list(cases)[n]


def test_nothing_is_reported_without_dagster_storage_or_pending_steps(tmp_path) -> None:
    assert waiting_on_dead_slots(tmp_path / "none", {DEAD}) == set()
    home = _home(tmp_path, ["dead"], [], PIDS)
    assert waiting_on_dead_slots(home, {DEAD}) == set()

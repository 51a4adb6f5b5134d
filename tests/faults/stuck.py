"""Detect runs waiting forever for the writer pool slot of a process that was SIGKILLed.

Dagster frees a run's pool slots when the run ends; a SIGKILLed run never ends, so its slot
stays claimed and a *live* run waiting for it waits forever (``dp-platform run`` frees dead
runs' slots only when it starts: assets/runner.py ``recover_dead_runs``). The harness reads the
home's Dagster storage (read-only) to tell this apart from ordinary waiting, reports it, and
kills the waiting processes as an operator would, so the schedule can go on.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

PID_TAG = "dp_platform/pid"


def _rows(path: Path, query: str) -> list[tuple]:
    if not path.is_file():
        return []
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=1) as db:
            return db.execute(query).fetchall()
    except sqlite3.Error:  # being created or written: look again at the next poll
        return []


def waiting_on_dead_slots(dagster_home: Path, dead: set[int]) -> set[int]:
    """PIDs of processes with a step waiting for a pool slot that a dead process holds."""
    storage = dagster_home / "history"
    # A slot is held by a claimed slot, or by a pending step already assigned one (a process
    # killed between Dagster's assignment and its claim blocks the queue just the same).
    held = _rows(
        storage / "runs" / "index.db",
        "SELECT run_id FROM concurrency_slots WHERE run_id IS NOT NULL AND NOT deleted "
        "UNION SELECT run_id FROM pending_steps WHERE assigned_timestamp IS NOT NULL",
    )
    pending = _rows(
        storage / "runs" / "index.db",
        "SELECT run_id FROM pending_steps WHERE assigned_timestamp IS NULL",
    )
    if not held or not pending:
        return set()
    pids = dict(
        _rows(storage / "runs.db", f"SELECT run_id, value FROM run_tags WHERE key = '{PID_TAG}'")
    )
    holders = {int(pids[run]) for (run,) in held if run in pids}
    if not holders or not holders <= dead:
        return set()
    return {int(pids[run]) for (run,) in pending if run in pids} - dead

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
    """PIDs of live processes with a step that can never get the writer pool's slot.

    Dagster counts a slot as taken by a claim (``concurrency_slots.run_id``) and, before that,
    by an assignment (``pending_steps.assigned_timestamp``); only a run's end frees either.
    With every claim held by a dead process, no live run can claim: either no slot row is free,
    or one is free but no live run is assigned to it and the assignments already fill the pool
    (a process killed between Dagster's assignment and its claim). A live run that was assigned
    a slot another run claimed (Dagster over-assigns under racing processes, seen at seed 490)
    waits too: it counts as a waiter, never as a holder. Then every live run with a pending
    step waits forever."""
    index = dagster_home / "history" / "runs" / "index.db"
    slots = [
        run for (run,) in _rows(index, "SELECT run_id FROM concurrency_slots WHERE NOT deleted")
    ]
    pending = _rows(index, "SELECT run_id, assigned_timestamp IS NOT NULL FROM pending_steps")
    if not slots or not pending:
        return set()
    pids = {
        run: int(pid)
        for run, pid in _rows(
            dagster_home / "history" / "runs.db",
            f"SELECT run_id, value FROM run_tags WHERE key = '{PID_TAG}'",
        )
    }
    claimed = {run for run in slots if run is not None}
    if any(pids.get(run) not in dead for run in claimed):
        return set()  # a live claim ends and frees its slot (an untagged run counts as live)
    assigned = [run for run, is_assigned in pending if is_assigned and run not in claimed]
    live_assigned = [run for run in assigned if pids.get(run) not in dead]
    free = len(slots) - len(claimed)
    if free > 0 and (live_assigned or len(assigned) + len(claimed) < len(slots)):
        return set()  # a live run can claim the free slot, or Dagster can assign it
    waiting = {pids[run] for run, _ in pending if run not in claimed and run in pids}
    return waiting - dead

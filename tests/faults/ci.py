"""What the CI tests of the harness require (test_faults*.py): the constructed schedules, one
per fail point (the kill placed by construction) and one timed kill mid-run, per ledger backend.
The random schedules are `make faults` / ``python -m tests.faults`` (docs/faults.md)."""

from __future__ import annotations

from pathlib import Path

from dp_platform.faults import FAULT_POINTS
from tests.faults.harness import replay_command, run_many
from tests.faults.schedule import CONSTRUCTED

# Seeds −CONSTRUCTED … −1: every constructed schedule. On the launched-run path a schedule takes
# about 1–2 minutes on 2 cores (random ones: docs/faults.md#measured), so the 50 random schedules
# per backend CI ran before (about 1.5 hours each now) moved to `make faults`.
SCHEDULES = CONSTRUCTED
FIRST_SEED = -CONSTRUCTED


def assert_schedules_keep_every_invariant(ledger_url: str | None, workdir: Path) -> dict:
    """Run the constructed schedules: zero violations, and a kill at every fail point and by
    the timer (each placed by construction: missing one means the harness or a point broke)."""
    lines: list[str] = []
    summary = run_many(SCHEDULES, FIRST_SEED, workdir, ledger_url, echo=lines.append)
    report = summary.to_json()
    assert summary.schedules == SCHEDULES
    option = "--postgres" if ledger_url else None  # the CI's server is gone after the test
    replays = [replay_command(seed, ledger_url, option) for seed in summary.failed]
    assert summary.violations == 0, "\n".join([*lines, *replays])
    missing = {*FAULT_POINTS, "timer"} - set(summary.kills)
    assert not missing, f"no kill at {sorted(missing)}: {report}"
    # the timed kill took a run worker down while it held the warehouse's lock
    assert report["timer_kills_holding_warehouse_lock"] >= 1, report
    return report

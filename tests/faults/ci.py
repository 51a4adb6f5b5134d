"""What the CI tests of the harness require of a run of seeded schedules (test_faults*.py)."""

from __future__ import annotations

import os
from pathlib import Path

from dp_platform.faults import FAULT_POINTS
from tests.faults.harness import replay_command, run_many

# 50 schedules per backend (docs/faults.md#measured): on the launched-run path a schedule takes
# about 2 minutes on 2 cores with both backends side by side, so about 1.5 hours per backend.
# DP_FAULTS_SCHEDULES=N changes the count (e.g. 5 for a quick local look).
CI_SCHEDULES = 50
SCHEDULES = int(os.environ.get("DP_FAULTS_SCHEDULES", str(CI_SCHEDULES)))
FIRST_SEED = 1


def assert_schedules_keep_every_invariant(ledger_url: str | None, workdir: Path) -> dict:
    """Run :data:`SCHEDULES` schedules: zero violations, and real kills of every kind."""
    lines: list[str] = []
    summary = run_many(SCHEDULES, FIRST_SEED, workdir, ledger_url, echo=lines.append)
    report = summary.to_json()
    assert summary.schedules == SCHEDULES
    option = "--postgres" if ledger_url else None  # the CI's server is gone after the test
    replays = [replay_command(seed, ledger_url, option) for seed in summary.failed]
    assert summary.violations == 0, "\n".join([*lines, *replays])
    # the run must really have injected faults, or it proved nothing
    assert sum(summary.kills.values()) >= SCHEDULES // 2, report
    if SCHEDULES >= CI_SCHEDULES:
        # which kill lands where depends on timing, but over 50 schedules every fail point
        # and the outside timer have each killed a process (docs/faults.md#measured)
        missing = {*FAULT_POINTS, "timer"} - set(summary.kills)
        assert not missing, f"no kill at {sorted(missing)}: {report}"
    return report

"""`dp-platform run` as a real process on a prepared home (tests/platform_fixtures.py), for the
tests that race, kill and restart runs: starting one, reading the ledger's progress from
outside, and the check that a campaign ended complete with every day charged once."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from dp_platform.home import Home
from dp_platform.ledger import Ledger

CLI = [sys.executable, "-m", "dp_platform.cli"]

# The shortest campaign with 7 quantile days: what these tests show (concurrent runs, kills,
# restarts, what reaches Dagster) does not depend on the length, and every day is a few
# Dagster steps (and on Spark a few Spark jobs).
DAYS = 8
QUANTILE_DAYS = 7  # AdsBPC's default l


def start_run(home: Home) -> subprocess.Popen:
    return subprocess.Popen(
        [*CLI, "run", "--home", str(home.root), "--config", str(home.root / "campaigns.yaml")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
        start_new_session=True,  # its own process group: a kill takes the JVM along
    )


def process_state(pid: int) -> str | None:
    """The process's state letter (``Z`` for a zombie), None once it is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return None


def ledger_counts(root: Path) -> tuple[int, int]:
    """(bound choices, releases) stored so far in the home's SQLite ledger, read without
    taking the ledger's lock."""
    path = root / "ledger.sqlite"
    if not path.exists():
        return 0, 0
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=1) as db:
            bounds = db.execute("SELECT count(*) FROM bound_choices").fetchone()[0]
            released = db.execute("SELECT count(*) FROM releases").fetchone()[0]
    except sqlite3.OperationalError:  # not created yet
        return 0, 0
    return bounds, released


def assert_complete_and_charged_once(
    home: Home, days: int = DAYS, quantile_days: int = QUANTILE_DAYS, campaign: str = "spring"
) -> None:
    """``campaign`` (``days`` long, AdsBPC with ``quantile_days`` quantile days) has every day
    released, spent exactly its plan and holds one charge per draw."""
    with Ledger.at_home(home.root) as ledger:
        budget = ledger.campaign_budget(campaign)
        assert [r.day for r in ledger.releases(campaign)] == list(range(1, days + 1))
        assert budget.spent == budget.planned  # exactly the plan: no day charged twice
        parts = sum(len(p) for p in budget.per_day.values())
        assert parts == days + quantile_days + 1  # a gaussian a day, the quantiles, one svt


def kill_mid_way_and_restart(
    home: Home, days: int = DAYS, quantile_days: int = QUANTILE_DAYS
) -> None:
    """SIGKILL a run's process group between its first bound and its last release, run again:
    every day released, each charged once."""
    run = start_run(home)
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        bounds, released = ledger_counts(home.root)
        if bounds > 0 and released < days:
            break
        assert run.poll() is None, "the run ended before it could be killed mid-way"
        time.sleep(0.02)
    os.killpg(run.pid, signal.SIGKILL)  # the run and its JVM, if it started one
    run.wait(60)
    assert run.returncode == -signal.SIGKILL
    bounds, released = ledger_counts(home.root)
    assert released < days  # it really died part-way
    again = start_run(home)
    _, err = again.communicate(timeout=900)
    assert again.returncode == 0, err[-2000:]
    assert_complete_and_charged_once(home, days, quantile_days)

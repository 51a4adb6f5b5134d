"""A run waiting for the writer pool slot of a process that is then SIGKILLed carries on.

Dagster frees a run's pool slots when the run ends, and a killed run never ends; ``dp-platform
run`` frees dead runs' slots when it starts, but a run that started *before* the holder died
would wait forever (the fault harness found it: docs/faults.md). While a run executes, a watcher
frees the slots of runs whose process has died (assets/runner.py ``_recovering_dead_runs``).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from dp_platform.ledger import Ledger
from tests.platform_fixtures import catalogue, make_home

pytestmark = pytest.mark.system

CLI = [sys.executable, "-m", "dp_platform.cli"]
DAYS = 8
CAMPAIGNS = ("spring", "summer")


def two_campaigns() -> dict:
    base = catalogue(days=DAYS)["campaigns"][0]
    campaigns = [{**base, "name": name, "privacy": {"rho": 0.5}} for name in CAMPAIGNS]
    return catalogue(2.0, campaigns, days=DAYS)


def start_run(home: Path, campaign: str, fault: str | None = None) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if k not in {"DAGSTER_HOME", "DP_PLATFORM_FAULT"}}
    if fault is not None:
        env["DP_PLATFORM_FAULT"] = fault
    config = str(home / "campaigns.yaml")
    return subprocess.Popen(
        [*CLI, "run", "--home", str(home), "--config", config, "--campaign", campaign],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**env, "PYTHONWARNINGS": "ignore"},
        start_new_session=True,
    )


def test_a_run_waiting_on_a_killed_runs_pool_slot_finishes(tmp_path: Path) -> None:
    home = make_home(tmp_path / "home", seed=4, users=400, days=DAYS, config=two_campaigns())
    # Both start together (so the second's start-up recovery finds nobody dead); the first is
    # killed inside its second release step, holding the writer slot, while the second still
    # has days to materialise and so must wait for that slot.
    killed = start_run(home.root, "spring", fault="release.drawn@2")
    waiting = start_run(home.root, "summer")
    killed.communicate(timeout=900)
    assert killed.returncode == -9  # SIGKILLed at the fail point, holding the slot
    try:
        _, err = waiting.communicate(timeout=600)
    except subprocess.TimeoutExpired:
        waiting.kill()
        pytest.fail("the run waited forever for the slot of a killed run")
    assert waiting.returncode == 0, err[-2000:]
    with Ledger.at_home(home.root) as ledger:
        assert [m.day for m in ledger.releases("summer")] == list(range(1, DAYS + 1))
        assert [m.day for m in ledger.releases("spring")] == [1]
        budget = ledger.campaign_budget("summer")
        assert budget.spent == budget.planned
    # the killed campaign resumes from its first unreleased day
    resumed = start_run(home.root, "spring")
    _, err = resumed.communicate(timeout=600)
    assert resumed.returncode == 0, err[-2000:]
    with Ledger.at_home(home.root) as ledger:
        assert [m.day for m in ledger.releases("spring")] == list(range(1, DAYS + 1))

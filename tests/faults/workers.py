"""What one harness process does, as the operator would do it: the same entry points the
``dp-platform`` CLI and Dagster's ``asset materialize`` / backfills call.

Each process runs :func:`child_main` in a child of a pre-imported forkserver (Dagster and the
platform already imported: start-up ≈ 0.1 s instead of ≈ 2 s), or as a real CLI subprocess
(:func:`cli_command`). The fail point, if any, is set in the child's environment only.
"""

from __future__ import annotations

import os
import sys
import time
import traceback
from dataclasses import dataclass
from datetime import date
from pathlib import Path

from dp_platform.faults import FAULT_RECORD_VARIABLE, FAULT_VARIABLE

# A late ingest's "now": after every event's time, fixed so a replay ingests the same rows.
INGEST_NOW = "2026-06-01T00:00:00Z"
REFUSED = 2  # the CLI's exit code for an error the user can fix (here: the edited catalogue)
EDIT_SKIPPED = 3  # nothing was registered to edit: the edit did not run
# Written in the home by the harness once every process of a schedule but its edits has ended:
# nothing can register the campaigns after that, so an edit waiting for them stops waiting.
OTHERS_ENDED = ".faults_others_ended"


@dataclass(frozen=True)
class Job:
    """One process of a schedule (drawn by tests/faults/schedule.py)."""

    kind: str  # run | run_cli | materialize | backfill | edit | ingest
    campaign: str | None = None
    asset: str | None = None
    first: date | None = None
    last: date | None = None  # run: --through; backfill: the range's last day
    start_delay: float = 0.0
    fault: str | None = None  # DP_PLATFORM_FAULT for this process
    kill_after: float | None = None  # SIGKILL from outside after this many seconds
    kill_holding_lock: bool = False  # …at the first moment after that its group holds the lock

    def describe(self) -> str:
        parts = [self.kind]
        if self.campaign:
            parts.append(self.campaign)
        if self.asset:
            parts.append(self.asset)
        if self.first or self.last:
            parts.append(f"{self.first or ''}..{self.last or ''}")
        if self.fault:
            parts.append(f"fault={self.fault}")
        if self.kill_after is not None:
            parts.append(f"kill@{self.kill_after:.2f}s")
        return " ".join(parts)


def cli_arguments(job: Job, home: Path, extra: tuple[Path, Path]) -> list[str]:
    """The ``dp-platform`` arguments of a CLI job (run, run_cli, edit, ingest)."""
    if job.kind == "ingest":
        impressions, conversions = extra
        return [
            "ingest",
            "--home",
            str(home),
            "--impressions",
            str(impressions),
            "--conversions",
            str(conversions),
            "--now",
            INGEST_NOW,
        ]
    config = home / ("campaigns_edited.yaml" if job.kind == "edit" else "campaigns.yaml")
    arguments = ["run", "--home", str(home), "--config", str(config)]
    if job.last is not None:
        arguments += ["--through", job.last.isoformat()]
    return arguments


def cli_command(job: Job, home: Path, extra: tuple[Path, Path]) -> list[str]:
    """A real ``python -m dp_platform.cli`` process (cold start: imports everything)."""
    return [sys.executable, "-m", "dp_platform.cli", *cli_arguments(job, home, extra)]


def _wait_until_registered(home: Path, campaigns: tuple[str, ...], timeout: float) -> bool:
    """An edit is an edit of a *registered* campaign: wait until the ledger has them (False:
    they never were, e.g. every other process was killed before registering — known for sure
    once the harness marks the others ended, :data:`OTHERS_ENDED`, else after ``timeout``)."""
    from dp_platform.ledger import Ledger, LedgerError

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        others_ended = (home / OTHERS_ENDED).exists()  # before the look: no registration after
        try:
            with Ledger.at_home(home, read_only=True) as ledger:
                if set(campaigns) <= set(ledger.campaigns()):
                    return True
        except LedgerError:  # not created yet, or its tables not yet (a first run is creating it)
            pass
        if others_ended:
            return False
        time.sleep(0.05)
    return False


def _dagster_job(job: Job, home: Path) -> int:
    """A single-asset materialisation of one partition, or a backfill of a day range, as
    Dagster's own surfaces do them: ``materialize`` the way ``dagster asset materialize`` does
    (``execute_in_process``, in this process); ``backfill`` the way the UI does (a run with the
    range tags launched through the instance against the code location, executed in a worker
    process of the code server: :class:`assets.launch.CodeServer`)."""
    import dagster as dg

    from assets.definitions import build_definitions
    from assets.launch import CodeServer
    from assets.partitions import daily_job_name
    from assets.runner import instance_for
    from dp_platform.home import Home

    assert job.campaign is not None and job.first is not None
    config = home / "campaigns.yaml"
    instance = instance_for(Home.at(home))
    job_name = daily_job_name(job.campaign)
    if job.kind == "materialize":
        assert job.asset is not None
        target = build_definitions(config, home).resolve_job_def(job_name)
        result = target.execute_in_process(
            instance=instance,
            partition_key=job.first.isoformat(),
            asset_selection=[dg.AssetKey([job.campaign, job.asset])],
            raise_on_error=False,
        )
        return 0 if result.success else 1
    assert job.last is not None
    if job.last > job.first:
        tags = {
            "dagster/asset_partition_range_start": job.first.isoformat(),
            "dagster/asset_partition_range_end": job.last.isoformat(),
        }
    else:
        tags = {"dagster/partition": job.first.isoformat()}
    with CodeServer(instance, Home.at(home), config) as server:
        server.launch(job_name, tags, {})  # raises the run's error if it failed
    return 0


def run_job(job: Job, home: Path, extra: tuple[Path, Path]) -> int:
    """Do ``job`` in this process; its exit code."""
    from dp_platform.cli import main

    if job.kind == "edit" and not _wait_until_registered(home, ("spring", "plus"), 120):
        return EDIT_SKIPPED
    if job.kind in {"run", "run_cli", "edit", "ingest"}:
        return main(cli_arguments(job, home, extra))
    if job.kind in {"materialize", "backfill"}:
        return _dagster_job(job, home)
    raise ValueError(f"unknown job kind {job.kind!r}")


def fault_record(log: Path) -> str:
    """Where a process's fail point (or its run worker's) writes that it fired (next to its log)."""
    return str(log.with_suffix(".fault"))


def child_main(job: Job, home: str, extra: tuple[str, str], log: str) -> None:
    """Forkserver child: the fail point in this process's environment, output to ``log``.

    The child leads a process group of its own, so the harness's SIGKILL (``killpg``) takes
    what it started with it — a CLI's code server and the run worker that may hold the
    warehouse lock — as a machine losing the whole command would."""
    os.setsid()
    os.environ.pop(FAULT_VARIABLE, None)
    os.environ[FAULT_RECORD_VARIABLE] = fault_record(Path(log))
    if job.fault:
        os.environ[FAULT_VARIABLE] = job.fault
    os.environ["PYTHONWARNINGS"] = "ignore"
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    sys.stdout = os.fdopen(1, "w", buffering=1, closefd=False)
    sys.stderr = os.fdopen(2, "w", buffering=1, closefd=False)
    code = 1
    try:
        code = run_job(job, Path(home), (Path(extra[0]), Path(extra[1])))
    except BaseException:
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
    os._exit(code)


PRELOAD = [
    "dagster",
    "assets.definitions",
    "assets.launch",
    "assets.runner",
    "assets.commands.run",
    "dp_platform.cli",
    "dp_platform.commands.ingest",
    "tests.faults.workers",
]

"""Materialise campaigns through Dagster from the command line (`dp-platform run` and `demo`).

Same assets, same job and same code path as the schedule and UI backfills: one run per campaign
covering every due day as a single partition range (the single-run backfill policy), on the
Dagster instance under ``<home>/dagster``. Budgets are reserved in the ledger for every selected
campaign *before* any run starts, so a campaign over its account's cap is refused before a
single release.

By default the campaigns run one after another in this process. ``parallel=True`` (``run
--parallel``) gives each campaign with work its own worker process (each run executes in its
worker): the pool ``dp_platform_writer`` (limit 1 for DuckDB, in the instance's
``dagster.yaml``) still lets one warehouse-writing step at a time through across all runs, and
the ledger draws each day once whatever the interleaving. Not the default because, measured on
DuckDB, it was slower: nearly every step is in the pool, and each worker pays its own start-up
(docs/operators.md). The seeded noise or explicit instance of a test keeps the runs here.
"""

from __future__ import annotations

import multiprocessing
import os
import socket
import threading
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import dagster as dg

from assets.dagster_fixes import apply_revision_cache
from assets.definitions import build_definitions
from assets.partitions import daily_job_name, final_job_name
from dp_platform.cli import storage_fault
from dp_platform.config import ConfigError, load_catalogue
from dp_platform.daily import campaign_days, register_campaigns
from dp_platform.errors import StorageError
from dp_platform.file_lock import exclusive
from dp_platform.home import Home
from dp_platform.journal import ReleaseJournal
from dp_platform.ledger import Ledger, LedgerError
from dp_platform.plans import campaign_plans
from dp_platform.privacy.noise import IntegerNoiseSource, NoiseSource
from dp_platform.registration import Registration
from dp_platform.warehouse.base import open_warehouse

# What <home>/dagster/dagster.yaml says; the repository's dagster.yaml is the same settings for
# `dagster dev` run from a checkout (tests/test_definitions_validate.py keeps the two equal).
INSTANCE_YAML = """\
# Written by dp-platform for this platform home (same settings as the repository's dagster.yaml).
telemetry:
  enabled: false
concurrency:
  pools:
    # Every asset that writes the DuckDB warehouse or the privacy ledger is in the pool
    # `dp_platform_writer`: one such step at a time across all runs of this instance.
    default_limit: 1
    granularity: op
"""


class RunFailed(RuntimeError):
    """A Dagster run failed; the message is the failing step's own error."""


def write_instance_config(home: Home) -> Path:
    """``<home>/dagster/dagster.yaml`` with the platform's settings, written only when missing:
    a file an operator put there (e.g. ``examples/dagster-postgres.yaml``) is used as it is."""
    config = home.dagster / "dagster.yaml"
    if not config.exists():
        config.write_text(INSTANCE_YAML)
    return config


def instance_for(home: Home) -> dg.DagsterInstance:
    """The persistent Dagster instance of a platform home (its ``dagster.yaml``: SQLite storage
    under it by default, PostgreSQL if that file says so)."""
    # Two processes starting on a fresh home would both create Dagster's SQLite schemas and
    # one fails ("table … already exists"): create and touch every storage under a file lock.
    apply_revision_cache()  # each storage re-read Dagster's migration scripts (dagster_fixes.py)
    with exclusive(home.dagster / ".init.lock"):
        write_instance_config(home)
        os.environ["DAGSTER_HOME"] = str(home.dagster)
        instance = dg.DagsterInstance.get()
        instance.get_runs(limit=1)
        instance.get_latest_materialization_event(dg.AssetKey("dp_platform_init_probe"))
        instance.all_instigator_state()
    return instance


def due_days(
    registration: Registration, ledger: Ledger, through: date | None, today: date | None = None
) -> list[date]:
    """Complete days (before today, UTC) from the first unreleased one, up to ``through``."""
    campaign = registration.config
    today = today or datetime.now(UTC).date()
    last = today - timedelta(days=1) if through is None else min(through, today - timedelta(days=1))
    if last < campaign.start:
        return []
    days = campaign_days(campaign, last)
    if registration.plan.stream is None:  # no daily releases: attribute until the final ones
        return [] if not _final_missing(ledger, registration) else days
    released = {m.day for m in ledger.releases(campaign.name)}
    first_missing = next((i for i, _ in enumerate(days) if (i + 1) not in released), len(days))
    return days[first_missing:]


@dataclass(frozen=True)
class CampaignRun:
    campaign: str
    days: list[date]
    run_id: str | None

    def to_json(self) -> dict:
        return {
            "campaign": self.campaign,
            "days": [d.isoformat() for d in self.days],
            "run_id": self.run_id,
        }


PID_TAG, HOST_TAG = "dp_platform/pid", "dp_platform/host"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def recover_dead_runs(instance: dg.DagsterInstance) -> list[str]:
    """Fail the runs of this host whose process died (SIGKILL, OOM, power) and free their pool
    slots; otherwise the next run waits forever for a slot a dead process still holds. Privacy
    needs no recovery: the ledger rolled the dead process's open transaction back."""
    recovered = []
    active = [dg.DagsterRunStatus.STARTED, dg.DagsterRunStatus.STARTING]
    runs = instance.get_runs(
        filters=dg.RunsFilter(statuses=active, tags={HOST_TAG: socket.gethostname()})
    )
    for run in runs:
        pid = int(run.tags.get(PID_TAG, "0"))
        if pid and not _alive(pid):
            instance.report_run_failed(run, message=f"process {pid} died; recovered by dp-platform")
            instance.event_log_storage.free_concurrency_slots_for_run(run.run_id)
            recovered.append(run.run_id)
    return recovered


RECOVERY_INTERVAL_S = 2.0


@contextmanager
def _recovering_dead_runs(instance: dg.DagsterInstance) -> Iterator[None]:
    """While runs execute, free the pool slots of runs whose process has died since they
    started. A run already waiting for the writer slot of a process that is then SIGKILLed
    would otherwise wait forever: Dagster frees a run's slots only when the run ends, and a
    killed run never ends (found by the fault harness, docs/faults.md). One watcher covers all
    the runs of a process (its own instance costs about 0.4 s of CPU to open)."""
    if instance.is_ephemeral:  # in memory: no other process can hold its slots
        yield
        return
    stop = threading.Event()

    def watch() -> None:
        watcher = dg.DagsterInstance.from_ref(instance.get_ref())  # its own storage handles
        try:
            while not stop.wait(RECOVERY_INTERVAL_S):
                recover_dead_runs(watcher)
        finally:
            watcher.dispose()

    thread = threading.Thread(target=watch, name="dp-platform-dead-run-recovery", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=30)


def _console(level: str) -> dict:
    """Run config for the console logger: the CLI shows warnings and errors, not every event
    (the full event log is in the Dagster instance, readable in the UI)."""
    return {"loggers": {"console": {"config": {"log_level": level}}}}


def _user_error(error: BaseException) -> BaseException | None:
    """The library error a failed step raised (budget, missing day, bad config), if any."""
    seen = error
    for _ in range(10):
        if isinstance(seen, LedgerError | ConfigError):
            return seen
        inner = getattr(seen, "user_exception", None) or seen.__cause__
        if inner is None:
            return None
        seen = inner
    return None


@dataclass(frozen=True)
class CampaignWork:
    """What one campaign's runs need, picklable for a worker process."""

    name: str
    days: list[date]
    end: date
    final_releases: frozenset[str]


def run_campaigns(
    config_path: str | Path,
    home: str | Path,
    *,
    campaign: str | None = None,
    through: date | None = None,
    noise: NoiseSource | None = None,
    integer_noise: IntegerNoiseSource | None = None,
    instance: dg.DagsterInstance | None = None,
    today: date | None = None,
    log_level: str = "WARNING",
    parallel: bool = False,
) -> list[CampaignRun]:
    """Materialise every due day of the selected campaigns, each campaign's days in order;
    campaigns in parallel worker processes if ``parallel`` (not with a test's ``noise`` or
    ``instance``, which cannot cross into a worker)."""
    home_dir = Home.at(home)
    catalogue = load_catalogue(config_path)
    selected = [catalogue.campaign(campaign)] if campaign else list(catalogue.campaigns)
    config_dir = Path(config_path).resolve().parent
    plans = campaign_plans(catalogue, config_dir)

    def advertiser_publishers(advertiser: str) -> list[str]:
        with open_warehouse(catalogue.warehouse, home_dir) as warehouse:
            return warehouse.advertiser_publishers(advertiser)

    def warehouse_identity() -> str:
        with open_warehouse(catalogue.warehouse, home_dir) as warehouse:
            return warehouse.identity

    with Ledger.at_home(home_dir.root, declared=catalogue.ledger) as ledger:
        ReleaseJournal.at_home(home_dir.root).reconcile(ledger)  # a stale restore: refused here
        chosen = catalogue.model_copy(update={"campaigns": selected})
        registered = register_campaigns(
            chosen,
            plans,
            ledger,
            advertiser_publishers=advertiser_publishers,
            warehouse_identity=warehouse_identity,
            base_dir=config_dir,
        )
        work = [
            CampaignWork(
                name=c.name,
                days=due_days(registered[c.name], ledger, through, today),
                end=registered[c.name].config.end,
                final_releases=frozenset(registered[c.name].plan.releases),
            )
            for c in selected
        ]
    today = today or datetime.now(UTC).date()
    in_this_process = noise is not None or integer_noise is not None or instance is not None
    busy = [item for item in work if _may_have_work(item, through, today)]
    if parallel and not in_this_process and len(busy) > 1:
        recover_dead_runs(instance_for(home_dir))
        done = _in_workers(config_path, home_dir, busy, through, today, log_level)
        ran = {run.campaign: run for run in done}
        return [ran.get(item.name, CampaignRun(item.name, item.days, None)) for item in work]
    instance = instance or instance_for(home_dir)
    recover_dead_runs(instance)
    definitions = build_definitions(
        config_path, home_dir.root, noise=noise, integer_noise=integer_noise
    )
    with _recovering_dead_runs(instance):
        return [
            _materialise(definitions, instance, home_dir, item, through, today, log_level)
            for item in work
        ]


def _may_have_work(item: CampaignWork, through: date | None, today: date) -> bool:
    """Due days, or campaign-level releases that may be due (the run checks the ledger)."""
    over = today > item.end and (through is None or through >= item.end)
    return bool(item.days) or (bool(item.final_releases) and over)


def _in_workers(
    config_path: str | Path,
    home: Home,
    work: list[CampaignWork],
    through: date | None,
    today: date,
    log_level: str,
) -> list[CampaignRun]:
    """One worker process per campaign (spawned: no Dagster or DuckDB state is forked)."""
    workers = min(len(work), os.cpu_count() or 1)
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        futures = [
            pool.submit(
                _materialise_in_worker,
                str(config_path),
                str(home.root),
                item,
                through,
                today,
                log_level,
            )
            for item in work
        ]
        try:
            return [future.result() for future in futures]
        except BrokenProcessPool:
            raise RunFailed(
                "a campaign's worker process died; run again: released days are kept and the "
                "dead run is recovered"
            ) from None


def _materialise_in_worker(
    config_path: str,
    home: str,
    item: CampaignWork,
    through: date | None,
    today: date,
    log_level: str,
) -> CampaignRun:
    """A worker's campaign: its own definitions and instance handle; its runs carry its pid,
    so a dead worker's runs are recovered (and their pool slots freed) like any dead run."""
    home_dir = Home.at(home)
    definitions = build_definitions(config_path, home_dir.root)
    instance = instance_for(home_dir)
    try:
        with _recovering_dead_runs(instance):
            return _materialise(definitions, instance, home_dir, item, through, today, log_level)
    except RunFailed as error:
        # Only the message crosses back to the parent, not the failed step's exception: keep
        # a storage fault (disk full, read-only home) the one-line error it is in this process.
        fault = storage_fault(error)
        if fault is None:
            raise
        root = str(home_dir.root)
        raise StorageError(fault if root in fault else f"{root}: {fault}") from None


def _materialise(
    definitions: dg.Definitions,
    instance: dg.DagsterInstance,
    home: Home,
    item: CampaignWork,
    through: date | None,
    today: date,
    log_level: str,
) -> CampaignRun:
    """One campaign: its due days as one run, then its campaign-level releases if due."""
    owner = {PID_TAG: str(os.getpid()), HOST_TAG: socket.gethostname()}
    days = item.days
    run_id = None
    if days:
        keys = {"partition_key": days[0].isoformat()} if len(days) == 1 else {}
        tags = dict(owner)
        if len(days) > 1:
            tags["dagster/asset_partition_range_start"] = days[0].isoformat()
            tags["dagster/asset_partition_range_end"] = days[-1].isoformat()
        run_id = _execute(definitions, daily_job_name(item.name), instance, tags, log_level, keys)
    final = _has_job(definitions, final_job_name(item.name))
    finished = final and today > item.end and (through is None or through >= item.end)
    if finished:
        with Ledger.at_home(home.root) as ledger:
            stored = ledger.campaign_releases(item.name)
        if not item.final_releases <= set(stored):
            _execute(definitions, final_job_name(item.name), instance, owner, log_level, {})
    return CampaignRun(item.name, days, run_id)


def _has_job(definitions: dg.Definitions, name: str) -> bool:
    try:
        definitions.resolve_job_def(name)
    except Exception:
        return False
    return True


def _final_missing(ledger: Ledger, registration: Registration) -> bool:
    """Campaign-level releases of the plan not stored yet."""
    stored = ledger.campaign_releases(registration.name)
    return not set(registration.plan.releases) <= set(stored)


def _execute(
    definitions: dg.Definitions,
    job_name: str,
    instance: dg.DagsterInstance,
    tags: dict,
    log_level: str,
    keys: dict,
) -> str:
    job = definitions.resolve_job_def(job_name)
    try:
        result = job.execute_in_process(
            instance=instance, tags=tags, run_config=_console(log_level), **keys
        )
    except Exception as error:
        cause = _user_error(error)
        if cause is not None:
            raise cause from None
        raise RunFailed(f"{job_name}: {error}") from error
    return result.run_id

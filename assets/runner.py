"""Materialise campaigns through Dagster from the command line (`dp-platform run` and `demo`).

Same assets, same job and same kind of run as the schedule and UI backfills: one run per campaign
covering every due day as a single partition range (the single-run backfill policy), launched
through the instance under ``<home>/dagster`` against the code location (:mod:`assets.launch`),
so the UI lists it on the job's page. Budgets are reserved in the ledger for every selected
campaign *before* any run starts, so a campaign over its account's cap is refused before a
single release.

By default the campaigns run one after another; ``parallel=True`` (``run --parallel``) launches
them all at once. Either way the warehouse's one-writer rule is its own lock (a kernel ``flock``
taken by each step that opens it; a waiting step logs the holder's pid), and the ledger draws
each day once whatever the interleaving. A test's seeded noise or explicit instance cannot cross
into a launched run: those runs execute in this process (``execute_in_process``).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import dagster as dg

from assets.definitions import build_definitions
from assets.launch import CodeServer, run_error
from assets.partitions import daily_job_name, final_job_name
from dp_platform.config import CampaignConfig
from dp_platform.config_loader import load_catalogue
from dp_platform.daily import campaign_days, register_campaigns
from dp_platform.dimension_coverage import require_dimension_data
from dp_platform.file_lock import exclusive
from dp_platform.home import Home
from dp_platform.journal import ReleaseJournal
from dp_platform.ledger import Ledger
from dp_platform.plans import campaign_plans
from dp_platform.privacy.noise import IntegerNoiseSource, NoiseSource
from dp_platform.registration import Registration
from dp_platform.settings import WarehouseConfig
from dp_platform.warehouse.base import open_warehouse

# What <home>/dagster/dagster.yaml says; the repository's dagster.yaml is the same settings for
# `dagster dev` run from a checkout (tests/test_definitions_validate.py keeps the two equal).
INSTANCE_YAML = """\
# Written by dp-platform for this platform home (same settings as the repository's dagster.yaml).
telemetry:
  enabled: false
# Runs start as soon as they are submitted, from the UI, a schedule or `dp-platform run` (no
# daemon needed to dequeue them); the warehouse's own lock keeps its writers one at a time.
run_coordinator:
  module: dagster.core.run_coordinator
  class: DefaultRunCoordinator
# The daemon (`make ui`) fails a run whose worker process died: it supervises every run.
run_monitoring:
  enabled: true
  poll_interval_seconds: 30
# The platform's own log lines (a step waiting for the warehouse lock names the holder's pid)
# go into the run's event log.
python_logs:
  managed_python_loggers:
    - dp_platform
  python_log_level: INFO
"""


_WRITTEN_BY_US = INSTANCE_YAML.splitlines()[0]


def write_instance_config(home: Home) -> Path:
    """``<home>/dagster/dagster.yaml`` with the platform's settings, written when missing or when
    an earlier release of the platform wrote it (its first line says so; e.g. one with the old
    writer pool and no run coordinator, whose runs would wait in a queue for a daemon). A file an
    operator put there (e.g. ``examples/dagster-postgres.yaml``) is used as it is."""
    config = home.dagster / "dagster.yaml"
    if not config.exists():
        config.write_text(INSTANCE_YAML)
        return config
    text = config.read_text()
    if text != INSTANCE_YAML and text.startswith(_WRITTEN_BY_US):
        config.write_text(INSTANCE_YAML)
    return config


def instance_for(home: Home) -> dg.DagsterInstance:
    """The persistent Dagster instance of a platform home (its ``dagster.yaml``: SQLite storage
    under it by default, PostgreSQL if that file says so)."""
    # Two processes starting on a fresh home would both create Dagster's SQLite schemas and
    # one fails ("table … already exists"): create and touch every storage under a file lock.
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


def _console(level: str) -> dict:
    """Run config for the console logger: the CLI shows warnings and errors, not every event
    (the full event log is in the Dagster instance, readable in the UI)."""
    return {"loggers": {"console": {"config": {"log_level": level}}}}


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
    campaigns launched all at once if ``parallel``. A test's ``noise`` or ``instance`` keeps the
    runs in this process."""
    home_dir = Home.at(home)
    config_path = Path(config_path).resolve()
    catalogue = load_catalogue(config_path)
    selected = [catalogue.campaign(campaign)] if campaign else list(catalogue.campaigns)
    plans = campaign_plans(catalogue, config_path.parent)

    def advertiser_publishers(advertiser: str) -> list[str]:
        with open_warehouse(catalogue.warehouse, home_dir) as warehouse:
            return warehouse.advertiser_publishers(advertiser)

    def warehouse_identity() -> str:
        with open_warehouse(catalogue.warehouse, home_dir) as warehouse:
            return warehouse.identity

    _require_dimension_data(catalogue.warehouse, home_dir, selected, through)
    with Ledger.at_home(home_dir.root, declared=catalogue.ledger) as ledger:
        ReleaseJournal.at_home(home_dir.root).reconcile(ledger)  # a stale restore: refused here
        chosen = catalogue.model_copy(update={"campaigns": selected})
        registered = register_campaigns(
            chosen,
            plans,
            ledger,
            advertiser_publishers=advertiser_publishers,
            warehouse_identity=warehouse_identity,
            base_dir=config_path.parent,
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
    busy = [item for item in work if _may_have_work(item, through, today)]
    if not busy:
        return [CampaignRun(item.name, item.days, None) for item in work]
    in_this_process = noise is not None or integer_noise is not None or instance is not None
    instance = instance or instance_for(home_dir)
    with ExitStack() as stack:
        if in_this_process:
            definitions = build_definitions(
                config_path, home_dir.root, noise=noise, integer_noise=integer_noise
            )
            execute = _in_process(definitions, instance, log_level)
        else:
            server = stack.enter_context(CodeServer(instance, home_dir, config_path))
            execute = _launched(server, log_level)
        runs = _materialise_all(execute, home_dir, busy, through, today, parallel)
    return [runs.get(item.name, CampaignRun(item.name, item.days, None)) for item in work]


def _require_dimension_data(
    settings: WarehouseConfig, home: Home, selected: list[CampaignConfig], through: date | None
) -> None:
    """A broken-down campaign whose period's events were loaded without one of its dimensions
    is refused before anything is reserved or drawn (dp_platform/dimension_coverage.py)."""
    broken_down = [c for c in selected if c.breakdown]
    if not broken_down:
        return
    with open_warehouse(settings, home) as warehouse:
        for campaign in broken_down:
            last = campaign.end if through is None else min(campaign.end, through)
            if last >= campaign.start:
                require_dimension_data(warehouse, campaign, campaign.start, last)


def _materialise_all(
    execute: Execute,
    home: Home,
    busy: list[CampaignWork],
    through: date | None,
    today: date,
    parallel: bool,
) -> dict[str, CampaignRun]:
    """Each busy campaign's runs: one campaign after another, or all at once."""
    if parallel and len(busy) > 1:
        with ThreadPoolExecutor(max_workers=len(busy)) as threads:  # each waits on its own run
            futures = {
                item.name: threads.submit(_materialise, execute, home, item, through, today)
                for item in busy
            }
            return {name: future.result() for name, future in futures.items()}
    return {item.name: _materialise(execute, home, item, through, today) for item in busy}


def _may_have_work(item: CampaignWork, through: date | None, today: date) -> bool:
    """Due days, or campaign-level releases that may be due (the run checks the ledger)."""
    over = today > item.end and (through is None or through >= item.end)
    return bool(item.days) or (bool(item.final_releases) and over)


# Runs one job with these tags (a single day's partition key among them): the run's id.
Execute = Callable[[str, dict[str, str]], str]

PARTITION_TAG = "dagster/partition"
RANGE_START_TAG = "dagster/asset_partition_range_start"
RANGE_END_TAG = "dagster/asset_partition_range_end"


def _launched(server: CodeServer, log_level: str) -> Execute:
    """Through the instance, against the code location: the runs the UI lists."""

    def execute(job_name: str, tags: dict[str, str]) -> str:
        return server.launch(job_name, tags, _console(log_level))

    return execute


def _in_process(
    definitions: dg.Definitions, instance: dg.DagsterInstance, log_level: str
) -> Execute:
    """In this process: a test's seeded noise cannot cross into a launched run."""

    def execute(job_name: str, tags: dict[str, str]) -> str:
        job = definitions.resolve_job_def(job_name)
        run_tags = dict(tags)
        key = run_tags.pop(PARTITION_TAG, None)
        result = job.execute_in_process(
            instance=instance,
            tags=run_tags,
            run_config=_console(log_level),
            raise_on_error=False,
            **({"partition_key": key} if key else {}),
        )
        if not result.success:
            raise run_error(instance, result.run_id, job_name)
        return result.run_id

    return execute


def _materialise(
    execute: Execute, home: Home, item: CampaignWork, through: date | None, today: date
) -> CampaignRun:
    """One campaign: its due days as one run, then its campaign-level releases if due."""
    days = item.days
    run_id = None
    if days:
        if len(days) == 1:
            tags = {PARTITION_TAG: days[0].isoformat()}
        else:
            tags = {RANGE_START_TAG: days[0].isoformat(), RANGE_END_TAG: days[-1].isoformat()}
        run_id = execute(daily_job_name(item.name), tags)
    over = today > item.end and (through is None or through >= item.end)
    if item.final_releases and over:
        with Ledger.at_home(home.root) as ledger:
            stored = ledger.campaign_releases(item.name)
        if not item.final_releases <= set(stored):
            execute(final_job_name(item.name), {})
    return CampaignRun(item.name, days, run_id)


def _final_missing(ledger: Ledger, registration: Registration) -> bool:
    """Campaign-level releases of the plan not stored yet."""
    stored = ledger.campaign_releases(registration.name)
    return not set(registration.plan.releases) <= set(stored)

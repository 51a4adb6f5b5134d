"""Run a campaign's registered configuration again and again, canaries in or out, and guess.

Every run is the whole pipeline in a throwaway home — the events written as files, ingested with
the catalogue's engine and its checks, attributed by the campaign's rule, clipped, the bounds
chosen and the noise drawn by the campaign's mechanism, the releases stored through a fresh
ledger — on a fixed simulated population plus each canary with probability ½. The production
home, ledger and warehouse are never opened: nothing here reads or writes them.

The campaign run is a copy of the configured one (mechanism, privacy, attribution, breakdown,
measures, workload and dates as registered) whose advertiser and publisher keys are the
simulation's: the population's publishers and one key per canary (public and fixed, whatever
is included), as ``dp-platform simulate`` does.

Trials: each canary of each run is one trial. Canaries of one run sit in different cells, whose
noise is drawn independently, so their guesses are independent given the run's private bound
choices; those are shared, and each canary moves them only as far as their own share of ρ
allows. The Clopper–Pearson limits treat the trials as independent (docs/privacy.md, "The
empirical audit", says what that assumes).
"""

from __future__ import annotations

import secrets
import tempfile
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from dp_platform.audit.bounds import GuessCounts, epsilon_lower_bound, rho_lower_bound
from dp_platform.audit.canaries import CanaryDesign, canary_events
from dp_platform.audit.distinguisher import guess
from dp_platform.audit.options import AuditOptions, AuditSamplers
from dp_platform.audit.probes import Probe, probes_of
from dp_platform.config import AccountConfig, CampaignConfig, Catalogue
from dp_platform.daily import campaign_days, register_alone
from dp_platform.events import write_events
from dp_platform.home import Home
from dp_platform.ledger import Ledger
from dp_platform.plans import CampaignPlan, campaign_plan
from dp_platform.privacy.accounting import zcdp_epsilon
from dp_platform.rehearsal import (
    SIMULATED_ADVERTISER,
    SIMULATED_PUBLISHERS,
    dimension_lists,
    ingest_simulated,
    simulated_events,
)
from dp_platform.settings import WarehouseConfig
from dp_platform.warehouse.base import open_warehouse

__all__ = ["Progress", "StepAudit", "audit_campaign"]


@dataclass(frozen=True)
class StepAudit:
    """One private step's audit: its claim against what the held-out guesses refute."""

    campaign: str
    step: str
    engine: str
    claimed_rho: float
    claimed_epsilon: float
    delta: float
    rho_lower: float
    epsilon_lower: float
    confidence: float
    runs: int
    canaries_per_run: int
    counts: GuessCounts
    scores_in: list[float] = field(repr=False)
    scores_out: list[float] = field(repr=False)

    @property
    def tightness(self) -> float:
        """Lower bound ÷ claim: how much of the claimed ρ the audit could confirm is used."""
        return self.rho_lower / self.claimed_rho if self.claimed_rho > 0 else 0.0

    @property
    def holds(self) -> bool:
        """The claim survives: the audit refutes no ρ at or above the claimed one."""
        return self.rho_lower < self.claimed_rho


Progress = Callable[[str, int, int], None]
"""Called after each run: (step, runs done, runs in all)."""


@dataclass(frozen=True)
class _Population:
    impressions: pa.Table
    conversions: pa.Table
    publishers: list[str]


def audit_campaign(
    catalogue: Catalogue,
    name: str,
    options: AuditOptions,
    *,
    warehouse: WarehouseConfig | None = None,
    base_dir: str | Path | None = None,
    samplers: AuditSamplers | None = None,
    inclusion_seed: int | None = None,
    progress: Progress | None = None,
) -> list[StepAudit]:
    """Audit every private step of campaign ``name`` (module doc); one result per step."""
    campaign = catalogue.campaign(name)
    account = catalogue.account(campaign.account)
    settings = warehouse if warehouse is not None else catalogue.warehouse
    samplers = samplers if samplers is not None else AuditSamplers()
    seed = inclusion_seed if inclusion_seed is not None else secrets.randbits(64)
    coin = np.random.default_rng(seed)  # who is in: fair coins, nothing to do with the noise
    with tempfile.TemporaryDirectory(prefix="dp-audit-") as scratch:
        population = _population(campaign, options, Path(scratch))
        plan_probe = _copy(campaign, population.publishers, [])
        plan = campaign_plan(plan_probe, base_dir)
        results = []
        for probe in probes_of(plan):
            design = probe.design(plan, options)
            copy = _copy(campaign, population.publishers, design.publishers)
            copy_plan = campaign_plan(copy, base_dir)
            coins = [coin.random(len(design.slots)) < 0.5 for _ in range(options.runs)]
            one_run = partial(
                _run, copy, copy_plan, account, probe, design,
                population=population, settings=settings, base_dir=base_dir, samplers=samplers,
            )  # fmt: skip
            features = _each_run(one_run, coins, options.workers, probe.step, progress)
            runs = [np.full(len(included), run) for run, included in enumerate(coins)]
            results.append(
                _scored(
                    campaign.name,
                    probe,
                    copy_plan,
                    settings.engine,
                    options,
                    np.vstack(features),
                    np.concatenate(coins),
                    np.concatenate(runs),
                )
            )
    return results


def _each_run(
    one_run: Callable[[np.ndarray], np.ndarray],
    coins: list[np.ndarray],
    workers: int,
    step: str,
    progress: Progress | None,
) -> list[np.ndarray]:
    """Every run's evidence, in run order; ``workers`` processes side by side (each opens its
    own throwaway home and engine)."""
    results: list[np.ndarray | None] = [None] * len(coins)
    if workers == 1:
        for run, included in enumerate(coins):
            results[run] = one_run(included)
            if progress is not None:
                progress(step, run + 1, len(coins))
    else:
        with ProcessPoolExecutor(max_workers=workers) as pool:
            pending = {pool.submit(one_run, included): run for run, included in enumerate(coins)}
            for done, future in enumerate(as_completed(pending), start=1):
                results[pending[future]] = future.result()
                if progress is not None:
                    progress(step, done, len(coins))
    return [r for r in results if r is not None]


def _scored(
    campaign: str,
    probe: Probe,
    plan: CampaignPlan,
    engine: str,
    options: AuditOptions,
    features: np.ndarray,
    included: np.ndarray,
    runs: np.ndarray,
) -> StepAudit:
    guesses = guess(features, included, runs % 2 == 0, options.confidence)
    claimed = probe.claimed(plan)
    return StepAudit(
        campaign=campaign,
        step=probe.step,
        engine=engine,
        claimed_rho=claimed,
        claimed_epsilon=zcdp_epsilon(claimed, options.delta),
        delta=options.delta,
        rho_lower=rho_lower_bound(guesses.counts, options.confidence),
        epsilon_lower=epsilon_lower_bound(guesses.counts, options.confidence, options.delta),
        confidence=options.confidence,
        runs=options.runs,
        canaries_per_run=len(included) // options.runs,
        counts=guesses.counts,
        scores_in=guesses.scores_in.tolist(),
        scores_out=guesses.scores_out.tolist(),
    )


def _copy(campaign: CampaignConfig, population: list[str], canaries: list[str]) -> CampaignConfig:
    return campaign.model_copy(
        update={"advertiser": SIMULATED_ADVERTISER, "publishers": [*population, *canaries]}
    )


def _population(campaign: CampaignConfig, options: AuditOptions, scratch: Path) -> _Population:
    """The simulated users every run shares (seeded: the same in every run)."""
    events = simulated_events(
        campaign,
        users=options.users,
        publishers=SIMULATED_PUBLISHERS,
        data_seed=options.data_seed,
    )
    files = write_events(events, scratch / "population")
    return _Population(
        impressions=_plain(pq.read_table(files.impressions)),
        conversions=_plain(pq.read_table(files.conversions)),
        publishers=[events.publisher_name(p) for p in range(events.n_publishers)],
    )


def _plain(table: pa.Table) -> pa.Table:
    """Dictionary columns decoded, so canary rows (plain strings) append to them."""
    columns = [
        column.dictionary_decode() if pa.types.is_dictionary(column.type) else column
        for column in (c.combine_chunks() for c in table.columns)
    ]
    return pa.table(columns, names=table.column_names)


def _run(
    campaign: CampaignConfig,
    plan: CampaignPlan,
    account: AccountConfig,
    probe: Probe,
    design: CanaryDesign,
    included: np.ndarray,
    *,
    population: _Population,
    settings: WarehouseConfig,
    base_dir: str | Path | None,
    samplers: AuditSamplers,
) -> np.ndarray:
    """One end-to-end run in a throwaway home; the evidence about each canary."""
    canaries = canary_events(
        design,
        included,
        advertiser=SIMULATED_ADVERTISER,
        start=campaign.start,
        days=campaign.days,
        lookback_days=campaign.attribution.lookback_days,
        conversion_dimensions={
            name: values[0] for name, values in dimension_lists(campaign, "conversions").items()
        },
        impression_dimensions={
            name: values[0] for name, values in dimension_lists(campaign, "impressions").items()
        },
    )
    with tempfile.TemporaryDirectory(prefix="dp-audit-run-") as scratch:
        home = Home.at(scratch)
        impressions = home.root / "impressions.parquet"
        conversions = home.root / "conversions.parquet"
        pq.write_table(
            pa.concat_tables([population.impressions, canaries.impressions]), impressions
        )
        pq.write_table(
            pa.concat_tables([population.conversions, canaries.conversions]), conversions
        )
        with open_warehouse(settings, home) as warehouse, Ledger(home.ledger) as ledger:
            ingest_simulated(warehouse, campaign, impressions, conversions)
            registration = register_alone(campaign, account, plan, ledger, warehouse, base_dir)
            days = campaign_days(campaign)
            warehouse.attribute_days(campaign, days[0], days[-1], noise=samplers.integer)
            probe.release(warehouse, ledger, registration, days, samplers)
            return probe.features(ledger, registration, design)

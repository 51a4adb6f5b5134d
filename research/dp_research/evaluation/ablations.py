"""Appendix A's AdsBPC variants (Tables XIII–XVII) on the prefix workload (Table IX's setting).

- ``split`` (XIII): ρ1 = (1 − λ)ρ, quantiles λρ/2, SVT λρ/2.
- ``scale`` (XIV): s↑ varied, s↓ = 1/s↑ (so s↑ = 1.3 gives s↓ = 0.769, not the default 0.8).
- ``threshold`` (XV): T↑ = T↓ varied.
- ``constant`` (XVI): a fixed r every day, no quantile or SVT, all of ρ on the Gaussian. A fixed
  r is data-independent and so private; *choosing* the best r from this table is not.
- ``quantile_only`` (XVII): PrivateQuantile every day, no SVT, total ρ varied. The paper does not
  give its split; we keep ρ1 = 0.7ρ and give each of the n quantiles 0.3ρ/n.

Every variant is the real mechanism code (or the given-bounds release for ``constant``) with
the same seeded noise streams as the main table, so the default row of each table reproduces
the main table's AdsBPC number.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from dp_platform.config import CampaignConfig
from dp_platform.mechanisms.adsbpc import make_plan
from dp_platform.privacy.noise import SeededNoise
from dp_research.baselines import prefix
from dp_research.evaluation.adsbpc_runs import (
    BoundRule,
    DailyRun,
    campaign_for,
    given_bounds_run,
    quantile_every_day,
    run_adsbpc,
)
from dp_research.evaluation.datasets import DatasetSpec
from dp_research.evaluation.experiment import noise_seed
from dp_research.evaluation.methods import Context, daily_outcome
from dp_research.evaluation.paper import ABLATIONS
from dp_research.evaluation.prepared import PreparedData
from dp_research.evaluation.progress import Progress
from dp_research.evaluation.scoring import Score, score

__all__ = ["ABLATION_GRIDS", "AblationRow", "run_ablations"]

ABLATION_GRIDS: dict[str, tuple[float, ...]] = {
    "split": (0.5, 0.4, 0.3, 0.2, 0.1),
    "scale": (1.1, 1.2, 1.3, 1.4, 1.5),
    "threshold": (10, 25, 50, 75, 100),
    "constant": (1, 2, 3, 4, 5, 6),
    "quantile_only": (1, 2, 4, 6, 8, 10),
}


@dataclass(frozen=True)
class AblationRow:
    table: str
    value: float
    score: Score
    mean_bound: float
    paper_facebook: float | None


Runner = Callable[[int], DailyRun]


def _variant(
    table: str, value: float, data: PreparedData, spec: DatasetSpec, rho: float, seed: int
) -> tuple[CampaignConfig, Runner]:
    """The campaign of one table cell and how one repeat of it runs."""
    workload = prefix(data.n_days)

    def noise(repeat: int) -> SeededNoise:
        return SeededNoise(noise_seed(seed, "adsbpc", repeat))

    def mechanism(campaign: CampaignConfig, rule: BoundRule | None = None) -> Runner:
        plan = make_plan(campaign)
        if rule is None:
            return lambda k: run_adsbpc(plan, data, noise(k))
        return lambda k: run_adsbpc(plan, data, noise(k), rule)

    if table == "split":
        split = (1.0 - value, value / 2.0, value / 2.0)
        campaign = campaign_for(workload, rho=rho, cap=spec.cap, split=split)
        return campaign, mechanism(campaign)
    if table == "scale":
        bounds = {"s_up": value, "s_down": 1.0 / value}
        campaign = campaign_for(workload, rho=rho, cap=spec.cap, bounds=bounds)
        return campaign, mechanism(campaign)
    if table == "threshold":
        bounds = {"t_up": value, "t_down": value}
        campaign = campaign_for(workload, rho=rho, cap=spec.cap, bounds=bounds)
        return campaign, mechanism(campaign)
    if table == "constant":
        campaign = campaign_for(workload, rho=rho, cap=spec.cap)
        r = np.full(data.n_days, float(value))
        return campaign, lambda k: given_bounds_run(campaign, data, r, rho, noise(k))
    if table == "quantile_only":
        campaign = campaign_for(workload, rho=value, cap=spec.cap)
        return campaign, mechanism(campaign, quantile_every_day(0.3 * value / data.n_days))
    raise ValueError(f"unknown ablation {table!r}")


def run_ablations(
    data: PreparedData,
    spec: DatasetSpec,
    *,
    rho: float = 1.0,
    repeats: int = 10,
    seed: int = 0,
    tables: tuple[str, ...] = tuple(ABLATION_GRIDS),
    show_progress: bool | None = None,
) -> dict[str, list[AblationRow]]:
    """Prefix-WRMSE of every cell of the chosen tables (paper's Facebook value alongside)."""
    workload = prefix(data.n_days)
    out: dict[str, list[AblationRow]] = {}
    cells = sum(len(ABLATION_GRIDS[t]) for t in tables)
    with Progress(cells * repeats, f"{spec.name} ablations", enabled=show_progress) as bar:
        for table in tables:
            rows = []
            for value in ABLATION_GRIDS[table]:
                campaign, runner = _variant(table, value, data, spec, rho, seed)
                plan = make_plan(campaign)
                ctx = Context(data, spec, workload, campaign.privacy.rho, campaign, plan, 0.99)
                outcomes = []
                for k in range(repeats):
                    outcomes.append(daily_outcome(runner(k), ctx))
                    bar.advance(f"{table}={value:g}")
                mean_bound = float(np.mean([o.bounds for o in outcomes]))
                rows.append(
                    AblationRow(
                        table=table,
                        value=float(value),
                        score=score(outcomes, ctx.truth_answers, workload),
                        mean_bound=mean_bound,
                        paper_facebook=ABLATIONS[table].get(value),
                    )
                )
            out[table] = rows
    return out

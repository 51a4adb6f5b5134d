"""What an advertiser may see of a campaign: its write-once releases and their post-processing.

One reading of the ledger for every reader of releases — ``dp-platform releases``, the Dagster
UI's release metadata, and the check that the published answers equal the post-processing of
the stored releases — so the three can never disagree. Reads only DP values (noisy vectors, r_i,
σ_i, charges) and the registered plan's public workload; no true value, no SVT threshold.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from dp_platform.cells import CellLayout, cell_records, layout_of, publisher_counts
from dp_platform.config_loader import parse_campaign
from dp_platform.ledger import Ledger, LedgerError
from dp_platform.mechanisms.base import Measurement
from dp_platform.privacy.accounting import Rho
from dp_platform.privacy.strategy import decoded_std
from dp_platform.workload import query_ends

__all__ = [
    "PublishedDay",
    "campaign_layout",
    "noise_std",
    "published_days",
    "release_strategy",
]


def release_strategy(stream_plan: dict) -> np.ndarray | None:
    """The noise strategy C of a registered stream plan record, or None when each day's noise is
    independent (AdsBPC, the diagonal AdsBPC+ strategy, and every plan registered before
    strategies existed)."""
    strategy = stream_plan.get("strategy")
    return None if strategy is None else np.asarray(strategy, dtype=np.float64)


def noise_std(
    strategy: np.ndarray | None, releases: list[Measurement], weights: np.ndarray
) -> float:
    """Standard error of Σ_i w_i x̃_i (one entry of each of days 1..t) from the releases' noise:
    √(Σ_i (w_i σ_i)²) for independent days, else the decoded rows' (privacy/strategy.py)."""
    w = np.asarray(weights, dtype=np.float64)
    if strategy is None:
        sigmas = np.array([r.sigma for r in releases], dtype=np.float64)
        return math.sqrt(float((w * sigmas) @ (w * sigmas)))
    rows = [r.sigma if r.row_sigma is None else r.row_sigma for r in releases]
    return decoded_std(strategy, np.asarray(rows, dtype=np.float64), w)


@dataclass(frozen=True)
class PublishedDay:
    """Day ``day``'s release as published, with the answers of the queries ending that day."""

    day: int
    bound: float
    sigma: float
    rho_charged: float
    rho_spent: float  # charges of days 1..day (campaign-level releases come after the last day)
    rho_planned: float
    values: dict[str, float]  # publisher → count (summed over a breakdown's cells)
    answers: dict[str, dict[str, float]]  # query number (1-based) → publisher → answer
    answer_std: dict[str, float]  # query number → std of its total over publishers
    value_std: float
    """σ of each entry of ``values`` (σ_i for a count-only campaign without breakdown; with
    cells, the count cells' σ times √(cells summed))."""
    cells: list[dict[str, str | float]] = field(default_factory=list)
    """Every released cell (dp_platform/cells.py: publisher, dimensions, measure, value, σ,
    95 % interval); for a count-only campaign without breakdown, one count per publisher."""
    to_date_factor: float = 1.0
    """Standard error of a campaign-to-date sum through this day (one entry per day) over the
    independent-days value √(Σ σ_i²): 1 unless the noise is correlated across days."""

    def to_json(self) -> dict:
        return {
            "day": self.day,
            "bound": self.bound,
            "sigma": self.sigma,
            "rho_charged": self.rho_charged,
            "values": self.values,
            "answers": self.answers,
            "cells": self.cells,
        }


def campaign_layout(ledger: Ledger, campaign: str) -> CellLayout:
    """The registered campaign's cells (its frozen publishers × breakdown × measures)."""
    record = ledger.campaign_record(campaign)
    if record is None:
        raise LedgerError(f"campaign {campaign} is not registered in the ledger")
    return layout_of(parse_campaign(record.config), list(record.config["publishers"]))


def published_days(ledger: Ledger, campaign: str) -> list[PublishedDay]:
    """Every released day of ``campaign`` in order (empty for a one-shot campaign)."""
    info = ledger.campaign_info(campaign)
    stream = info["plan"]["stream"]
    if stream is None:  # mode: one_shot — no daily releases
        return []
    queries = np.asarray(stream["plan"]["queries"], dtype=np.float64)
    strategy = release_strategy(stream["plan"])
    ends = query_ends(queries)
    publishers = info["publishers"]
    layout = campaign_layout(ledger, campaign)
    # a count's σ in published units, and how many cells a publisher's count sums
    unit = layout.unscale("count")
    summed = layout.combinations
    budget = ledger.campaign_budget(campaign)
    spent = Rho.zero()
    records, history, variances, stored = [], [], [], []
    scale = unit * math.sqrt(summed * len(publishers))  # one count's σ → a total over publishers
    for release in ledger.releases(campaign):
        history.append(publisher_counts(layout, release.values))
        variances.append((release.sigma * unit) ** 2 * summed)
        stored.append(release)
        day = release.day
        charged = sum(budget.per_day.get(day, {}).values(), Rho.zero())
        spent = spent + charged
        ready = list(np.flatnonzero(ends == day))
        answers = queries[ready, :day] @ np.asarray(history)
        if strategy is None:  # independent days
            std = {
                str(int(j) + 1): math.sqrt(
                    len(publishers) * float(queries[j, :day] ** 2 @ variances)
                )
                for j in ready
            }
            factor = 1.0
        else:  # correlated across days: the decoded rows' exact σ
            std = {
                str(int(j) + 1): scale * noise_std(strategy, stored, queries[j, :day])
                for j in ready
            }
            to_date = np.ones(day)
            factor = noise_std(strategy, stored, to_date) / noise_std(None, stored, to_date)
        records.append(
            PublishedDay(
                day=day,
                bound=release.bound,
                sigma=release.sigma,
                rho_charged=float(charged),
                rho_spent=float(spent),
                rho_planned=float(budget.planned),
                values=dict(zip(publishers, (float(v) for v in history[-1]), strict=True)),
                answers={
                    str(int(j) + 1): dict(zip(publishers, (float(v) for v in row), strict=True))
                    for j, row in zip(ready, answers, strict=True)
                },
                answer_std=std,
                cells=cell_records(layout, release.values, release.sigma),
                value_std=release.sigma * unit * math.sqrt(summed),
                to_date_factor=factor,
            )
        )
    return records

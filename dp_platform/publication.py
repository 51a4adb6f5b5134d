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

from dp_platform.campaign_total import total_additions
from dp_platform.cells import PUBLISHER, CellLayout, MarginalSigma, cell_records, publisher_counts
from dp_platform.ledger import Ledger
from dp_platform.mechanisms.base import Measurement
from dp_platform.privacy.accounting import Rho
from dp_platform.privacy.strategy import decoded_std
from dp_platform.registration import load_registration
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
    cells, the σ of a publisher's count as the layout's strategy states it: √(cells summed)
    times a count cell's for independent cells)."""
    cells: list[dict[str, str | float]] = field(default_factory=list)
    """Every released cell (dp_platform/cells.py: publisher, dimensions, measure, value, σ,
    95 % interval); for a count-only campaign without breakdown, one count per publisher."""
    to_date_factor: float = 1.0
    """Standard error of a campaign-to-date sum through this day (one entry per day) over the
    independent-days value √(Σ σ_i²): 1 unless the noise is correlated across days."""
    total_std: float | None = None
    """σ of the day's values summed over publishers; None: publishers' noises are independent
    (:meth:`values_total_std` is then ``value_std``·√P). Cells measured by a residual strategy
    correlate them (dp_platform/cell_strategy.py)."""
    answer_publisher_std: dict[str, float] | None = None
    """Query number → σ of one publisher's answer; None: ``answer_std``/√P (independent)."""
    marginals: list[MarginalSigma] = field(default_factory=list)
    """With cells: per marginal the advertiser reads (:meth:`CellLayout.marginal_sigmas`), the σ
    of one of its numbers this day, per measure."""
    remainder: float | None = None
    """AdsBPC+'s remainder of the day, if the plan releases it: Σ_u min(c_ut − k_ut, E) +
    N(0, ``remainder_std``²), the conversions the clipping left out, capped per user."""
    remainder_std: float | None = None
    total_estimates: dict[str, float] | None = None
    """With a remainder: query number → the campaign total's estimate, the answers summed over
    publishers plus the remainder's answer shrunk towards 0 by its noise (campaign_total.py:
    the days' level by the one-number rule, their differences from it by James–Stein; a point
    estimate, no interval)."""

    def values_total_std(self) -> float:
        if self.total_std is not None:
            return self.total_std
        return self.value_std * math.sqrt(len(self.values))

    def answer_one_std(self, query: str) -> float:
        if self.answer_publisher_std is not None:
            return self.answer_publisher_std[query]
        return self.answer_std[query] / math.sqrt(len(self.values))

    def to_json(self) -> dict:
        return {
            "day": self.day,
            "bound": self.bound,
            "sigma": self.sigma,
            "rho_charged": self.rho_charged,
            "values": self.values,
            "answers": self.answers,
            "cells": self.cells,
            **({} if self.remainder is None else {"remainder": self.remainder}),
            **({} if self.total_estimates is None else {"total_estimates": self.total_estimates}),
        }


def campaign_layout(ledger: Ledger, campaign: str) -> CellLayout:
    """The registered campaign's cells (its frozen publishers × breakdown × measures) and how
    its plan measures them."""
    return load_registration(ledger, campaign).layout


def _total_estimates(
    releases: list[Measurement], queries: np.ndarray, ready: list[int], answers: np.ndarray
) -> dict[str, float] | None:
    """Per query ``ready`` (ending the last release's day; ``answers`` their per-publisher
    answers), Σ_p answer + the shrunk remainder answer (campaign_total.py); None without a
    remainder."""
    sigma = releases[-1].remainder_sigma
    remainders = [r.remainder for r in releases]
    if sigma is None or None in remainders:
        return None
    added = total_additions(queries[ready], np.array(remainders, dtype=np.float64), sigma)
    totals = np.asarray(answers, dtype=np.float64).sum(axis=1) + added
    return {str(int(j) + 1): float(v) for j, v in zip(ready, totals, strict=True)}


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
    # per unit of a release's σ: the σ of a publisher's count and of the total over publishers
    unit = layout.strategy.entry_std((PUBLISHER,), "count")
    scale = layout.strategy.entry_std((), "count")
    budget = ledger.campaign_budget(campaign)
    spent = Rho.zero()
    records, history, stored = [], [], []
    for release in ledger.releases(campaign):
        history.append(publisher_counts(layout, release.values))
        stored.append(release)
        day = release.day
        charged = sum(budget.per_day.get(day, {}).values(), Rho.zero())
        spent = spent + charged
        ready = list(np.flatnonzero(ends == day))
        answers = queries[ready, :day] @ np.asarray(history)
        # each answer's σ over the days it reads (independent days, or the decoded rows' exact
        # σ when the strategy correlates them), times the cells' factor of a publisher's count
        # or of the total over publishers
        spread = {str(int(j) + 1): noise_std(strategy, stored, queries[j, :day]) for j in ready}
        std = {query: scale * s for query, s in spread.items()}
        factor = 1.0
        if strategy is not None:
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
                value_std=release.sigma * unit,
                to_date_factor=factor,
                total_std=release.sigma * scale,
                answer_publisher_std={query: unit * s for query, s in spread.items()},
                marginals=[] if layout.plain else layout.marginal_sigmas(release.sigma),
                remainder=release.remainder,
                remainder_std=release.remainder_sigma,
                total_estimates=_total_estimates(stored, queries, ready, answers),
            )
        )
    return records

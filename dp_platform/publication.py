"""What an advertiser may see of a campaign: its write-once releases and their post-processing.

One reading of the ledger for every reader of releases — ``dp-platform releases``, the Dagster
UI's release metadata, and the check that the published answers equal the post-processing of
the stored releases — so the three can never disagree. Reads only DP values (noisy vectors, r_i,
σ_i, charges) and the registered plan's public workload; no true value, no SVT threshold.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dp_platform.ledger import Ledger
from dp_platform.privacy.accounting import Rho
from dp_platform.workload import query_ends

__all__ = ["PublishedDay", "published_days"]


@dataclass(frozen=True)
class PublishedDay:
    """Day ``day``'s release as published, with the answers of the queries ending that day."""

    day: int
    bound: float
    sigma: float
    rho_charged: float
    rho_spent: float  # charges of days 1..day (campaign-level releases come after the last day)
    rho_planned: float
    values: dict[str, float]
    answers: dict[str, dict[str, float]]  # query number (1-based) → publisher → answer
    answer_std: dict[str, float]  # query number → std of its total over publishers

    def to_json(self) -> dict:
        return {
            "day": self.day,
            "bound": self.bound,
            "sigma": self.sigma,
            "rho_charged": self.rho_charged,
            "values": self.values,
            "answers": self.answers,
        }


def published_days(ledger: Ledger, campaign: str) -> list[PublishedDay]:
    """Every released day of ``campaign`` in order (empty for a one-shot campaign)."""
    info = ledger.campaign_info(campaign)
    stream = info["plan"]["stream"]
    if stream is None:  # mode: one_shot — no daily releases
        return []
    queries = np.asarray(stream["plan"]["queries"], dtype=np.float64)
    ends = query_ends(queries)
    publishers = info["publishers"]
    budget = ledger.campaign_budget(campaign)
    spent = Rho.zero()
    records, history, variances = [], [], []
    for release in ledger.releases(campaign):
        history.append(release.values)
        variances.append(release.sigma**2)
        day = release.day
        charged = sum(budget.per_day.get(day, {}).values(), Rho.zero())
        spent = spent + charged
        ready = list(np.flatnonzero(ends == day))
        answers = queries[ready, :day] @ np.asarray(history)
        std = {
            str(int(j) + 1): math.sqrt(len(publishers) * float(queries[j, :day] ** 2 @ variances))
            for j in ready
        }
        records.append(
            PublishedDay(
                day=day,
                bound=release.bound,
                sigma=release.sigma,
                rho_charged=float(charged),
                rho_spent=float(spent),
                rho_planned=float(budget.planned),
                values=dict(zip(publishers, release.values, strict=True)),
                answers={
                    str(int(j) + 1): dict(zip(publishers, (float(v) for v in row), strict=True))
                    for j, row in zip(ready, answers, strict=True)
                },
                answer_std=std,
            )
        )
    return records

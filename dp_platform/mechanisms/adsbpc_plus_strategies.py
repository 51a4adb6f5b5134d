"""AdsBPC+'s noise strategy: the (banded) square-root factorization C and the rule that picks it.

Day i releases row i of C·x̄ + N(0, diag(σ²)); the diagonal strategy (C = I) is the plan
:func:`~dp_platform.mechanisms.adsbpc_plus.make_plan` starts from, and ``auto`` keeps whichever
plan — diagonal, sqrt, or banded at any band — plans the lowest error for the campaign's
workload (docs/algorithm.md#adsbpc-plus). Everything here is data-independent: it runs before
day 1.
"""

from __future__ import annotations

import math
from dataclasses import replace
from fractions import Fraction
from typing import Literal

import numpy as np

from dp_platform.config import CampaignConfig
from dp_platform.mechanisms.adsbpc_plus_plan import PlusPlan, check_sigma_range
from dp_platform.privacy.accounting import gaussian_sigma
from dp_platform.privacy.strategy import (
    StrategyKind,
    banded_sqrt_matrix,
    column_weights,
    cross_weight,
    decoder,
    planned_error,
)
from dp_platform.workload import query_weights

__all__ = ["auto_strategy", "best_band", "strategy_plan"]


def _objective(campaign: CampaignConfig, plan: PlusPlan, matrix: np.ndarray, sigma: tuple) -> float:
    objective = campaign.objective
    weights = query_weights(objective, plan.queries.shape[0]) if objective.kind == "wsum" else None
    kind = "maxvar" if objective.kind == "maxvar" else "wsum"
    return planned_error(plan.queries, matrix, np.asarray(sigma), objective=kind, weights=weights)


def _one_sigma_objective(campaign: CampaignConfig, plan: PlusPlan, matrix: np.ndarray) -> float:
    """The planned error of ``matrix`` with one σ̄ for every row (the normalisation of
    privacy/strategy.py): the objective at σ̄ = 1 times Σ_t ‖C_t‖², up to the same factor."""
    ones = (1.0,) * plan.days
    return _objective(campaign, plan, matrix, ones) * float((matrix**2).sum())


def best_band(campaign: CampaignConfig, plan: PlusPlan) -> int:
    """The band b in 2..n with the lowest planned error (the first of equals; b = n is sqrt)."""
    errors = [
        _one_sigma_objective(campaign, plan, banded_sqrt_matrix(plan.days, band))
        for band in range(2, plan.days + 1)
    ]
    return 2 + int(np.argmin(errors))


def auto_strategy(campaign: CampaignConfig, plan: PlusPlan) -> PlusPlan:
    """The plan — diagonal, sqrt or banded at :func:`best_band` — with the lowest planned error
    for the campaign's workload and objective (wsum or maxvar) at the same reference user
    (privacy/strategy.py): public, fixed before day 1, the same rule for every campaign; a tie
    keeps the diagonal, and among bands the shortest. ``min_budget`` keeps the diagonal."""
    if campaign.objective.kind == "min_budget" or plan.days < 2:
        return plan
    band = best_band(campaign, plan)
    kind = "sqrt" if band == plan.days else "banded"
    correlated = strategy_plan(campaign, plan, kind, band)
    diagonal = _objective(campaign, plan, np.eye(plan.days), plan.sigma_bar)
    planned = _objective(campaign, correlated, correlated.matrix, correlated.sigma_bar)
    return correlated if planned < diagonal else plan


def strategy_plan(
    campaign: CampaignConfig, plan: PlusPlan, kind: Literal["sqrt", "banded"], band: int | None
) -> PlusPlan:
    """The plan with strategy ``kind``: ``sqrt`` is the banded factorization at b = n,
    ``banded`` the one at ``band`` (:func:`best_band` when None)."""
    if kind == "sqrt":
        band = plan.days
    elif band is None:
        band = best_band(campaign, plan)
    return _with_matrix(campaign, plan, banded_sqrt_matrix(plan.days, band), kind)


def _with_matrix(
    campaign: CampaignConfig, plan: PlusPlan, c: np.ndarray, kind: StrategyKind
) -> PlusPlan:
    """The plan with strategy C = ``c``: one σ̄ for every row, Σ_t ‖C_t‖²/(2σ̄²) ≤ ρ1
    (the normalisation of privacy/strategy.py), row shares g_t ∝ ‖C_t‖² summing to ρ1 exactly,
    w_j and κ from X̃, a_t = Σ_q γ_q² (QC⁻¹)_qt²."""
    rho1 = plan.budget.rho1.value
    rows = [Fraction(float(v)) for v in (c**2).sum(axis=1)]
    total = sum(rows, Fraction(0))
    allotments = tuple(rho1 * r / total for r in rows)
    sigma = gaussian_sigma(math.sqrt(float(total)), rho1)
    sigma_bar = (sigma,) * plan.days
    check_sigma_range(plan.config, sigma_bar)
    objective = campaign.objective
    gamma2 = (
        query_weights(objective, plan.queries.shape[0])
        if objective.kind == "wsum"
        else np.ones(plan.queries.shape[0])
    )
    variance = (gamma2[:, None] * decoder(plan.queries, c) ** 2).sum(axis=0)
    return replace(
        plan,
        allotments=allotments,
        sigma_bar=sigma_bar,
        day_weights=tuple(float(w) for w in column_weights(c, np.asarray(sigma_bar))),
        variance_weights=tuple(float(v) for v in variance),
        strategy_kind=kind,
        strategy=c,
        cross_weight=cross_weight(c, np.asarray(sigma_bar)),
    )

"""A candidate measured for AdsBPC+ and not adopted: the profile scale s by estimated bias² +
variance instead of the q-quantile (docs/results.md, "Candidates"). Evaluation only.

Where the noisy profile is readable — where the production rule takes its confidence bound U
rather than the prior s0 (U ≤ s0, or the lower bound L > s0) — s minimises the campaign
objective J(s) = Σ_q w_q (bias_q(s)² + Var_q(s)) (wsum; max_q for maxvar) over the profile's
public bin edges; elsewhere s is the production rule's (:func:`estimate_scale`). Var_q(s) is
s² times the rows after day m's variance. Bias: a user of bin j (profile T_j, the bin's
geometric centre) is cut at the first row where a flat user's cost share (the plan's
allotments) reaches s²/T_j, and loses a_j conversions a day from then on (:func:`daily_amount`,
the fewest a day of squared norm T_j can hold)
— through C: the loss of query q is a_j·(Q(1 − C⁻¹v))_q, v the rows of a flat user up to the
cut — spread over the k publishers; summed with the noisy bin counts (point estimate).
Post-processing of the noisy profile with public values: it costs nothing more.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from dp_platform.mechanisms.adsbpc_plus_bound import PlusChoice, PlusState, decide, estimate_scale
from dp_platform.mechanisms.adsbpc_plus_plan import (
    PROFILE_BINS,
    PROFILE_EDGES,
    SCALE_Z,
    PlusPlan,
    profile_top,
)
from dp_platform.mechanisms.adsbpc_plus_scale import scale_interval, scale_objective
from dp_platform.privacy.noise import NoiseSource
from dp_platform.privacy.noisy_histogram import noisy_histogram
from dp_platform.privacy.quantile import cap_histogram

__all__ = ["daily_amount", "mse_choose", "mse_scale"]

ScaleRule = Callable[[np.ndarray], float]


def daily_amount(norm2: np.ndarray) -> np.ndarray:
    """The fewest conversions a day of mean squared norm T can hold: T when T ≤ 1 (days of at
    most one conversion: norm² = count) and √T above (all on one cell: norm = count)."""
    t = np.asarray(norm2, dtype=np.float64)
    return np.minimum(t, np.sqrt(t))


def mse_scale(plan: PlusPlan, publishers: int, weights: np.ndarray | None) -> ScaleRule:
    """The rule for ``plan`` (module doc); ``weights`` w_q of a wsum objective, None: maxvar."""
    cfg = plan.config
    n, m = plan.days, cfg.profile_days
    parts = scale_objective(plan)  # the production rule's public parts: the same model
    late, share, loss, centre, amount = (
        parts.late,
        parts.share,
        parts.loss,
        parts.centre,
        parts.amount,
    )
    top = profile_top(plan)
    assert plan.sigma_profile is not None
    sigma = plan.sigma_profile

    def rule(noisy: np.ndarray) -> float:
        quantile = estimate_scale(noisy, cfg.quantile, top, sigma=sigma, prior=plan.prior)
        h = np.asarray(noisy, dtype=np.float64)
        lower, upper = scale_interval(h, cfg.quantile, top, sigma=sigma, z=SCALE_Z)
        prior = plan.prior
        if not (h.sum() > 0 and (upper <= prior or lower > prior)):
            return quantile  # the interval cannot rule s0 out: the production rule's s0
        best, chosen = math.inf, quantile
        for e in range(1, PROFILE_BINS + 1):
            s = top * math.sqrt(PROFILE_EDGES[e])
            fraction = s * s / centre
            cut = np.where(fraction >= 1.0, n, np.maximum(np.searchsorted(share, fraction), m))
            bias = -((h * amount) @ loss[cut]) / max(publishers, 1)
            terms = late * s * s + bias**2
            value = float(terms.max() if weights is None else weights @ terms)
            if value < best:
                best, chosen = value, s
        return chosen

    return rule


def mse_choose(rule: ScaleRule) -> Callable[..., tuple[PlusChoice, PlusState]]:
    """choose_bound with ``rule`` for s: the same draws in the same order (so a seeded run is
    paired with the production rule's), then :func:`decide`."""

    def choose(
        plan: PlusPlan,
        state: PlusState,
        histogram: np.ndarray,
        *,
        publishers: int,
        profile: np.ndarray | None,
        noise: NoiseSource,
    ) -> tuple[PlusChoice, PlusState]:
        capped = cap_histogram(histogram, plan.config.cap)[1:]
        noisy = noisy_histogram(
            capped, plan.sigma_histogram, rho=plan.budget.histogram_day, noise=noise
        )
        estimate = state.scale_estimate
        if plan.needs_profile(state.day + 1):
            assert profile is not None and plan.sigma_profile is not None
            noisy_profile = noisy_histogram(
                profile, plan.sigma_profile, rho=plan.budget.profile, noise=noise
            )
            estimate = rule(noisy_profile)
        return decide(plan, state, noisy, estimate, publishers=publishers)

    return choose

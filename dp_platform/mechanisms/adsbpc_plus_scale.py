"""AdsBPC+'s profile scale s chosen by the workload's expected error, not by head count.

The q-quantile rule (:func:`~dp_platform.mechanisms.adsbpc_plus_bound.estimate_scale`) cuts
the top 1 − q of users whatever they hold. On a heavy-tailed population (Zipf-like buyers) the
few users above it hold many conversions: the filter stops them part-way through the campaign,
every publisher loses them the same way, and that bias, summed over publishers, dominates the
campaign total. The quantile rule also takes its upper confidence bound U when the profile
shows the quantile is above the prior, and U is the top of the range when the tail is too thin
to read (a few thousand users): the whole campaign's noise then scales with the top.

:func:`objective_scale` keeps the quantile rule as a *floor* — below the quantile the error
climbs steeply, as the bias of cutting ordinary users grows — and picks s at or above it that
minimises the planned error of the workload, per publisher and on the all-publisher total:

    J(s) = Σ_q w_q [(1 + λ)·s²·V_q + (1/k² + λ/k)·B_q(s)²]

V_q: the variance of query q per unit s² from the rows after day m (their σ is σ̄_t·s).
B_q(s): the conversions query q loses when the filter stops the users above s: a user of
profile bin j (T_j its geometric centre) spends a flat user's cumulative share of ρ1 times
T_j/s², so is stopped at the first row where that share reaches s²/T_j (never before day
m + 1), and loses a_j = min(T_j, √T_j) conversions a day from then on (the fewest a day of
mean squared norm T_j holds), through the strategy: a_j·(Q(1 − C⁻¹v))_q with v the rows it
kept. Per publisher that is B/k (spread over the k publishers), on the total B (noise: k·V).
λ (``total_weight``) weighs the total's MSE against the publishers' mean MSE, scaled by 1/k.
w_q: the objective's γ² (wsum) or the worst query (maxvar).

Counts the profile cannot tell from noise are not read as users: from the first bin whose
users-at-or-above do not exceed z·σ·√(bins) upwards every bin counts as empty, and negative
noisy counts as 0.
When the noisy profile rules the prior out at confidence (L > s0) the floor is L, not U.

Privacy: reads only the noisy profile (a DP output), its public σ, the public plan and the
frozen number of publishers k: post-processing, free; the ledger charges ρ_p exactly as the
quantile rule does.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.linalg import solve_triangular

from dp_platform.mechanisms.adsbpc_plus_plan import (
    PROFILE_BINS,
    PROFILE_EDGES,
    SCALE_Z,
    PlusPlan,
    profile_edge,
    profile_top,
)
from dp_platform.privacy.noisy_histogram import tail_counts
from dp_platform.privacy.strategy import decoder

__all__ = [
    "ScaleObjective",
    "objective_scale",
    "readable_counts",
    "scale_interval",
    "scale_objective",
]


def scale_interval(
    noisy_profile: np.ndarray, quantile: float, cap: float, *, sigma: float, z: float
) -> tuple[float, float]:
    """(L, U): the confidence bounds of the profile's q-quantile in conversions
    (:func:`~dp_platform.mechanisms.adsbpc_plus_bound.estimate_scale` derives them); the top
    ``cap`` where no bin qualifies."""
    h = np.asarray(noisy_profile, dtype=np.float64)
    active = float(h.sum())
    above = np.arange(PROFILE_BINS - 1, -1, -1, dtype=np.float64)  # t_j: bins above bin j
    sd = sigma * np.sqrt(quantile**2 * above + (1.0 - quantile) ** 2 * (PROFILE_BINS - above))
    excess = tail_counts(h) - (1.0 - quantile) * active
    upper_bins = np.flatnonzero(excess + z * sd <= 0.0)
    upper = float(cap) if upper_bins.size == 0 else profile_edge(cap, upper_bins[0] + 1)
    lower_bins = np.flatnonzero(excess - z * sd <= 0.0)
    lower = float(cap) if lower_bins.size == 0 else profile_edge(cap, lower_bins[0])
    return lower, upper


@dataclass(frozen=True)
class ScaleObjective:
    """The public, data-independent parts of J(s) for one plan (module doc)."""

    late: np.ndarray  # (queries,) V_q: variance per unit s² from the rows after day m
    loss: np.ndarray  # (n + 1, queries): conversions lost per daily unit, by stopping row
    share: np.ndarray  # (n,) a flat user's cumulative share of ρ1 after each row
    centre: np.ndarray  # (bins,) T_j, the geometric centre of profile bin j
    amount: np.ndarray  # (bins,) a_j = min(T_j, √T_j)
    candidates: np.ndarray  # (bins,) the upper edges of the bins in conversions: s's grid
    weights: np.ndarray | None  # w_q = γ_q² (wsum); None: the worst query (maxvar)
    total_weight: float
    profile_days: int

    def value(self, scale: float, counts: np.ndarray, publishers: int) -> float:
        """J(s) for the (non-negative) bin counts ``counts`` and k = ``publishers``."""
        days = self.share.size
        fraction = scale * scale / self.centre
        stop = np.where(
            fraction >= 1.0,
            days,
            np.maximum(np.searchsorted(self.share, fraction), self.profile_days),
        )
        lost = (counts * self.amount) @ self.loss[stop]
        k = float(max(publishers, 1))
        lam = self.total_weight
        terms = (1.0 + lam) * scale * scale * self.late + (1.0 / k**2 + lam / k) * lost**2
        return float(terms.max() if self.weights is None else self.weights @ terms)


def scale_objective(plan: PlusPlan) -> ScaleObjective:
    """Precompute J's public parts from the plan (once per decision; cheap: n ≤ a few hundred)."""
    n, m = plan.days, plan.config.profile_days
    c = plan.matrix
    sigma_bar = np.asarray(plan.sigma_bar)
    late = (decoder(plan.queries, c)[:, m:] ** 2) @ sigma_bar[m:] ** 2
    share = np.cumsum([float(g) for g in plan.allotments]) / float(plan.budget.rho1)
    # a flat user stopped at row ``stop`` keeps rows 1..stop − 1 (kept[stop, t], t < stop):
    # the release decodes C⁻¹·kept for every stop at once, and loses Q(1 − C⁻¹·kept)
    kept = np.tril(np.ones((n + 1, n)), -1) * c.sum(axis=1)
    released = solve_triangular(c, kept.T, lower=True).T
    loss = (1.0 - released) @ np.asarray(plan.queries, dtype=np.float64).T
    top = profile_top(plan)
    edges = top * top * PROFILE_EDGES
    centre = np.sqrt(edges[:-1] * edges[1:])
    weights = None if plan.scale_weights is None else np.asarray(plan.scale_weights)
    return ScaleObjective(
        late=late,
        loss=loss,
        share=share,
        centre=centre,
        amount=np.minimum(centre, np.sqrt(centre)),
        candidates=top * np.sqrt(PROFILE_EDGES[1:]),
        weights=weights,
        total_weight=plan.total_weight,
        profile_days=m,
    )


def readable_counts(noisy_profile: np.ndarray, sigma: float, z: float) -> np.ndarray:
    """The bins read as users: from the bottom up to the first bin whose users-at-or-above do
    not exceed z·σ·√(bins at or above) — there the profile stops telling users from noise —
    with negative noisy counts read as 0. The scan stops at the first such bin: a noise spike
    high above the data (z is a per-bin level, so one of the 48 bins passes by chance in about
    SCALE_ALPHA of profiles) must not make the empty bins between read as users."""
    h = np.asarray(noisy_profile, dtype=np.float64)
    at_or_above = np.cumsum(h[::-1])[::-1]
    width = np.arange(PROFILE_BINS, 0, -1, dtype=np.float64)
    hidden = np.flatnonzero(at_or_above <= z * sigma * np.sqrt(width))
    last = hidden[0] - 1 if hidden.size else PROFILE_BINS - 1
    return np.where(np.arange(PROFILE_BINS) <= last, np.maximum(h, 0.0), 0.0)


def objective_scale(
    plan: PlusPlan,
    noisy_profile: np.ndarray,
    *,
    sigma: float,
    publishers: int,
    prior: float,
    z: float = SCALE_Z,
) -> float:
    """s: the floor of the quantile rule, or the candidate above it with the least J(s).

    ``sigma``/``z``: the profile's noise σ and the confidence multiplier (the non-private
    oracle of the evaluation passes exact counts with z = 0 and prior = the top)."""
    h = np.asarray(noisy_profile, dtype=np.float64)
    if h.shape != (PROFILE_BINS,):
        raise ValueError(f"the profile histogram has {PROFILE_BINS} bins")
    top = profile_top(plan)
    if not 0 < prior <= top:
        raise ValueError(f"prior must be in (0, {top}]")
    if not float(h.sum()) > 0:
        return float(prior)
    lower, upper = scale_interval(h, plan.config.quantile, top, sigma=sigma, z=z)
    # L > s0: the data rule the prior out, and U may be the top when the tail is thin
    floor = lower if lower > prior else min(upper, prior)
    objective = scale_objective(plan)
    counts = readable_counts(h, sigma, z)
    best, chosen = objective.value(floor, counts, publishers), floor
    for candidate in objective.candidates:
        if candidate <= floor:
            continue
        value = objective.value(float(candidate), counts, publishers)
        if value < best:
            best, chosen = value, float(candidate)
    if not math.isfinite(chosen):
        raise ValueError("the profile scale is not finite")
    return chosen

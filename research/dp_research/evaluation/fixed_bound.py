"""What a generic-library user gets: a fixed per-day bound and independent daily Gaussian noise.

The baseline issue 27 asks for: the release someone would build with a general DP library
(Tumult Analytics, PipelineDP) from the same conversions at the same ρ, without a
workload-shaped strategy or a data-dependent bound. Each day, every user's conversions are
clipped to a fixed bound b (their first b of the day, fractionally at ⌊b⌋, as
:meth:`~.prepared.PreparedData.per_day_clipped` does): one user then moves the day's
per-publisher vector by at most b in L1, so by at most b in ℓ2. The day's vector gets
independent N(0, σ²) noise per publisher with zCDP ρ/n a day — σ the smallest with
b²/(2σ²) ≤ ρ/n (:func:`~dp_platform.privacy.accounting.gaussian_sigma`) — so n days compose to
ρ. Every query is answered from the noisy days (Q·x̃, post-processing), and the expected error
is Var + bias² exactly as for AdsBPC's days (:func:`~.methods.daily_outcome`).

Two choices of b:

- ``fixed_3``: b = 3, a round number such a user might pick unaided (private: b is public).
- ``fixed_hindsight``: **NOT PRIVATE** — b* minimises the analytic per-publisher error (the
  tables' metric, :func:`~.metrics.workload_error`) computed on the *true* data, over a public
  grid of 0.25 steps on [0.25, Λ] (Λ the dataset's cap), extended to [0.25, GS] when the best
  is Λ itself. It is the strongest fixed bound anyone could have chosen, i.e. a lower envelope
  of this baseline, not something a private release could reach. Its campaign total is scored
  at b*_total, tuned the same way for the all-publisher total series: a bias shared by every
  publisher adds up before squaring while the noise adds in variance, so the total tends to
  prefer a larger bound, and no single b need be the best for both (both are in the JSON).

Evaluation on synthetic or public data with seeded noise, not a release (:mod:`.adsbpc_runs`).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from dp_platform.privacy.accounting import gaussian_rho, gaussian_sigma
from dp_platform.privacy.noise import NoiseSource
from dp_research.baselines import Workload
from dp_research.evaluation.adsbpc_runs import DailyRun
from dp_research.evaluation.metrics import workload_error
from dp_research.evaluation.prepared import PreparedData

__all__ = [
    "DEFAULT_BOUND",
    "GRID_STEP",
    "Hindsight",
    "bound_grid",
    "daily_rho",
    "daily_sigma",
    "fixed_errors",
    "fixed_run",
    "tune_in_hindsight",
    "zcdp_charged",
]

DEFAULT_BOUND = 3.0
GRID_STEP = 0.25


def daily_rho(rho: float, days: int) -> Fraction:
    """Each day's share of ρ, exactly: ρ/n."""
    return Fraction(repr(float(rho))) / days


def daily_sigma(bound: float, rho: float, days: int) -> float:
    """σ of every day's noise: the smallest float with b²/(2σ²) ≤ ρ/n (ℓ2 sensitivity b)."""
    return gaussian_sigma(bound, daily_rho(rho, days))


def zcdp_charged(bound: float, rho: float, days: int) -> float:
    """ρ the n daily draws spend, from σ and the sensitivity: n·b²/(2σ²)."""
    return float(days * gaussian_rho(bound, daily_sigma(bound, rho, days)))


def fixed_run(data: PreparedData, bound: float, rho: float, noise: NoiseSource) -> DailyRun:
    """One repeat: every day's clipped vector plus N(0, σ²) per publisher, declared to the
    sampler at ℓ2 sensitivity b and ρ/n (it refuses a draw that would cost more)."""
    n = data.n_days
    bounds = np.full(n, float(bound))
    sigma = daily_sigma(bound, rho, n)
    share = daily_rho(rho, n)
    clipped = data.per_day_clipped(bounds)
    released = np.empty_like(clipped)
    for day in range(n):
        released[:, day] = noise.add_gaussian(
            clipped[:, day], sigma, l2_sensitivity=float(bound), rho=share
        )
    return DailyRun(bounds, np.full(n, sigma), released, ("fixed",) * n)


def bound_grid(top: float) -> np.ndarray:
    """The public grid 0.25, 0.5, …, ``top``."""
    return GRID_STEP * np.arange(1, round(top / GRID_STEP) + 1)


def fixed_errors(
    data: PreparedData, workload: Workload, bound: float, rho: float
) -> tuple[np.ndarray, np.ndarray]:
    """(Var_q (m,), bias (P × m)) of the release at ``bound``: no draw needed."""
    q = workload.matrix
    sigma = np.full(data.n_days, daily_sigma(bound, rho, data.n_days))
    variances = (q**2) @ sigma**2  # the arithmetic of methods.daily_outcome
    bias = data.per_day_clipped(np.full(data.n_days, float(bound))) @ q.T - data.truth @ q.T
    return variances, bias


@dataclass(frozen=True)
class Hindsight:
    """NOT PRIVATE: the grid's best bounds on the true data, and their analytic errors."""

    bound: float  # b*: the per-publisher metric's
    total_bound: float  # b*_total: the all-publisher total's
    error: float
    total_error: float
    grid_top: float  # Λ, or GS when the grid was extended for either criterion


def tune_in_hindsight(
    data: PreparedData, workload: Workload, rho: float, *, cap: float, global_bound: float
) -> Hindsight:
    """b* and b*_total over [0.25, Λ] — over [0.25, GS] for a criterion whose best is Λ."""
    errors: dict[float, tuple[float, float]] = {}

    def evaluate(grid: np.ndarray) -> None:
        for b in grid:
            if float(b) not in errors:
                variances, bias = fixed_errors(data, workload, float(b), rho)
                per_publisher = workload_error(variances[None, :] + bias**2, workload)
                total = bias.shape[0] * variances + bias.sum(axis=0) ** 2
                errors[float(b)] = (per_publisher, workload_error(total, workload))

    def best(criterion: int, grid: np.ndarray) -> float:
        return min((float(b) for b in grid), key=lambda b: errors[b][criterion])

    short, extended = bound_grid(cap), bound_grid(max(global_bound, cap))
    evaluate(short)
    top = float(short[-1])
    chosen = []
    for criterion in (0, 1):
        b = best(criterion, short)
        if b == float(short[-1]) and extended.size > short.size:
            evaluate(extended)
            b = best(criterion, extended)
            top = float(extended[-1])
        chosen.append(b)
    return Hindsight(chosen[0], chosen[1], errors[chosen[0]][0], errors[chosen[1]][1], top)

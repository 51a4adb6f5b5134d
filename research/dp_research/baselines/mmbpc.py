"""MMBPC: the matrix mechanism with bounded per-day contributions (docs/baselines.md#mmbpc)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dp_research.baselines.contributions import Conversions, clip_per_day
from dp_research.baselines.matrix import StrategyKind, decoder_for, prefix_strategy
from dp_research.baselines.plan import LinearPlan, gaussian_sigma
from dp_research.baselines.sensitivity import PerDayRule, per_day_sensitivity
from dp_research.baselines.workloads import Workload

__all__ = ["MMBPC"]


@dataclass(frozen=True)
class MMBPC:
    """Matrix mechanism on per-day clipped data, with the per-day bounds r AdsBPC chose.

    - Privacy unit: the user. Adjacency: add/remove one user with all their conversions.
    - Contribution bound: on day i a user keeps at most r_i conversions (time order), summed
      over publishers; ``r`` is given by the caller (the same r as AdsBPC's run).
    - Sensitivity (vertices r ⊙ 1_S): Δ² = rᵀXr = ‖B r‖² when X = BᵀB ≥ 0, which holds for
      both prefix strategies; otherwise the upper bound rᵀ|X|r. ``sensitivity="group"`` is the
      looser group-privacy reading Σ r_i‖b_i‖.
    - Noise: σ² = Δ²/(2ρ) on every strategy row and publisher. Cost: exactly ρ-zCDP for the
      measurement. **The cost of choosing r is not included**: if r is AdsBPC's private
      estimate, the caller decides whether MMBPC pays it too (pass ρ1 = 0.7ρ here to match
      AdsBPC's measurement budget) or gets r for free (pass ρ) — docs/baselines.md#decisions,
      item 7.
    - ``rescale``: apply B to x ⊘ r and decode with Q·diag(r)·B⁻¹ (variant ii; equal to the
      default when r is constant).
    """

    r: tuple[float, ...]
    rho: float
    strategy: StrategyKind = "sqrt"
    weights: tuple[float, ...] | None = None
    sensitivity: PerDayRule = "auto"
    rescale: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "r", tuple(float(v) for v in self.r))
        if any(not (v >= 0 and np.isfinite(v)) for v in self.r):
            raise ValueError("per-day bounds r must be finite and >= 0")

    def clip(self, conversions: Conversions, n_publishers: int, n_days: int) -> np.ndarray:
        """The (P × n) counts after per-day clipping to r."""
        kept = clip_per_day(conversions, np.asarray(self.r))
        return conversions.to_matrix(kept, n_publishers, n_days)

    def plan(self, workload: Workload) -> LinearPlan:
        """Data-independent calibration (given r): B, L and σ."""
        r = np.asarray(self.r)
        if r.shape != (workload.n,):
            raise ValueError(f"need one bound per day ({workload.n}), got {len(r)}")
        weights = None if self.weights is None else np.asarray(self.weights)
        base = prefix_strategy(workload.n, self.strategy, weights)
        queries = workload.matrix
        if self.rescale:
            inverse_r = np.divide(1.0, r, out=np.zeros_like(r), where=r > 0)
            strategy, queries = base * inverse_r[None, :], queries * r[None, :]
        else:
            strategy = base
        sensitivity = per_day_sensitivity(strategy, r, self.sensitivity)
        return LinearPlan(
            name=f"MMBPC {self.strategy}",
            strategy=strategy,
            decoder=decoder_for(queries, base),
            sigma=gaussian_sigma(sensitivity, self.rho),
            sensitivity=sensitivity,
            rho=self.rho,
            query_ends=workload.ends,
        )

"""UMM: the event-level matrix mechanism lifted to users by a global cap (docs/baselines.md#umm)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dp_research.baselines.contributions import Conversions, clip_global
from dp_research.baselines.matrix import StrategyKind, decoder_for, prefix_strategy
from dp_research.baselines.plan import LinearPlan, gaussian_sigma
from dp_research.baselines.sensitivity import global_sensitivity
from dp_research.baselines.workloads import Workload

__all__ = ["UMM"]


@dataclass(frozen=True)
class UMM:
    """User-level matrix mechanism: y = B x + N(0, σ²), answers L y with L = Q B⁻¹.

    - Privacy unit: the user. Adjacency: add/remove one user with all their conversions.
    - Contribution bound: a user's first ``gs`` conversions in time order (global cap).
    - Sensitivity: GS · max_i ‖b_i‖ (vertices GS·e_i; equals group privacy over GS events).
      For the square-root B that is GS·√s_n, for the optimal B (unit columns) it is GS.
    - Noise: σ² = Δ²/(2ρ) on every strategy row and publisher. Cost: exactly ρ-zCDP.
    - Strategy: square-root factorization (default) or the Denisov optimum for the weighted
      prefix objective (``strategy="optimal"``, ``weights`` = w_t, default γ²); windows reuse it.
    """

    gs: float
    rho: float
    strategy: StrategyKind = "sqrt"
    weights: tuple[float, ...] | None = None

    def clip(self, conversions: Conversions, n_publishers: int, n_days: int) -> np.ndarray:
        """The (P × n) counts after the global cap."""
        return conversions.to_matrix(clip_global(conversions, self.gs), n_publishers, n_days)

    def plan(self, workload: Workload) -> LinearPlan:
        """Data-independent calibration: B, L = Q B⁻¹ and σ."""
        weights = None if self.weights is None else np.asarray(self.weights)
        strategy = prefix_strategy(workload.n, self.strategy, weights)
        sensitivity = global_sensitivity(strategy, self.gs)
        return LinearPlan(
            name=f"UMM {self.strategy}",
            strategy=strategy,
            decoder=decoder_for(workload.matrix, strategy),
            sigma=gaussian_sigma(sensitivity, self.rho),
            sensitivity=sensitivity,
            rho=self.rho,
            query_ends=workload.ends,
        )

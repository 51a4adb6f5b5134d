"""IPA: i.i.d. Gaussian noise on every (publisher, day) count under a global cap
(docs/baselines.md#ipa)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dp_research.baselines.contributions import Conversions, clip_global
from dp_research.baselines.plan import LinearPlan, gaussian_sigma
from dp_research.baselines.sensitivity import global_sensitivity
from dp_research.baselines.workloads import Workload

__all__ = ["IPA"]


@dataclass(frozen=True)
class IPA:
    """Interoperable Private Attribution's DP step, with a trusted joiner.

    - Privacy unit: the user. Adjacency: add/remove one user with all their conversions.
    - Contribution bound: each user's first ``gs`` conversions in time order (global cap, the
      prototype's ``per_user_credit_cap``); afterwards Σ_{p,i} d_{p,i} ≤ GS.
    - Sensitivity: ‖d‖₂ ≤ ‖d‖₁ ≤ GS (all mass in one cell), so Δ = GS.
    - Noise: x̂_{p,i} = x_{p,i} + N(0, σ²), σ² = GS²/(2ρ). Cost: exactly ρ-zCDP.
    - Answers: prefix/window sums of the noisy days (post-processing): Var = t·σ² or K·σ².
    """

    gs: float
    rho: float

    def clip(self, conversions: Conversions, n_publishers: int, n_days: int) -> np.ndarray:
        """The (P × n) counts after the global cap (the data this mechanism may see)."""
        kept = clip_global(conversions, self.gs)
        return conversions.to_matrix(kept, n_publishers, n_days)

    def plan(self, workload: Workload) -> LinearPlan:
        """Data-independent calibration: S = I, D = Q, σ = GS/√(2ρ)."""
        strategy = np.eye(workload.n)
        sensitivity = global_sensitivity(strategy, self.gs)
        return LinearPlan(
            name="IPA",
            strategy=strategy,
            decoder=workload.matrix,
            sigma=gaussian_sigma(sensitivity, self.rho),
            sensitivity=sensitivity,
            rho=self.rho,
            query_ends=workload.ends,
        )

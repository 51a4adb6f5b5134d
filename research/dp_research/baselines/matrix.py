"""Strategy choice and decoding shared by the two matrix mechanisms, UMM and MMBPC
(docs/baselines.md#umm, docs/baselines.md#mmbpc).

Both use an event-level strategy B for the *prefix* workload and decode any workload Q with
L = Q B⁻¹ (for sliding windows the prefix strategy is reused, docs/baselines.md#strategies
(c): the sum-of-variance fixed point for W_K alone is singular — M = W_Kᵀ W_K has rank
n − K + 1 — and its optimum has negative Gram entries).
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from scipy.linalg import solve_triangular

from dp_research.baselines.factorization import optimal_strategy, sqrt_strategy
from dp_research.baselines.workloads import prefix_weights

__all__ = ["StrategyKind", "decoder_for", "prefix_strategy"]

StrategyKind = Literal["sqrt", "optimal"]


def prefix_strategy(
    n: int, kind: StrategyKind = "sqrt", weights: np.ndarray | None = None
) -> np.ndarray:
    """Lower-triangular event-level B for prefix sums (scale is irrelevant: Δ scales with B).

    - ``sqrt``: B·B = P_n (Henzinger et al.), the default, as the paper's [29].
    - ``optimal``: minimises Σ_t w_t ‖ℓ_t‖² with diag(BᵀB) = 1, w defaulting to the product's
      γ² = (1, …, 1, 49); pass ``prefix_weights(n, squared=False)`` for the oracle tables.
    """
    if kind == "sqrt":
        return sqrt_strategy(n)
    if kind != "optimal":
        raise ValueError(f"unknown strategy {kind!r}")
    w = prefix_weights(n) if weights is None else np.asarray(weights, dtype=np.float64)
    if w.shape != (n,) or np.any(w <= 0):
        raise ValueError(f"need {n} positive prefix weights, got shape {w.shape}")
    strategy, _ = optimal_strategy(np.sqrt(w)[:, None] * np.tril(np.ones((n, n))))
    return strategy


def decoder_for(queries: np.ndarray, strategy: np.ndarray) -> np.ndarray:
    """L = Q B⁻¹ by a triangular solve (lower-triangular B ⇒ the answer on day t reads y_{≤t})."""
    return solve_triangular(strategy, queries.T, trans="T", lower=True).T

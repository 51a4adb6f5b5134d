"""User-level ℓ2 sensitivity of a linear strategy S under the two contribution bounds
(docs/baselines.md#sensitivity).

Adjacency is add/remove one user (docs/baselines.md#privacy-model): the change is a
nonnegative d ∈ R^{P×n}. Δ(S) = max_d ‖S d‖₂ is the maximum of a convex function, so it is
attained at a vertex of the set of allowed changes. The same S is applied to every publisher,
and when X = SᵀS ≥ 0 spreading a user over publishers only drops nonnegative cross terms, so the
one-publisher value is the whole-release value (docs/baselines.md#multi-publisher; the tests
check it by enumeration).
"""

from __future__ import annotations

from typing import Literal

import numpy as np

__all__ = ["PerDayRule", "global_sensitivity", "per_day_sensitivity"]

PerDayRule = Literal["auto", "abs_bound", "group"]

_NONNEGATIVE_TOLERANCE = 1e-12


def global_sensitivity(strategy: np.ndarray, bound: float) -> float:
    """Global bound Σ_{p,i} d ≤ GS: vertices GS·e_i, so Δ = GS · max column norm of S."""
    if bound < 0:
        raise ValueError(f"bound must be >= 0, got {bound!r}")
    if strategy.size == 0:
        return 0.0
    return float(bound * np.sqrt(np.max(np.sum(strategy**2, axis=0))))


def per_day_sensitivity(
    strategy: np.ndarray, bounds: np.ndarray, rule: PerDayRule = "auto"
) -> float:
    """Per-day bound Σ_p d_{p,i} ≤ r_i.

    - ``auto``: exact Δ² = rᵀXr when X = SᵀS ≥ 0 entrywise (the all-days vertex is the worst);
      otherwise the valid upper bound rᵀ|X|r (the exact vertex maximum is NP-hard in general).
    - ``abs_bound``: always rᵀ|X|r (equal to ``auto`` when X ≥ 0).
    - ``group``: the group-privacy reading Σ_i r_i‖s_i‖ (triangle inequality; valid, looser).
    """
    r = np.asarray(bounds, dtype=np.float64)
    if r.shape != (strategy.shape[1],):
        raise ValueError(f"need one bound per day ({strategy.shape[1]}), got shape {r.shape}")
    if np.any(r < 0) or not np.all(np.isfinite(r)):
        raise ValueError("per-day bounds must be finite and >= 0")
    if rule == "group":
        return float(np.sum(r * np.sqrt(np.sum(strategy**2, axis=0))))
    gram = strategy.T @ strategy
    if rule == "auto" and gram.min() >= -_NONNEGATIVE_TOLERANCE:
        return float(np.sqrt(max(r @ gram @ r, 0.0)))
    if rule not in ("auto", "abs_bound"):
        raise ValueError(f"unknown per-day sensitivity rule {rule!r}")
    return float(np.sqrt(r @ np.abs(gram) @ r))

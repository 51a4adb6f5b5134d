"""Individual zCDP filter (Feldman & Zrnic, NeurIPS 2021): every user's Gaussian loss ≤ ρ1.

Privacy unit: one user. Adjacency: add/remove one user (only; see docs/privacy.md, "AdsBPC+").

Day i releases x[i] + N(0, σ_i² I) where x[i] = Σ_u c̄_{u,i} and c̄_{u,i} is user u's *clipped*
contribution vector over publishers. Given everything released before, removing u changes x[i]
by exactly c̄_{u,i} (nobody else's clipping depends on u), so day i costs u
``‖c̄_{u,i}‖₂² / (2σ_i²)`` — the Rényi divergence of every order α is α times it. The filter keeps
each user's running spend s_u and scales their day down so that s_u + cost ≤ ρ1; summed over
days, each user's loss is ≤ ρ1 with probability 1, hence the whole sequence is ρ1-zCDP under
fully adaptive composition (their Thm 3.1), provided σ_i and r_i are fixed from earlier outputs
and public values only. The cost is the squared L2 norm (weights spread over publishers cost
less), never ‖c‖₁².

Clipping order (docs/algorithm.md#clipping): a user's conversions of the day in (ts, conversion_id)
order; a conversion is kept whole while both limits hold, then one conversion is kept in part — the
largest fraction f ∈ [0, 1] meeting both the L1 cap (count ≤ r_i, fraction r_i − ⌊r_i⌋) and the
budget (‖C + f·w‖² ≤ 2σ_i²(cap − s_u), solved exactly from the quadratic) — and the rest are
dropped. For a conversion with weight vector w after full ones summing to C, with a = ‖w‖², b = ⟨C,
w⟩ and q = ‖C‖²: ‖C + f·w‖² = q + 2fb + f²a.

Floating point: the filter works against ``filter_cap(ρ1) = ρ1·(1 − 10⁻⁹)``, far more than the
≈10⁻¹⁵ relative rounding of these sums, so the exact spend of what was released (as rationals)
never exceeds ρ1. The SQL twin is ``warehouse/plus_filter.sql``; tests check they agree.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

__all__ = [
    "CAP_SLACK",
    "RESIDUAL",
    "budget_fraction",
    "filter_cap",
    "remaining",
    "worst_case_charge",
]

CAP_SLACK = 1e-9
RESIDUAL = 1e-12  # a remaining budget below RESIDUAL·cap is float noise: treated as spent


def remaining(cap: float, spend: np.ndarray) -> np.ndarray:
    """cap − s_u, or 0 when below RESIDUAL·cap (otherwise a first conversion would keep
    √(float noise) ≈ 10⁻⁸ of itself, and two correct implementations would disagree)."""
    left = cap - np.asarray(spend, dtype=np.float64)
    return np.where(left > RESIDUAL * cap, left, 0.0)


def filter_cap(rho1: Fraction | float) -> float:
    """The float budget the filter enforces: strictly inside ρ1 by a relative 10⁻⁹."""
    return float(rho1) * (1.0 - CAP_SLACK)


def budget_fraction(
    sq_before: np.ndarray, a: np.ndarray, b: np.ndarray, allowed: np.ndarray
) -> np.ndarray:
    """Largest f ∈ [0, 1] with sq_before + 2fb + f²a ≤ allowed (1 when a = 0: costs nothing)."""
    q = np.asarray(sq_before, dtype=np.float64)
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    room = np.asarray(allowed, dtype=np.float64) - q
    full = q + a + 2.0 * b <= allowed
    # (−b + √(b² + a·x))/a written as x/(b + √(b² + a·x)): no cancellation when a·x ≪ b².
    with np.errstate(divide="ignore", invalid="ignore"):
        root = room / (b + np.sqrt(np.maximum(b * b + a * room, 0.0)))
    part = np.where(room > 0, np.clip(root, 0.0, 1.0), 0.0)
    return np.where(full | (a == 0), 1.0, part)


def worst_case_charge(spent: Fraction, day_cost: Fraction, rho1: Fraction) -> Fraction:
    """Ledger charge of a day: the rise of min(ρ1, Σ_{t≤i} r_t²/(2σ_t²)), the most any one
    user can have lost so far (so a campaign stopped early never under-reports)."""
    return min(rho1, spent + day_cost) - spent

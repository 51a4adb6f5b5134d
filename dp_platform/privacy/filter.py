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

Cells measured by a correlated strategy (a residual one, dp_platform/cell_strategy.py): the
Gaussian is added to encode(x), so removing u moves it by encode(c̄_u) and the cost is
‖encode(c̄_u)‖²/(2σ²) — every norm and inner product above in the strategy's Gram (a, q ≥ 0
clamped against rounding; b may be negative, a conversion may lower the norm, so a user's day
stops at its first cut conversion explicitly). :func:`filter_user_day` is that loop.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Protocol

import numpy as np

__all__ = [
    "CAP_SLACK",
    "RESIDUAL",
    "InnerProduct",
    "budget_fraction",
    "filter_cap",
    "filter_user_day",
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
    # (−b + √(b² + a·x))/a, written as x/(b + √(b² + a·x)) when b ≥ 0: no cancellation either
    # way (b < 0 only under a correlated norm, where a conversion can lower the row's norm)
    with np.errstate(divide="ignore", invalid="ignore"):
        disc = np.sqrt(np.maximum(b * b + a * room, 0.0))
        root = np.where(b >= 0, room / (b + disc), (disc - b) / a)
    part = np.where(room > 0, np.clip(root, 0.0, 1.0), 0.0)
    return np.where(full | (a == 0), 1.0, part)


class InnerProduct(Protocol):
    """⟨encode(x), encode(y)⟩ of the release's cell strategy (cell_strategy.Gram)."""

    def inner(self, x: np.ndarray, y: np.ndarray) -> float: ...


def filter_user_day(
    conversions: np.ndarray,
    bound: float,
    allowed: float,
    norm: InnerProduct,
    *,
    past: np.ndarray | None = None,
    diagonal: float = 1.0,
) -> tuple[np.ndarray, np.ndarray]:
    """One user's day through the filter, written as a plain loop (the SQL's twin over cells):
    ``conversions`` (k × n) their entries of the released vector in (ts, id) order, ``allowed``
    = 2σ²·remaining(cap, s_u), ``norm`` the strategy's inner product, ``past`` = P_u and
    ``diagonal`` = C_tt of a correlated row. Returns each conversion's kept fraction and the
    released row α·(P_u + C_tt·Σ f_i w_i), whose ‖·‖² in ``norm`` is ≤ ``allowed``."""
    rows = np.asarray(conversions, dtype=np.float64)
    row = np.zeros(rows.shape[1]) if past is None else np.asarray(past, dtype=np.float64).copy()
    kept = np.zeros(rows.shape[0])
    start = max(norm.inner(row, row), 0.0)
    if start > allowed:
        return kept, row * math.sqrt(allowed / start)
    whole = math.floor(bound)
    for i, w in enumerate(rows[: whole + 1]):
        a = max(diagonal * diagonal * norm.inner(w, w), 0.0)
        b = diagonal * norm.inner(row, w)
        q = max(norm.inner(row, row), 0.0)
        budget = float(budget_fraction(np.array([q]), np.array([a]), np.array([b]), allowed)[0])
        kept[i] = min(1.0 if i < whole else bound - whole, budget)
        row = row + diagonal * kept[i] * w
        if kept[i] < 1.0:
            break
    return kept, row


def worst_case_charge(spent: Fraction, day_cost: Fraction, rho1: Fraction) -> Fraction:
    """Ledger charge of a day: the rise of min(ρ1, Σ_{t≤i} r_t²/(2σ_t²)), the most any one
    user can have lost so far (so a campaign stopped early never under-reports)."""
    return min(rho1, spent + day_cost) - spent

"""Lower-triangular noise strategies for AdsBPC+: release C·x + N(0, σ_t²) row by row.

Privacy unit: one user. Adjacency: add/remove one user. This module holds the public,
data-independent algebra only; the individual filter that makes each row private is
:mod:`dp_platform.privacy.filter` (docs/privacy.md, "AdsBPC+: the individual filter").

Day t's *row* is y_t = Σ_{j≤t} C_tj·x̄_j + N(0, σ_t² I), where x̄_j is day j's filtered
per-publisher (or per-cell) vector. C is lower-triangular, so row t reads days ≤ t only: it can
be released on day t. C is entrywise ≥ 0 with a positive diagonal (checked), which is what
lets the filter keep a user's conversions in order: adding a conversion never lowers a row's
norm. The day's *published* vector is the decoded x̂_t = (C⁻¹y)_t, computed on day t from y_t
and the earlier x̂_j (:func:`decode_day`): post-processing. Its noise is correlated across days;
:func:`decoded_std` gives the exact standard error of any linear function of x̂.

- ``diagonal``: C = I with the per-day shape σ̄_t of AdsBPC's plan (Σ_t 1/(2σ̄_t²) = ρ1) — the
  strategy of every AdsBPC+ campaign registered before strategies existed.
- ``sqrt``: the square-root factorization of the prefix-sum matrix (Toeplitz, coefficients of
  (1 − z)^{−1/2}; Henzinger, Upadhyay and Upadhyay, "Almost tight error bounds on differentially
  private continual counting", SODA 2023; Fichtenberger, Henzinger and Upadhyay, "Constant
  matters: fine-grained error bound on differentially private continual observation", ICML
  2023), one σ̄ for every row.
- ``banded``: that factorization with the lags ≥ b set to 0 — C_tj = c_{t−j} for t − j < b
  (Kalinin and Lampert, "Banded square root matrix factorization for differentially private
  model training", NeurIPS 2024), one σ̄ for every row. A row carries only the b − 1 days
  before it, so a user's cost has no cross-day terms between days b or more apart. On sliding
  windows of K days it plans a lower error than either (b = K; n = 31, K = 7: the worst
  window's variance 3.32 against 4.62 for ``sqrt`` and 7 for ``diagonal`` at the reference
  user below); b = 1 is C = I, b = n is ``sqrt``.

Normalisation: Σ_t Σ_j C_tj²/(2σ̄_t²) = ρ1, so a user who contributes a unit vector on every
day, to a different publisher each day, costs exactly ρ1 at unit scale — the same reference
user for every strategy, which makes their planned errors comparable (:func:`planned_error`).
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
from scipy.linalg import solve_triangular

__all__ = [
    "StrategyKind",
    "banded_sqrt_matrix",
    "bandwidth",
    "column_weights",
    "cost_gram",
    "cross_weight",
    "decode_day",
    "decoded_std",
    "decoder",
    "planned_error",
    "sqrt_coefficients",
    "sqrt_matrix",
    "validate",
    "worst_row_norm",
]

StrategyKind = Literal["diagonal", "sqrt", "banded"]


def sqrt_coefficients(n: int) -> np.ndarray:
    """c_0 = 1, c_k = c_{k−1}(2k − 1)/(2k): Taylor coefficients of (1 − z)^{−1/2}, all > 0."""
    k = np.arange(1, n)
    return np.concatenate(([1.0], np.cumprod((2 * k - 1) / (2 * k))))


def _lower_toeplitz(coefficients: np.ndarray) -> np.ndarray:
    """The n × n lower-triangular Toeplitz matrix whose k-th subdiagonal is coefficients[k]."""
    index = np.arange(coefficients.size)
    lag = index[:, None] - index[None, :]
    return np.where(lag >= 0, coefficients[np.clip(lag, 0, None)], 0.0)


def sqrt_matrix(n: int) -> np.ndarray:
    """Lower-triangular Toeplitz C with C·C = the n-day prefix-sum matrix."""
    return _lower_toeplitz(sqrt_coefficients(n))


def banded_sqrt_matrix(n: int, band: int) -> np.ndarray:
    """:func:`sqrt_matrix` with the entries ``band`` or more days below the diagonal set to 0
    (``band`` = n: the square root itself; 1: the identity). Entries stay ≥ 0."""
    if not 1 <= band <= n:
        raise ValueError(f"a band is 1..{n} days")
    coefficients = sqrt_coefficients(n)
    coefficients[band:] = 0.0
    return _lower_toeplitz(coefficients)


def bandwidth(matrix: np.ndarray) -> int:
    """b: 1 + the most days below the diagonal a nonzero entry lies (1 for the identity)."""
    rows, columns = np.nonzero(np.asarray(matrix))
    return 1 + int((rows - columns).max())


def validate(matrix: np.ndarray) -> np.ndarray:
    """``matrix`` as a strategy: square, lower-triangular, entries ≥ 0, diagonal > 0."""
    c = np.asarray(matrix, dtype=np.float64)
    if c.ndim != 2 or c.shape[0] != c.shape[1] or c.shape[0] == 0:
        raise ValueError("a strategy is a non-empty square matrix")
    if np.any(np.triu(c, 1) != 0) or np.any(c < 0) or not np.all(np.diag(c) > 0):
        raise ValueError("a strategy is lower-triangular, >= 0, with a positive diagonal")
    if not np.all(np.isfinite(c)):
        raise ValueError("a strategy has finite entries")
    return c


def cost_gram(matrix: np.ndarray, sigma_bar: np.ndarray) -> np.ndarray:
    """X̃ = Cᵀ diag(1/(2σ̄_t²)) C: a user with daily vectors c_j costs Σ_jk X̃_jk ⟨c_j, c_k⟩
    over the whole campaign at unit scale (before the filter cuts anything)."""
    c = np.asarray(matrix, dtype=np.float64)
    inverse = 1.0 / (2.0 * np.asarray(sigma_bar, dtype=np.float64) ** 2)
    return c.T @ (inverse[:, None] * c)


def column_weights(matrix: np.ndarray, sigma_bar: np.ndarray) -> np.ndarray:
    """w_j = X̃_jj / tr X̃: day j's share of the unit-scale cost of a user who contributes the
    same norm every day with no two days on one publisher (Σ w_j = 1)."""
    diagonal = np.diag(cost_gram(matrix, sigma_bar))
    return diagonal / diagonal.sum()


def cross_weight(matrix: np.ndarray, sigma_bar: np.ndarray) -> float:
    """κ = Σ_{j≠k} X̃_jk / tr X̃: how much a user whose days all fall on the same publishers
    (⟨c_j, c_k⟩ = ‖c‖² for all j, k) costs beyond a user whose days never share one; 0 for
    the diagonal strategy."""
    gram = cost_gram(matrix, sigma_bar)
    trace = float(np.trace(gram))
    return float((gram.sum() - trace) / trace)


def worst_row_norm(matrix: np.ndarray, bounds: np.ndarray, row: int) -> float:
    """max ‖Σ_{j≤t} C_tj c_j‖₂ over users with ‖c_j‖₂ ≤ r_j: Σ_j C_tj r_j (C ≥ 0; attained by a
    user at their bound every day on one publisher). ``row`` is 1-based; ``bounds`` r_1..r_t."""
    c = np.asarray(matrix, dtype=np.float64)
    r = np.asarray(bounds, dtype=np.float64)
    if r.shape != (row,):
        raise ValueError(f"row {row} needs the bounds of days 1..{row}")
    return float(c[row - 1, :row] @ r)


def decode_day(
    matrix: np.ndarray, row: np.ndarray, earlier: list[np.ndarray] | tuple[np.ndarray, ...]
) -> np.ndarray:
    """x̂_t = (y_t − Σ_{j<t} C_tj x̂_j)/C_tt from the noisy row y_t and the published x̂_j."""
    c = np.asarray(matrix, dtype=np.float64)
    t = len(earlier)
    y = np.asarray(row, dtype=np.float64)
    past = np.zeros_like(y)
    for j, x in enumerate(earlier):
        if c[t, j] != 0.0:
            past += c[t, j] * np.asarray(x, dtype=np.float64)
    return (y - past) / c[t, t]


def decoder(queries: np.ndarray, matrix: np.ndarray) -> np.ndarray:
    """Q C⁻¹ by one triangular solve (Cᵀ Xᵀ = Qᵀ): C is lower-triangular, and a general solve
    factorises it first — planning a 365-day campaign solves once per candidate band."""
    c = np.asarray(matrix, dtype=np.float64)
    q = np.asarray(queries, dtype=np.float64)
    return solve_triangular(c, q.T, trans="T", lower=True).T


def decoded_std(matrix: np.ndarray, sigmas: np.ndarray, functional: np.ndarray) -> float:
    """Standard error of ℓᵀx̂ (one publisher's entries) for rows noised at σ_1..σ_t:
    √(Σ_t ((ℓᵀC⁻¹)_t σ_t)²). ``functional`` ℓ has one weight per released day (t days)."""
    s = np.asarray(sigmas, dtype=np.float64)
    t = s.size
    ell = np.asarray(functional, dtype=np.float64)
    if ell.shape != (t,):
        raise ValueError(f"need one weight per released day ({t})")
    c = np.asarray(matrix, dtype=np.float64)[:t, :t]
    weights = decoder(ell[None, :], c)[0]  # ℓᵀC⁻¹
    return float(math.sqrt(float(np.sum((weights * s) ** 2))))


def planned_error(
    queries: np.ndarray,
    matrix: np.ndarray,
    sigma_bar: np.ndarray,
    *,
    objective: Literal["wsum", "maxvar"],
    weights: np.ndarray | None = None,
) -> float:
    """The campaign objective at unit scale: Σ_q γ_q² Var_q (wsum) or max_q Var_q (maxvar),
    Var_q = Σ_t ((QC⁻¹)_qt σ̄_t)² — the error the plan expects before any data is seen."""
    q = np.asarray(queries, dtype=np.float64)
    variances = (decoder(q, matrix) ** 2) @ np.asarray(sigma_bar, dtype=np.float64) ** 2
    if objective == "maxvar":
        return float(variances.max())
    w = np.ones(q.shape[0]) if weights is None else np.asarray(weights, dtype=np.float64)
    return float(w @ variances)

"""InitScales: per-day noise scales optimised for the advertiser's query workload
(docs/algorithm.md#scales).

The release of day i is x[i] + N(0, σ_i² I). With per-day bound r̄_i (= 1 at planning time) the
Gaussian part costs ρ1 = ½ Σ_i r̄_i²/σ_i² under add/remove (twice that under replace with several
publishers, which the caller folds into ρ1). Query j's variance is Var_j = Σ_i Q_ji² σ_i².
This module only shapes the variances v_i = σ_i² for a given ρ1 and a workload matrix (built
from the catalogue by :mod:`dp_platform.workload`); the exact budget allotment per day is made by
the mechanism. It knows nothing of the catalogue: the privacy core sits below it.

Objectives:
- ``wsum``: minimise Σ_i a_i v_i, a_i = Σ_j γ_j² Q_ji², closed form v_i = r̄_i S/(2ρ1√a_i),
  S = Σ_t r̄_t √a_t (Cauchy–Schwarz); :func:`wsum_cvxpy` solves the same problem numerically as
  an independent check.
- ``maxvar``: minimise max_j Var_j (convex in v; cvxpy with ``inv_pos``).
- ``min_budget``: minimise Σ r̄_i²/v_i subject to Var_j ≤ cap; the ρ1 that needs is reported and
  the shape is rescaled to the campaign's ρ1.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import numpy as np

if TYPE_CHECKING:
    import cvxpy

Objective = Literal["wsum", "maxvar", "min_budget"]

__all__ = [
    "Objective",
    "ScalePlan",
    "maxvar_scales",
    "min_budget_scales",
    "solve_scales",
    "wsum_closed_form",
    "wsum_cvxpy",
]

_SOLVER_OPTIONS = {
    "tol_gap_abs": 1e-14,
    "tol_gap_rel": 1e-14,
    "tol_feas": 1e-14,
    "tol_ktratio": 1e-10,
    "max_iter": 1000,
}
_ACCEPTED_STATUS = {"optimal", "optimal_inaccurate"}  # cvxpy.OPTIMAL, OPTIMAL_INACCURATE


def _check(matrix: np.ndarray, rho1: float, r_bar: np.ndarray | None) -> np.ndarray:
    if not rho1 > 0:
        raise ValueError("rho1 must be > 0")
    n = matrix.shape[1]
    r = np.ones(n) if r_bar is None else np.asarray(r_bar, dtype=np.float64)
    if r.shape != (n,) or np.any(r <= 0):
        raise ValueError("r_bar must be a positive vector with one entry per day")
    return r


def wsum_closed_form(
    matrix: np.ndarray, weights: np.ndarray, rho1: float, r_bar: np.ndarray | None = None
) -> np.ndarray:
    """Variances v_i minimising Σ_j w_j Var_j subject to ½ Σ r̄_i²/v_i = ρ1 (closed form)."""
    r = _check(matrix, rho1, r_bar)
    a = (np.asarray(weights, dtype=np.float64)[:, None] * matrix**2).sum(axis=0)
    if np.any(a <= 0):
        raise ValueError("every day needs a positive weight a_i (a query with weight > 0 on it)")
    root_a = np.sqrt(a)
    total = float((r * root_a).sum())
    return r * total / (2.0 * rho1 * root_a)


def _normalised_solve(problem: cvxpy.Problem, what: str) -> None:
    import cvxpy as cp  # imported when a solver runs: ~2 s, not on every CLI start

    with warnings.catch_warnings():
        # Tolerances are set past what Clarabel can certify, to get the last digits it can;
        # "optimal_inaccurate" is then expected and accepted (tests check the optimum).
        warnings.simplefilter("ignore", UserWarning)
        problem.solve(solver=cp.CLARABEL, **_SOLVER_OPTIONS)
    if problem.status not in _ACCEPTED_STATUS:
        raise ValueError(f"{what}: the convex solver failed ({problem.status})")


def wsum_cvxpy(
    matrix: np.ndarray, weights: np.ndarray, rho1: float, r_bar: np.ndarray | None = None
) -> np.ndarray:
    """The ``wsum`` problem solved by cvxpy (independent check of the closed form)."""
    import cvxpy as cp  # imported when a solver runs: ~2 s, not on every CLI start

    r = _check(matrix, rho1, r_bar)
    a = (np.asarray(weights, dtype=np.float64)[:, None] * matrix**2).sum(axis=0)
    # Work in units where the answer is O(1): the optimum is flat, so scaling buys digits.
    unit = float((r**2).sum() / (2.0 * rho1))
    u = cp.Variable(matrix.shape[1], pos=True)
    objective = cp.Minimize((a / a.sum()) @ u)
    budget = [cp.sum(cp.multiply(r**2 / (2.0 * rho1 * unit), cp.inv_pos(u))) <= 1.0]
    problem = cp.Problem(objective, budget)
    _normalised_solve(problem, "wsum")
    return np.asarray(u.value, dtype=np.float64) * unit


def _rescale(variances: np.ndarray, rho1: float, r: np.ndarray) -> np.ndarray:
    """Scale v so that ½ Σ r_i²/v_i = ρ1 exactly (up to float rounding)."""
    spent = 0.5 * float((r**2 / variances).sum())
    return variances * (spent / rho1)


def maxvar_scales(matrix: np.ndarray, rho1: float, r_bar: np.ndarray | None = None) -> np.ndarray:
    """Variances minimising max_j Var_j subject to ½ Σ r̄_i²/v_i ≤ ρ1 (cvxpy)."""
    import cvxpy as cp  # imported when a solver runs: ~2 s, not on every CLI start

    r = _check(matrix, rho1, r_bar)
    squared = matrix**2
    n = matrix.shape[1]
    # Uniform variances are feasible at this scale; solving in those units keeps Clarabel exact.
    unit = float((r**2).sum() / (2.0 * rho1))
    u = cp.Variable(n, pos=True)
    problem = cp.Problem(
        cp.Minimize(cp.max(squared @ u) / max(1.0, float(squared.sum(axis=1).max()))),
        [cp.sum(cp.multiply(r**2 / (2.0 * rho1 * unit), cp.inv_pos(u))) <= 1.0],
    )
    _normalised_solve(problem, "maxvar")
    return _rescale(np.asarray(u.value, dtype=np.float64) * unit, rho1, r)


def min_budget_scales(
    matrix: np.ndarray, max_variance: float, r_bar: np.ndarray | None = None
) -> tuple[np.ndarray, float]:
    """Variances meeting Var_j ≤ cap with least ρ1; returns (v, the ρ1 they cost)."""
    import cvxpy as cp  # imported when a solver runs: ~2 s, not on every CLI start

    r = _check(matrix, 1.0, r_bar)
    if not max_variance > 0:
        raise ValueError("max_variance must be > 0")
    squared = matrix**2
    u = cp.Variable(matrix.shape[1], pos=True)
    problem = cp.Problem(
        cp.Minimize(cp.sum(cp.multiply(r**2, cp.inv_pos(u)))),
        [squared @ u <= 1.0],
    )
    _normalised_solve(problem, "min_budget")
    variances = np.asarray(u.value, dtype=np.float64) * max_variance
    # Solver slack may overshoot a cap by ~1e-9; shrink so every cap holds.
    worst = float((squared @ variances).max() / max_variance)
    if worst > 1.0:
        variances = variances / worst
    return variances, 0.5 * float((r**2 / variances).sum())


@dataclass(frozen=True)
class ScalePlan:
    """Per-day variances at r̄ and what they imply: Var_j of every query, and ρ1 they cost."""

    variances: np.ndarray
    query_variances: np.ndarray
    rho1: float
    rho1_needed: float | None = None  # min_budget: ρ1 needed to meet every cap

    @property
    def sigma_bar(self) -> np.ndarray:
        return np.sqrt(self.variances)

    @property
    def query_std(self) -> np.ndarray:
        return np.sqrt(self.query_variances)


def solve_scales(
    matrix: np.ndarray,
    objective: Objective,
    rho1: float,
    *,
    weights: np.ndarray | None = None,
    max_variance: float | None = None,
) -> ScalePlan:
    """Shape the per-day variances for the workload and objective, spending exactly ρ1.

    ``weights``: γ_j² per query (``wsum``); ``max_variance``: the cap of ``min_budget``."""
    n = matrix.shape[1]
    r = np.ones(n)
    needed = None
    if objective == "wsum":
        if weights is None:
            raise ValueError("wsum needs a weight per query")
        variances = wsum_closed_form(matrix, weights, rho1)
    elif objective == "maxvar":
        variances = maxvar_scales(matrix, rho1)
    elif objective == "min_budget":
        if max_variance is None:
            raise ValueError("min_budget needs max_variance")
        shape, needed = min_budget_scales(matrix, max_variance)
        variances = _rescale(shape, rho1, r)
    else:  # pragma: no cover - the Literal is closed
        raise ValueError(f"unknown objective {objective!r}")
    if not np.all(np.isfinite(variances)) or np.any(variances <= 0):
        raise ValueError("noise scales must be positive and finite")
    return ScalePlan(
        variances=variances,
        query_variances=(matrix**2) @ variances,
        rho1=rho1,
        rho1_needed=needed if needed is None else float(needed),
    )

"""Error metrics of docs/baselines.md#workloads (conventions: docs/baselines.md#decisions).

- Prefix workload: WRMSE = sqrt(Σ_j w_j MSE_j / Σ_j w_j), MSE_j averaged over repeats and
  publishers before the root (docs/baselines.md#prefix-workload); also the "paper scale"
  sqrt(Σ_j w_j MSE_j)/n. The weights are a parameter: the product's are γ² = (1, …, 1, 49), the
  oracle tables of docs/baselines.md#worked-table use 7.
- Sliding workload: the maximum over full windows of the (mean) squared error, or of the
  analytic variance for data-independent mechanisms (docs/baselines.md#sliding-workload).

Empirical metrics take estimates shaped (R, P, m) or (P, m) and the *unclipped* truth (P, m), so
clipping bias counts as error. Analytic metrics take per-query variances (m,) and an optional
bias (P, m) = clipped − unclipped answers: for data-independent noise E[err²] = Var + bias².
"""

from __future__ import annotations

import numpy as np

from dp_research.baselines import Workload, prefix_weights

__all__ = [
    "analytic_max_variance",
    "analytic_paper_wrmse",
    "analytic_wrmse",
    "expected_squared_errors",
    "max_window_mse",
    "paper_scale_wrmse",
    "per_publisher_wrmse",
    "squared_errors",
    "weighted_mean",
    "workload_error",
    "wrmse",
]


def _weights(weights: np.ndarray, m: int) -> np.ndarray:
    w = np.asarray(weights, dtype=np.float64)
    if w.shape != (m,) or np.any(w < 0) or not w.sum() > 0:
        raise ValueError(f"need {m} non-negative weights with a positive sum, got {w!r}")
    return w


def _max_over_queries(mse: np.ndarray) -> float:
    if mse.shape[-1] == 0:
        raise ValueError("no queries (fewer days than the window width?)")
    return float(mse.mean(axis=0).max())


def squared_errors(estimates: np.ndarray, truth: np.ndarray) -> np.ndarray:
    """Per-publisher, per-query squared error averaged over repeats: (R, P, m) → (P, m)."""
    estimates = np.asarray(estimates, dtype=np.float64)
    errors = (estimates - np.asarray(truth, dtype=np.float64)) ** 2
    return errors.mean(axis=0) if errors.ndim == 3 else errors


def expected_squared_errors(variances: np.ndarray, bias: np.ndarray | None = None) -> np.ndarray:
    """E[(q̂ − q)²] = Var + bias² for data-independent noise: (m,) [+ (P, m)] → (P, m)."""
    variances = np.atleast_2d(np.asarray(variances, dtype=np.float64))
    if bias is None:
        return variances
    return variances + np.asarray(bias, dtype=np.float64) ** 2


def weighted_mean(mse: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Σ_j w_j MSE_j / Σ_j w_j along the last axis."""
    mse = np.asarray(mse, dtype=np.float64)
    w = _weights(weights, mse.shape[-1])
    return mse @ w / w.sum()


def per_publisher_wrmse(
    estimates: np.ndarray, truth: np.ndarray, weights: np.ndarray
) -> np.ndarray:
    """WRMSE of every publisher (clipping bias depends on the publisher, so keep these)."""
    return np.sqrt(weighted_mean(squared_errors(estimates, truth), weights))


def wrmse(estimates: np.ndarray, truth: np.ndarray, weights: np.ndarray) -> float:
    """sqrt(mean over repeats and publishers of Σ_j w_j err_j² / Σ_j w_j)."""
    return float(np.sqrt(weighted_mean(squared_errors(estimates, truth), weights).mean()))


def paper_scale_wrmse(estimates: np.ndarray, truth: np.ndarray, weights: np.ndarray) -> float:
    """sqrt(Σ_j w_j MSE_j)/n with n = number of prefix queries (the paper's scale)."""
    mse = squared_errors(estimates, truth)
    w = _weights(weights, mse.shape[-1])
    return float(np.sqrt((mse @ w).mean()) / mse.shape[-1])


def max_window_mse(estimates: np.ndarray, truth: np.ndarray) -> float:
    """max over windows of the squared error averaged over repeats and publishers."""
    return _max_over_queries(squared_errors(estimates, truth))


def analytic_wrmse(
    variances: np.ndarray, weights: np.ndarray, bias: np.ndarray | None = None
) -> float:
    """Expected-error WRMSE of a data-independent mechanism: sqrt(Σ w (Var + bias²) / Σ w)."""
    return float(np.sqrt(weighted_mean(expected_squared_errors(variances, bias), weights).mean()))


def analytic_paper_wrmse(
    variances: np.ndarray, weights: np.ndarray, bias: np.ndarray | None = None
) -> float:
    """Expected-error paper-scale WRMSE: sqrt(Σ w (Var + bias²))/n."""
    mse = expected_squared_errors(variances, bias)
    w = _weights(weights, mse.shape[-1])
    return float(np.sqrt((mse @ w).mean()) / mse.shape[-1])


def analytic_max_variance(variances: np.ndarray, bias: np.ndarray | None = None) -> float:
    """max over windows of Var (+ bias², averaged over publishers)."""
    return _max_over_queries(expected_squared_errors(variances, bias))


def workload_error(mse: np.ndarray, workload: Workload) -> float:
    """The tables' metric of an expected (P × m) or (m,) MSE: prefix WRMSE with γ² weights,
    sliding the worst window's MSE averaged over publishers. One function for the scores and for
    anything tuned on them, so both read the same number."""
    mse = np.atleast_2d(np.asarray(mse, dtype=np.float64))
    if workload.kind == "prefix":
        return float(np.sqrt(weighted_mean(mse, prefix_weights(workload.n)).mean()))
    return float(mse.mean(axis=0).max())

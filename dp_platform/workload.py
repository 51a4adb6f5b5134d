"""The advertiser's query workload as a matrix Q ∈ R^{m×n}, built from the catalogue.

Q's rows are the queries, its columns the campaign's days; answers are Q·X̃ per publisher
(docs/algorithm.md#scales). Built-in workloads — prefix sums, sliding windows, daily values,
day ranges — or a CSV matrix read relative to the catalogue's folder. Every day must appear in
some query (a day no query reads would get infinite noise).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from dp_platform.errors import ConfigError
from dp_platform.privacy.scales import ScalePlan, solve_scales

if TYPE_CHECKING:  # the catalogue's types, for annotations only: this module stays light
    from dp_platform.config import CampaignConfig, ObjectiveConfig

__all__ = [
    "answer_queries",
    "campaign_scales",
    "daily_matrix",
    "prefix_matrix",
    "query_ends",
    "query_weights",
    "range_matrix",
    "sliding_matrix",
    "workload_matrix",
]


def prefix_matrix(n: int) -> np.ndarray:
    """q_j = x_1 + … + x_j (lower-triangular ones)."""
    return np.tril(np.ones((n, n)))


def sliding_matrix(n: int, window: int) -> np.ndarray:
    """q_j = x_{max(1, j−K+1)} + … + x_j for j = 1..n (early windows are truncated)."""
    matrix = np.zeros((n, n))
    for j in range(n):
        matrix[j, max(0, j - window + 1) : j + 1] = 1.0
    return matrix


def daily_matrix(n: int) -> np.ndarray:
    return np.eye(n)


def range_matrix(n: int, ranges: list[tuple[int, int]]) -> np.ndarray:
    """One query per 1-based inclusive [a, b] range."""
    matrix = np.zeros((len(ranges), n))
    for row, (start, end) in enumerate(ranges):
        matrix[row, start - 1 : end] = 1.0
    return matrix


def _load_matrix(path: str | Path, n: int) -> np.ndarray:
    try:
        matrix = np.loadtxt(path, delimiter=",", ndmin=2, dtype=np.float64)
    except FileNotFoundError:
        raise ConfigError(f"workload.path: {path}: file not found") from None
    except ValueError as error:
        raise ConfigError(f"workload.path: {path}: not a numeric CSV matrix ({error})") from None
    if matrix.shape[1] != n:
        raise ConfigError(f"workload.path: matrix has {matrix.shape[1]} columns, need days = {n}")
    if not np.all(np.isfinite(matrix)):
        raise ConfigError("workload.path: matrix entries must be finite")
    return matrix


def workload_matrix(campaign: CampaignConfig, base_dir: str | Path | None = None) -> np.ndarray:
    """Q ∈ R^{m×n} of a campaign; a matrix file is read relative to ``base_dir`` (the catalogue)."""
    n, workload = campaign.days, campaign.workload
    if workload.kind == "prefix":
        matrix = prefix_matrix(n)
    elif workload.kind == "sliding":
        matrix = sliding_matrix(n, workload.window)
    elif workload.kind == "daily":
        matrix = daily_matrix(n)
    elif workload.kind == "range":
        matrix = range_matrix(n, workload.ranges)
    elif workload.kind == "matrix":
        path = Path(workload.path)
        if base_dir is not None and not path.is_absolute():
            path = Path(base_dir) / path
        matrix = _load_matrix(path, n)
    else:  # pragma: no cover - the config's discriminated union is closed
        raise ConfigError(f"workload: unknown kind {workload!r}")
    uncovered = np.flatnonzero(~np.any(matrix != 0, axis=0))
    if uncovered.size:
        days = ", ".join(str(d + 1) for d in uncovered[:5])
        raise ConfigError(
            f"workload: every day must appear in some query (day {days} is in none); "
            "add a query or shorten the campaign"
        )
    return matrix


def query_weights(objective: ObjectiveConfig, queries: int) -> np.ndarray:
    """w_j = γ_j²: γ from ``gammas`` or 1 for every query but the last, which gets γ_n."""
    if objective.gammas is not None:
        if len(objective.gammas) != queries:
            raise ConfigError(
                f"objective.gammas: need one γ per query ({queries}), got {len(objective.gammas)}"
            )
        gammas = np.asarray(objective.gammas, dtype=np.float64)
    else:
        gammas = np.ones(queries)
        gammas[-1] = objective.last_weight
    return gammas**2


def campaign_scales(objective: ObjectiveConfig, matrix: np.ndarray, rho1: float) -> ScalePlan:
    """The per-day variance shape of a campaign's objective over its workload, at ρ1."""
    weights = query_weights(objective, matrix.shape[0]) if objective.kind == "wsum" else None
    try:
        return solve_scales(
            matrix, objective.kind, rho1, weights=weights, max_variance=objective.max_variance
        )
    except ValueError as error:
        raise ConfigError(f"objective: {error}") from None


def query_ends(queries: np.ndarray) -> np.ndarray:
    """1-based last day of each query's support (a query is answered from that day on)."""
    nonzero = np.asarray(queries) != 0
    return nonzero.shape[1] - np.argmax(nonzero[:, ::-1], axis=1)


def answer_queries(
    queries: np.ndarray, released: list[tuple[float, ...]] | tuple[tuple[float, ...], ...]
) -> dict[int, tuple[float, ...]]:
    """Answers (per publisher) of every query whose support ends by day len(released).

    Post-processing of released vectors only: free, and it never touches private data.
    """
    day = len(released)
    if day == 0:
        return {}
    noisy = np.asarray(released, dtype=np.float64)  # day × publisher
    ready = np.flatnonzero(query_ends(queries) <= day)
    values = queries[ready, :day] @ noisy
    return {int(j): tuple(row.tolist()) for j, row in zip(ready, values, strict=True)}

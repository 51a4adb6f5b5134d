"""The two evaluation workloads (docs/baselines.md#workloads) as query matrices over one
publisher's n days.

Days are 0-based array indices here (day 0 is the paper's day 1). Every query has an *end day*:
the day its answer is released, which is the last day it reads. All workloads are
lower-triangular in that sense, which is what makes the mechanisms streaming.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

__all__ = ["Workload", "prefix", "prefix_weights", "sliding"]

WorkloadKind = Literal["prefix", "sliding"]


@dataclass(frozen=True)
class Workload:
    """Prefix sums (q_t = Σ_{i≤t} x_i) or full sliding windows of width ``window``."""

    kind: WorkloadKind
    n: int
    window: int = 7

    def __post_init__(self) -> None:
        if self.kind not in ("prefix", "sliding"):
            raise ValueError(f"unknown workload kind {self.kind!r}")
        if self.n < 1:
            raise ValueError(f"n must be >= 1, got {self.n}")
        if self.window < 1:
            raise ValueError(f"window must be >= 1, got {self.window}")

    @property
    def starts(self) -> np.ndarray:
        """First day (0-based) each query reads."""
        if self.kind == "prefix":
            return np.zeros(self.n, dtype=np.int64)
        return np.arange(0, max(self.n - self.window + 1, 0), dtype=np.int64)

    @property
    def ends(self) -> np.ndarray:
        """Day (0-based) on which each query's answer is released: its last day."""
        if self.kind == "prefix":
            return np.arange(self.n, dtype=np.int64)
        return self.starts + self.window - 1

    @property
    def matrix(self) -> np.ndarray:
        """The (m × n) 0/1 query matrix; only full windows for ``sliding``
        (docs/baselines.md#sliding-workload)."""
        days = np.arange(self.n)
        return (
            (days[None, :] >= self.starts[:, None]) & (days[None, :] <= self.ends[:, None])
        ).astype(np.float64)


def prefix(n: int) -> Workload:
    """Prefix sums over n days."""
    return Workload("prefix", n)


def sliding(n: int, window: int = 7) -> Workload:
    """Full sliding windows of ``window`` days (n − window + 1 queries; none if n < window)."""
    return Workload("sliding", n, window)


def prefix_weights(n: int, last_gamma: float = 7.0, *, squared: bool = True) -> np.ndarray:
    """Per-query weights of the prefix objective: γ = (1, …, 1, γ_n).

    The paper's loss is Σ_j γ_j² Var_j, so the product weight is γ² (w_n = 49, ``squared=True``);
    the oracle tables of docs/baselines.md#worked-table use the weight 7 itself
    (``squared=False``).
    """
    gamma = np.ones(n)
    gamma[-1] = last_gamma
    return gamma**2 if squared else gamma

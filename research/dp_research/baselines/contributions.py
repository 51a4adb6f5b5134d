"""Contribution bounding on conversion-level arrays, vectorised
(docs/baselines.md#contribution-bounds, docs/baselines.md#synthetic-data).

Input is one row per attributed conversion (user, 0-based day, publisher, time, optional
attribution weight ≤ 1). A user's history is ordered by (day, time), ties by row order (stable
lexsort) — the generator draws a random time within each day, which gives the "random order
within a day" of docs/baselines.md#contribution-bounds. The bound is consumed by *weight*: rows
are kept in order while the user's kept weight stays within the bound, the row that crosses it
is kept fractionally, and the rest is dropped. With unit weights and an integer bound that is
exactly "keep the first GS conversions"; with a fractional bound it is the rule of
docs/algorithm.md#clipping. Either way the kept L1 mass per user (per day) is ≤ the bound,
which is what the sensitivity arguments need.

No Python loop runs over events; the only loop is over a user's rank (≤ the longest history),
used when weights are fractional so that running sums stay exact per user instead of
accumulating round-off across a 10⁸-row cumulative sum.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dp_platform.clipping import weight_cap

__all__ = [
    "Conversions",
    "clip_global",
    "clip_per_day",
    "running_before",
    "user_day_totals",
]


@dataclass(frozen=True, eq=False)
class Conversions:
    """Attributed conversions, one row each (``weight`` None means weight 1 for every row)."""

    user: np.ndarray
    day: np.ndarray
    publisher: np.ndarray
    time: np.ndarray
    weight: np.ndarray | None = None

    def __post_init__(self) -> None:
        arrays = [self.user, self.day, self.publisher, self.time]
        if self.weight is not None:
            arrays.append(self.weight)
            if np.any(self.weight < 0) or np.any(self.weight > 1):
                raise ValueError("attribution weights must lie in [0, 1]")
        if len({np.shape(a) for a in arrays}) != 1 or np.ndim(self.user) != 1:
            raise ValueError("conversion arrays must be 1-D and of equal length")
        if len(self.day) and (np.min(self.day) < 0 or np.min(self.publisher) < 0):
            raise ValueError("days and publishers are 0-based non-negative indices")

    def __len__(self) -> int:
        return len(self.user)

    @property
    def weights(self) -> np.ndarray:
        """Weight of every row (ones when unweighted)."""
        if self.weight is None:
            return np.ones(len(self), dtype=np.float64)
        return np.asarray(self.weight, dtype=np.float64)

    def to_matrix(self, kept: np.ndarray, n_publishers: int, n_days: int) -> np.ndarray:
        """(P × n) sums of the kept weight per publisher and day."""
        if len(self) and (np.max(self.day) >= n_days or np.max(self.publisher) >= n_publishers):
            raise ValueError("a conversion falls outside the (publishers × days) grid")
        cell = np.asarray(self.publisher, dtype=np.int64) * n_days + self.day
        counts = np.bincount(cell, weights=kept, minlength=n_publishers * n_days)
        return counts.reshape(n_publishers, n_days)


def _history_order(conversions: Conversions, per_day: bool) -> tuple[np.ndarray, np.ndarray]:
    """Row order by (user, day, time, row) and the mask of rows starting a new group."""
    user, day = np.asarray(conversions.user), np.asarray(conversions.day)
    days = int(day.max()) + 1 if len(day) else 1
    if (
        np.issubdtype(user.dtype, np.integer)
        and user.min(initial=0) >= 0
        and (user.max(initial=0) < np.iinfo(np.int64).max // days)
    ):  # one composite (user, day) key: a two-key lexsort is ~25% faster at 10⁷ rows
        order = np.lexsort((conversions.time, user.astype(np.int64) * days + day))
    else:
        order = np.lexsort((conversions.time, day, user))
    user = conversions.user[order]
    new_group = np.ones(len(order), dtype=bool)
    new_group[1:] = user[1:] != user[:-1]
    if per_day:
        day = conversions.day[order]
        new_group[1:] |= day[1:] != day[:-1]
    return order, new_group


def running_before(conversions: Conversions, *, per_day: bool = False) -> np.ndarray:
    """For every row, the user's weight in earlier rows of their history (of that day).

    Returned in the caller's row order. Unit weights give exact integer ranks.
    """
    size = len(conversions)
    if size == 0:
        return np.zeros(0)
    order, new_group = _history_order(conversions, per_day)
    starts = np.flatnonzero(new_group)
    rank = np.arange(size) - starts[np.cumsum(new_group) - 1]
    if conversions.weight is None:
        before_sorted = rank.astype(np.float64)
    else:
        weight = conversions.weights[order]
        before_sorted = np.zeros(size)
        by_rank = np.argsort(rank, kind="stable")
        edges = np.cumsum(np.bincount(rank))
        for k in range(1, len(edges)):  # rows of rank k follow their rank-(k−1) predecessor
            rows = by_rank[edges[k - 1] : edges[k]]
            before_sorted[rows] = before_sorted[rows - 1] + weight[rows - 1]
    before = np.empty(size)
    before[order] = before_sorted
    return before


def clip_global(conversions: Conversions, bound: float) -> np.ndarray:
    """Kept weight per row under a global cap: a user's first ``bound`` of weight in time order.

    After this, Σ_{p,i} d_{p,i} ≤ bound for every user (IPA, BIN, UMM; Stream per rung).
    """
    if bound < 0:
        raise ValueError(f"bound must be >= 0, got {bound!r}")
    return weight_cap(conversions.weights, running_before(conversions), float(bound))


def clip_per_day(conversions: Conversions, bounds: np.ndarray) -> np.ndarray:
    """Kept weight per row under per-day caps r: on day i at most r_i per user, in time order.

    After this, Σ_p d_{p,i} ≤ r_i for every user and day (AdsBPC, MMBPC).
    """
    r = np.asarray(bounds, dtype=np.float64)
    if np.any(r < 0):
        raise ValueError("per-day bounds must be >= 0")
    if len(conversions) and np.max(conversions.day) >= len(r):
        raise ValueError("a conversion falls after the last bounded day")
    before = running_before(conversions, per_day=True)
    return weight_cap(conversions.weights, before, r[conversions.day])


def user_day_totals(conversions: Conversions) -> tuple[np.ndarray, np.ndarray]:
    """(day, total weight) of every (user, day) pair with at least one row — unclipped."""
    if len(conversions) == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0)
    order, new_group = _history_order(conversions, per_day=True)
    starts = np.flatnonzero(new_group)
    totals = np.add.reduceat(conversions.weights[order], starts)
    return np.asarray(conversions.day)[order][starts], totals

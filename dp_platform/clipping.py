"""Clipping, specified once: how much of each conversion a user keeps at a bound r.

The rule (docs/algorithm.md#clipping): a user's conversions of a day are taken in (ts,
conversion_id) order; the first ⌊r⌋ are kept whole, the next keeps the fraction r − ⌊r⌋ of its
attribution weights, the rest are dropped — so every user's day has L1 norm ≤ r, across all
publishers. This module is the specification: the warehouse's SQL (DuckDB and Spark), the
AdsBPC+ filter, the simulators and the evaluation all either call it or are tested equal to it
(``tests/test_clipping.py``, property tests over ties and order). Changing the tie-break or the
fraction means changing this file and watching those tests.

The paper's baselines bound a user's *total weight* instead (the first r of weight in time
order, :func:`weight_cap`); with one unit-weight touch per conversion the two rules agree.
"""

from __future__ import annotations

import numpy as np

__all__ = ["clipped_sums", "count_fraction", "day_ranks", "kept_weights", "weight_cap"]


def count_fraction(rank: np.ndarray | float, bound: np.ndarray | float) -> np.ndarray:
    """The fraction kept of a conversion of 0-based ``rank`` in its user's day at bound r:
    1 for rank < ⌊r⌋, r − ⌊r⌋ at rank ⌊r⌋, 0 after (= clip(r − rank, 0, 1))."""
    return np.clip(
        np.asarray(bound, dtype=np.float64) - np.asarray(rank, dtype=np.float64), 0.0, 1.0
    )


def day_ranks(users: np.ndarray, ts: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """0-based rank of each conversion among its user's conversions of the day, in (ts, id)
    order — the tie order every implementation follows."""
    users, ts, ids = (np.asarray(a) for a in (users, ts, ids))
    if users.size == 0:
        return np.zeros(0, dtype=np.int64)
    order = np.lexsort((ids, ts, users))
    sorted_users = users[order]
    starts = np.r_[True, sorted_users[1:] != sorted_users[:-1]]
    first = np.maximum.accumulate(np.where(starts, np.arange(users.size), 0))
    ranks = np.empty(users.size, dtype=np.int64)
    ranks[order] = np.arange(users.size) - first
    return ranks


def kept_weights(
    users: np.ndarray,
    ts: np.ndarray,
    ids: np.ndarray,
    weights: np.ndarray,
    bound: float,
    conversions: np.ndarray | None = None,
) -> np.ndarray:
    """The weight each row keeps when every user's day is clipped at ``bound`` — the reference.

    One row per (conversion, credited publisher): ``users``, ``ts``, ``ids`` describe the
    conversion (a multi-touch conversion repeats them on several rows, each with its weight), so
    a conversion's rows share its rank. ``conversions`` names the conversion of each row when
    ``ids`` alone do not (defaults to ``ids``).
    """
    if not (bound >= 0 and np.isfinite(bound)):
        raise ValueError("bound must be finite and >= 0")
    ids = np.asarray(ids)
    conversions = ids if conversions is None else np.asarray(conversions)
    if ids.size == 0:
        return np.zeros(0, dtype=np.float64)
    _, first_row, row_conversion = np.unique(conversions, return_index=True, return_inverse=True)
    ranks = day_ranks(np.asarray(users)[first_row], np.asarray(ts)[first_row], ids[first_row])
    return np.asarray(weights, dtype=np.float64) * count_fraction(ranks[row_conversion], bound)


def clipped_sums(
    users: np.ndarray,
    ts: np.ndarray,
    ids: np.ndarray,
    publishers: np.ndarray,
    weights: np.ndarray,
    k: int,
    bound: float,
    conversions: np.ndarray | None = None,
) -> np.ndarray:
    """Per-publisher sums of one day after clipping every user at ``bound`` (rows as in
    :func:`kept_weights`; ``publishers`` are 0-based positions < k)."""
    kept = kept_weights(users, ts, ids, weights, bound, conversions)
    if kept.size == 0:
        return np.zeros(k, dtype=np.float64)
    return np.bincount(np.asarray(publishers), weights=kept, minlength=k).astype(np.float64)


def weight_cap(weights: np.ndarray, before: np.ndarray, bound: np.ndarray | float) -> np.ndarray:
    """The baselines' rule: kept weight of a row when its user already kept ``before`` of
    weight — the first r of weight in time order (clip(r − before, 0, w))."""
    return np.clip(
        np.asarray(bound, dtype=np.float64) - np.asarray(before, dtype=np.float64),
        0.0,
        np.asarray(weights, dtype=np.float64),
    )

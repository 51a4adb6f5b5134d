"""The paper's synthetic conversion-level datasets (docs/baselines.md#synthetic-data).

Per-user totals m_u, then every conversion independently gets a day uniform on the n days, a
publisher uniform on the P publishers and a time uniform within its day:

* ``zipf``: m = 10 + Zipf(3) (numpy's ``zipf(a=3)``, support k ≥ 1), so m ≥ 11;
* ``normal``: m = max(1, round(N(50, 30²)));
* ``uniform``: m uniform on 1..256 inclusive.

Generation is vectorised (``repeat`` the user ids, then draw day/publisher/time arrays of length
Σ m_u); at the default 10⁶ users the Uniform set has about 1.3·10⁸ conversions (~1.3 GB).
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from dp_platform.events.model import MS_PER_DAY, ConversionSet

__all__ = ["PAPER_DATASETS", "paper_dataset", "per_user_totals"]

PaperKind = Literal["zipf", "normal", "uniform"]
PAPER_DATASETS: tuple[PaperKind, ...] = ("zipf", "normal", "uniform")


def per_user_totals(kind: PaperKind, users: int, rng: np.random.Generator) -> np.ndarray:
    """Conversions per user for one of the paper's distributions (int64, length ``users``)."""
    if kind == "zipf":
        return rng.zipf(3.0, size=users).astype(np.int64) + 10
    if kind == "normal":
        return np.maximum(1, np.rint(rng.normal(50.0, 30.0, size=users))).astype(np.int64)
    if kind == "uniform":
        return rng.integers(1, 257, size=users, dtype=np.int64)
    raise ValueError(f"unknown paper dataset {kind!r}; expected one of {PAPER_DATASETS}")


def spread(
    totals: np.ndarray, *, days: int, publishers: int, rng: np.random.Generator, name: str
) -> ConversionSet:
    """Spread each user's total uniformly over days, publishers and times within the day."""
    if days < 1 or publishers < 1:
        raise ValueError("days and publishers must be >= 1")
    n_users = len(totals)
    user = np.repeat(np.arange(n_users, dtype=np.int32), totals)
    size = len(user)
    day = rng.integers(0, days, size=size, dtype=np.int16)
    publisher = rng.integers(0, publishers, size=size, dtype=np.int32)
    time_ms = rng.integers(0, MS_PER_DAY, size=size, dtype=np.int32)
    return ConversionSet(
        user=user,
        day=day,
        publisher=publisher,
        time_ms=time_ms,
        n_users=n_users,
        n_days=days,
        n_publishers=publishers,
        name=name,
    )


def paper_dataset(
    kind: PaperKind,
    *,
    users: int = 1_000_000,
    publishers: int = 1000,
    days: int = 31,
    seed: int,
) -> ConversionSet:
    """One of the paper's datasets (``zipf``, ``normal``, ``uniform``), reproducible by seed."""
    if users < 1:
        raise ValueError("users must be >= 1")
    rng = np.random.default_rng(seed)
    totals = per_user_totals(kind, users, rng)
    return spread(totals, days=days, publishers=publishers, rng=rng, name=kind)

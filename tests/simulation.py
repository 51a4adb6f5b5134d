"""An in-memory conversion stream for tests of the mechanism (no warehouse needed).

Each simulated conversion is already attributed to one publisher (weight 1), so a user's count on
a day is their number of conversions, and clipping (dp_platform/clipping.py) keeps the first ⌊r⌋
of them in time order plus the fraction r − ⌊r⌋ of the next. Everything is vectorised NumPy; the
data (not the noise) is seeded so a simulation can be repeated.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from dp_platform.clipping import clipped_sums

__all__ = ["SimulatedDay", "SimulatedStream", "clip_day", "simulate_stream"]


def clip_day(users: np.ndarray, times: np.ndarray, publishers: np.ndarray, k: int, bound: float):
    """Per-publisher sums after clipping each user to ``bound`` conversions (fractional); ties in
    time keep the generator's order (the conversion's index is its id)."""
    if bound < 0:
        raise ValueError("bound must be >= 0")
    ids = np.arange(users.size)
    return clipped_sums(users, times, ids, publishers, np.ones(users.size), k, bound)


@dataclass(frozen=True)
class SimulatedDay:
    """One day's conversions: user, time within the day, publisher (one row per conversion)."""

    users: np.ndarray
    times: np.ndarray
    publishers: np.ndarray
    publisher_count: int

    def histogram(self) -> np.ndarray:
        """h[c] = number of users with exactly c conversions today (h[0] = 0)."""
        if self.users.size == 0:
            return np.zeros(1, dtype=np.int64)
        per_user = np.bincount(np.unique(self.users, return_inverse=True)[1])
        return np.bincount(per_user).astype(np.int64)

    def truth(self) -> np.ndarray:
        """Unclipped per-publisher counts (never released; for comparing errors only)."""
        return np.bincount(self.publishers, minlength=self.publisher_count).astype(np.float64)

    def clipped_sums(self) -> Callable[[float], np.ndarray]:
        return lambda bound: clip_day(
            self.users, self.times, self.publishers, self.publisher_count, bound
        )


@dataclass(frozen=True)
class SimulatedStream:
    days: list[SimulatedDay]
    publishers: list[str]


def simulate_stream(
    *, days: int, users: int, publishers: int, seed: int, activity: float = 0.08
) -> SimulatedStream:
    """Users with heavy-tailed activity: active on a day w.p. ``activity``·propensity, then a
    Zipf-like number of conversions (most users 1–2, a few heavy ones), publishers by popularity."""
    rng = np.random.default_rng(seed)
    propensity = np.minimum(rng.pareto(2.5, users) + 0.5, 6.0)
    popularity = rng.dirichlet(np.full(publishers, 1.5))
    out = []
    for _ in range(days):
        active = np.flatnonzero(rng.random(users) < np.minimum(1.0, activity * propensity))
        per_user = np.minimum(rng.zipf(3.0, active.size), 40)
        day_users = np.repeat(active, per_user)
        out.append(
            SimulatedDay(
                users=day_users,
                times=rng.random(day_users.size),
                publishers=rng.choice(publishers, size=day_users.size, p=popularity),
                publisher_count=publishers,
            )
        )
    return SimulatedStream(days=out, publishers=[f"pub_{p:02d}" for p in range(publishers)])

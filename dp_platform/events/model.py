"""Compact in-memory event sets: integer arrays, with string ids derived only when written.

Two shapes cover every generator and loader:

* :class:`EventSet` — event level (impressions and conversions with timestamps), what the
  warehouse ingests (see :mod:`dp_platform.events.files`).
* :class:`ConversionSet` — conversion level (user, day, publisher, time within the day), the
  paper's datasets, already attributed. It answers the per-day statistics directly for fast
  experiments and converts to an :class:`EventSet` whose LTA attribution reproduces it exactly.

Why integers: 10⁸ events as Python strings would need tens of GB; as arrays they need a few
hundred MB and every operation is vectorised.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, date, datetime

import numpy as np

from dp_platform.clipping import count_fraction

__all__ = ["MS_PER_DAY", "US_PER_DAY", "ConversionSet", "EventSet", "epoch_us", "id_width"]

US_PER_DAY = 86_400_000_000
MS_PER_DAY = 86_400_000


def epoch_us(day: date) -> int:
    """Microseconds since the Unix epoch at 00:00 UTC of ``day``."""
    moment = datetime(day.year, day.month, day.day, tzinfo=UTC)
    return int(moment.timestamp()) * 1_000_000


def id_width(count: int) -> int:
    """Digits needed so zero-padded ids sort as strings in the same order as numbers."""
    return max(1, len(str(max(count - 1, 0))))


@dataclass(frozen=True)
class EventSet:
    """Impressions and conversions as parallel arrays (index = id number).

    Timestamps are int64 microseconds since the epoch, UTC. ``advertisers`` names the advertiser
    codes; users are ``0..n_users-1`` and publishers ``0..n_publishers-1``. Impression ``i`` is
    written as ``imp<i>`` and conversion ``j`` as ``conv<j>`` (zero-padded), so string order of
    the ids equals index order — the tie-break order of docs/data.md#1-event-files.

    ``conv_dimensions`` (optional): breakdown name → (its value list, each conversion's code);
    ``imp_dimensions`` the same per impression (e.g. the ad's creative).
    """

    imp_user: np.ndarray
    imp_publisher: np.ndarray
    imp_advertiser: np.ndarray
    imp_ts: np.ndarray
    imp_click: np.ndarray
    conv_user: np.ndarray
    conv_advertiser: np.ndarray
    conv_ts: np.ndarray
    conv_value: np.ndarray
    n_users: int
    n_publishers: int
    advertisers: tuple[str, ...] = ("acme",)
    conv_dimensions: dict[str, tuple[tuple[str, ...], np.ndarray]] = field(default_factory=dict)
    imp_dimensions: dict[str, tuple[tuple[str, ...], np.ndarray]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        m = len(self.imp_user)
        for name in ("imp_publisher", "imp_advertiser", "imp_ts", "imp_click"):
            if len(getattr(self, name)) != m:
                raise ValueError(f"{name} must have {m} entries like imp_user")
        c = len(self.conv_user)
        for name in ("conv_advertiser", "conv_ts", "conv_value"):
            if len(getattr(self, name)) != c:
                raise ValueError(f"{name} must have {c} entries like conv_user")
        for rows, like, dimensions in (
            (c, "conv_user", self.conv_dimensions),
            (m, "imp_user", self.imp_dimensions),
        ):
            for name, (labels, codes) in dimensions.items():
                if len(codes) != rows:
                    raise ValueError(f"dimension {name!r} must have {rows} entries like {like}")
                if rows and not 0 <= int(codes.min()) <= int(codes.max()) < len(labels):
                    raise ValueError(
                        f"dimension {name!r} has a code outside its {len(labels)} values"
                    )

    @property
    def n_impressions(self) -> int:
        return len(self.imp_user)

    @property
    def n_conversions(self) -> int:
        return len(self.conv_user)

    def user_name(self, user: int) -> str:
        return f"u{user:0{id_width(self.n_users)}d}"

    def publisher_name(self, publisher: int) -> str:
        return f"pub_{publisher:0{id_width(self.n_publishers)}d}"


@dataclass(frozen=True)
class ConversionSet:
    """Attributed conversions: conversion ``j`` of ``user[j]`` on ``day[j]`` (0-based) credited
    wholly to ``publisher[j]`` at ``time_ms[j]`` milliseconds into that day.

    The clipping order (dp_platform/clipping.py) is (time, index) within a user's day. The event
    files written from it keep that order and attribute each conversion to its own publisher
    under LTA (see :meth:`to_events`).
    """

    user: np.ndarray
    day: np.ndarray
    publisher: np.ndarray
    time_ms: np.ndarray
    n_users: int
    n_days: int
    n_publishers: int
    name: str = "conversions"

    @property
    def n_conversions(self) -> int:
        return len(self.user)

    def totals(self) -> np.ndarray:
        """Conversions per user over all days (length ``n_users``)."""
        return np.bincount(self.user, minlength=self.n_users)

    def _day_order(self, day: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Day ``day``'s conversions sorted by (user, time, index): users, publishers, ranks."""
        (idx,) = np.nonzero(self.day == day)
        order = np.lexsort((idx, self.time_ms[idx], self.user[idx]))
        idx = idx[order]
        users = self.user[idx]
        starts = np.r_[True, users[1:] != users[:-1]] if len(users) else np.zeros(0, bool)
        first = np.maximum.accumulate(np.where(starts, np.arange(len(users)), 0))
        rank = np.arange(len(users)) - first  # 0-based rank of the conversion in its user's day
        return users, self.publisher[idx], rank

    def day_counts(self, day: int) -> np.ndarray:
        """Per active user, their number of conversions on ``day`` (users with 0 left out)."""
        counts = np.bincount(self.user[self.day == day], minlength=self.n_users)
        return counts[counts > 0]

    def day_histogram(self, day: int) -> np.ndarray:
        """h[c] = users with exactly c conversions on ``day`` (h[0] = 0); the warehouse's shape."""
        hist = np.bincount(self.day_counts(day))
        if len(hist) == 0:
            return np.zeros(1, dtype=np.int64)
        hist[0] = 0
        return hist.astype(np.int64)

    def true_vector(self, day: int) -> np.ndarray:
        """Unclipped per-publisher conversions of ``day``."""
        pubs = self.publisher[self.day == day]
        return np.bincount(pubs, minlength=self.n_publishers).astype(np.float64)

    def clipped_vector(self, day: int, bound: float) -> np.ndarray:
        """Per-publisher sums after clipping every user's day at ``bound`` (clipping.py's rule)."""
        if not bound > 0:
            raise ValueError("bound must be > 0")
        _, pubs, rank = self._day_order(day)
        return np.bincount(pubs, weights=count_fraction(rank, bound), minlength=self.n_publishers)

    def to_events(self, start: date, *, advertiser: str = "acme") -> EventSet:
        """One impression per conversion at its publisher, 1 µs before it.

        Conversion j lands at ``time_ms`` plus (1 + k) µs, k being its rank among the same user's
        conversions at the same millisecond (in index order), so a user's conversion times are
        distinct and in (time, index) order. LTA then credits every conversion to its own
        publisher: the latest impression strictly before conversion j is j's own.
        """
        n = self.n_conversions
        day = self.day.astype(np.int64)
        key = (self.user.astype(np.int64) * self.n_days + day) * MS_PER_DAY + self.time_ms
        order = np.argsort(key, kind="stable")  # stable: ties stay in index order
        sorted_key = key[order]
        starts = np.r_[True, sorted_key[1:] != sorted_key[:-1]] if n else np.zeros(0, bool)
        first = np.maximum.accumulate(np.where(starts, np.arange(n), 0))
        tie_rank = np.empty(n, dtype=np.int64)
        tie_rank[order] = np.arange(n) - first
        ts = epoch_us(start) + day * US_PER_DAY + self.time_ms.astype(np.int64) * 1000
        ts = ts + 1 + tie_rank
        order = np.argsort(ts, kind="stable")
        zeros = np.zeros(n, dtype=np.int16)
        return EventSet(
            imp_user=self.user[order],
            imp_publisher=self.publisher[order],
            imp_advertiser=zeros,
            imp_ts=ts[order] - 1,
            imp_click=np.zeros(n, dtype=bool),
            conv_user=self.user[order],
            conv_advertiser=zeros,
            conv_ts=ts[order],
            conv_value=np.ones(n, dtype=np.float64),
            n_users=self.n_users,
            n_publishers=self.n_publishers,
            advertisers=(advertiser,),
        )

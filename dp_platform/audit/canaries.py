"""Canary users for the audit: who they are, what they did, and where their releases land.

A canary is a user the audit adds (or not, at random) to a fixed population, built to move the
releases as far as the mechanism allows:

* **its own cell**: it is credited to a publisher key of its own that no other user touches (the
  keys are public and fixed before any draw, the same whether or not it is included), with the
  first listed value of every breakdown dimension — so the cell holds nothing but the canary,
  and a release of that cell is all the evidence about it;
* **at the per-day bound**: ``per_day`` conversions every day of the campaign — by default
  2⌈r_max⌉ + 1, r_max the largest daily bound the plan can ever choose (audit/probes.py) —
  each at a large order value, so clipping binds on every day and every measure, and a clip
  that kept twice the bound, or skipped it, would show;
* **with shadows**: ``shadows`` other users per canary (by default as many as its conversions
  a day), always present, each converting once a day in a second cell of the canary's own (its
  shadow publisher key) under an event id the canary also uses that day (ids are unique per
  user only: docs/data.md). A correct ingest keeps them, as the other users' events they are;
  an ingest that deduplicated ids across users would drop them exactly when the canary is in —
  other users' data moving with one user's presence — which the shadow cell then shows, beside
  the canary's own. They come after the canary in the files (a first copy wins), and convert
  once a day, below any bound, so they do not move the bound choices as heavy users would.

A reach canary is seen ``frequency`` times (its own bin of the frequency histogram) instead,
without shadows.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from dp_platform.events.model import US_PER_DAY, epoch_us

__all__ = ["CANARY_VALUE", "CanaryDesign", "CanarySlot", "canary_events"]

CANARY_VALUE = 1_000_000.0
"""Each canary conversion's order value: above any value cap, so the value cell is at its bound."""

_SECOND = 1_000_000


@dataclass(frozen=True)
class CanarySlot:
    """One canary's place: its user id, its own publisher key and (reach) how often it is seen."""

    index: int
    user: str
    publisher: str
    shadow_publisher: str
    frequency: int = 0


@dataclass(frozen=True)
class CanaryDesign:
    """The canaries of one audit: their slots, what each does a day, and its shadows."""

    slots: tuple[CanarySlot, ...]
    per_day: int
    shadows: int
    converts: bool  # conversion canaries (daily streams, one-shot) or exposure canaries (reach)

    @property
    def publishers(self) -> list[str]:
        """The slots' own publisher keys, and their shadows' (public: the same whatever is
        included)."""
        own = [slot.publisher for slot in self.slots]
        return own + [slot.shadow_publisher for slot in self.slots] if self.shadows else own

    @classmethod
    def converting(cls, count: int, per_day: int, shadows: int | None) -> CanaryDesign:
        """Each shadow reuses a different one of the canary's ids of the day: at most per_day
        (None: exactly per_day)."""
        shadows = per_day if shadows is None else min(shadows, per_day)
        return cls(_slots(count, frequencies=None), per_day, shadows, converts=True)

    @classmethod
    def seen(cls, frequencies: list[int]) -> CanaryDesign:
        return cls(_slots(len(frequencies), frequencies), 0, 0, converts=False)


def _slots(count: int, frequencies: list[int] | None) -> tuple[CanarySlot, ...]:
    if count < 1:
        raise ValueError("an audit needs at least one canary")
    return tuple(
        CanarySlot(
            index=j,
            user=f"audit-canary-{j:04d}",
            publisher=f"audit-pub-{j:04d}",
            shadow_publisher=f"audit-shadow-pub-{j:04d}",
            frequency=0 if frequencies is None else frequencies[j],
        )
        for j in range(count)
    )


@dataclass(frozen=True)
class CanaryEvents:
    impressions: pa.Table
    conversions: pa.Table


def canary_events(
    design: CanaryDesign,
    included: np.ndarray,
    *,
    advertiser: str,
    start: date,
    days: int,
    lookback_days: int,
    conversion_dimensions: dict[str, str],
    impression_dimensions: dict[str, str],
) -> CanaryEvents:
    """The included canaries' events, then every shadow's (module doc), built column by column
    (a run writes tens of thousands of them). ``*_dimensions``: the value each canary event
    carries of each breakdown column."""
    if design.converts and design.shadows > design.per_day:
        raise ValueError(
            f"{design.shadows} shadows per canary need as many of its conversions a day "
            f"(it has {design.per_day})"
        )
    if len(included) != len(design.slots):
        raise ValueError(f"{len(included)} inclusion bits for {len(design.slots)} canaries")
    rows = _Rows(design, advertiser, epoch_us(start), conversion_dimensions, impression_dimensions)
    inside = np.flatnonzero(np.asarray(included, dtype=bool))
    if not design.converts:  # reach: seen on its first `frequency` days, no shadows
        pairs = [(j, t) for j in inside for t in range(min(design.slots[j].frequency, days))]
        slot = np.array([j for j, _ in pairs], dtype=np.int64)
        day = np.array([t for _, t in pairs], dtype=np.int64)
        return CanaryEvents(rows.impressions(slot, day, shadow=None), rows.conversions_none())
    # seen on the first day and every look-back after it, before it converts: every
    # conversion has a touch within its look-back, all in its own cell, under every rule
    seen_days = np.arange(0, days, lookback_days)
    everyone = np.arange(len(design.slots))
    canary = _grid(inside, seen_days)
    shadow = _grid(everyone, np.arange(design.shadows), seen_days)
    bought = _grid(inside, np.arange(days), np.arange(design.per_day))
    copied = _grid(everyone, np.arange(design.shadows), np.arange(days))
    return CanaryEvents(
        impressions=pa.concat_tables(
            [
                rows.impressions(canary[0], canary[1], shadow=None),
                rows.impressions(shadow[0], shadow[2], shadow=shadow[1]),
            ]
        ),
        conversions=pa.concat_tables(
            [
                rows.conversions(bought[0], bought[1], bought[2], shadow=None),
                # each shadow s converts under the canary's s-th id of the day
                rows.conversions(copied[0], copied[2], copied[1], shadow=copied[1]),
            ]
        ),
    )


def _grid(*axes: np.ndarray) -> list[np.ndarray]:
    """Every combination of the axes' values, the first axis slowest (one array per axis)."""
    mesh = np.meshgrid(*axes, indexing="ij")
    return [m.reshape(-1).astype(np.int64) for m in mesh]


def _ids(prefix: str, *numbers: tuple[np.ndarray, int]) -> pa.Array:
    """``prefix-NNNN-NNN…``: each number zero-padded to its width, joined by dashes."""
    parts = [
        pc.utf8_lpad(pc.cast(pa.array(values, pa.int64()), pa.string()), width=width, padding="0")
        for values, width in numbers
    ]
    return pc.binary_join_element_wise(pa.scalar(prefix), *parts, "-")


@dataclass(frozen=True)
class _Rows:
    """The audit's users' rows of the event files (docs/data.md#1-event-files), column-wise."""

    design: CanaryDesign
    advertiser: str
    start_us: int
    conversion_dimensions: dict[str, str]
    impression_dimensions: dict[str, str]

    def _users(self, slot: np.ndarray, shadow: np.ndarray | None) -> pa.Array:
        if shadow is None:
            users = np.array([s.user for s in self.design.slots], dtype=object)
            return pa.array(users[slot], pa.string())
        return _ids("audit-shadow", (slot, 4), (shadow, 3))

    def impressions(self, slot: np.ndarray, day: np.ndarray, shadow: np.ndarray | None) -> pa.Table:
        keys = [s.publisher if shadow is None else s.shadow_publisher for s in self.design.slots]
        event = (
            _ids("audit-imp", (slot, 4), (day, 3))
            if shadow is None
            else _ids("audit-shadow-imp", (slot, 4), (shadow, 3), (day, 3))
        )
        columns = {
            "impression_id": event,
            "user_id": self._users(slot, shadow),
            "publisher_id": pa.array(np.array(keys, dtype=object)[slot], pa.string()),
            "advertiser_id": _constant(self.advertiser, len(slot)),
            "ts": pa.array(self.start_us + day * US_PER_DAY + 60 * _SECOND, _TS),
            "interaction": _constant("view", len(slot)),
        }
        return _table(columns, self.impression_dimensions, len(slot))

    def conversions(
        self, slot: np.ndarray, day: np.ndarray, number: np.ndarray, shadow: np.ndarray | None
    ) -> pa.Table:
        columns = {
            "conversion_id": _ids("audit-conv", (slot, 4), (day, 3), (number, 3)),
            "user_id": self._users(slot, shadow),
            "advertiser_id": _constant(self.advertiser, len(slot)),
            "ts": pa.array(
                self.start_us + day * US_PER_DAY + US_PER_DAY // 2 + number * _SECOND, _TS
            ),
            "value": pa.array(np.full(len(slot), CANARY_VALUE)),
        }
        return _table(columns, self.conversion_dimensions, len(slot))

    def conversions_none(self) -> pa.Table:
        empty = np.zeros(0, dtype=np.int64)
        return self.conversions(empty, empty, empty, shadow=None)


def _constant(value: str, rows: int) -> pa.Array:
    return pa.repeat(pa.scalar(value, pa.string()), rows)


_TS = pa.timestamp("us", tz="UTC")


def _table(columns: dict[str, pa.Array], dimensions: dict[str, str], rows: int) -> pa.Table:
    """The columns, then one column per breakdown dimension holding the canaries' value."""
    for name, value in dimensions.items():
        columns[name] = _constant(value, rows)
    return pa.table(columns)

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
from datetime import date, timedelta

import numpy as np
import pyarrow as pa

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
    """The included canaries' events, then every shadow's (module doc).
    ``*_dimensions``: the value each canary event carries of each breakdown column."""
    if design.converts and design.shadows > design.per_day:
        raise ValueError(
            f"{design.shadows} shadows per canary need as many of its conversions a day "
            f"(it has {design.per_day})"
        )
    if len(included) != len(design.slots):
        raise ValueError(f"{len(included)} inclusion bits for {len(design.slots)} canaries")
    imp_rows: list[dict[str, object]] = []
    conv_rows: list[dict[str, object]] = []
    rows = _Rows(advertiser, start, conversion_dimensions, impression_dimensions)
    for slot, yes in zip(design.slots, included, strict=True):
        if not yes:
            continue
        for t in range(days):
            if _seen_on(design, slot, t, lookback_days):
                imp_rows.append(rows.impression(_imp_id(slot, t), slot.user, slot.publisher, t))
            for i in range(design.per_day):
                conv_rows.append(rows.conversion(_conv_id(slot, t, i), slot.user, t, i))
    for slot in design.slots:
        for s in range(design.shadows):
            user = f"audit-shadow-{slot.index:04d}-{s:03d}"
            for t in range(days):
                if _seen_on(design, slot, t, lookback_days):
                    own = f"audit-shadow-imp-{slot.index:04d}-{s:03d}-{t:03d}"
                    imp_rows.append(rows.impression(own, user, slot.shadow_publisher, t))
                # the canary's id of the day, under another user
                conv_rows.append(rows.conversion(_conv_id(slot, t, s), user, t, s))
    return CanaryEvents(
        impressions=_table(imp_rows, _IMPRESSION_TYPES, impression_dimensions),
        conversions=_table(conv_rows, _CONVERSION_TYPES, conversion_dimensions),
    )


def _imp_id(slot: CanarySlot, day: int) -> str:
    return f"audit-imp-{slot.index:04d}-{day:03d}"


def _conv_id(slot: CanarySlot, day: int, number: int) -> str:
    return f"audit-conv-{slot.index:04d}-{day:03d}-{number:03d}"


@dataclass(frozen=True)
class _Rows:
    """Rows of the event files for the audit's users (docs/data.md#1-event-files)."""

    advertiser: str
    start: date
    conversion_dimensions: dict[str, str]
    impression_dimensions: dict[str, str]

    def impression(self, event: str, user: str, publisher: str, day: int) -> dict[str, object]:
        return {
            "impression_id": event,
            "user_id": user,
            "publisher_id": publisher,
            "advertiser_id": self.advertiser,
            "ts": epoch_us(self.start + timedelta(days=day)) + 60 * _SECOND,
            "interaction": "view",
            **self.impression_dimensions,
        }

    def conversion(self, event: str, user: str, day: int, number: int) -> dict[str, object]:
        return {
            "conversion_id": event,
            "user_id": user,
            "advertiser_id": self.advertiser,
            "ts": epoch_us(self.start + timedelta(days=day)) + US_PER_DAY // 2 + number * _SECOND,
            "value": CANARY_VALUE,
            **self.conversion_dimensions,
        }


def _seen_on(design: CanaryDesign, slot: CanarySlot, day: int, lookback_days: int) -> bool:
    """A converting canary (or shadow) is seen on the first day and every look-back after it,
    before it converts: every conversion has a touch within its look-back, all in its own cell,
    under every attribution rule. A reach canary is seen on its first ``frequency`` days."""
    if design.converts:
        return day % lookback_days == 0
    return day < slot.frequency


_TS = pa.timestamp("us", tz="UTC")
_IMPRESSION_TYPES = {
    "impression_id": pa.string(),
    "user_id": pa.string(),
    "publisher_id": pa.string(),
    "advertiser_id": pa.string(),
    "ts": _TS,
    "interaction": pa.string(),
}
_CONVERSION_TYPES = {
    "conversion_id": pa.string(),
    "user_id": pa.string(),
    "advertiser_id": pa.string(),
    "ts": _TS,
    "value": pa.float64(),
}


def _table(
    rows: list[dict[str, object]], types: dict[str, pa.DataType], dimensions: dict[str, str]
) -> pa.Table:
    schema = pa.schema(
        [
            *(pa.field(name, kind) for name, kind in types.items()),
            *(pa.field(name, pa.string()) for name in dimensions),
        ]
    )
    columns = {field.name: [row[field.name] for row in rows] for field in schema}
    return pa.table(columns, schema=schema)

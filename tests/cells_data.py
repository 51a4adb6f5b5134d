"""Event files with breakdown dimensions and conversion values, and an independent NumPy
attribution + clipping of them (the reference the cell pipeline is checked against).

Imported explicitly by tests/test_cells*.py; not a pytest conftest."""

from __future__ import annotations

import csv
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import numpy as np

from dp_platform.clipping import clipped_sums

START = date(2026, 3, 1)
REGIONS = ["north", "south"]
DEVICES = ["mobile", "desktop", "tv"]
PUBLISHERS = ["pubA", "pubB", "pubC"]
ADVERTISER = "acme"
VALUE_CAP = 50.0


@dataclass(frozen=True)
class Events:
    """The generated rows (impressions: user, publisher, ts, id; conversions: user, ts, id,
    value or None, region, device)."""

    impressions: list[tuple[str, str, datetime, str]]
    conversions: list[tuple[str, datetime, str, float | None, str, str]]

    def without_user(self, user: str) -> Events:
        return Events(
            [i for i in self.impressions if i[0] != user],
            [c for c in self.conversions if c[0] != user],
        )

    @property
    def users(self) -> list[str]:
        return sorted({c[0] for c in self.conversions})


def generate(*, users: int, days: int, seed: int, heavy: int = 0) -> Events:
    """Users see a few ads a day on random publishers and convert Poisson(1.5) times a day,
    with log-normal values (some above the cap, some missing) and random region/device.
    ``heavy`` users convert 8 times on day 1 in one cell with values above the cap (they reach
    the clipping bound, so a wrong scale would show)."""
    rng = np.random.default_rng(seed)
    impressions, conversions = [], []
    for u in range(users):
        user = f"u{u:03d}"
        for d in range(days):
            base = datetime(START.year, START.month, START.day, tzinfo=UTC) + timedelta(days=d)
            for j in range(rng.integers(1, 4)):
                ts = base + timedelta(seconds=int(rng.integers(0, 40_000)))
                pub = PUBLISHERS[int(rng.integers(len(PUBLISHERS)))]
                impressions.append((user, pub, ts, f"i{u}_{d}_{j}"))
            n = 8 if (u < heavy and d == 0) else int(rng.poisson(1.5))
            for j in range(n):
                ts = base + timedelta(seconds=int(rng.integers(40_000, 86_000)))
                if u < heavy and d == 0:
                    value, region, device = 2 * VALUE_CAP, REGIONS[0], DEVICES[0]
                else:
                    value = None if rng.random() < 0.1 else float(rng.lognormal(2.5, 1.0))
                    region = REGIONS[int(rng.integers(len(REGIONS)))]
                    device = DEVICES[int(rng.integers(len(DEVICES)))]
                conversions.append((user, ts, f"c{u}_{d}_{j}", value, region, device))
    return Events(impressions, conversions)


def _iso(ts: datetime) -> str:
    return ts.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def write(events: Events, directory: Path) -> tuple[Path, Path]:
    """The event CSVs (docs/data.md#1-event-files) with the region and device columns."""
    directory.mkdir(parents=True, exist_ok=True)
    imp, conv = directory / "impressions.csv", directory / "conversions.csv"
    with imp.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(
            ["impression_id", "user_id", "publisher_id", "advertiser_id", "ts", "interaction"]
        )
        for user, pub, ts, iid in events.impressions:
            writer.writerow([iid, user, pub, ADVERTISER, _iso(ts), "view"])
    with conv.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(
            ["conversion_id", "user_id", "advertiser_id", "ts", "value", "region", "device"]
        )
        for user, ts, cid, value, region, device in events.conversions:
            writer.writerow(
                [cid, user, ADVERTISER, _iso(ts), "" if value is None else value, region, device]
            )
    return imp, conv


def reference_cells(
    events: Events,
    day: date,
    bound: float,
    *,
    dimensions: list[str],
    measures: list[str],
    lookback_days: int = 30,
) -> np.ndarray:
    """The day's cell vector in published units (count: kept conversions; value: kept
    min(value, cap)), by last-touch attribution and clipping written here in NumPy —
    independent of the warehouse's SQL; clipping by dp_platform/clipping.py."""
    lists = {"region": REGIONS, "device": DEVICES}
    combos = int(np.prod([len(lists[d]) for d in dimensions])) if dimensions else 1
    by_user: dict[str, list[tuple[datetime, str, str]]] = {}
    for user, pub, ts, iid in events.impressions:
        by_user.setdefault(user, []).append((ts, iid, pub))
    rows = []  # (user, ts, id, cell, value)
    for user, ts, cid, value, region, device in events.conversions:
        if ts.date() != day:
            continue
        window = [
            t for t in by_user.get(user, []) if ts - timedelta(days=lookback_days) <= t[0] < ts
        ]
        if not window:
            continue
        _, _, pub = max(window)
        combo, stride = 0, combos
        for name, chosen in (("region", region), ("device", device)):
            if name in dimensions:
                stride //= len(lists[name])
                combo += lists[name].index(chosen) * stride
        cell = PUBLISHERS.index(pub) * combos + combo
        rows.append((user, ts.timestamp(), cid, cell, min(value or 0.0, VALUE_CAP)))
    size = len(PUBLISHERS) * combos
    if not rows:
        return np.zeros(size * len(measures))
    users, ts, ids, cells, values = (np.asarray(c) for c in zip(*rows, strict=True))
    per_measure = []
    for measure in measures:
        weights = np.ones(len(rows)) if measure == "count" else values.astype(np.float64)
        per_measure.append(clipped_sums(users, ts, ids, cells, weights, size, bound))
    return np.stack(per_measure, axis=1).reshape(-1)

"""Event files with breakdown dimensions and conversion values, and an independent NumPy
attribution + clipping of them (the reference the cell pipeline is checked against).

Conversions carry ``region`` and ``device``; impressions carry ``creative`` (an impression
dimension: the credited impression's value places the credit). The reference attributes by
every rule (lta, fta, uni, time_decay, u_shaped), written here from docs/data.md#4-attribution.

``reusing_ids`` shares ids across users (tests/test_cross_user_ids.py); ``ingested`` loads into
DuckDB or Spark, in one load or several.

Imported explicitly by tests/test_cells*.py and the brute-force tests; not a pytest conftest."""

from __future__ import annotations

import csv
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import numpy as np

from dp_platform.clipping import clipped_sums
from dp_platform.warehouse import Warehouse

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from dp_platform.cell_strategy import MarginalWeights
    from dp_platform.cells import CellLayout
    from dp_platform.warehouse.base import WarehouseEngine

START = date(2026, 3, 1)
REGIONS = ["north", "south"]
DEVICES = ["mobile", "desktop", "tv"]
CREATIVES = ["banner", "video", "native"]
PUBLISHERS = ["pubA", "pubB", "pubC"]
ADVERTISER = "acme"
VALUE_CAP = 50.0
T = TypeVar("T")
NOW = datetime(2100, 1, 1, tzinfo=UTC)  # ingest's "now": every generated event is in the past
CONVERSION_LISTS = {"region": REGIONS, "device": DEVICES}
IMPRESSION_LISTS = {"creative": CREATIVES}
DIMENSIONS = {  # the catalogue's ``dimensions`` block for these files: their rows carry only
    # listed values, so without catch-all cells (tests/test_catch_all.py covers those)
    **{
        name: {"source": "conversions", "values": v, "catch_all": None}
        for name, v in CONVERSION_LISTS.items()
    },
    **{
        name: {"source": "impressions", "values": v, "catch_all": None}
        for name, v in IMPRESSION_LISTS.items()
    },
}


def campaign_entry(name: str = "cells", **fields: object) -> dict:
    """One catalogue entry over these files: AdsBPC, last touch, 4 days; ``fields`` override."""
    return {
        "name": name,
        "advertiser": ADVERTISER,
        "account": "acct",
        "start": START.isoformat(),
        "days": 4,
        "publishers": PUBLISHERS,
        "attribution": {"rule": "lta", "lookback_days": 30},
        "mechanism": {"kind": "adsbpc", "bounds": {"quantile_days": 2, "cap": 5}},
        **fields,
    }


@dataclass(frozen=True)
class Events:
    """The generated rows (impressions: user, publisher, ts, id, creative; conversions: user,
    ts, id, value or None, region, device)."""

    impressions: list[tuple[str, str, datetime, str, str]]
    conversions: list[tuple[str, datetime, str, float | None, str, str]]

    def without_user(self, user: str) -> Events:
        return Events(
            [i for i in self.impressions if i[0] != user],
            [c for c in self.conversions if c[0] != user],
        )

    @property
    def users(self) -> list[str]:
        return sorted({c[0] for c in self.conversions})

    def in_loads(self, loads: int) -> list[Events]:
        """Each file's rows cut, in order, into ``loads`` consecutive parts (one per load)."""

        def part(rows: list, n: int) -> list:
            return rows[len(rows) * n // loads : len(rows) * (n + 1) // loads]

        return [Events(part(self.impressions, n), part(self.conversions, n)) for n in range(loads)]


def generate(*, users: int, days: int, seed: int, heavy: int = 0, focused: bool = False) -> Events:
    """Users see a few ads a day on random publishers and convert Poisson(1.5) times a day,
    with log-normal values (some above the cap, some missing) and random region/device; each
    impression shows a random creative (its own seeded stream: the other rows do not change).
    ``heavy`` users convert 8 times on day 1 in one cell with values above the cap (they reach
    the clipping bound, so a wrong scale would show); ``focused`` puts their day-1 impressions
    on one publisher and creative, so that a multi-touch rule credits them to one cell too."""
    rng = np.random.default_rng(seed)
    creatives = np.random.default_rng([seed, 7])
    impressions, conversions = [], []
    for u in range(users):
        user = f"u{u:03d}"
        for d in range(days):
            base = datetime(START.year, START.month, START.day, tzinfo=UTC) + timedelta(days=d)
            for j in range(rng.integers(1, 4)):
                ts = base + timedelta(seconds=int(rng.integers(0, 40_000)))
                pub = PUBLISHERS[int(rng.integers(len(PUBLISHERS)))]
                creative = CREATIVES[int(creatives.integers(len(CREATIVES)))]
                if focused and u < heavy and d == 0:
                    pub, creative = PUBLISHERS[0], CREATIVES[0]
                impressions.append((user, pub, ts, f"i{u}_{d}_{j}", creative))
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


def reusing_ids(events: Events) -> Events:
    """``events`` with ids reused across users, as the advertiser's and the publishers'
    systems may produce (nothing makes their ids unique across users): every other
    impression and conversion of each user after the first takes an id of the first user's
    (cycling through them), so one id belongs to several users — in one file and, once
    :meth:`Events.in_loads` splits the rows, across loads. Each user's first impression and
    first conversion are also repeated at the end of the files: true duplicates of one user's
    event, which ingest still quarantines."""
    owner = events.users[0]

    def reused(rows: list[tuple], at: int) -> list[tuple]:
        """``rows`` with the id (column ``at``) of each non-owner's even-numbered row taken
        from the owner's rows."""
        ids = [row[at] for row in rows if row[0] == owner]
        count: dict[str, int] = {}
        out = []
        for row in rows:
            n = count[row[0]] = count.get(row[0], -1) + 1
            if row[0] != owner and n % 2 == 0:
                row = (*row[:at], ids[(n // 2) % len(ids)], *row[at + 1 :])
            out.append(row)
        firsts = {row[0]: row for row in reversed(out)}  # each user's first row
        return out + [firsts[user] for user in sorted(firsts)]

    return Events(reused(events.impressions, 3), reused(events.conversions, 2))


def _iso(ts: datetime) -> str:
    return ts.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def write(events: Events, directory: Path) -> tuple[Path, Path]:
    """The event CSVs (docs/data.md#1-event-files) with the creative, region and device
    columns (a column the catalogue does not declare is ignored by ingest)."""
    directory.mkdir(parents=True, exist_ok=True)
    imp, conv = directory / "impressions.csv", directory / "conversions.csv"
    with imp.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(
            [
                "impression_id",
                "user_id",
                "publisher_id",
                "advertiser_id",
                "ts",
                "interaction",
                "creative",
            ]
        )
        for user, pub, ts, iid, creative in events.impressions:
            writer.writerow([iid, user, pub, ADVERTISER, _iso(ts), "view", creative])
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


def ingested(
    events: Events,
    directory: Path,
    *,
    creative: bool = True,
    loads: int = 1,
    spark: SparkSession | None = None,
) -> WarehouseEngine:
    """A warehouse holding ``events`` with region and device declared, and the creative unless
    ``creative=False`` (then it is a column ingest ignores): an in-memory DuckDB, or a Spark
    warehouse under ``directory`` when given a ``spark`` session. ``loads`` > 1 splits each
    file's rows, in order, into that many files ingested one after the other."""
    if spark is None:
        warehouse: WarehouseEngine = Warehouse(":memory:")
    else:
        from dp_platform.warehouse.spark.store import SparkWarehouse

        root = directory / "spark"
        warehouse = SparkWarehouse(spark, root / "tables")
    for n, part in enumerate(events.in_loads(loads)):
        imp, conv = write(part, directory / f"load{n}" if loads > 1 else directory)
        warehouse.ingest(
            imp,
            conv,
            now=NOW,
            dimensions=CONVERSION_LISTS,
            impression_dimensions=IMPRESSION_LISTS if creative else None,
        )
    return warehouse


def stored_rows(warehouse: WarehouseEngine, query: str) -> list[tuple]:
    """``query``'s rows on either engine (a Spark warehouse's tables made current first)."""
    use = getattr(warehouse, "_use", None)
    if use is not None:
        use()
    return [tuple(row) for row in warehouse.sql.query(query)]


def leave_one_out(
    events: Events, directory: Path, compute: Callable[[Events, Path], T]
) -> tuple[T, dict[str, T]]:
    """``compute`` on every user's events and on each user's removal (in its own directory):
    the inputs of a brute-force sensitivity check."""
    full = compute(events, directory / "all")
    return full, {
        user: compute(events.without_user(user), directory / user) for user in events.users
    }


def day_one_vectors(
    warehouse: Warehouse,
    campaigns: list,
    *,
    bound: float,
    sigma: float,
    cap: float,
    marginals: Mapping[str, MarginalWeights | None] | None = None,
) -> dict[str, tuple[np.ndarray, dict[str, float]]]:
    """Per campaign: day 1's clipped vector (AdsBPC at ``bound``; AdsBPC+ at (bound, σ, cap),
    its cells measured by ``marginals[name]``, default independent) and, for AdsBPC+, the
    filter's recorded cost per user id."""
    out = {}
    for campaign in campaigns:
        warehouse.attribute_day(campaign, START)
        warehouse.contributions_day(campaign, START)
        if campaign.mechanism.kind == "adsbpc":
            out[campaign.name] = (warehouse.clipped_vector(campaign, START, bound), {})
        else:
            weights = (marginals or {}).get(campaign.name)
            vector = warehouse.plus_clipped_vector(
                campaign, START, bound, sigma, cap, marginals=weights
            )
            costs = {user: cost for user, _, cost in user_costs(warehouse, campaign.name)}
            out[campaign.name] = (vector, costs)
    return out


def user_costs(warehouse: WarehouseEngine, campaign: str) -> list[tuple[str, date, float]]:
    """The AdsBPC+ filter's recorded cost per (user id, day) of ``campaign``, by day."""
    rows = stored_rows(
        warehouse,
        "SELECT s.campaign, u.user_id, s.day, s.cost FROM plus_user_spend AS s "
        "JOIN users AS u ON u.user_key = s.user_key ORDER BY s.day, u.user_id",
    )
    return [(user, day, cost) for name, user, day, cost in rows if name == campaign]


def touch_weights(rule: str, ages_days: list[float], half_life_days: float) -> list[float]:
    """One conversion's weights over its candidates in (ts, impression_id) order, per rule
    (docs/data.md#4-attribution), ``ages_days`` = conv.ts − imp.ts."""
    m = len(ages_days)
    if rule == "lta":
        return [0.0] * (m - 1) + [1.0]
    if rule == "fta":
        return [1.0] + [0.0] * (m - 1)
    if rule == "uni":
        return [1.0 / m] * m
    if rule == "u_shaped":
        if m <= 2:
            return [1.0 / m] * m
        return [0.4] + [0.2 / (m - 2)] * (m - 2) + [0.4]
    if rule == "time_decay":
        raw = [2.0 ** (-age / half_life_days) for age in ages_days]
        return [w / sum(raw) for w in raw]
    raise ValueError(rule)


def credited_rows(
    events: Events, day: date, *, rule: str = "lta", lookback_days: int = 30, half_life=7.0
) -> list[tuple[str, datetime, str, float | None, dict[str, str], str, float]]:
    """The day's attributed (conversion, impression) credits: (user, ts, conversion id,
    value, {dimension: value} of the conversion and of the credited impression, publisher,
    weight) — one row per candidate with weight > 0."""
    by_user: dict[str, list[tuple[datetime, str, str, str]]] = {}
    for user, pub, ts, iid, creative in events.impressions:
        by_user.setdefault(user, []).append((ts, iid, pub, creative))
    rows = []
    for user, ts, cid, value, region, device in events.conversions:
        if ts.date() != day:
            continue
        window = sorted(
            t for t in by_user.get(user, []) if ts - timedelta(days=lookback_days) <= t[0] < ts
        )
        if not window:
            continue
        ages = [(ts - t[0]).total_seconds() / 86_400 for t in window]
        for (_, _, pub, creative), weight in zip(
            window, touch_weights(rule, ages, half_life), strict=True
        ):
            if weight > 0:
                labels = {"region": region, "device": device, "creative": creative}
                rows.append((user, ts, cid, value, labels, pub, weight))
    return rows


def user_entries(
    events: Events, day: date, layout: CellLayout, *, dimensions: list[str]
) -> dict[str, np.ndarray]:
    """Each user's conversions of ``day`` as entries of the released vector of ``layout``
    (k × size, scaled as cell_rows.sql scales them), in (ts, id) order — by last touch over
    30 days, written here in NumPy: the input of privacy/filter.filter_user_day."""
    lists = {"region": REGIONS, "device": DEVICES, "creative": CREATIVES}
    combos = int(np.prod([len(lists[d]) for d in dimensions])) if dimensions else 1
    measures = layout.measures
    out: dict[str, dict[tuple[datetime, str], np.ndarray]] = {}
    for user, ts, cid, value, labels, pub, weight in credited_rows(events, day):
        combo, stride = 0, combos
        for name in dimensions:
            stride //= len(lists[name])
            combo += lists[name].index(labels[name]) * stride
        cell = PUBLISHERS.index(pub) * combos + combo
        entry = out.setdefault(user, {}).setdefault((ts, cid), np.zeros(layout.size))
        for m, measure in enumerate(measures):
            share = (
                1.0 if measure == "count" else min(max(value or 0.0, 0.0), VALUE_CAP) / VALUE_CAP
            )
            entry[cell * len(measures) + m] += weight * layout.scale(measure) * share
    return {user: np.array([rows[k] for k in sorted(rows)]) for user, rows in out.items()}


def reference_cells(
    events: Events,
    day: date,
    bound: float,
    *,
    dimensions: list[str],
    measures: list[str],
    rule: str = "lta",
    lookback_days: int = 30,
    half_life_days: float = 7.0,
) -> np.ndarray:
    """The day's cell vector in published units (count: kept conversions; value: kept
    min(value, cap)), by attribution (``rule``) and clipping written here in NumPy —
    independent of the warehouse's SQL; clipping by dp_platform/clipping.py. ``dimensions``
    in breakdown order, from region, device (conversions) and creative (impressions)."""
    lists = {"region": REGIONS, "device": DEVICES, "creative": CREATIVES}
    combos = int(np.prod([len(lists[d]) for d in dimensions])) if dimensions else 1
    rows = []  # (user, ts, id, cell, weight, value)
    for user, ts, cid, value, labels, pub, weight in credited_rows(
        events, day, rule=rule, lookback_days=lookback_days, half_life=half_life_days
    ):
        combo, stride = 0, combos
        for name in dimensions:
            stride //= len(lists[name])
            combo += lists[name].index(labels[name]) * stride
        cell = PUBLISHERS.index(pub) * combos + combo
        rows.append((user, ts.timestamp(), cid, cell, weight, min(value or 0.0, VALUE_CAP)))
    size = len(PUBLISHERS) * combos
    if not rows:
        return np.zeros(size * len(measures))
    users, ts, ids, cells, weights, values = (np.asarray(c) for c in zip(*rows, strict=True))
    per_measure = []
    for measure in measures:
        amounts = weights.astype(np.float64) * (1.0 if measure == "count" else values)
        per_measure.append(clipped_sums(users, ts, ids, cells, amounts, size, bound))
    return np.stack(per_measure, axis=1).reshape(-1)

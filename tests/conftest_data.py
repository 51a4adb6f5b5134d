"""Shared test data helpers and the slow pure-Python reference of the warehouse's SQL.

Imported explicitly by the data tests (``from tests.conftest_data import ...``); not a pytest
conftest. The reference follows docs/data.md#1-event-files, docs/algorithm.md#data and
docs/algorithm.md#clipping literally, one conversion at a time, so the SQL can be checked against it
on small random event sets."""

from __future__ import annotations

import csv
from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

from dp_platform.clipping import clipped_sums, kept_weights
from dp_platform.config import CampaignConfig
from dp_platform.config_loader import parse_campaign

FAR_FUTURE = datetime(2100, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class Imp:
    impression_id: str
    user_id: str
    publisher_id: str
    advertiser_id: str
    ts: datetime
    interaction: str = "view"


@dataclass(frozen=True)
class Conv:
    conversion_id: str
    user_id: str
    advertiser_id: str
    ts: datetime
    value: float | None = None


IMP_HEADER = ["impression_id", "user_id", "publisher_id", "advertiser_id", "ts", "interaction"]
CONV_HEADER = ["conversion_id", "user_id", "advertiser_id", "ts", "value"]


def iso(ts: datetime) -> str:
    return ts.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def write_csv(path: Path, header: list[str], rows: list[list[object]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)
    return path


def write_events(directory: Path, imps: list[Imp], convs: list[Conv]) -> tuple[Path, Path]:
    """Event CSVs of docs/data.md#1-event-files for the given rows."""
    imp_rows = [
        [i.impression_id, i.user_id, i.publisher_id, i.advertiser_id, iso(i.ts), i.interaction]
        for i in imps
    ]
    conv_rows = [
        [c.conversion_id, c.user_id, c.advertiser_id, iso(c.ts), "" if c.value is None else c.value]
        for c in convs
    ]
    return (
        write_csv(directory / "impressions.csv", IMP_HEADER, imp_rows),
        write_csv(directory / "conversions.csv", CONV_HEADER, conv_rows),
    )


def campaign(
    *,
    rule: str = "lta",
    lookback_days: int = 30,
    half_life_days: float = 7.0,
    start: date = date(2026, 3, 1),
    days: int = 3,
    publishers: str | list[str] = "all",
    advertiser: str = "acme",
    name: str = "c1",
) -> CampaignConfig:
    return parse_campaign(
        {
            "name": name,
            "advertiser": advertiser,
            "account": "acct",
            "start": start.isoformat(),
            "days": days,
            "publishers": publishers,
            "attribution": {
                "rule": rule,
                "lookback_days": lookback_days,
                "half_life_days": half_life_days,
            },
            "mechanism": {"kind": "adsbpc", "bounds": {"quantile_days": 1}},
        }
    )


# -- the reference ----------------------------------------------------------------------------


def reference_weights(
    imps: list[Imp], conv: Conv, campaign: CampaignConfig, publishers: list[str]
) -> dict[str, float]:
    """Attribution weights per publisher of one conversion ({} if unattributed)."""
    window = timedelta(days=campaign.attribution.lookback_days)
    candidates = sorted(
        (
            i
            for i in imps
            if i.user_id == conv.user_id
            and i.advertiser_id == conv.advertiser_id
            and i.publisher_id in publishers
            and conv.ts - window <= i.ts < conv.ts
        ),
        key=lambda i: (i.ts, i.impression_id),
    )
    m = len(candidates)
    if m == 0:
        return {}
    rule = campaign.attribution.rule
    if rule == "lta":
        weights = [0.0] * (m - 1) + [1.0]
    elif rule == "fta":
        weights = [1.0] + [0.0] * (m - 1)
    elif rule == "uni":
        weights = [1.0 / m] * m
    elif rule == "u_shaped":
        if m == 1:
            weights = [1.0]
        elif m == 2:
            weights = [0.5, 0.5]
        else:
            weights = [0.4] + [0.2 / (m - 2)] * (m - 2) + [0.4]
    elif rule == "time_decay":
        half_life = campaign.attribution.half_life_days * 86_400.0
        raw = [2.0 ** (-(conv.ts - i.ts).total_seconds() / half_life) for i in candidates]
        weights = [w / sum(raw) for w in raw]
    else:  # pragma: no cover - config refuses other rules
        raise ValueError(rule)
    out: dict[str, float] = defaultdict(float)
    for imp, weight in zip(candidates, weights, strict=True):
        if weight > 0:
            out[imp.publisher_id] += weight
    return dict(out)


def campaign_convs(convs: list[Conv], campaign: CampaignConfig, day: date) -> list[Conv]:
    return [c for c in convs if c.advertiser_id == campaign.advertiser and c.ts.date() == day]


def reference_attribution(
    imps: list[Imp], convs: list[Conv], campaign: CampaignConfig, publishers: list[str], day: date
) -> dict[str, dict[str, float]]:
    """conversion_id → {publisher: weight} for the attributed conversions of ``day``."""
    out = {}
    for conv in campaign_convs(convs, campaign, day):
        weights = reference_weights(imps, conv, campaign, publishers)
        if weights:
            out[conv.conversion_id] = weights
    return out


def reference_user_rows(
    imps: list[Imp],
    convs: list[Conv],
    campaign: CampaignConfig,
    publishers: list[str],
    day: date,
) -> dict[str, list[Conv]]:
    """user_id → their attributed conversions of ``day`` in (ts, conversion_id) order."""
    attributed = reference_attribution(imps, convs, campaign, publishers, day)
    by_user: dict[str, list[Conv]] = defaultdict(list)
    for conv in campaign_convs(convs, campaign, day):
        if conv.conversion_id in attributed:
            by_user[conv.user_id].append(conv)
    return {u: sorted(cs, key=lambda c: (c.ts, c.conversion_id)) for u, cs in by_user.items()}


def reference_histogram(rows: dict[str, list[Conv]]) -> list[int]:
    """h[c] = users with exactly c attributed conversions (h[0] = 0), uncapped, length ≥ 1."""
    counts = [len(cs) for cs in rows.values()]
    hist = [0] * ((max(counts) + 1) if counts else 1)
    for c in counts:
        hist[c] += 1
    return hist


def clipped_by_spec(
    attributed: dict[str, dict[str, float]],
    rows: dict[str, list[Conv]],
    bound: float,
    publishers: list[str],
) -> tuple[list[float], dict[str, float]]:
    """The clipping specification (dp_platform/clipping.py) on the reference attribution:
    the per-publisher vector and every user's clipped L1 norm."""
    users, ts, ids, pubs, weights = [], [], [], [], []
    for conversions in rows.values():
        for conv in conversions:
            for publisher, weight in attributed[conv.conversion_id].items():
                users.append(conv.user_id)
                ts.append(conv.ts.timestamp())
                ids.append(conv.conversion_id)
                pubs.append(publishers.index(publisher))
                weights.append(weight)
    vector = clipped_sums(users, ts, ids, pubs, weights, len(publishers), bound)
    norms: dict[str, float] = defaultdict(float)
    for user, value in zip(users, kept_weights(users, ts, ids, weights, bound), strict=True):
        norms[user] += float(value)
    return vector.tolist(), dict(norms)

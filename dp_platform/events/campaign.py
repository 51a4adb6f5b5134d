"""An event-level synthetic campaign: what an ad platform's logs would hand the warehouse.

* Users have heavy-tailed activity (log-normal weights), so a few users see many impressions
  and convert often — the reason contribution bounding exists.
* Publishers have Zipf-like popularity; each impression is a view or, with ``click_rate``, a
  click. Impressions cover the campaign's days and the look-back window before its start.
* Every conversion has an order value: log-normal with median ``value_median`` (e³ ≈ 20.09 by
  default) and log-scale spread ``value_sigma_log`` (1.0: the middle 50 % of orders lie within
  a factor e^0.674 ≈ 1.96 of the median, and the mean is e^0.5 ≈ 1.65 × the median), rounded to
  cents: a few large baskets, many small ones.
* Optional breakdown dimensions (``dimensions=True``): each user has a ``region`` and a
  ``device`` (public value lists :data:`REGIONS`, :data:`DEVICES`, illustrative shares), and
  every conversion carries its user's. They are drawn from a separate seeded stream after
  everything else, so every other output is identical with or without them. Any other
  breakdown is asked for by name and public values: ``conversion_dimensions`` (a value per
  user, carried by their conversions) and ``impression_dimensions`` (a value per impression,
  e.g. the ad's ``creative``: :data:`CREATIVES`), each from its own seeded stream too; a list
  of values gets equal shares, a mapping value → share its shares.
* Conversions follow an impression of the same user and advertiser after a log-normal lag
  (median ``median_lag_hours``, long tail: some fall outside the look-back window); clicks are
  ``click_weight`` times likelier to lead to one. A share ``unattributed_share`` are organic:
  a random user at a random time, often with no impression before it, so unattributable.

Everything is drawn with one seeded ``numpy.random.Generator`` and vectorised; the arrays come
out sorted by time, as a log would be.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from datetime import date, timedelta

import numpy as np

from dp_platform.events.model import US_PER_DAY, EventSet, epoch_us

__all__ = ["CREATIVES", "DEVICES", "REGIONS", "DimensionValues", "generate_campaign"]

# Public breakdown values and their shares of users (illustrative, not measured).
REGIONS: dict[str, float] = {
    "north_america": 0.30,
    "europe": 0.28,
    "asia_pacific": 0.27,
    "latin_america": 0.09,
    "middle_east_africa": 0.06,
}
DEVICES: dict[str, float] = {"mobile": 0.62, "desktop": 0.31, "tablet": 0.07}
CREATIVES: dict[str, float] = {"banner": 0.45, "video": 0.35, "native": 0.20}
"""An impression dimension's public values and shares (illustrative): the ad shown."""
_DIMENSION_STREAM = 1  # spawn key of the dimensions' generator: independent of the main stream
_CONVERSION_COLUMNS_STREAM = 2  # further conversion dimensions (asked for by name)
_IMPRESSION_COLUMNS_STREAM = 3  # impression dimensions

DimensionValues = Sequence[str] | Mapping[str, float]
"""A dimension's public values: a list (equal shares) or value → share."""

_US_PER_HOUR = 3_600_000_000


def _activity(rng: np.random.Generator, users: int, sigma: float) -> np.ndarray:
    weights = rng.lognormal(0.0, sigma, size=users)
    return weights / weights.sum()


def _impressions(
    rng: np.random.Generator,
    *,
    count: int,
    users: int,
    publishers: int,
    advertisers: int,
    t0: int,
    t1: int,
    activity_sigma: float,
    publisher_skew: float,
    click_rate: float,
) -> tuple[np.ndarray, ...]:
    per_user = rng.multinomial(count, _activity(rng, users, activity_sigma))
    user = rng.permutation(np.repeat(np.arange(users, dtype=np.int32), per_user))
    ts = np.sort(rng.integers(t0, t1, size=count, dtype=np.int64))
    popularity = 1.0 / np.arange(1, publishers + 1) ** publisher_skew
    publisher = rng.choice(publishers, size=count, p=popularity / popularity.sum())
    advertiser = rng.integers(0, advertisers, size=count, dtype=np.int16)
    click = rng.random(count) < click_rate
    return user, publisher.astype(np.int32), advertiser, ts, click


def _seeded_conversions(
    rng: np.random.Generator,
    need: int,
    imp: tuple[np.ndarray, ...],
    *,
    c0: int,
    c1: int,
    click_weight: float,
    median_lag_hours: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``need`` conversions in [c0, c1), each after a random (click-weighted) impression."""
    user, _, advertiser, ts, click = imp
    eligible = (ts < c1) & (ts >= c0 - 7 * US_PER_DAY)
    clicks = np.flatnonzero(eligible & click)
    views = np.flatnonzero(eligible & ~click)
    if need and len(clicks) + len(views) == 0:
        raise ValueError("no impression near the campaign's days to convert from")
    p_click = click_weight * len(clicks) / (click_weight * len(clicks) + len(views))
    parts: list[np.ndarray] = []
    have = 0
    while have < need:
        draw = int(1.5 * (need - have)) + 16
        from_click = rng.random(draw) < p_click
        seeds = np.where(
            from_click,
            clicks[rng.integers(0, max(len(clicks), 1), size=draw)] if len(clicks) else 0,
            views[rng.integers(0, max(len(views), 1), size=draw)] if len(views) else 0,
        )
        lag = rng.lognormal(np.log(median_lag_hours * _US_PER_HOUR), 1.5, size=draw)
        conv_ts = ts[seeds] + 1 + lag.astype(np.int64)
        keep = (conv_ts >= c0) & (conv_ts < c1)
        parts.append(np.stack([seeds[keep], conv_ts[keep]]))
        have += int(keep.sum())
    chosen = np.concatenate(parts, axis=1)[:, :need] if parts else np.zeros((2, 0), np.int64)
    seeds, conv_ts = chosen
    return user[seeds], advertiser[seeds], conv_ts


def _user_dimensions(
    seed: int, users: int, conv_user: np.ndarray
) -> dict[str, tuple[tuple[str, ...], np.ndarray]]:
    """Each user's region and device, as each conversion's (value list, int codes)."""
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(_DIMENSION_STREAM,)))
    out: dict[str, tuple[tuple[str, ...], np.ndarray]] = {}
    for name, shares in (("region", REGIONS), ("device", DEVICES)):
        labels = tuple(shares)
        per_user = rng.choice(len(labels), size=users, p=np.fromiter(shares.values(), float))
        out[name] = (labels, per_user.astype(np.int16)[conv_user])
    return out


def _shares(name: str, values: DimensionValues) -> tuple[tuple[str, ...], np.ndarray]:
    """A dimension's labels and their probabilities (equal for a list)."""
    labels = tuple(values)
    if not labels or len(set(labels)) != len(labels):
        raise ValueError(f"dimension {name!r}: values must be distinct and not empty")
    if isinstance(values, Mapping):
        shares = np.fromiter((float(values[v]) for v in labels), float, len(labels))
        if not (np.all(shares >= 0) and shares.sum() > 0):
            raise ValueError(f"dimension {name!r}: shares must be >= 0 and not all 0")
        return labels, shares / shares.sum()
    return labels, np.full(len(labels), 1.0 / len(labels))


def _drawn_dimensions(
    seed: int, stream: int, dimensions: Mapping[str, DimensionValues], size: int
) -> dict[str, tuple[tuple[str, ...], np.ndarray]]:
    """``size`` draws of each dimension's code from its shares, on its own seeded stream."""
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(stream,)))
    out: dict[str, tuple[tuple[str, ...], np.ndarray]] = {}
    for name, values in dimensions.items():
        labels, shares = _shares(name, values)
        out[name] = (labels, rng.choice(len(labels), size=size, p=shares).astype(np.int16))
    return out


def generate_campaign(
    *,
    seed: int,
    users: int = 10_000,
    publishers: int = 20,
    impressions: int = 200_000,
    conversions: int = 20_000,
    days: int = 31,
    start: date = date(2026, 3, 1),
    lookback_days: int = 30,
    advertisers: tuple[str, ...] = ("acme",),
    click_rate: float = 0.05,
    click_weight: float = 5.0,
    median_lag_hours: float = 12.0,
    unattributed_share: float = 0.1,
    activity_sigma: float = 1.0,
    publisher_skew: float = 0.8,
    value_median: float = math.exp(3.0),
    value_sigma_log: float = 1.0,
    dimensions: bool = False,
    conversion_dimensions: Mapping[str, DimensionValues] | None = None,
    impression_dimensions: Mapping[str, DimensionValues] | None = None,
) -> EventSet:
    """Impressions over [start − lookback, end] and conversions over the campaign's days.
    ``conversion_dimensions`` / ``impression_dimensions``: further breakdown columns (module
    doc); they change no other output."""
    if min(users, publishers, days) < 1 or not advertisers:
        raise ValueError("users, publishers, days and advertisers must be >= 1")
    if not (value_median > 0 and value_sigma_log >= 0):
        raise ValueError("value_median must be > 0 and value_sigma_log >= 0")
    if impressions < 0 or conversions < 0 or not 0 <= unattributed_share <= 1:
        raise ValueError("counts must be >= 0 and unattributed_share in [0, 1]")
    rng = np.random.default_rng(seed)
    c0 = epoch_us(start)
    c1 = epoch_us(start + timedelta(days=days))
    imp = _impressions(
        rng,
        count=impressions,
        users=users,
        publishers=publishers,
        advertisers=len(advertisers),
        t0=c0 - lookback_days * US_PER_DAY,
        t1=c1,
        activity_sigma=activity_sigma,
        publisher_skew=publisher_skew,
        click_rate=click_rate,
    )
    organic = round(conversions * unattributed_share) if impressions else conversions
    seeded = _seeded_conversions(
        rng,
        conversions - organic,
        imp,
        c0=c0,
        c1=c1,
        click_weight=click_weight,
        median_lag_hours=median_lag_hours,
    )
    conv_user = np.concatenate([seeded[0], rng.integers(0, users, organic, dtype=np.int32)])
    conv_adv = np.concatenate(
        [seeded[1], rng.integers(0, len(advertisers), organic, dtype=np.int16)]
    )
    conv_ts = np.concatenate([seeded[2], rng.integers(c0, c1, organic, dtype=np.int64)])
    order = np.argsort(conv_ts, kind="stable")
    value = np.round(rng.lognormal(math.log(value_median), value_sigma_log, conversions), 2)
    user, publisher, advertiser, ts, click = imp
    conv_user = conv_user[order]
    by_conversion = _user_dimensions(seed, users, conv_user) if dimensions else {}
    per_user = _drawn_dimensions(
        seed, _CONVERSION_COLUMNS_STREAM, conversion_dimensions or {}, users
    )
    for name, (labels, codes) in per_user.items():
        if name in by_conversion:
            raise ValueError(f"dimension {name!r} is asked for twice")
        by_conversion[name] = (labels, codes[conv_user])
    by_impression = _drawn_dimensions(
        seed, _IMPRESSION_COLUMNS_STREAM, impression_dimensions or {}, impressions
    )
    return EventSet(
        imp_user=user,
        imp_publisher=publisher,
        imp_advertiser=advertiser,
        imp_ts=ts,
        imp_click=click,
        conv_user=conv_user,
        conv_advertiser=conv_adv[order],
        conv_ts=conv_ts[order],
        conv_value=value,
        n_users=users,
        n_publishers=publishers,
        advertisers=tuple(advertisers),
        conv_dimensions=by_conversion,
        imp_dimensions=by_impression,
    )

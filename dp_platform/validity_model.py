"""The formal model behind the validity table (docs/validity.md): events, attribution, bounding.

Small and literal on purpose — it is the reference the brute-force verifier runs on tiny
datasets, not the warehouse. One advertiser or several, any publishers, real-valued times.

* Impression (id, user, publisher, advertiser, t); conversion (id, user, advertiser, t, value).
* Attribution: the candidates of conversion c are the impressions of the same user and
  advertiser with c.t − W ≤ t < c.t, ordered by (t, id); the rule gives them weights ≥ 0 that
  sum to 1 (lta, fta, uni, time_decay, u_shaped, as the warehouse's SQL).
* f(D) is the vector over (publisher, advertiser) of Σ kept weight × value (Δ(f) = V ≥ value).
* Contribution bounding with bound r, scope = the adjacency's unit:
  - post: after attribution, the credits (c → i, w) of each bounding key are kept in
    (c.t, c.id, i.t, i.id) order until their weights reach r (the last one fractionally), the
    rest dropped; the key of a credit is the unit of the record(s) the relation protects;
  - pre: before attribution, each unit keeps only its first ⌊r⌋ records (by t, id) of the kind
    the relation protects through its unit: conversions for units that hold conversions,
    impressions for units that hold only impressions.
* Neighbours: D and D − S, S = all records of one unit of D (add/remove of a unit; the
  relation is symmetric so removals from every generated D cover the additions too).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Hashable
from dataclasses import dataclass

__all__ = [
    "ADJACENCIES",
    "ENFORCEMENTS",
    "RULES",
    "Conversion",
    "Dataset",
    "Impression",
    "attribute",
    "l1_change",
    "release",
    "unit_of",
]

RULES = ("lta", "fta", "uni", "time_decay", "u_shaped")
ADJACENCIES = (
    "user",
    "user_advertiser",
    "user_publisher",
    "user_publisher_advertiser",
    "impression",
    "conversion",
)
ENFORCEMENTS = ("pre", "post")


@dataclass(frozen=True, order=True)
class Impression:
    t: float
    id: int
    user: int
    publisher: int
    advertiser: int


@dataclass(frozen=True, order=True)
class Conversion:
    t: float
    id: int
    user: int
    advertiser: int
    value: float = 1.0


@dataclass(frozen=True)
class Dataset:
    impressions: tuple[Impression, ...]
    conversions: tuple[Conversion, ...]
    window: float = float("inf")
    half_life: float = 1.0


Record = Impression | Conversion
Credit = tuple[Conversion, Impression, float]


def unit_of(adjacency: str, record: Record) -> Hashable | None:
    """The unit a record belongs to under a relation; None: not protected by it (held fixed).

    Conversions happen on the advertiser's site, not on a publisher, so the publisher-scoped
    relations (and ``impression``) protect impressions only; ``conversion`` protects
    conversions only.
    """
    imp = isinstance(record, Impression)
    if adjacency == "user":
        return ("u", record.user)
    if adjacency == "user_advertiser":
        return ("ua", record.user, record.advertiser)
    if adjacency == "user_publisher":
        return ("up", record.user, record.publisher) if imp else None  # type: ignore[union-attr]
    if adjacency == "user_publisher_advertiser":
        if not imp:
            return None
        return ("upa", record.user, record.publisher, record.advertiser)  # type: ignore[union-attr]
    if adjacency == "impression":
        return ("i", record.id) if imp else None
    if adjacency == "conversion":
        return None if imp else ("c", record.id)
    raise ValueError(f"unknown adjacency {adjacency!r}")


def _weights(rule: str, conv: Conversion, cands: list[Impression], half_life: float) -> list[float]:
    m = len(cands)
    if rule == "lta":
        return [0.0] * (m - 1) + [1.0]
    if rule == "fta":
        return [1.0] + [0.0] * (m - 1)
    if rule == "uni":
        return [1.0 / m] * m
    if rule == "time_decay":
        raw = [2.0 ** (-(conv.t - i.t) / half_life) for i in cands]
        total = sum(raw)
        return [w / total for w in raw]
    if rule == "u_shaped":
        if m == 1:
            return [1.0]
        if m == 2:
            return [0.5, 0.5]
        return [0.4] + [0.2 / (m - 2)] * (m - 2) + [0.4]
    raise ValueError(f"unknown rule {rule!r}")


def attribute(data: Dataset, rule: str) -> list[Credit]:
    """Every credit (conversion, impression, weight > 0) of the dataset under the rule."""
    by_key: dict[tuple[int, int], list[Impression]] = defaultdict(list)
    for imp in sorted(data.impressions):
        by_key[(imp.user, imp.advertiser)].append(imp)
    credits: list[Credit] = []
    for conv in sorted(data.conversions):
        cands = [
            i
            for i in by_key.get((conv.user, conv.advertiser), [])
            if conv.t - data.window <= i.t < conv.t
        ]
        if not cands:
            continue
        for imp, w in zip(cands, _weights(rule, conv, cands, data.half_life), strict=True):
            if w > 0:
                credits.append((conv, imp, w))
    return credits


def _credit_key(adjacency: str, conv: Conversion, imp: Impression) -> Hashable:
    """The bounding key of a credit: the unit of the protected record it comes from."""
    return unit_of(adjacency, imp) if unit_of(adjacency, conv) is None else unit_of(adjacency, conv)


def _pre_bound(data: Dataset, adjacency: str, bound: float) -> Dataset:
    keep = int(bound)
    seen: dict[Hashable, int] = defaultdict(int)
    kept_imps, kept_convs = [], []
    holds_conversions = adjacency in {"user", "user_advertiser", "conversion"}
    for record in sorted([*data.impressions, *data.conversions], key=lambda r: (r.t, r.id)):
        unit = unit_of(adjacency, record)
        bounded = isinstance(record, Conversion) == holds_conversions
        if unit is not None and bounded:
            seen[unit] += 1
            if seen[unit] > keep:
                continue
        (kept_imps if isinstance(record, Impression) else kept_convs).append(record)
    return Dataset(tuple(kept_imps), tuple(kept_convs), data.window, data.half_life)


def _post_bound(credits: list[Credit], adjacency: str, bound: float) -> list[Credit]:
    used: dict[Hashable, float] = defaultdict(float)
    kept: list[Credit] = []
    for conv, imp, w in sorted(credits, key=lambda c: (c[0].t, c[0].id, c[1].t, c[1].id)):
        key = _credit_key(adjacency, conv, imp)
        take = min(w, max(0.0, bound - used[key]))
        used[key] += take
        if take > 0:
            kept.append((conv, imp, take))
    return kept


def release(data: Dataset, rule: str, adjacency: str, enforcement: str, bound: float) -> dict:
    """f(D) after bounding: {(publisher, advertiser): Σ kept weight × value}."""
    if enforcement == "pre":
        credits = attribute(_pre_bound(data, adjacency, bound), rule)
    elif enforcement == "post":
        credits = _post_bound(attribute(data, rule), adjacency, bound)
    else:
        raise ValueError(f"unknown enforcement {enforcement!r}")
    out: dict[tuple[int, int], float] = defaultdict(float)
    for conv, imp, w in credits:
        out[(imp.publisher, imp.advertiser)] += w * conv.value
    return dict(out)


def without_unit(data: Dataset, adjacency: str, unit: Hashable) -> Dataset:
    keep: Callable[[Record], bool] = lambda r: unit_of(adjacency, r) != unit  # noqa: E731
    return Dataset(
        tuple(i for i in data.impressions if keep(i)),
        tuple(c for c in data.conversions if keep(c)),
        data.window,
        data.half_life,
    )


def l1_change(a: dict, b: dict) -> float:
    return sum(abs(a.get(k, 0.0) - b.get(k, 0.0)) for k in set(a) | set(b))


def units(data: Dataset, adjacency: str) -> set[Hashable]:
    found = {unit_of(adjacency, r) for r in (*data.impressions, *data.conversions)}
    found.discard(None)
    return found

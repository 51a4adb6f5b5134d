"""Which (attribution rule, adjacency, enforcement point) configurations are valid (Delaney et al.).

A configuration is *C0-valid* if, for every dataset D and neighbour D′ under the adjacency, the
bounded attributed release f satisfies ‖f(D) − f(D′)‖₁ ≤ C0·r·Δ(f), where r is the contribution
bound (enforced on the adjacency's own unit, before or after attribution) and Δ(f) bounds one
conversion's value. Then Laplace noise of scale C0·r·Δ(f)/ε per coordinate is ε-DP (Lemma 1 of
Delaney et al.). The table below is derived in docs/validity.md from the definitions in
:mod:`dp_platform.validity_model`; :func:`verify_cell` confirms every valid cell by brute force
on random small datasets, and :func:`witness` builds, for every invalid cell, a family of
neighbouring datasets whose ℓ1 change grows without bound.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

from dp_platform.validity_model import (
    ADJACENCIES,
    ENFORCEMENTS,
    RULES,
    Conversion,
    Dataset,
    Impression,
    l1_change,
    release,
    unit_of,
    units,
    without_unit,
)

__all__ = [
    "ADJACENCIES",
    "ENFORCEMENTS",
    "RULES",
    "Validity",
    "check",
    "random_dataset",
    "table",
    "verify_cell",
    "witness",
    "worst_change",
]

_CLOSED = {"user", "user_advertiser", "conversion"}  # units closed under attribution
_UNIT_ID = 0  # in every witness, the removed unit is that of impression 0 (publisher 0)


@dataclass(frozen=True)
class Validity:
    valid: bool
    c0: float | None
    reason: str

    def to_json(self) -> dict:
        return {"valid": self.valid, "c0": self.c0, "reason": self.reason}


def check(rule: str, adjacency: str, enforcement: str) -> Validity:
    """The table: valid with constant C0, or invalid with the reason (docs/validity.md)."""
    if rule not in RULES:
        raise ValueError(f"rule must be one of {RULES}, got {rule!r}")
    if adjacency not in ADJACENCIES:
        raise ValueError(f"adjacency must be one of {ADJACENCIES}, got {adjacency!r}")
    if enforcement not in ENFORCEMENTS:
        raise ValueError(f"enforcement must be one of {ENFORCEMENTS}, got {enforcement!r}")
    if adjacency in _CLOSED:
        return Validity(
            True,
            1.0,
            "every credit of a conversion goes to impressions of the same user and advertiser, "
            f"so a {adjacency} unit's credits change only among themselves; bounding that unit "
            "to r leaves an l1 change of at most r·Δ(f)",
        )
    if enforcement == "pre":
        return Validity(
            False,
            None,
            f"a {adjacency} unit holds impressions only; the conversions that credit them lie "
            "outside it, so bounding the unit's records before attribution does not bound the "
            "credit it can take from (or give back to) other impressions",
        )
    if adjacency != "impression":
        return Validity(
            False,
            None,
            f"removing a {adjacency} unit hands its conversions back to impressions of other "
            "publishers, each its own bounding unit with its own r, and there can be "
            "arbitrarily many of them",
        )
    if rule in {"lta", "fta"}:
        return Validity(
            True,
            2.0,
            "one impression takes its credit from exactly one other impression (the touch "
            "before it for lta, after it for fta): each side changes by at most r·Δ(f)",
        )
    reasons = {
        "time_decay": "a recent impression takes almost all the weight of older ones: one "
        "added impression lowers the credit of arbitrarily many impressions by almost r each",
        "uni": "an added impression lowers the weight of every co-candidate from 1/m to "
        "1/(m+1); with conversion values, the impression d places away changes by up to "
        "r·Δ(f)/(d+1), a harmonic sum without bound",
        "u_shaped": "an added middle impression lowers every other middle weight from "
        "0.2/(m−2) to 0.2/(m−1); with conversion values the changes add up like a harmonic "
        "sum, without bound",
    }
    return Validity(False, None, reasons[rule])


def table() -> dict[tuple[str, str, str], Validity]:
    """Every cell: rule × adjacency × enforcement."""
    return {
        (rule, adjacency, enforcement): check(rule, adjacency, enforcement)
        for rule in RULES
        for adjacency in ADJACENCIES
        for enforcement in ENFORCEMENTS
    }


# -- brute force ------------------------------------------------------------------------------


def worst_change(data: Dataset, rule: str, adjacency: str, enforcement: str, bound: float) -> float:
    """max over every unit of D of ‖f(D) − f(D − unit)‖₁ (bounded, attributed release)."""
    base = release(data, rule, adjacency, enforcement, bound)
    changes = [
        l1_change(
            base, release(without_unit(data, adjacency, u), rule, adjacency, enforcement, bound)
        )
        for u in units(data, adjacency)
    ]
    return max(changes, default=0.0)


def random_dataset(rng: random.Random, value_cap: float = 1.0) -> Dataset:
    """A small random dataset: 1–2 users, 1–4 publishers, 1–2 advertisers, ≤ 9 impressions,
    ≤ 8 conversions, an optional 3-unit window, values in [0, value_cap]."""
    users, pubs, advs = rng.randint(1, 2), rng.randint(1, 4), rng.randint(1, 2)
    imps = tuple(
        Impression(
            rng.uniform(0, 10), k, rng.randrange(users), rng.randrange(pubs), rng.randrange(advs)
        )
        for k in range(rng.randint(1, 9))
    )
    convs = tuple(
        Conversion(
            rng.uniform(0, 10),
            100 + k,
            rng.randrange(users),
            rng.randrange(advs),
            rng.choice([value_cap, rng.uniform(0, value_cap)]),
        )
        for k in range(rng.randint(1, 8))
    )
    return Dataset(imps, convs, rng.choice([math.inf, 3.0]), rng.choice([0.5, 2.0]))


def verify_cell(
    rule: str, adjacency: str, enforcement: str, *, datasets: int = 150, seed: int = 0
) -> float:
    """The largest ‖Δf‖₁ / (r·Δ(f)) over random datasets, all their neighbours, r ∈ {1, 2}
    (and 1.5 after attribution, where bounds may be fractional)."""
    rng = random.Random(seed)
    worst = 0.0
    for _ in range(datasets):
        value_cap = rng.choice([1.0, 3.0])
        data = random_dataset(rng, value_cap)
        bounds = [1.0, 2.0] + ([1.5] if enforcement == "post" else [])
        bound = rng.choice(bounds)
        change = worst_change(data, rule, adjacency, enforcement, bound)
        worst = max(worst, change / (bound * value_cap))
    return worst


def witness(rule: str, adjacency: str, enforcement: str, size: int) -> float:
    """For an invalid cell: ‖f(D) − f(D − S)‖₁ / (r·Δ(f)) for a dataset D and unit S built so
    that this ratio grows without bound in ``size`` (r = 1, values ≤ 1)."""
    if check(rule, adjacency, enforcement).valid:
        raise ValueError("valid cells have no witness")
    if enforcement == "pre":
        data = _steal_many(rule, size)
    elif adjacency != "impression":
        data = _blocks(rule, size)
    else:
        data = {"time_decay": _recent_wins, "uni": _harmonic_uni, "u_shaped": _harmonic_u}[rule](
            size
        )
    unit_impression = next(i for i in data.impressions if i.id == _UNIT_ID)
    unit = unit_of(adjacency, unit_impression)
    before = release(data, rule, adjacency, enforcement, 1.0)
    after = release(without_unit(data, adjacency, unit), rule, adjacency, enforcement, 1.0)
    return l1_change(before, after)


def _steal_many(rule: str, size: int) -> Dataset:
    """The unit's impression (publisher 0) and an older/newer one on publisher 1, then
    ``size`` conversions: the unit's impression decides the credit of all of them."""
    other, unit = (0.0, 1.0) if rule != "fta" else (1.0, 0.0)
    imps = (Impression(other, 1, 0, 1, 0), Impression(unit, 0, 0, 0, 0))
    convs = tuple(Conversion(2.0 + k / size, 100 + k, 0, 0) for k in range(size))
    return Dataset(imps, convs, math.inf, 1.0)


def _blocks(rule: str, size: int) -> Dataset:
    """``size`` blocks, each: an impression on publisher k+1 and one on publisher 0 (the unit),
    then one conversion; a 5-unit window isolates the blocks. Removing publisher 0's unit gives
    every block's conversion back to its own publisher's unit."""
    imps, convs = [], []
    for k in range(size):
        other, unit = (10.0 * k, 10.0 * k + 1) if rule != "fta" else (10.0 * k + 1, 10.0 * k)
        ids = (0, 1) if k == 0 else (2 * k, 2 * k + 1)
        imps += [Impression(other, ids[1], 0, k + 1, 0), Impression(unit, ids[0], 0, 0, 0)]
        convs.append(Conversion(10.0 * k + 2, 100 + k, 0, 0))
    return Dataset(tuple(imps), tuple(convs), 5.0, 1.0)


def _recent_wins(size: int) -> Dataset:
    """``size`` old impressions (publishers 1..size) and one recent one (publisher 0); ``size``
    conversions right after it. Half-life 1: the recent one takes weight ≈ 1."""
    gap = 2 * math.log2(size + 1) + 10
    imps = [Impression(0.001 * k, k + 1, 0, k + 1, 0) for k in range(size)]
    imps.append(Impression(gap, 0, 0, 0, 0))
    convs = tuple(Conversion(gap + 0.5 + k / (10 * size), 100 + k, 0, 0) for k in range(size))
    return Dataset(tuple(imps), convs, math.inf, 1.0)


def _harmonic_uni(size: int) -> Dataset:
    """Impression 0 (the unit) first; impression d (publisher d) at 10d, followed by block d of
    d+1 conversions: d of value 0, then one of value 1. Without impression 0, impression d keeps
    the first d conversions of its block (value 0); with it, all d+1 at weight 1/(d+1)."""
    imps = [Impression(0.0, 0, 0, 0, 0)]
    convs: list[Conversion] = []
    for d in range(1, size + 1):
        imps.append(Impression(10.0 * d, d, 0, d, 0))
        for n in range(d + 1):
            value = 1.0 if n == d else 0.0
            convs.append(Conversion(10.0 * d + 1 + n / (d + 2), 1000 * d + n, 0, 0, value))
    return Dataset(tuple(imps), tuple(convs), math.inf, 1.0)


def _harmonic_u(size: int) -> Dataset:
    """First-touch anchor (publisher 1), the unit impression, then pairs (a_t, b_t) at 10t,
    10t + 1 and block t of 10t conversions (value 0, then the last 5 of value 1). a_t is a
    middle of block t with weight 0.2/(2t−1), 0.2/(2t) once the unit is added."""
    imps = [Impression(-1.0, 1, 0, 1, 0), Impression(0.0, 0, 0, 0, 0)]
    convs: list[Conversion] = []
    for t in range(1, size + 1):
        imps.append(Impression(10.0 * t, 2 * t, 0, 2 * t, 0))
        imps.append(Impression(10.0 * t + 1, 2 * t + 1, 0, 2 * t + 1, 0))
        block = 10 * t
        for n in range(block):
            value = 1.0 if n >= block - 5 else 0.0
            convs.append(Conversion(10.0 * t + 2 + n / (block + 1), 10_000 * t + n, 0, 0, value))
    return Dataset(tuple(imps), tuple(convs), math.inf, 1.0)

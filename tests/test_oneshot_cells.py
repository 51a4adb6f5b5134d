"""One-shot releases of cells (docs/algorithm.md#cells, docs/mechanisms.md): the Laplace
mechanism's unit is ℓ1, so each measure is scaled by 1/m (not 1/√m) and one conversion's cells
have ℓ1 norm ≤ 1.

Brute force: the period's bounded cell sums are computed from the warehouse with every user
removed in turn; the ℓ1 change must be at most the plan's sensitivity C0·r (× 2 under replace
with several cells) — the figure declared to the sampler — and the focused heavy user reaches
it, so a scale of 1/√2 (ℓ1 norm √2 per conversion) fails. Then the release: the published cell
is the noisy entry × its unit, its σ and 95 % interval are the Laplace law's, and each
publisher's value is the exact sum of its count cells.
"""

from __future__ import annotations

import math
from datetime import timedelta

import numpy as np
import pytest

from dp_platform.cells import GRID, layout_of
from dp_platform.config_loader import parse_catalogue
from dp_platform.mechanisms.oneshot import (
    MECHANISM,
    plan_from_config,
    release_one_shot,
    warehouse_sums,
)
from dp_platform.privacy.discrete import SeededIntegerNoise
from dp_platform.privacy.noise import SeededNoise
from tests.cells_data import (
    ADVERTISER,
    CREATIVES,
    DIMENSIONS,
    PUBLISHERS,
    REGIONS,
    START,
    VALUE_CAP,
    generate,
    ingested,
    leave_one_out,
    reference_cells,
)

DAYS = 2
BOUND = 3
LAYOUTS = {
    "counts": (["region"], ["count"]),
    "values": ([], ["count", "value"]),
    "touched": (["creative", "region"], ["count", "value"]),
}
OPTIONS = {
    "post_lta": {"rule": "lta", "enforcement": "post"},
    "post_uni": {"rule": "uni", "enforcement": "post"},
    "pre_u_shaped": {"rule": "u_shaped", "enforcement": "pre"},
}


def _entry(name: str, layout: str, rule: str, enforcement: str, **extra) -> dict:
    breakdown, measures = LAYOUTS[layout]
    fields: dict[str, object] = {"breakdown": breakdown, "measures": measures}
    if "value" in measures:
        fields["value_cap"] = VALUE_CAP
    return {
        "name": name,
        "advertiser": ADVERTISER,
        "account": "acct",
        "start": START.isoformat(),
        "days": DAYS,
        "publishers": PUBLISHERS,
        "attribution": {"rule": rule, "lookback_days": 30},
        "mechanism": {"kind": "one_shot", "bound": BOUND, "enforcement": enforcement},
        "privacy": {"rho": 0.5},
        **fields,
        **extra,
    }


def _catalogue(entries: list[dict]):
    return parse_catalogue(
        {
            "accounts": [{"name": "acct", "rho_cap": 100}],
            "dimensions": DIMENSIONS,
            "campaigns": entries,
        }
    )


def _campaigns():
    entries = [
        _entry(f"{layout}_{option}", layout, **OPTIONS[option])
        for layout in LAYOUTS
        for option in OPTIONS
    ]
    return _catalogue(entries).campaigns


# -- plan -------------------------------------------------------------------------------------


def test_cells_are_scaled_for_l1_and_the_plan_states_each_cells_laplace_scale() -> None:
    both = _catalogue([_entry("c", "touched", "uni", "post")]).campaigns[0]
    layout = layout_of(both, PUBLISHERS)
    assert layout.norm == 1
    assert layout.scale("count") == layout.scale("value") == 0.5  # 1/m, not 1/√2
    plan = plan_from_config(both)
    assert plan.l1_sensitivity == BOUND  # C0·r; Δ(f) is in the scale
    assert plan.scale == pytest.approx(BOUND / plan.epsilon)
    assert plan.cell_units == {"count": 2.0, "value": 2.0 * VALUE_CAP}
    assert plan.cells_per_publisher == len(CREATIVES) * len(REGIONS) * 2
    summary = plan.to_json()
    assert summary["scale_per_cell"]["value"] == pytest.approx(plan.scale * 2 * VALUE_CAP)
    assert summary["half_width_per_cell"]["count"] == pytest.approx(plan.scale * 2 * math.log(20))
    one = _catalogue([_entry("c", "counts", "lta", "post")]).campaigns[0]
    assert layout_of(one, PUBLISHERS).scale("count") == 1.0


def test_replace_with_one_publisher_and_a_breakdown_doubles_the_sensitivity() -> None:
    """Moving a user's r from region A to B of one publisher changes the cells by 2r in ℓ1."""
    replace = {"publishers": ["pubA"], "privacy": {"rho": 0.5, "adjacency": "replace"}}
    broken = _catalogue([_entry("c", "counts", "lta", "post", **replace)]).campaigns[0]
    assert plan_from_config(broken).sensitivity_factor == 2
    plain = _catalogue([_entry("c", "counts", "lta", "post", **replace)])
    plain_entry = plain.campaigns[0].model_dump(mode="json") | {"breakdown": []}
    assert plan_from_config(_catalogue([plain_entry]).campaigns[0]).sensitivity_factor == 1


# -- sensitivity by brute force ----------------------------------------------------------------


def _sums(events, directory) -> dict[str, np.ndarray]:
    out = {}
    with ingested(events, directory) as wh:
        for campaign in _campaigns():
            wh.attribute_days(campaign, campaign.start, campaign.end)
            out[campaign.name] = warehouse_sums(wh, campaign, plan_from_config(campaign))
    return out


@pytest.fixture(scope="module")
def removals(tmp_path_factory):
    events = generate(users=7, days=DAYS, seed=5, heavy=1, focused=True)
    full, without = leave_one_out(events, tmp_path_factory.mktemp("oneshot_cells"), _sums)
    return events, full, without


@pytest.mark.slow
@pytest.mark.parametrize("name", [f"{layout}_{option}" for layout in LAYOUTS for option in OPTIONS])
def test_removing_any_user_moves_the_cells_by_at_most_the_l1_sensitivity(removals, name) -> None:
    _, full, without = removals
    plan = plan_from_config(next(c for c in _campaigns() if c.name == name))
    changes = [np.abs(full[name] - rest[name]).sum() for rest in without.values()]
    assert max(changes) <= plan.l1_sensitivity * (1 + 1e-12)
    # the focused heavy user keeps r conversions above the cap in one cell per measure: with
    # two measures each contributes s·(1 + 1) = 1 in ℓ1 — a 1/√2 scale would give √2·r
    assert max(changes) == pytest.approx(plan.l1_sensitivity, rel=1e-12)


def test_cell_sums_are_the_daily_cells_bounded_over_the_period(removals, tmp_path) -> None:
    """With r above anyone's total, post-attribution bounding over the period keeps every
    conversion: the period's cells are the sum of the days' cells of an independent NumPy
    attribution (uni, creative × region, counts and values) — placement, scale and units."""
    events, _, _ = removals
    wide = {"kind": "one_shot", "bound": 1000}
    campaign = _catalogue([_entry("wide", "touched", "uni", "post", mechanism=wide)]).campaigns[0]
    days = [START, START + timedelta(days=1)]
    expected = sum(
        reference_cells(
            events,
            day,
            1e9,
            dimensions=["creative", "region"],
            measures=["count", "value"],
            rule="uni",
        )
        for day in days
    )
    with ingested(events, tmp_path) as wh:
        wh.attribute_days(campaign, campaign.start, campaign.end)
        sums = warehouse_sums(wh, campaign, plan_from_config(campaign))
    units = layout_of(campaign, PUBLISHERS).unscale_factors()
    np.testing.assert_allclose(sums * units, expected, rtol=1e-12, atol=1e-9)
    assert expected.sum() > 0


# -- the release --------------------------------------------------------------------------------


def test_released_cells_carry_the_laplace_sigma_and_exact_95_interval() -> None:
    """σ = √2·b·unit and the interval value ± b·ln 20·unit; over 4000 seeded releases of 72
    cells the interval covers the true cell 95 % of the time (binomial sd 0.08 %)."""
    campaign = _catalogue([_entry("c", "touched", "uni", "post")]).campaigns[0]
    plan = plan_from_config(campaign)
    declared = MECHANISM.declare(plan, campaign)
    layout = layout_of(campaign, PUBLISHERS)
    rng = np.random.default_rng(1)
    truth = rng.uniform(0, 5, layout.size)
    units = np.asarray(layout.unscale_factors())
    noise, hits = SeededNoise(3), []
    for _ in range(4000):
        release = release_one_shot(
            truth, PUBLISHERS, plan, allotment=declared, noise=noise, layout=layout
        )
        cells = release.cells
        low = np.array([c["ci_low"] for c in cells])
        high = np.array([c["ci_high"] for c in cells])
        hits.append((low <= truth * units) & (truth * units <= high))
    coverage = np.mean(hits)
    assert abs(coverage - 0.95) < 0.004  # 5 sd
    first, value = cells[0], cells[1]
    assert (first["measure"], value["measure"]) == ("count", "value")
    assert first["sigma"] == pytest.approx(math.sqrt(2) * plan.scale * 2)
    assert value["sigma"] == pytest.approx(math.sqrt(2) * plan.scale * 2 * VALUE_CAP)
    assert value["ci_high"] - value["value"] == pytest.approx(
        plan.scale * math.log(20) * 2 * VALUE_CAP
    )
    document = release.to_json()
    # a publisher's value is the exact sum of its published (gridded) count cells
    for publisher in PUBLISHERS:
        mine = [
            c["value"] for c in cells if c["publisher"] == publisher and c["measure"] == "count"
        ]
        assert document["values"][publisher] == sum(mine)
        assert all(v / GRID == round(v / GRID) for v in mine)
    assert document["total"] == sum(document["values"].values())
    combos = len(CREATIVES) * len(REGIONS)
    assert document["std"] == pytest.approx(first["sigma"] * math.sqrt(combos))


def test_discrete_laplace_cells_are_integers_with_their_integer_95_interval() -> None:
    campaign = _catalogue(
        [
            _entry(
                "c",
                "counts",
                "lta",
                "post",
                mechanism={"kind": "one_shot", "bound": 2, "noise": "discrete_laplace"},
            )
        ]
    ).campaigns[0]
    plan = plan_from_config(campaign)
    declared = MECHANISM.declare(plan, campaign)
    layout = layout_of(campaign, PUBLISHERS)
    truth = np.arange(layout.size, dtype=np.float64)
    source, hits = SeededIntegerNoise(4), []
    for _ in range(3000):
        cells = release_one_shot(
            truth, PUBLISHERS, plan, allotment=declared, integer_noise=source, layout=layout
        ).cells
        values = np.array([c["value"] for c in cells])
        assert np.all(values == np.round(values))
        half = cells[0]["ci_high"] - cells[0]["value"]
        hits.append(np.abs(values - truth) <= half)
    p = math.exp(-1 / plan.scale)
    t = round(half)
    assert half == t  # an integer half-width
    assert 2 * p ** (t + 1) / (1 + p) <= 0.05 < 2 * p**t / (1 + p)  # the smallest that covers
    assert np.mean(hits) >= 0.95 - 0.006  # exact law: ≥ 95 %, sd ≈ 0.16 % over 18 000

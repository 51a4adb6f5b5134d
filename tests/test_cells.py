"""Cells (publisher × breakdown × measure): catalogue rules, ingest of dimensions, the cell
layout, and the sensitivity the mechanisms charge for, checked by brute force.

The brute-force tests rebuild the warehouse from the event files with each user removed in turn
and compare the clipped cell vectors: for AdsBPC the change must have L2 norm ≤ r (what σ is
calibrated to), for AdsBPC+ its squared norm must equal the spend the filter recorded × 2σ².
A heavy user reaches the bound exactly, so a wrong scale factor (s = 1 instead of 1/√2) fails.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from dp_platform.cell_strategy import MarginalWeights
from dp_platform.cells import GRID, Z95, cell_records, layout_of, publisher_counts
from dp_platform.config_loader import parse_campaign, parse_catalogue
from dp_platform.errors import ConfigError
from dp_platform.mechanisms.adsbpc import make_plan
from dp_platform.mechanisms.adsbpc_plus import make_plan as plus_plan
from dp_platform.privacy.filter import filter_user_day
from dp_platform.warehouse import Warehouse
from tests.cells_data import (
    CONVERSION_LISTS,
    NOW,
    PUBLISHERS,
    REGIONS,
    START,
    VALUE_CAP,
    campaign_entry,
    day_one_vectors,
    generate,
    ingested,
    leave_one_out,
    reference_cells,
    user_entries,
    write,
)

DIMENSIONS = {  # generated rows carry listed values only: no catch-all cells
    name: {"source": "conversions", "values": v, "catch_all": None}
    for name, v in CONVERSION_LISTS.items()
}


def catalogue(campaigns: list[dict], **extra: object) -> dict:
    return {
        "accounts": [{"name": "acct", "rho_cap": 100}],
        "dimensions": DIMENSIONS,
        "campaigns": campaigns,
        **extra,
    }


# -- catalogue -------------------------------------------------------------------------------


def test_breakdown_resolves_against_the_catalogues_dimensions() -> None:
    cat = parse_catalogue(
        catalogue(
            [
                campaign_entry(
                    breakdown=["region", "device"], measures=["count", "value"], value_cap=50
                )
            ]
        )
    )
    campaign = cat.campaigns[0]
    assert [d.name for d in campaign.breakdown] == ["region", "device"]
    assert campaign.cells_per_publisher == 2 * 3 * 2
    # the registered form carries the definitions: it parses without the catalogue
    again = parse_campaign(campaign.model_dump(mode="json"))
    assert again == campaign


@pytest.mark.parametrize(
    ("fields", "extra", "message"),
    [
        ({"breakdown": ["colour"]}, {}, "campaigns[0].breakdown: dimension 'colour' is not"),
        ({"measures": ["value"]}, {}, "measures must be [count] or [count, value]"),
        ({"measures": ["count", "value"]}, {}, "value_cap: required when measures include value"),
        ({"value_cap": 10}, {}, "value_cap: only with measures [count, value]"),
        ({"measures": ["count", "value"], "value_cap": 0}, {}, "value_cap: Input should be"),
        ({"breakdown": ["region", "region"]}, {}, "a dimension must not repeat"),
        (
            {"breakdown": ["region"], "mechanism": {"kind": "one_shot", "measure": "value"}},
            {},
            "set the campaign's measures and value_cap instead",
        ),
        (
            {
                "measures": ["count", "value"],
                "value_cap": 10,
                "mechanism": {"kind": "one_shot", "noise": "discrete_laplace"},
            },
            {},
            "the value measure's cells are not",
        ),
    ],
)
def test_campaign_cells_are_refused_by_field_and_rule(fields, extra, message) -> None:
    with pytest.raises(ConfigError) as error:
        parse_catalogue(catalogue([campaign_entry(**fields)], **extra))
    assert message in str(error.value)
    assert "\n" not in str(error.value)


@pytest.mark.parametrize(
    ("dimensions", "message"),
    [
        ({"region": {"source": "conversions", "values": []}}, "dimensions.region.values"),
        ({"region": {"source": "conversions", "values": ["a", "a"]}}, "values must not repeat"),
        ({"value": {"source": "conversions", "values": ["a"]}}, "the name of an event column"),
        ({"measure": {"source": "conversions", "values": ["a"]}}, "a published cell key"),
    ],
)
def test_catalogue_dimensions_are_refused_by_field_and_rule(dimensions, message) -> None:
    data = catalogue([campaign_entry()])
    data["dimensions"] = dimensions
    with pytest.raises(ConfigError) as error:
        parse_catalogue(data)
    assert message in str(error.value)


def test_replace_with_one_publisher_and_a_breakdown_pays_factor_two() -> None:
    """Moving a user's r from region A to region B of one publisher is an (r, −r) change."""
    one = {"publishers": ["pubA"], "privacy": {"adjacency": "replace"}}
    plain = parse_catalogue(catalogue([campaign_entry(**one)])).campaigns[0]
    broken = parse_catalogue(catalogue([campaign_entry(breakdown=["region"], **one)]))
    assert make_plan(plain).factor == 1
    assert make_plan(broken.campaigns[0]).factor == 2


# -- layout and published cells ----------------------------------------------------------------


def _layout(breakdown: list[str], measures: list[str]):
    fields: dict[str, object] = {"breakdown": breakdown, "measures": measures}
    if "value" in measures:
        fields["value_cap"] = VALUE_CAP
    campaign = parse_catalogue(catalogue([campaign_entry(**fields)])).campaigns[0]
    return campaign, layout_of(campaign, PUBLISHERS)


def test_one_conversion_has_norm_at_most_one_whatever_its_value() -> None:
    """The scale factors: a unit-weight conversion at or above the cap fills one count and one
    value cell with s each, L2 norm s·√2 = 1 exactly — and never more."""
    _, layout = _layout(["region"], ["count", "value"])
    s_count, s_value = layout.scale("count"), layout.scale("value")
    assert math.hypot(s_count * 1.0, s_value * 1.0) == pytest.approx(1.0, abs=1e-15)
    assert math.hypot(s_count, s_value) <= 1.0
    assert layout.unscale("value") == pytest.approx(VALUE_CAP * math.sqrt(2))
    _, plain = _layout([], ["count"])
    assert plain.plain and plain.scale("count") == 1.0 and plain.size == len(PUBLISHERS)


def test_cell_records_rescale_value_and_sigma_and_give_the_95_interval() -> None:
    _, layout = _layout(["region"], ["count", "value"])
    entries = np.arange(layout.size, dtype=np.float64)
    records = cell_records(layout, entries, 2.0)
    assert len(records) == len(PUBLISHERS) * len(REGIONS) * 2
    first, second = records[0], records[1]
    assert {k: first[k] for k in ("publisher", "region", "measure")} == {
        "publisher": "pubA",
        "region": "north",
        "measure": "count",
    }
    assert second["measure"] == "value"
    # published on the 2^-10 grid (exact sums of cells): within half a step of entry × factor
    assert second["value"] == pytest.approx(1.0 * VALUE_CAP * math.sqrt(2), rel=0, abs=GRID / 2)
    assert second["value"] / GRID == round(second["value"] / GRID)
    assert second["sigma"] == pytest.approx(2.0 * VALUE_CAP * math.sqrt(2))
    assert second["ci_high"] - second["value"] == pytest.approx(Z95 * second["sigma"])
    counts = publisher_counts(layout, entries)
    assert counts[0] == pytest.approx((0 + 2) * math.sqrt(2), rel=0, abs=GRID)  # north + south
    # each publisher's count is the exact sum of its published count cells
    by_publisher: dict[str, float] = {}
    for record in records:
        if record["measure"] == "count":
            by_publisher[record["publisher"]] = (
                by_publisher.get(record["publisher"], 0.0) + record["value"]
            )
    assert list(counts) == [by_publisher[p] for p in layout.publishers]


# -- ingest --------------------------------------------------------------------------------------


def test_ingest_quarantines_unknown_and_missing_dimension_values(tmp_path) -> None:
    events = generate(users=6, days=1, seed=3)
    imp, conv = write(events, tmp_path)
    lines = conv.read_text().splitlines()
    header, rows = lines[0], lines[1:]
    rows[0] = rows[0].rsplit(",", 1)[0] + ",smartwatch"  # device not in the list
    rows[1] = rows[1].rsplit(",", 2)[0] + ",,tv"  # region empty
    conv.write_text("\n".join([header, *rows]) + "\n")
    with Warehouse(":memory:") as wh:
        report = wh.ingest(imp, conv, now=NOW, dimensions=CONVERSION_LISTS).conversions
        assert report.rows == len(rows) == report.accepted + report.quarantined
        assert report.reasons == {"unknown_device_value": 1, "missing_region": 1}
        stored = wh.con.execute(
            "SELECT dimension, count(*) FROM conversion_dimensions GROUP BY 1 ORDER BY 1"
        ).fetchall()
        assert stored == [("device", report.accepted), ("region", report.accepted)]
        keys = wh.con.execute(
            "SELECT dimension, list(value ORDER BY value_key) FROM dimension_values GROUP BY 1"
        ).fetchall()
        assert dict(keys) == CONVERSION_LISTS  # each listed value keyed once, in list order


def test_ingest_refuses_a_file_without_a_declared_dimension_column(tmp_path) -> None:
    events = generate(users=3, days=1, seed=4)
    imp, conv = write(events, tmp_path)
    with Warehouse(":memory:") as wh, pytest.raises(ConfigError) as error:
        wh.ingest(imp, conv, now=NOW, dimensions={"colour": ["red"]})
    assert "missing column(s) colour (declared under the catalogue's dimensions)" in str(
        error.value
    )


# -- sensitivity by brute force ------------------------------------------------------------------

LAYOUTS = {
    "counts": (["region", "device"], ["count"]),
    "values": ([], ["count", "value"]),
    "both": (["region", "device"], ["count", "value"]),
}
BOUND = 3.0


def _campaigns():
    entries = []
    for name, (breakdown, measures) in LAYOUTS.items():
        fields: dict[str, object] = {"breakdown": breakdown, "measures": measures}
        if "value" in measures:
            fields["value_cap"] = VALUE_CAP
        entries.append(campaign_entry(name, **fields))
        plus = {**fields, "mechanism": {"kind": "adsbpc_plus", "cap": 5, "profile_days": 2}}
        entries.append(campaign_entry(f"{name}_plus", **plus))
    return parse_catalogue(catalogue(entries)).campaigns


def _vectors(events, directory, *, sigma: float, cap: float, marginals=None) -> dict[str, tuple]:
    with ingested(events, directory, creative=False) as wh:
        return day_one_vectors(
            wh, _campaigns(), bound=BOUND, sigma=sigma, cap=cap, marginals=marginals
        )


@pytest.fixture(scope="module")
def removals(tmp_path_factory):
    events = generate(users=7, days=1, seed=5, heavy=1)
    sigma, cap = 1.0, 2.0
    full, without = leave_one_out(
        events,
        tmp_path_factory.mktemp("brute"),
        lambda events, directory: _vectors(events, directory, sigma=sigma, cap=cap),
    )
    return full, without, sigma


@pytest.mark.slow
@pytest.mark.parametrize("name", list(LAYOUTS))
def test_adsbpc_removing_any_user_moves_the_cell_vector_by_at_most_r(removals, name) -> None:
    full, without, _ = removals
    vector = full[name][0]
    norms = [np.linalg.norm(vector - rest[name][0]) for rest in without.values()]
    assert max(norms) <= BOUND * (1 + 1e-12)
    # the heavy user (8 conversions above the cap in one cell) reaches the bound: with the
    # value measure, r·s·√2 = r; a scale of 1 would give √2·r and fail the line above
    assert max(norms) >= BOUND * (1 - 1e-12)


@pytest.mark.slow
@pytest.mark.parametrize("name", list(LAYOUTS))
def test_adsbpc_residual_strategy_moves_by_at_most_r_and_its_gram_is_exact(removals, name) -> None:
    """What AdsBPC draws at (the plan's residual strategy, default weights) moves by at most
    r when any user is removed, so its charge r²/(2σ²) holds; each user's move equals the
    Gram form AdsBPC+'s filter would charge. With counts only, the heavy user (8 conversions
    in one cell) reaches r exactly: the normalisation is tight, not loose."""
    full, without, _ = removals
    campaign = next(c for c in _campaigns() if c.name == name)
    plan = make_plan(campaign)
    assert plan.marginals is not None
    layout = layout_of(campaign, PUBLISHERS, plan.marginals)
    strategy, gram = layout.strategy, layout.strategy.gram()
    vector = full[name][0]
    norms = []
    for rest in without.values():
        change = vector - rest[name][0]
        norms.append(float(np.linalg.norm(strategy.encode(change))))
        assert norms[-1] ** 2 == pytest.approx(gram.norm_squared(change), rel=1e-9, abs=1e-12)
    assert max(norms) <= BOUND * (1 + 1e-12)
    if LAYOUTS[name][1] == ["count"]:
        assert max(norms) >= BOUND * (1 - 1e-12)


@pytest.mark.slow
@pytest.mark.parametrize("name", list(LAYOUTS))
def test_adsbpc_plus_charges_each_user_the_norm_of_their_cells(removals, name) -> None:
    """Removing user u changes the released vector by exactly their filtered cell row, whose
    squared norm is what the filter charged them × 2σ²; the heavy user hits the filter."""
    full, without, sigma = removals
    vector, spends = full[f"{name}_plus"]
    for user, rest in without.items():
        change = float(np.sum((vector - rest[f"{name}_plus"][0]) ** 2))
        assert change == pytest.approx(spends.get(user, 0.0) * 2 * sigma**2, rel=1e-9, abs=1e-12)
    assert max(spends.values()) == pytest.approx(2.0, rel=1e-9)  # the cap: the filter bit


def _plus_marginals() -> dict[str, MarginalWeights | None]:
    """What each AdsBPC+ campaign's plan measures its cells by (the default workload)."""
    return {
        c.name: plus_plan(c).marginals for c in _campaigns() if c.mechanism.kind == "adsbpc_plus"
    }


@pytest.fixture(scope="module")
def residual_removals(tmp_path_factory):
    events = generate(users=7, days=1, seed=5, heavy=1)
    sigma, cap, marginals = 1.0, 2.0, _plus_marginals()
    full, without = leave_one_out(
        events,
        tmp_path_factory.mktemp("residual"),
        lambda events, directory: _vectors(
            events, directory, sigma=sigma, cap=cap, marginals=marginals
        ),
    )
    return events, full, without, sigma, cap, marginals


@pytest.mark.slow
@pytest.mark.parametrize("name", list(LAYOUTS))
def test_adsbpc_plus_charges_each_user_the_encoded_norm_of_their_residual_cells(
    residual_removals, name
) -> None:
    """With the plan's residual strategy, removing user u changes the *encoded* release by
    exactly encode(their filtered row): its squared norm is what the filter charged × 2σ², and
    the row is the one privacy/filter.filter_user_day keeps in the strategy's Gram. The heavy
    user hits the filter's cap. Charging Σ row² instead (the independent cells' norm) fails."""
    events, full, without, sigma, cap, marginals = residual_removals
    campaign = next(c for c in _campaigns() if c.name == f"{name}_plus")
    assert marginals[campaign.name] is not None
    layout = layout_of(campaign, PUBLISHERS, marginals[campaign.name])
    strategy, gram = layout.strategy, layout.strategy.gram()
    assert not gram.identity
    vector, spends = full[campaign.name]
    entries = user_entries(events, START, layout, dimensions=LAYOUTS[name][0])
    plain_differs = False
    for user, rest in without.items():
        change = vector - rest[campaign.name][0]
        encoded = strategy.encode(vector) - strategy.encode(rest[campaign.name][0])
        charged = spends.get(user, 0.0) * 2 * sigma**2
        assert float(encoded @ encoded) == pytest.approx(charged, rel=1e-9, abs=1e-12)
        _, row = filter_user_day(
            entries.get(user, np.zeros((0, layout.size))), BOUND, 2 * sigma**2 * cap, gram
        )
        np.testing.assert_allclose(change, row, rtol=0, atol=1e-12)
        plain_differs |= abs(float(change @ change) - charged) > 1e-6 * max(charged, 1.0)
    assert plain_differs  # the Gram norm is not Σ x²: the test tells the two apart
    assert max(spends.values()) == pytest.approx(cap, rel=1e-9)  # the cap: the filter bit


def test_warehouse_cells_equal_the_numpy_reference(tmp_path) -> None:
    """The clipped cell vector of every layout equals an independent NumPy attribution +
    clipping, in published units."""
    events = generate(users=7, days=1, seed=5, heavy=1)
    full = _vectors(events, tmp_path, sigma=1.0, cap=2.0)
    for campaign in _campaigns():
        if campaign.mechanism.kind != "adsbpc":
            continue
        layout = layout_of(campaign, PUBLISHERS)
        published = full[campaign.name][0] * np.asarray(layout.unscale_factors())
        breakdown, measures = LAYOUTS[campaign.name]
        expected = reference_cells(events, START, BOUND, dimensions=breakdown, measures=measures)
        np.testing.assert_allclose(published, expected, rtol=1e-12, atol=1e-9)


def test_a_count_only_campaign_releases_the_same_vector_through_either_cell_path(
    tmp_path, monkeypatch
) -> None:
    """Count-only without breakdown takes cell_rows_plain.sql (publisher keys, today's rows);
    the general cell_rows.sql with the same layout (one measure, scale 1) must give the same
    clipped vector bit for bit — so the plain path is not a second definition of the cells."""
    from dp_platform.cells import CellLayout

    events = generate(users=20, days=1, seed=8, heavy=2)
    imp, conv = write(events, tmp_path)
    campaign = parse_catalogue(catalogue([campaign_entry("plain")])).campaigns[0]
    with Warehouse(":memory:") as wh:
        wh.ingest(imp, conv, now=NOW)
        wh.attribute_day(campaign, START)
        plain = wh.clipped_vector(campaign, START, 2.5)
        monkeypatch.setattr(CellLayout, "plain", property(lambda self: False))
        general = wh.clipped_vector(campaign, START, 2.5)
    assert plain.tolist() == general.tolist()
    assert plain.sum() > 0


def _plan_document(tmp_path, capsys, **fields: object) -> tuple[dict, str]:
    import json

    import yaml

    from dp_platform.cli import main

    path = tmp_path / "catalogue.yaml"
    path.write_text(yaml.safe_dump(catalogue([campaign_entry(**fields)])))
    assert main(["plan", str(path), "--json"]) == 0
    plan = json.loads(capsys.readouterr().out)["campaigns"]["cells"]
    assert main(["plan", str(path)]) == 0
    return plan, capsys.readouterr().out


SLICED = {"breakdown": ["region"], "measures": ["count", "value"], "value_cap": VALUE_CAP}


def test_plan_shows_each_measures_error_per_cell_for_independent_cells(tmp_path, capsys) -> None:
    """Under replace adjacency the cells are measured one by one: a cell's σ is σ̄·√m (×cap
    for the value) and a publisher's count √(cells) times a count cell's."""
    plan, text = _plan_document(tmp_path, capsys, **SLICED, privacy={"adjacency": "replace"})
    cells = plan["cells"]
    assert cells["cells_per_publisher"] == 4 and cells["strategy"] == "independent"
    sigma_bar = plan["sigma_bar"]
    count = cells["sigma_per_cell_at_unit_bound"]["count"]
    value = cells["sigma_per_cell_at_unit_bound"]["value"]
    assert count == pytest.approx([s * math.sqrt(2) for s in sigma_bar])
    assert value == pytest.approx([s * math.sqrt(2) * VALUE_CAP for s in sigma_bar])
    totals = next(m for m in cells["marginals"] if m["keeps"] == ["publisher"])
    assert totals["sigma_at_unit_bound"]["count"] == pytest.approx(
        [s * math.sqrt(2) * math.sqrt(2) for s in sigma_bar]  # 2 regions summed
    )
    assert "cells = publishers × 4 (region; measures count, value; independent strategy)" in text


def test_plan_names_the_measures_when_the_publishers_are_known_only_at_registration(
    tmp_path, capsys
) -> None:
    """A residual campaign over ``publishers: all``: its marginals' σ wait for registration,
    and the line still names the campaign's own measures (a count-only one: count alone)."""
    plan, text = _plan_document(tmp_path, capsys, breakdown=["region"], publishers="all")
    assert plan["cells"]["marginals"] is None and plan["cells"]["measures"] == ["count"]
    assert "(region; measures count; residual strategy)" in text
    assert "fixed at registration" in text


def test_plan_shows_each_marginals_error_for_a_residual_strategy(tmp_path, capsys) -> None:
    """Under add/remove AdsBPC measures the default marginals (publisher totals 4, publisher ×
    region 2 — the full cells here) by a residual strategy: `plan` shows each one's σ, equal
    to σ̄ times its factor from privacy/marginals.py, before anything is spent."""
    from dp_platform.privacy.marginals import ResidualStrategy

    plan, text = _plan_document(tmp_path, capsys, **SLICED)
    cells = plan["cells"]
    assert cells["strategy"] == "residual"
    weights = {(m, frozenset(k)): w for m in (0, 1) for k, w in [({0}, 4.0), ({0, 1}, 2.0)]}
    strategy = ResidualStrategy.planned((len(PUBLISHERS), 2), 2, weights)
    sigma_bar = np.asarray(plan["sigma_bar"])
    shown = {tuple(m["keeps"]): m for m in cells["marginals"]}
    assert set(shown) == {("publisher",), ("publisher", "region")}
    for kept, axes in [(("publisher",), {0}), (("publisher", "region"), {0, 1})]:
        for index, measure in enumerate(["count", "value"]):
            factor = math.sqrt(strategy.marginal_variance(index, frozenset(axes)))
            factor *= VALUE_CAP if measure == "value" else 1.0
            assert shown[kept]["sigma_at_unit_bound"][measure] == pytest.approx(
                sigma_bar * factor, rel=1e-9
            )
    assert shown[("publisher",)]["weight"] == {"count": 4.0, "value": 4.0}
    assert "residual strategy" in text and "σ of a number of publisher (weight 4)" in text


def test_plan_shows_a_marginals_weights_per_measure(tmp_path, capsys) -> None:
    """Per-measure weights reach ``plan`` as written: one weight per measure in ``--json``,
    ``count 60, value 1`` in the text, and the count's publisher σ below the value's share."""
    marginals = {"publisher": {"count": 60, "value": 1}, "publisher,region": 1}
    mechanism = {"kind": "adsbpc", "bounds": {"quantile_days": 2, "cap": 5}}
    plan, text = _plan_document(
        tmp_path, capsys, **SLICED, mechanism={**mechanism, "marginals": marginals}
    )
    shown = {tuple(m["keeps"]): m for m in plan["cells"]["marginals"]}
    assert shown[("publisher",)]["weight"] == {"count": 60.0, "value": 1.0}
    assert shown[("publisher", "region")]["weight"] == {"count": 1.0, "value": 1.0}
    assert "σ of a number of publisher (weight count 60, value 1)" in text
    assert "σ of a number of publisher × region (weight 1)" in text


@pytest.mark.system
def test_simulate_rehearses_a_sliced_campaign_with_values_through_the_cli(tmp_path, capsys) -> None:
    """`dp-platform simulate` of a campaign broken down by an impression column (creative)
    and a conversion column (region), with the value measure: the simulated events carry both
    columns and order values, every day is released and the cells hold the data.

    Secure noise: on the last day the noisy answer (count cells summed over the breakdown,
    prefix over 4 days) is compared with half the true one. Its noise has sd 74–94 in trial
    runs and at most ≈ 115 (σ_i ≤ σ̄_i·Λ·1.3 with Λ = 5, × √2 for the unscaled count, over
    5 publishers × 6 count cells and 4 days) against a true answer of 2995 (data seed 3) —
    a false failure needs noise below −1500 ≈ −13 sd, < 1e-38 (tests/sampler_laws.py);
    clipping at the private quantile removes ≈ 1 %."""
    import json

    import yaml

    from dp_platform.cli import main

    data = catalogue(
        [
            campaign_entry(
                "sliced",
                publishers="all",
                attribution={"rule": "uni", "lookback_days": 7},
                privacy={"rho": 2.0},
                breakdown=["creative", "region"],
                measures=["count", "value"],
                value_cap=100,
            )
        ]
    )
    data["dimensions"] = {
        "region": {
            "source": "conversions",
            "values": ["north", "south", "east"],
            "catch_all": None,
        },
        "creative": {"source": "impressions", "values": ["banner", "video"], "catch_all": None},
    }
    path = tmp_path / "catalogue.yaml"
    path.write_text(yaml.safe_dump(data))
    argv = ["simulate", str(path), "--users", "1500", "--data-seed", "3"]
    assert main([*argv, "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["cells_per_publisher"] == 2 * 3 * 2
    assert document["rho_spent"] == pytest.approx(document["rho_planned"], abs=1e-12)
    days = document["days"]
    assert [d["day"] for d in days] == [1, 2, 3, 4]
    assert all(d["true_total"] > 0 and d["true_value_total"] > 0 for d in days)
    assert all(d["noisy_value_total"] is not None for d in days)
    last = days[-1]
    assert last["noisy_answer"] > 0.5 * last["true_answer"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "publishers, 12 cells each for campaign sliced (adsbpc)" in out
    assert "noisy value    true value" in out

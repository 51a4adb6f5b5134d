"""Impression dimensions (``source: impressions``, e.g. the ad's creative): ingest checks,
attribution carrying the credited impression's value, and the sensitivity the mechanisms charge
for, checked by brute force for single- and multi-touch rules.

Multi-touch rules split one conversion's credit w over several impressions — of several
publishers and creatives — so one conversion now fills several cells of one measure. Its
weights still sum to ≤ 1 (checked on the stored attribution), so its cell vector has
ℓ2 ≤ ℓ1 ≤ s·(1 + 1)·Σw ≤ 1 and the sensitivity argument of docs/algorithm.md#cells is
unchanged; the brute-force tests remove each user and compare: AdsBPC's clipped vector moves by
at most r in ℓ2 (and exactly r for the focused heavy user), AdsBPC+'s by exactly the norm the
filter charged.
"""

from __future__ import annotations

import numpy as np
import pytest

from dp_platform.cells import layout_of
from dp_platform.config_loader import parse_catalogue
from dp_platform.errors import ConfigError
from dp_platform.warehouse import Warehouse
from tests.cells_data import (
    CONVERSION_LISTS,
    CREATIVES,
    DEVICES,
    DIMENSIONS,
    IMPRESSION_LISTS,
    NOW,
    PUBLISHERS,
    START,
    VALUE_CAP,
    campaign_entry,
    day_one_vectors,
    generate,
    ingested,
    leave_one_out,
    reference_cells,
    write,
)

RULES = ["lta", "uni", "time_decay", "u_shaped"]
LAYOUTS = {
    "creative": (["creative"], ["count"]),
    "creative_region_values": (["creative", "region"], ["count", "value"]),
}
BOUND = 3.0


def _entry(name: str, rule: str, breakdown: list[str], measures: list[str], **extra) -> dict:
    fields: dict[str, object] = {"breakdown": breakdown, "measures": measures}
    if "value" in measures:
        fields["value_cap"] = VALUE_CAP
    fields["attribution"] = {"rule": rule, "lookback_days": 30}
    return campaign_entry(name, **{**fields, **extra})


def _catalogue(entries: list[dict], **extra: object):
    return parse_catalogue(
        {
            "accounts": [{"name": "acct", "rho_cap": 100}],
            "dimensions": DIMENSIONS,
            "campaigns": entries,
            **extra,
        }
    )


def _campaigns():
    entries = []
    for rule in RULES:
        for layout, (breakdown, measures) in LAYOUTS.items():
            entries.append(_entry(f"{rule}_{layout}", rule, breakdown, measures))
            plus = {"mechanism": {"kind": "adsbpc_plus", "cap": 5, "profile_days": 2}}
            entries.append(_entry(f"{rule}_{layout}_plus", rule, breakdown, measures, **plus))
    return _catalogue(entries).campaigns


# -- catalogue and ingest -------------------------------------------------------------------------


def test_an_impression_dimension_is_a_breakdown_like_any_other() -> None:
    campaign = _catalogue([_entry("c", "uni", ["device", "creative"], ["count"])]).campaigns[0]
    assert [(d.name, d.source) for d in campaign.breakdown] == [
        ("device", "conversions"),
        ("creative", "impressions"),
    ]
    assert campaign.cells_per_publisher == len(DEVICES) * len(CREATIVES)


def test_both_engines_accept_impression_dimensions() -> None:
    """Spark loads and attributes them as DuckDB does (tests/test_spark_impression_cells.py)."""
    for engine in ("duckdb", "spark"):
        entry = _entry("c", "uni", ["creative"], ["count"])
        campaign = _catalogue([entry], warehouse={"engine": engine}).campaigns[0]
        assert [d.source for d in campaign.breakdown] == ["impressions"]


def test_ingest_quarantines_unknown_and_missing_creatives(tmp_path) -> None:
    events = generate(users=6, days=1, seed=3)
    imp, conv = write(events, tmp_path)
    lines = imp.read_text().splitlines()
    header, rows = lines[0], lines[1:]
    rows[0] = rows[0].rsplit(",", 1)[0] + ",carousel"  # not in the list
    rows[1] = rows[1].rsplit(",", 1)[0] + ","  # empty
    imp.write_text("\n".join([header, *rows]) + "\n")
    with Warehouse(":memory:") as wh:
        report = wh.ingest(
            imp,
            conv,
            now=NOW,
            dimensions=CONVERSION_LISTS,
            impression_dimensions=IMPRESSION_LISTS,
        ).impressions
        assert report.rows == len(rows) == report.accepted + report.quarantined
        assert report.reasons == {"unknown_creative_value": 1, "missing_creative": 1}
        stored = wh.con.execute(
            "SELECT count(*), count(DISTINCT (load_id, source_row)) FROM impression_dimensions"
        ).fetchone()
        assert stored == (report.accepted, report.accepted)
        assert wh.table_rows("impressions") == report.accepted
        keys = wh.con.execute(
            "SELECT list(value ORDER BY value_key) FROM dimension_values "
            "WHERE dimension = 'creative'"
        ).fetchone()[0]
        assert keys == CREATIVES


def test_ingest_refuses_an_impressions_file_without_a_declared_column(tmp_path) -> None:
    events = generate(users=3, days=1, seed=4)
    imp, conv = write(events, tmp_path)
    with Warehouse(":memory:") as wh, pytest.raises(ConfigError) as error:
        wh.ingest(imp, conv, now=NOW, impression_dimensions={"format": ["square"]})
    assert "impressions file" in str(error.value)
    assert "missing column(s) format (declared under the catalogue's dimensions)" in str(
        error.value
    )


# -- attribution carries the credited impression's value ----------------------------------------


@pytest.mark.parametrize("rule", RULES)
def test_each_conversions_weights_still_sum_to_at_most_one_across_touches(tmp_path, rule) -> None:
    """The premise of the unchanged sensitivity: however a rule splits one conversion over
    impressions of several publishers and creatives, its weights add up to ≤ 1 — and a
    multi-touch rule does split credit across creatives of one conversion here."""
    campaign = _catalogue([_entry("c", rule, ["creative"], ["count"])]).campaigns[0]
    with ingested(generate(users=20, days=1, seed=11), tmp_path) as wh:
        wh.attribute_day(campaign, START)
        totals, touches = wh.con.execute(
            "SELECT max(total), max(touches) FROM (SELECT conversion_key, sum(weight) AS total, "
            "count(DISTINCT touch) AS touches FROM attributed_conversions GROUP BY 1)"
        ).fetchone()
        assert totals <= 1.0 + 1e-12
        assert totals == pytest.approx(1.0)
        assert touches == 1 if rule == "lta" else touches > 1


def test_private_last_touch_credits_the_drawn_impressions_creative(tmp_path) -> None:
    """With ε so large that the race always picks the latest touch, private last touch
    places the credit in the same cells as last touch: the drawn touch carries its creative."""
    private = {"rule": "private_last_touch", "lookback_days": 30}
    private["private"] = {"epsilon": 1e6, "tau_hours": 1e-3}
    entries = [
        _entry("lta", "lta", ["creative", "region"], ["count"]),
        _entry("drawn", "lta", ["creative", "region"], ["count"], attribution=private),
    ]
    lta, drawn = _catalogue(entries).campaigns
    with ingested(generate(users=20, days=1, seed=12), tmp_path) as wh:
        vectors = []
        for campaign in (lta, drawn):
            wh.attribute_day(campaign, START)
            vectors.append(wh.clipped_vector(campaign, START, BOUND))
        stored = wh.con.execute(
            "SELECT count(DISTINCT touch) FROM private_touch_choices"
        ).fetchone()
    np.testing.assert_array_equal(vectors[0], vectors[1])
    assert stored[0] > 1


def test_warehouse_cells_equal_the_numpy_reference_for_every_rule(tmp_path) -> None:
    """Every rule × layout: the clipped cell vector in published units equals an independent
    NumPy attribution (the rule's weights over candidates, credited to each impression's
    publisher and creative) + clipping."""
    events = generate(users=12, days=1, seed=5, heavy=1, focused=True)
    with ingested(events, tmp_path) as wh:
        for campaign in _campaigns():
            if campaign.mechanism.kind != "adsbpc":
                continue
            wh.attribute_day(campaign, START)
            layout = layout_of(campaign, PUBLISHERS)
            published = wh.clipped_vector(campaign, START, BOUND) * layout.unscale_factors()
            expected = reference_cells(
                events,
                START,
                BOUND,
                dimensions=[d.name for d in campaign.breakdown],
                measures=list(campaign.measures),
                rule=campaign.attribution.rule,
            )
            np.testing.assert_allclose(published, expected, rtol=1e-12, atol=1e-9)


# -- sensitivity by brute force ------------------------------------------------------------------


@pytest.fixture(scope="module")
def removals(tmp_path_factory):
    events = generate(users=7, days=1, seed=5, heavy=1, focused=True)
    sigma, cap = 1.0, 2.0

    def vectors(events, directory):
        with ingested(events, directory) as wh:
            return day_one_vectors(wh, _campaigns(), bound=BOUND, sigma=sigma, cap=cap)

    full, without = leave_one_out(events, tmp_path_factory.mktemp("touch"), vectors)
    return full, without, sigma


NAMES = [f"{rule}_{layout}" for rule in RULES for layout in LAYOUTS]


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_adsbpc_removing_any_user_moves_the_cells_by_at_most_r(removals, name) -> None:
    full, without, _ = removals
    vector = full[name][0]
    norms = [np.linalg.norm(vector - rest[name][0]) for rest in without.values()]
    assert max(norms) <= BOUND * (1 + 1e-12)
    # the focused heavy user (8 conversions above the cap, every touch on one publisher and
    # creative) fills one cell per measure under every rule: the bound is reached
    assert max(norms) >= BOUND * (1 - 1e-12)


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_adsbpc_plus_charges_each_user_the_norm_of_their_cells(removals, name) -> None:
    full, without, sigma = removals
    vector, spends = full[f"{name}_plus"]
    for user, rest in without.items():
        change = float(np.sum((vector - rest[f"{name}_plus"][0]) ** 2))
        assert change == pytest.approx(spends.get(user, 0.0) * 2 * sigma**2, rel=1e-9, abs=1e-12)
    assert max(spends.values()) == pytest.approx(2.0, rel=1e-9)  # the cap: the filter bit

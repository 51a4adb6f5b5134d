"""AdsBPC+ in the warehouse: the SQL filter equals the NumPy one, spends are applied once.

A small paper-style set goes through event files, ingest and LTA attribution (so each
conversion is credited to its own publisher), then the production ``run_stream`` runs with
the warehouse as its data layer, against the evaluation engine with the same seeded noise.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import date, timedelta

import numpy as np
import pytest

from dp_platform.config_loader import parse_campaign
from dp_platform.events import write_events
from dp_platform.events.paper import paper_dataset
from dp_platform.mechanisms.adsbpc_plus import MECHANISM, make_plan, run_stream
from dp_platform.mechanisms.adsbpc_plus_plan import (
    PROFILE_GRID,
    profile_cross,
    profile_factors,
    profile_top,
    strategy_row,
)
from dp_platform.privacy.noise import SeededNoise
from dp_platform.warehouse import Warehouse
from dp_platform.warehouse.base import StrategyRow
from dp_platform.warehouse.store_core import WarehouseError
from dp_research.evaluation.plus_data import prepare_plus, run_plus
from tests.conftest_data import FAR_FUTURE

START = date(2026, 3, 1)
DAYS = 6


def _campaign(
    name: str = "plus", strategy: str = "auto", pace: float | None = None, band: int | None = None
):
    return parse_campaign(
        {
            "name": name,
            "advertiser": "acme",
            "account": "acct",
            "start": START.isoformat(),
            "days": DAYS,
            "mechanism": "adsbpc_plus",
            "attribution": {"rule": "lta", "lookback_days": 1},
            "privacy": {"rho": 0.3},
            "adsbpc_plus": {
                "profile_days": 2,
                "cap": 5,
                "strategy": strategy,
                "pace": pace,
                "band": band,
            },
        }
    )


@pytest.fixture(scope="module")
def loaded(tmp_path_factory):
    data = paper_dataset("zipf", users=400, publishers=4, days=DAYS, seed=11)
    files = write_events(data.to_events(START), tmp_path_factory.mktemp("ev"), fmt="parquet")
    wh = Warehouse(":memory:")
    wh.ingest(files.impressions, files.conversions, now=FAR_FUTURE)
    names = ("plus", "again", "rows", "banded", "identity", "carried", "paced", "paced_rows")
    for name in (*names, "remainder", "remainder_rows", "whole", "released"):
        camp = _campaign(name)
        wh.attribute_days(camp, START, START + timedelta(days=DAYS - 1))
        wh.contributions_days(camp, START, START + timedelta(days=DAYS - 1))
    yield data, wh
    wh.close()


def _warehouse_stream(wh, campaign, plan, seed, remainder_cap=None):
    """The platform's stream through the warehouse; X_t at ``remainder_cap`` (default: the
    plan's E, as the registry's clip stores it)."""
    if remainder_cap is None:
        remainder_cap = plan.remainder_cap

    def clip(day, bound, sigma):
        when = START + timedelta(days=day - 1)
        row = strategy_row(plan, day)
        return wh.plus_clipped_vector(
            campaign,
            when,
            bound,
            sigma,
            plan.day_cap(day),
            row=row,
            remainder_cap=remainder_cap,
        )

    def profile(factors):
        m = plan.config.profile_days
        days = [START + timedelta(days=i) for i in range(m)]
        return wh.plus_profile_histogram(
            campaign,
            days,
            list(state_bounds[:m]),
            factors,
            profile_top(plan),
            grid=PROFILE_GRID,
            cross=profile_cross(plan),
        )

    histograms = [wh.day_histogram(campaign, START + timedelta(days=d)) for d in range(DAYS)]
    state_bounds: list[float] = []

    def clip_and_track(day, bound, sigma):
        state_bounds.append(bound)
        return clip(day, bound, sigma)

    def remainder(day):
        return wh.plus_remainder(campaign, START + timedelta(days=day - 1))

    return run_stream(
        plan,
        histograms,
        clip_and_track,
        profile,
        publishers=4,
        noise=SeededNoise(seed),
        remainder=None if plan.remainder_cap is None else remainder,
    )


@pytest.mark.parametrize(
    ("name", "strategy", "band"),
    [("plus", "diagonal", None), ("rows", "sqrt", None), ("banded", "banded", 2)],
)
def test_sql_filter_equals_the_numpy_engine_and_production_equals_evaluation(
    loaded, name, strategy, band
):
    data, wh = loaded
    campaign = _campaign(name, strategy, band=band)
    plan = replace(make_plan(campaign), filter_cap=0.05)  # a tight budget: the filter binds
    assert plan.strategy_kind == strategy
    releases, state = _warehouse_stream(wh, campaign, plan, seed=5)
    run = run_plus(plan, prepare_plus(data), SeededNoise(5))
    np.testing.assert_array_equal([r.choice.bound for r in releases], run.bounds)
    released = np.array([r.measurement.values for r in releases]).T
    np.testing.assert_allclose(released, run.released, rtol=0, atol=1e-9)
    summary = wh.plus_spend_summary(campaign)
    assert summary["max_spend"] == pytest.approx(run.spend.max(), rel=1e-12)
    assert summary["max_spend"] <= 0.05 * (1 + 1e-12)  # cap as set here (no CAP_SLACK)
    assert np.sum(run.spend > 0.05 * 0.999) >= 5  # the cap binds for several users
    assert state.scale_estimate is not None and len(profile_factors(plan)) == 2


def test_rerunning_a_day_reuses_its_spend_and_other_parameters_are_refused(loaded):
    _, wh = loaded
    campaign = _campaign("again")
    cap = 0.05
    first = wh.plus_clipped_vector(campaign, START, 2.0, 0.7, cap)
    before = wh.plus_spend_summary(campaign)
    again = wh.plus_clipped_vector(campaign, START, 2.0, 0.7, cap)
    np.testing.assert_array_equal(first, again)
    assert wh.plus_spend_summary(campaign) == before  # never applied twice
    with pytest.raises(WarehouseError, match="already filtered"):
        wh.plus_clipped_vector(campaign, START, 2.5, 0.7, cap)
    with pytest.raises(WarehouseError, match="first"):
        wh.plus_clipped_vector(campaign, START + timedelta(days=2), 2.0, 0.7, cap)
    second = wh.plus_clipped_vector(campaign, START + timedelta(days=1), 2.0, 0.7, cap)
    assert second.shape == (4,)
    assert wh.plus_spend_summary(campaign)["max_spend"] <= cap * (1 + 1e-12)


def test_the_diagonal_strategy_is_the_identity_row_and_keeps_no_per_user_values(loaded):
    """One filter statement serves every strategy: the diagonal one is the row C_tt = 1 with no
    earlier days, and, as no later row reads them, it keeps no per-user values (secret state)."""
    _, wh = loaded
    diagonal, carried = _campaign("identity"), _campaign("carried")
    days = [START + timedelta(days=i) for i in range(3)]
    cap = 0.05
    plain = [wh.plus_clipped_vector(diagonal, day, 2.5, 0.7, cap) for day in days]
    rows = [
        wh.plus_clipped_vector(carried, day, 2.5, 0.7, cap, row=StrategyRow(1.0, (0.0,) * i))
        for i, day in enumerate(days)
    ]
    np.testing.assert_array_equal(plain, rows)

    def spends(name):
        return wh.sql.query(
            "SELECT day, user_key, cost, spend FROM plus_user_spend WHERE campaign = $c "
            "ORDER BY day, user_key",
            c=name,
        )

    def values(name):
        return wh.sql.query("SELECT count(*) FROM plus_user_values WHERE campaign = $c", c=name)[0][
            0
        ]

    assert spends("identity") == spends("carried") and len(spends("identity")) > 0
    assert max(row[3] for row in spends("identity")) > 0.9 * cap  # the cap binds: cuts are tested
    assert values("identity") == 0
    assert values("carried") > 0
    assert StrategyRow.identity(2) == StrategyRow(1.0, (0.0, 0.0), carry=False)


@pytest.mark.parametrize(("name", "strategy"), [("paced", "diagonal"), ("paced_rows", "sqrt")])
def test_a_paced_filter_follows_the_flat_schedule_in_sql_as_in_numpy(loaded, name, strategy):
    """``pace: 0``: through day t no user's spend passes cap·W_t (PlusPlan.day_cap), in the
    warehouse as in the evaluation engine; a user held back by the schedule is not cut for
    good but spends again later; and the registry's clip passes the plan's day cap (the
    warehouse refuses a day filtered again at another cap, so a mechanism that passed the full
    cap would fail here)."""
    data, wh = loaded
    campaign = _campaign(name, strategy, pace=0.0)
    plan = make_plan(campaign)
    plan = replace(plan, filter_cap=0.2)  # heavy users pass the flat schedule early
    assert plan.pace == 0.0 and plan.strategy_kind == strategy
    releases, _ = _warehouse_stream(wh, campaign, plan, seed=7)
    run = run_plus(plan, prepare_plus(data), SeededNoise(7), keep_costs=True)
    released = np.array([r.measurement.values for r in releases]).T
    np.testing.assert_allclose(released, run.released, rtol=0, atol=1e-9)
    unpaced = run_plus(replace(plan, pace=None), prepare_plus(data), SeededNoise(7))
    assert not np.allclose(unpaced.released, run.released)  # the schedule binds

    caps = [plan.day_cap(t) for t in range(1, DAYS + 1)]
    assert caps[0] < caps[-1] == plan.filter_cap and caps == sorted(caps)
    spends = wh.sql.query(
        "SELECT day, user_key, cost, spend FROM plus_user_spend WHERE campaign = $c "
        "ORDER BY user_key, day",
        c=name,
    )
    held_back = set()
    went_on = set()
    for day, user, cost, spend in spends:
        t = (day - START).days
        assert spend <= caps[t] * (1 + 1e-12)
        if user in held_back and cost > 0:
            went_on.add(user)
        if t < DAYS - 1 and spend >= caps[t] * 0.999:
            held_back.add(user)
    assert went_on  # held back on a day, released again on a later one

    for release in releases:  # the production clip: same day cap, so the stored vector
        day = START + timedelta(days=release.choice.day - 1)
        again = MECHANISM.clip(plan, release.choice, wh, campaign, day)
        assert again.shape == (4,)


@pytest.mark.parametrize(
    ("name", "strategy", "pace"), [("remainder", "diagonal", None), ("remainder_rows", "sqrt", 0.0)]
)
def test_the_remainder_is_what_the_filter_clipped_off_capped_per_user(loaded, name, strategy, pace):
    """X_t = Σ_u min(c_ut − k_ut, E) in SQL (plus_remainder.sql) equals the evaluation
    engine's, day by day, under both strategies; a re-run at another E is refused."""
    data, wh = loaded
    campaign = _campaign(name, strategy, pace=pace)
    plan = replace(make_plan(campaign), filter_cap=0.05)  # the filter cuts: k_ut < c_ut
    _warehouse_stream(wh, campaign, plan, seed=3, remainder_cap=2.5)
    run = run_plus(plan, prepare_plus(data), SeededNoise(3), excess_cap=2.5)
    assert run.excess is not None
    stored = [wh.plus_remainder(campaign, START + timedelta(days=d)) for d in range(DAYS)]
    np.testing.assert_allclose(stored, run.excess, rtol=1e-12, atol=1e-9)
    assert min(stored) > 0
    choice = wh.sql.query(
        "SELECT bound, sigma, cap FROM plus_spend_days WHERE campaign = $c ORDER BY day LIMIT 1",
        c=name,
    )[0]
    with pytest.raises(WarehouseError, match="remainder cap"):
        wh.plus_clipped_vector(campaign, START, *choice, remainder_cap=3.0)


def test_with_an_unbounded_cap_the_remainder_is_every_conversion_the_filter_did_not_keep(
    loaded,
):
    """Conservation: at E = ∞ the day's released sum plus X_t is every conversion of the day
    (the diagonal strategy's row is the day's kept conversions)."""
    data, wh = loaded
    campaign = _campaign("whole", "diagonal")
    plan = replace(make_plan(campaign), filter_cap=0.05)
    releases, _ = _warehouse_stream(wh, campaign, plan, seed=4, remainder_cap=1e12)
    prepared = prepare_plus(data)
    for release in releases:
        day = START + timedelta(days=release.choice.day - 1)
        kept = wh.plus_clipped_vector(
            campaign,
            day,
            release.choice.bound,
            release.choice.sigma,
            plan.day_cap(release.choice.day),
            remainder_cap=1e12,
        ).sum()
        rows = prepared.rows(release.choice.day - 1)
        conversions = rows.stop - rows.start
        assert kept < conversions  # the bound and the filter cut
        assert kept + wh.plus_remainder(campaign, day) == pytest.approx(conversions, rel=1e-12)
    with pytest.raises(WarehouseError, match="no remainder"):
        wh.plus_remainder(_campaign("again"), START)  # clipped without an E


def test_a_plan_with_a_remainder_releases_it_each_day_from_the_warehouse(loaded):
    """``remainder_share``: each day's release carries X̃_t = X_t + N(0, σ_R²), X_t from the
    warehouse at the plan's E — the same releases as the evaluation engine under seeded noise
    — and the registry's clip stores X_t at that E (a clip at another E, or none, is refused
    on the re-run below, so a mechanism that did not pass the plan's E would fail here)."""
    data, wh = loaded
    campaign = _campaign("released", "sqrt", pace=0.0)
    campaign = campaign.model_copy(
        update={"mechanism": campaign.mechanism.model_copy(update={"remainder_share": 0.05})}
    )
    plan = replace(make_plan(campaign), filter_cap=0.05)
    assert plan.remainder_cap == 2.0
    releases, _ = _warehouse_stream(wh, campaign, plan, seed=9, remainder_cap=2.0)
    run = run_plus(plan, prepare_plus(data), SeededNoise(9), excess_cap=2.0)
    assert run.remainders is not None and run.excess is not None
    released = [r.measurement.remainder for r in releases]
    np.testing.assert_allclose(released, run.remainders, rtol=0, atol=1e-9)
    truth = [wh.plus_remainder(campaign, START + timedelta(days=d)) for d in range(DAYS)]
    np.testing.assert_allclose(truth, run.excess, rtol=1e-12, atol=1e-9)
    assert not np.allclose(released, truth)  # noise was added
    for release in releases:
        assert release.measurement.remainder_sigma == plan.remainder_sigma
        assert release.measurement.charges["remainder"] == plan.budget.remainder_day
        day = START + timedelta(days=release.choice.day - 1)
        MECHANISM.clip(plan, release.choice, wh, campaign, day)  # the stored day, same E
        assert MECHANISM.remainder(plan, wh, campaign, day) == truth[release.choice.day - 1]

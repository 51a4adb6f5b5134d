"""AdsBPC+ with a correlated strategy, through the warehouse SQL, by brute force.

For the square-root strategy a user's day-t row carries their earlier days through C, so the
filter must charge each row's whole contribution, and a user cut on day t must leave every
later row entirely (their earlier days included). Removing user u from the data must change
each day's released row by a vector whose squared norm is exactly what the filter recorded
for u that day × 2σ² — over cells (breakdown and value), for every user and every day — and
never anyone else's; the recorded spends must stay within the cap. A filter that charged only
the day's new conversions, or that kept a cut user's past in later rows, fails here.

The layouts include impression dimensions (the credited impression's creative, under last touch
and under the multi-touch uniform rule): a conversion's credit then fills the cells of its
touches, and a user's earlier days are carried per cell all the same.
"""

from __future__ import annotations

from datetime import timedelta

import numpy as np
import pytest

from dp_platform.config_loader import parse_catalogue
from dp_platform.privacy.strategy import sqrt_matrix
from dp_platform.warehouse.base import StrategyRow
from tests.cells_data import (
    ADVERTISER,
    DIMENSIONS,
    PUBLISHERS,
    START,
    VALUE_CAP,
    generate,
    ingested,
    leave_one_out,
    user_costs,
)

DAYS = 3
SIGMA, CAP, BOUND = 1.0, 5.0, 3.0
EXCESS = 2.0  # the remainder's cap E, on the count-only layout (the only one it is for)
LAYOUTS = {
    "plain": ([], ["count"], "lta"),
    "both": (["region", "device"], ["count", "value"], "lta"),
    "creative_region": (["creative", "region"], ["count", "value"], "lta"),
    "creative_device_uni": (["creative", "device"], ["count"], "uni"),
}


def _campaigns():
    entries = []
    for name, (breakdown, measures, rule) in LAYOUTS.items():
        entries.append(
            {
                "name": name,
                "advertiser": ADVERTISER,
                "account": "acct",
                "start": START.isoformat(),
                "days": DAYS + 1,
                "publishers": PUBLISHERS,
                "attribution": {"rule": rule, "lookback_days": 30},
                "mechanism": {
                    "kind": "adsbpc_plus",
                    "cap": 5,
                    "profile_days": 2,
                    "strategy": "sqrt",
                },
                "breakdown": breakdown,
                "measures": measures,
                **({"value_cap": VALUE_CAP} if "value" in measures else {}),
            }
        )
    cat = {"accounts": [{"name": "acct", "rho_cap": 100}], "dimensions": DIMENSIONS}
    return parse_catalogue({**cat, "campaigns": entries}).campaigns


def _rows(
    events, directory
) -> dict[str, tuple[list[np.ndarray], dict[str, list[float]], list[float]]]:
    """Per campaign: the released rows of days 1..DAYS (before noise), each user's recorded
    cost per day, and for the count-only layout each day's remainder X_t at E = EXCESS."""
    matrix = sqrt_matrix(DAYS + 1)
    out = {}
    with ingested(events, directory) as wh:
        for campaign in _campaigns():
            last = START + timedelta(days=DAYS - 1)
            wh.attribute_days(campaign, START, last)
            wh.contributions_days(campaign, START, last)
            rows, remainders = [], []
            side = EXCESS if not LAYOUTS[campaign.name][0] else None
            for t in range(DAYS):
                row = StrategyRow(float(matrix[t, t]), tuple(float(c) for c in matrix[t, :t]))
                day = START + timedelta(days=t)
                rows.append(
                    wh.plus_clipped_vector(
                        campaign, day, BOUND, SIGMA, CAP, row=row, remainder_cap=side
                    )
                )
                if side is not None:
                    remainders.append(wh.plus_remainder(campaign, day))
            costs: dict[str, list[float]] = {}
            for user, day, cost in user_costs(wh, campaign.name):
                costs.setdefault(user, [0.0] * DAYS)[(day - START).days] = cost
            out[campaign.name] = (rows, costs, remainders)
    return out


@pytest.fixture(scope="module")
def removals(tmp_path_factory):
    # the heavy user's day-1 impressions on one publisher and creative: every rule credits
    # their 8 conversions to one cell per measure
    events = generate(users=6, days=DAYS, seed=5, heavy=1, focused=True)
    full, without = leave_one_out(events, tmp_path_factory.mktemp("rows"), _rows)
    return events, full, without


@pytest.mark.slow
@pytest.mark.parametrize("name", list(LAYOUTS))
def test_each_row_charges_each_user_the_squared_norm_of_their_part(removals, name) -> None:
    events, full, without = removals
    rows, costs, _ = full[name]
    if LAYOUTS[name][0]:  # a breakdown: the rows spread over many cells, not one per publisher
        assert np.count_nonzero(rows[-1]) > 2 * len(PUBLISHERS)
    cut = 0
    for user in events.users:
        other_rows, other_costs, _ = without[user][name]
        spent = 0.0
        for t in range(DAYS):
            change = float(np.sum((rows[t] - other_rows[t]) ** 2))
            recorded = costs.get(user, [0.0] * DAYS)[t]
            assert change == pytest.approx(recorded * 2 * SIGMA**2, rel=1e-9, abs=1e-12)
            spent += recorded
        assert spent <= CAP * (1 + 1e-12)
        # nobody else's spend moves when u leaves (a filter reading others' data would)
        for other, per_day in other_costs.items():
            np.testing.assert_allclose(per_day, costs[other], rtol=1e-12, atol=1e-15)
        cut += spent >= CAP * (1 - 1e-9)
    assert cut >= 1  # the heavy user reaches the cap: the filter bound
    # the heavy user keeps 3 on day 1 (cost 4.5); on day 2 their day-1 part alone, C_21·3,
    # costs 1.125 > the 0.5 left, so the row is scaled to the room (α < 1) and nothing of day 2
    # is kept; on day 3 they are out, their earlier days too (cost 0, row change 0)
    heavy = costs["u000"]
    assert heavy[0] == pytest.approx(4.5) and heavy[1] == pytest.approx(0.5, rel=1e-9)
    assert heavy[2] == 0.0 and sum(heavy) == pytest.approx(CAP, rel=1e-9)


@pytest.mark.slow
def test_removing_a_user_moves_each_days_remainder_by_at_most_e(removals) -> None:
    """The remainder's ℓ2 sensitivity E (adsbpc_plus_accounting.remainder_allotment): removing
    any user moves X_t by min(c_ut − k_ut, E) ∈ [0, E] on every day — nobody else's kept part
    moves — and the heavy user, 8 conversions on day 1 of which the bound keeps 3, moves day 1
    by exactly E (the cap binds: without it they would move it by 5)."""
    events, full, without = removals
    remainders = full["plain"][2]
    assert len(remainders) == DAYS and max(remainders) > 0
    for user in events.users:
        other = without[user]["plain"][2]
        for t in range(DAYS):
            moved = remainders[t] - other[t]
            assert -1e-9 <= moved <= EXCESS + 1e-9
    heavy = without["u000"]["plain"][2]
    assert remainders[0] - heavy[0] == pytest.approx(EXCESS, rel=1e-12)

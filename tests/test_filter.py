"""The individual zCDP filter: exact per-user spend of what was released, never above ρ1.

Small random conversion sets (fixed seeds), the public per-day (r_i, σ_i) fixed by hand so the
filter binds for many users. Spends are re-derived from the released per-user vectors as exact
rationals; a filter charging ‖c‖₁², or forgetting a fractional cut, would fail these.
"""

from __future__ import annotations

from collections import defaultdict
from fractions import Fraction

import numpy as np
import pytest

from dp_platform.clipping import count_fraction
from dp_platform.events.model import ConversionSet
from dp_platform.events.paper import spread
from dp_platform.privacy.filter import (
    budget_fraction,
    filter_cap,
    remaining,
    worst_case_charge,
)
from dp_research.evaluation.plus_data import clip_unit_rows, filter_day, prepare_plus

RHO1 = Fraction(9, 10)
BOUNDS = [2.5, 3.0, 1.7, 4.0, 2.2, 3.3]
SIGMAS = [1.1, 0.9, 1.4, 0.8, 1.0, 1.2]


def _data(seed: int, users: int = 300, publishers: int = 4) -> ConversionSet:
    rng = np.random.default_rng(seed)
    totals = rng.integers(1, 30, size=users)
    return spread(totals, days=len(BOUNDS), publishers=publishers, rng=rng, name="t")


def _run(conversions: ConversionSet):
    """Per day: rows' kept fractions, users' recorded costs; and the final spends."""
    data = prepare_plus(conversions)
    spend = np.zeros(data.n_users)
    keeps, costs = [], []
    for day, (bound, sigma) in enumerate(zip(BOUNDS, SIGMAS, strict=True)):
        keep, cost = filter_day(data, day, bound, sigma, spend, filter_cap(RHO1))
        spend = spend + cost
        keeps.append(keep)
        costs.append(cost)
    return data, keeps, costs, spend


def _released_per_user(data, day: int, keep: np.ndarray) -> dict[int, dict[int, Fraction]]:
    rows = data.rows(day)
    out: dict[int, dict[int, Fraction]] = defaultdict(lambda: defaultdict(Fraction))
    for user, pub, f in zip(data.user[rows], data.publisher[rows], keep, strict=True):
        out[int(user)][int(pub)] += Fraction(float(f))
    return out


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_recorded_spend_is_the_exact_l2_cost_of_the_release_and_never_exceeds_rho1(seed):
    data, keeps, costs, spend = _run(_data(seed))
    exact_total: dict[int, Fraction] = defaultdict(Fraction)
    for day, keep in enumerate(keeps):
        sigma = Fraction(SIGMAS[day])
        released = _released_per_user(data, day, keep)
        for user, vector in released.items():
            assert sum(vector.values()) <= Fraction(BOUNDS[day])  # L1 cap r_i
            exact = sum((c * c for c in vector.values()), Fraction(0)) / (2 * sigma * sigma)
            assert costs[day][user] == pytest.approx(float(exact), rel=1e-12, abs=1e-15)
            exact_total[user] += exact
        silent = np.setdiff1d(np.arange(data.n_users), list(released))
        assert np.all(costs[day][silent] == 0)
    assert all(total <= RHO1 for total in exact_total.values())  # exact, every user
    for user, total in exact_total.items():
        assert spend[user] == pytest.approx(float(total), rel=1e-12)
    capped = sum(1 for t in exact_total.values() if t > RHO1 * Fraction(999, 1000))
    assert capped >= 10  # the filter really binds in this test


def test_the_cost_is_the_squared_l2_norm_not_l1():
    """Two conversions to two publishers cost 2/(2σ²); to one publisher 4/(2σ²)."""
    spread_user = ConversionSet(
        np.array([0, 0, 1, 1]),
        np.array([0, 0, 0, 0]),
        np.array([0, 1, 2, 2]),
        np.array([10, 20, 10, 20]),
        2,
        1,
        3,
        "t",
    )
    data = prepare_plus(spread_user)
    keep, cost = filter_day(data, 0, 5.0, 1.0, np.zeros(2), 100.0)
    assert keep.tolist() == [1, 1, 1, 1]
    assert cost.tolist() == [1.0, 2.0]  # ‖(1, 1)‖² / 2 and ‖(2)‖² / 2


def test_a_user_added_changes_only_their_own_contributions():
    base = _data(7)
    extra = ConversionSet(
        np.append(base.user, [base.n_users] * 40),
        np.append(base.day, np.arange(40) % len(BOUNDS)),
        np.append(base.publisher, np.zeros(40, dtype=base.publisher.dtype)),
        np.append(base.time_ms, np.arange(40) * 1000),
        base.n_users + 1,
        base.n_days,
        base.n_publishers,
        "t",
    )
    data0, keeps0, _, spend0 = _run(base)
    data1, keeps1, _, spend1 = _run(extra)
    np.testing.assert_array_equal(spend1[:-1], spend0)
    assert spend1[-1] > 0
    for day in range(len(BOUNDS)):
        mine = data1.user[data1.rows(day)] == base.n_users
        a = sorted(zip(data0.user[data0.rows(day)].tolist(), keeps0[day].tolist(), strict=True))
        b = sorted(
            zip(
                data1.user[data1.rows(day)][~mine].tolist(),
                keeps1[day][~mine].tolist(),
                strict=True,
            )
        )
        assert a == b


def test_budget_fraction_solves_the_quadratic_and_cuts_later_rows():
    # q = 3, w = (1, 0), C has 1 on w's publisher: q + 2f·1 + f² ≤ 5 → f = √3 − 1
    f = budget_fraction(np.array([3.0]), np.array([1.0]), np.array([1.0]), np.array([5.0]))
    assert f[0] == pytest.approx(np.sqrt(3) - 1, rel=1e-15)
    assert budget_fraction(np.array([6.0]), np.ones(1), np.zeros(1), np.array([5.0]))[0] == 0.0
    assert budget_fraction(np.array([9.0]), np.zeros(1), np.zeros(1), np.array([5.0]))[0] == 1.0
    keep, inc = clip_unit_rows(np.arange(4), np.zeros(4), np.arange(4.0), np.full(4, 10.0), 2.5)
    assert keep.tolist() == [1.0, 1.0, 0.5, 0.0]
    assert inc.tolist() == [1.0, 1.0, 0.25, 0.0]
    assert count_fraction(np.arange(4), 2.0).tolist() == [1.0, 1.0, 0.0, 0.0]


def test_ledger_charge_is_the_worst_case_rise_and_stops_at_rho1():
    rho1, spent = Fraction(1), Fraction(0)
    charges = []
    for cost in (Fraction(3, 10), Fraction(4, 10), Fraction(5, 10), Fraction(1, 10)):
        charge = worst_case_charge(spent, cost, rho1)
        charges.append(charge)
        spent += charge
    assert charges == [Fraction(3, 10), Fraction(4, 10), Fraction(3, 10), Fraction(0)]
    assert filter_cap(rho1) < 1 and filter_cap(rho1) > 1 - 1e-8


# -- correlated strategies (privacy/strategy.py): a row carries earlier days -----------------


def _reference_rows(conversions: ConversionSet, matrix: np.ndarray, cap: float | list[float]):
    """The filter for a strategy C, user by user in plain loops: each row α·(P + C_tt·k) with
    P = Σ_{j<t} C_tj k_j; conversions kept in order while ‖row‖² ≤ 2σ²(cap − s_u) (the partial
    one by bisection, not the closed form); α < 1 only when ‖P‖² alone is above it. ``cap``
    may differ by day (a paced filter). Returns per day the rows' sum, the users' costs, each
    user's kept vectors."""
    caps = cap if isinstance(cap, list) else [cap] * len(BOUNDS)
    data = prepare_plus(conversions)
    users, pubs = data.n_users, data.n_publishers
    kept = np.zeros((users, data.n_days, pubs))
    spend = np.zeros(users)
    out = []
    for t, (bound, sigma) in enumerate(zip(BOUNDS, SIGMAS, strict=True)):
        rows = data.rows(t)
        total, costs = np.zeros(pubs), np.zeros(users)
        for u in range(users):
            room = 2 * sigma**2 * float(remaining(caps[t], np.array([spend[u]]))[0])
            past = matrix[t, :t] @ kept[u, :t]
            if past @ past > room:
                vector = np.sqrt(room / (past @ past)) * past
            else:
                vector = past.copy()
                mine = sorted(
                    (int(data.rank[i]), i)
                    for i in range(rows.start, rows.stop)
                    if data.user[i] == u
                )
                for rank, i in mine:
                    p, most = int(data.publisher[i]), float(count_fraction(rank, bound))

                    def norm(
                        f: float, p: int = p, base: np.ndarray = vector, c: float = matrix[t, t]
                    ) -> float:
                        v = base.copy()
                        v[p] += f * c
                        return float(v @ v)

                    if norm(most) <= room:
                        f = most
                    else:
                        low, high = 0.0, most
                        for _ in range(200):
                            mid = (low + high) / 2
                            low, high = (mid, high) if norm(mid) <= room else (low, mid)
                        f = low
                    vector[p] += f * matrix[t, t]
                    kept[u, t, p] += f
                    if f < most:
                        break
            costs[u] = float(vector @ vector) / (2 * sigma**2)
            total += vector
        spend += costs
        out.append((total, costs))
    return out, kept


@pytest.mark.parametrize("seed", [0, 1])
def test_correlated_rows_charge_each_user_their_whole_row_exactly(seed):
    """RowFilter (the evaluation's engine, the SQL's twin) against the plain-loop reference:
    the same released rows and costs; every user's costs sum to ≤ ρ1 as exact rationals; and
    users are cut both ways — by a partial conversion and by α < 1 on their past alone."""
    from dp_platform.privacy.strategy import sqrt_matrix
    from dp_research.evaluation.plus_data import RowFilter

    conversions = _data(seed, users=120)
    matrix = sqrt_matrix(len(BOUNDS))
    cap = filter_cap(RHO1)
    reference, _ = _reference_rows(conversions, matrix, cap)
    data = prepare_plus(conversions)
    engine = RowFilter(data, matrix)
    spend = np.zeros(data.n_users)
    exact: dict[int, Fraction] = defaultdict(Fraction)
    scaled = 0
    for t, (bound, sigma) in enumerate(zip(BOUNDS, SIGMAS, strict=True)):
        past_norm, _ = engine._past(t)
        room = 2 * sigma**2 * remaining(cap, spend)
        scaled += int(np.sum((past_norm > room) & (room > 0)))
        _, cost, row = engine.day(t, bound, sigma, spend, cap)
        total, costs = reference[t]
        np.testing.assert_allclose(row, total, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(cost, costs, rtol=1e-9, atol=1e-12)
        spend += cost
        for user in np.flatnonzero(cost):
            exact[int(user)] += Fraction(float(cost[user]))
    assert all(total <= RHO1 for total in exact.values())
    assert sum(1 for t in exact.values() if t > RHO1 * Fraction(999, 1000)) >= 5
    assert scaled >= 1  # some user's earlier days alone passed their room: α < 1


def test_a_cut_user_leaves_every_later_row_past_included():
    """Once a user's spend reaches the cap their later rows are 0 — their earlier days are not
    carried on — and removing them changes each row by exactly their part."""
    from dp_platform.privacy.strategy import sqrt_matrix
    from dp_research.evaluation.plus_data import RowFilter

    base = _data(3, users=60)
    heavy = ConversionSet(
        np.append(base.user, [base.n_users] * 24),
        np.append(base.day, np.repeat(np.arange(6), 4)),
        np.append(base.publisher, np.zeros(24, dtype=base.publisher.dtype)),
        np.append(base.time_ms, np.tile(np.arange(4) * 1000, 6)),
        base.n_users + 1,
        base.n_days,
        base.n_publishers,
        "t",
    )
    matrix = sqrt_matrix(len(BOUNDS))
    rows = {}
    for name, conversions in (("with", heavy), ("without", base)):
        data = prepare_plus(conversions)
        engine = RowFilter(data, matrix)
        spend = np.zeros(data.n_users)
        rows[name] = []
        for t, (bound, sigma) in enumerate(zip(BOUNDS, SIGMAS, strict=True)):
            _, cost, row = engine.day(t, bound, sigma, spend, 4.0)
            spend += cost
            rows[name].append((row, cost[-1] if name == "with" else 0.0))
    out = [t for t in range(len(BOUNDS)) if rows["with"][t][1] == 0.0]
    assert out, "the heavy user must be cut within the campaign"
    for t in range(len(BOUNDS)):
        (row, cost), (other, _) = rows["with"][t], rows["without"][t]
        change = float(np.sum((row - other) ** 2))
        assert change == pytest.approx(cost * 2 * SIGMAS[t] ** 2, rel=1e-9, abs=1e-12)
    assert all(np.allclose(rows["with"][t][0], rows["without"][t][0]) for t in out)


def test_a_paced_row_filter_scales_a_day_and_keeps_the_user():
    """RowFilter with a cap that grows by day (research run_plus(pace=0)): a user whose past
    alone passes the day's paced room has that row scaled and goes on — later rows read their
    whole past, as the plain-loop reference (and the SQL, given that cap) does; only the full
    cap cuts for good. Same rows and costs as the reference, every day."""
    from dp_platform.privacy.strategy import sqrt_matrix
    from dp_research.evaluation.plus_data import RowFilter

    conversions = _data(0, users=120)
    matrix = sqrt_matrix(len(BOUNDS))
    full = filter_cap(RHO1)
    caps = [full * min(1.0, (t + 1) / len(BOUNDS)) for t in range(len(BOUNDS))]
    reference, _ = _reference_rows(conversions, matrix, caps)
    data = prepare_plus(conversions)
    engine = RowFilter(data, matrix)
    spend = np.zeros(data.n_users)
    revived = np.zeros(data.n_users, dtype=bool)
    scaled_before = np.zeros(data.n_users, dtype=bool)
    for t, (bound, sigma) in enumerate(zip(BOUNDS, SIGMAS, strict=True)):
        past_norm, _ = engine._past(t)
        room = 2 * sigma**2 * remaining(caps[t], spend)
        keep, cost, row = engine.day(t, bound, sigma, spend, caps[t])
        total, costs = reference[t]
        np.testing.assert_allclose(row, total, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(cost, costs, rtol=1e-9, atol=1e-12)
        rows = data.rows(t)
        kept_today = np.bincount(data.user[rows], keep, minlength=data.n_users) > 0
        revived |= scaled_before & kept_today
        scaled_before |= (past_norm > room) & (room > 0)
        spend += cost
    assert scaled_before.any()  # a paced day scaled someone's row ...
    assert revived.any()  # ... who kept conversions again on a later day

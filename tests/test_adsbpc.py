"""The streaming mechanism: exact budget, both adjacencies, streaming, state, release contents."""

from __future__ import annotations

import json
from dataclasses import fields
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dp_platform.config_loader import parse_campaign
from dp_platform.mechanisms.adsbpc import (
    AdsbpcState,
    Release,
    _sigma_for_allotment,
    initial_state,
    make_plan,
    run_stream,
    step,
)
from dp_platform.privacy.noise import SeededNoise
from dp_platform.privacy.scales import wsum_closed_form
from dp_platform.records import from_record, to_record
from dp_platform.workload import prefix_matrix
from tests.simulation import simulate_stream


def campaign(**overrides):
    data = {
        "name": "spring",
        "advertiser": "acme",
        "account": "acct",
        "start": "2026-03-01",
        "days": 31,
        "publishers": ["p0", "p1", "p2", "p3"],
        "mechanism": "adsbpc",  # named: the default under add/remove is AdsBPC+
    }
    data.update(overrides)
    return parse_campaign(data)


def stream_days(days: int = 31, users: int = 3000, seed: int = 11, publishers: int = 4):
    stream = simulate_stream(days=days, users=users, publishers=publishers, seed=seed)
    return stream, [(d.histogram(), d.clipped_sums()) for d in stream.days]


def _noise(seed: int) -> SeededNoise:
    return SeededNoise(seed)


PLAN_ADD = make_plan(campaign())


def test_plan_sigma_bar_is_the_wsum_closed_form_for_rho1() -> None:
    plan = make_plan(campaign())
    weights = np.ones(31)
    weights[-1] = 49.0  # γ_n = 7, weight γ² = 49
    expected = np.sqrt(wsum_closed_form(prefix_matrix(31), weights, 0.7))
    assert np.array(plan.sigma_bar) == pytest.approx(expected, rel=1e-12)
    assert sum(plan.allotments, Fraction(0)) == plan.budget.rho1.value
    assert float(plan.budget.rho2) == pytest.approx(0.15 / 7)


@settings(max_examples=100, deadline=None)
@given(
    bounds=st.lists(
        st.floats(min_value=1e-3, max_value=40.0, allow_nan=False), min_size=31, max_size=31
    )
)
def test_any_sequence_of_bounds_spends_exactly_rho1(bounds: list[float]) -> None:
    plan = PLAN_ADD
    sigmas = [_sigma_for_allotment(r, g, 1) for r, g in zip(bounds, plan.allotments, strict=True)]
    ratio = sum((r / s) ** 2 for r, s in zip(bounds, sigmas, strict=True))
    assert ratio == pytest.approx(2 * float(plan.budget.rho1), rel=1e-12)
    exact = sum(
        (plan.gaussian_cost(r, s) for r, s in zip(bounds, sigmas, strict=True)), Fraction(0)
    )
    assert exact <= plan.budget.rho1.value  # never over, even by rounding


def test_replace_with_several_publishers_costs_twice() -> None:
    add = make_plan(campaign())
    rep = make_plan(campaign(privacy={"adjacency": "replace"}))
    single = make_plan(campaign(publishers=["only"], privacy={"adjacency": "replace"}))
    assert (add.factor, rep.factor, single.factor) == (1, 2, 1)
    # the same σ costs twice as much under replace with several publishers…
    assert rep.gaussian_cost(3.0, 5.0) == 2 * add.gaussian_cost(3.0, 5.0)
    assert single.gaussian_cost(3.0, 5.0) == add.gaussian_cost(3.0, 5.0)
    # …so the plan widens σ̄ by √2 to spend the same ρ1, and Σ r²/σ² halves to ρ1
    assert np.array(rep.sigma_bar) == pytest.approx(np.sqrt(2) * np.array(add.sigma_bar))
    _, days = stream_days()
    releases, state = run_stream(rep, days, noise=_noise(4))
    ratio = sum((r.bound / r.sigma) ** 2 for r in releases)
    assert ratio == pytest.approx(float(rep.budget.rho1), rel=1e-12)
    assert state.spent == rep.budget.total


@pytest.mark.parametrize("adjacency", ["add_remove", "replace"])
def test_whole_run_charges_exactly_the_plan(adjacency: str) -> None:
    plan = make_plan(campaign(privacy={"adjacency": adjacency, "rho": 0.9}))
    _, days = stream_days()
    releases, state = run_stream(plan, days, noise=_noise(1))
    assert state.spent == plan.budget.total
    assert plan.budget.total.value == Fraction(9, 10)
    assert [r.bound_method for r in releases[:7]] == ["quantile"] * 7
    assert all(r.bound_method.startswith("svt_") for r in releases[7:])
    assert "svt" in releases[7].charges and "svt" not in releases[8].charges
    ratio = sum(plan.factor * (r.bound / r.sigma) ** 2 for r in releases)
    assert ratio == pytest.approx(2 * float(plan.budget.rho1), rel=1e-12)


def test_release_for_day_t_ignores_later_days() -> None:
    plan = make_plan(campaign())
    _, days = stream_days(seed=21)
    _, other = stream_days(seed=99)
    t = 12
    first, _ = run_stream(plan, days, noise=_noise(5))
    second, _ = run_stream(plan, days[:t] + other[t:], noise=_noise(5))
    assert first[:t] == second[:t]
    assert first[t:] != second[t:]  # the perturbation is real


def test_state_round_trip_resumes_identically() -> None:
    plan = make_plan(
        campaign(workload={"kind": "sliding", "window": 7}, objective={"kind": "maxvar"})
    )
    _, days = stream_days()
    noise = _noise(8)
    state = initial_state()
    for histogram, clip in days[:10]:
        _, state = step(plan, state, histogram, clip, noise=noise)
    restored = from_record(AdsbpcState, json.loads(json.dumps(to_record(state))))
    assert restored == state
    fork_a, fork_b = _noise(3), _noise(3)
    a = step(plan, state, *days[10], noise=fork_a)
    b = step(plan, restored, *days[10], noise=fork_b)
    assert a == b


def test_noise_is_added_to_the_clipped_vector_with_sigma_i() -> None:
    plan = make_plan(campaign(publishers=[f"p{i}" for i in range(4000)]))
    clipped = np.linspace(0, 50, 4000)
    histogram = np.bincount([1, 1, 2, 3, 3, 3])
    release, _ = step(plan, initial_state(), histogram, lambda r: clipped, noise=_noise(2))
    z = (np.array(release.values) - clipped) / release.sigma
    assert abs(z.mean()) < 4 / np.sqrt(z.size)  # mean 0 within 4 standard errors
    assert z.std() == pytest.approx(1.0, abs=0.05)  # √(2/4000) ≈ 0.022: 0.05 is > 2 s.e.


def test_release_holds_only_dp_values() -> None:
    plan = make_plan(campaign())
    _, days = stream_days(days=3)
    release, _ = step(plan, initial_state(), *days[0], noise=_noise(6))
    names = {f.name for f in fields(Release)}
    assert names == {"day", "bound", "sigma", "values", "answers", "charges", "bound_method"}
    assert Release.from_json(json.loads(json.dumps(release.to_json()))) == release


def test_answers_cover_every_query_ended_by_the_day() -> None:
    plan = make_plan(campaign(days=10, bounds={"quantile_days": 3}))
    _, days = stream_days(days=10)
    releases, _ = run_stream(plan, days, noise=_noise(7))
    for release in releases:
        assert sorted(release.answers) == list(range(release.day))
        prefix = np.sum([r.values for r in releases[: release.day]], axis=0)
        assert release.answers[release.day - 1] == pytest.approx(tuple(prefix))


def test_a_zero_bound_is_refused_never_released_without_noise() -> None:
    """A zero bound used to give σ = 0 (an unnoised release); it is refused at the draw, and
    choose_bound floors every bound at bounds.min_bound (tests/test_operator_proof.py)."""
    with pytest.raises(ValueError, match="finite and > 0"):
        _sigma_for_allotment(0.0, Fraction(1, 10), 1)
    assert _sigma_for_allotment(1e-3, Fraction(1, 10), 1) > 0


def test_misuse_is_refused() -> None:
    plan = make_plan(campaign(days=3, bounds={"quantile_days": 1}))
    histogram = np.bincount([1, 2])
    state = initial_state()
    _, state = step(plan, state, histogram, lambda r: np.zeros(4), noise=_noise(1))
    with pytest.raises(ValueError, match="publishers"):
        step(plan, state, histogram, lambda r: np.zeros(5), noise=_noise(1))
    for _ in range(2):
        _, state = step(plan, state, histogram, lambda r: np.zeros(4), noise=_noise(1))
    with pytest.raises(ValueError, match="past it"):
        step(plan, state, histogram, lambda r: np.zeros(4), noise=_noise(1))

"""AdsBPC+ plan, bound choice and ledger charges: exact budgets, public-only parameters."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from dp_platform import adsbpc_plus
from dp_platform.adsbpc_plus import (
    PROFILE_BINS,
    PlusChoice,
    PlusState,
    choose_bound,
    estimate_scale,
    make_plan,
)
from dp_platform.config import ConfigError, parse_campaign
from dp_platform.evaluation.plus_data import prepare_plus, run_plus
from dp_platform.events.paper import paper_dataset
from dp_platform.privacy.accounting import Rho, gaussian_rho
from dp_platform.privacy.noise import SeededNoise


def _campaign(**overrides):
    data = {
        "name": "plus",
        "advertiser": "acme",
        "account": "acct",
        "start": "2026-03-01",
        "days": 12,
        "mechanism": "adsbpc_plus",
        "privacy": {"rho": 0.8},
        "adsbpc_plus": {"profile_days": 4, "cap": 6},
    }
    data.update(overrides)
    return parse_campaign(data)


def test_replace_adjacency_is_refused_with_the_reason():
    with pytest.raises(ConfigError, match="add_remove only"):
        _campaign(privacy={"adjacency": "replace"})
    with pytest.raises(ConfigError, match="profile_days"):
        _campaign(adsbpc_plus={"profile_days": 12})
    with pytest.raises(ConfigError, match="profile_share"):
        _campaign(adsbpc_plus={"profile_days": 0})


def test_plan_splits_rho_exactly_and_the_gaussian_shape_fits_rho1():
    plan = make_plan(_campaign())
    b = plan.budget
    assert b.total == Rho(Fraction(4, 5))
    assert b.histogram_day * 12 == Rho(Fraction(4, 5) * Fraction(3, 100))
    assert b.profile == Rho(Fraction(4, 5) * Fraction(2, 100))
    assert sum((gaussian_rho(1.0, s) for s in plan.sigma_bar), Fraction(0)) <= b.rho1.value
    assert Fraction(1, 2) / Fraction(plan.sigma_histogram) ** 2 <= b.histogram_day.value
    assert Fraction(1, 2) / Fraction(plan.sigma_profile) ** 2 <= b.profile.value
    assert sum(plan.day_weights) == pytest.approx(1.0, rel=1e-12)


def _run(campaign, seed=0):
    plan = make_plan(campaign)
    data = prepare_plus(paper_dataset("zipf", users=3000, publishers=5, days=12, seed=seed))
    return plan, data, run_plus(plan, data, SeededNoise(seed))


def test_a_finished_campaign_charges_exactly_rho_and_never_less_than_the_worst_case():
    campaign = _campaign()
    plan, data, _ = _run(campaign)
    state, spent, worst = PlusState(), Rho.zero(), Fraction(0)
    noise = SeededNoise(3)
    for day in range(12):
        profile = np.ones(PROFILE_BINS, dtype=np.int64) if plan.needs_profile(day + 1) else None
        choice, state = choose_bound(
            plan, state, data.histograms[day], publishers=5, profile=profile, noise=noise
        )
        spent = spent + sum(choice.charges.values(), Rho.zero()) + choice.gaussian
        worst = min(plan.budget.rho1.value, worst + gaussian_rho(choice.bound, choice.sigma))
        assert state.gaussian_charged >= worst  # what any single user may have lost so far
        assert ("profile" in choice.charges) == (day + 1 == 5)
        assert 1.0 <= choice.bound <= 6.0 and choice.scale <= 1.0
    assert spent == plan.budget.total


def test_sigma_depends_only_on_public_values():
    """Before the estimate σ_i = σ̄_i·ψ0·r_i, after it σ̄_i·min(s, r_i)."""
    plan, _, run = _run(_campaign())
    bar = np.asarray(plan.sigma_bar)
    np.testing.assert_allclose(run.sigmas[:4], bar[:4] * 0.5 * run.bounds[:4], rtol=1e-15)
    s = run.scales[4:] * run.bounds[4:]  # ψ_i·r_i = min(s, r_i)
    np.testing.assert_allclose(run.sigmas[4:], bar[4:] * s, rtol=1e-15)
    assert run.spend.max() <= float(plan.budget.rho1)


def test_estimate_scale_reads_the_noisy_tail_against_the_noisy_user_count():
    h = np.zeros(PROFILE_BINS)
    h[10], h[30] = 990.0, 10.0  # 1 % of users in bin 30
    s = estimate_scale(h, 0.99, 4)
    assert s == pytest.approx(4 * np.sqrt(adsbpc_plus.PROFILE_EDGES[11]))
    assert estimate_scale(h, 0.995, 4) == pytest.approx(4 * np.sqrt(adsbpc_plus.PROFILE_EDGES[31]))
    assert estimate_scale(np.full(PROFILE_BINS, -1.0), 0.99, 4) == 4.0  # no signal: s = Λ


def test_bound_choice_grows_where_the_histogram_cannot_see_the_tail():
    plan = make_plan(_campaign())
    hist = np.array([0, 5000, 900, 90, 9, 1, 0])
    sharp = adsbpc_plus.select_bound(plan, 1, np.array([5000, 900, 90, 9, 1, 0]), 0.1, None, 5)
    blurred = adsbpc_plus.select_bound(plan, 1, np.array([5000, 900, 90, 9, 1, 0]), 50.0, None, 5)
    assert 1.0 <= sharp < blurred <= 6.0
    assert hist.sum() > 0


def test_state_and_choice_round_trip_through_json():
    plan, data, _ = _run(_campaign())
    choice, state = choose_bound(
        plan, PlusState(), data.histograms[0], publishers=5, noise=SeededNoise(1)
    )
    assert PlusState.from_json(state.to_json()) == state
    assert PlusChoice.from_json(choice.to_json()) == choice
    assert "values" not in choice.to_json()  # a choice carries no data

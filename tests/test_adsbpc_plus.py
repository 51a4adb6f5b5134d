"""AdsBPC+ plan, bound choice and ledger charges: exact budgets, public-only parameters."""

from __future__ import annotations

import json
from fractions import Fraction

import numpy as np
import pytest

from dp_platform.config_loader import parse_campaign
from dp_platform.errors import ConfigError
from dp_platform.events.paper import paper_dataset
from dp_platform.mechanisms.adsbpc_plus import make_plan
from dp_platform.mechanisms.adsbpc_plus_accounting import declare, measure, release_charges
from dp_platform.mechanisms.adsbpc_plus_bound import (
    PlusChoice,
    PlusState,
    choose_bound,
    estimate_scale,
    profile_scale,
    select_bound,
)
from dp_platform.mechanisms.adsbpc_plus_plan import (
    DEFAULT_REMAINDER_SHARE,
    PROFILE_BINS,
    PROFILE_EDGES,
    SCALE_ALPHA,
    SCALE_Z,
)
from dp_platform.privacy.accounting import Rho, gaussian_rho
from dp_platform.privacy.noise import NoiseSource, SeededNoise
from dp_platform.privacy.noise_check import Draw
from dp_platform.records import from_record, to_record
from dp_research.evaluation.plus_data import prepare_plus, run_plus


def _campaign(strategy: str = "diagonal", **overrides):
    """A 12-day prefix campaign; the diagonal strategy unless asked (the rules these tests
    check are the diagonal's; tests/test_adsbpc_plus_strategy.py has the correlated ones)."""
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
    data["adsbpc_plus"] = {"strategy": strategy, **data["adsbpc_plus"]}
    return parse_campaign(data)


def test_replace_adjacency_is_refused_with_the_reason():
    with pytest.raises(ConfigError, match="add_remove only"):
        _campaign(privacy={"adjacency": "replace"})
    with pytest.raises(ConfigError, match="profile_days"):
        _campaign(adsbpc_plus={"profile_days": 12})
    with pytest.raises(ConfigError, match="profile_share"):
        _campaign(adsbpc_plus={"profile_days": 0})
    with pytest.raises(ConfigError, match="scale_prior"):
        _campaign(adsbpc_plus={"profile_days": 4, "cap": 6, "scale_prior": 7})


def test_the_scale_prior_defaults_to_0_35_cap_and_an_old_record_keeps_psi0_cap():
    """s0 = 0.35·Λ for a plan made now (ψ0·Λ = 0.5·Λ before 2026-11-29); the plan
    records it, and a record without it reads back with ψ0·Λ, the prior it was made with."""
    plan = make_plan(_campaign())
    assert plan.prior == pytest.approx(0.35 * 6) and plan.to_json()["scale_prior"] == plan.prior
    record = to_record(plan)
    del record["scale_prior"]
    old = from_record(type(plan), json.loads(json.dumps(record)))
    assert old.scale_prior is None and old.prior == pytest.approx(0.5 * 6)  # ψ0·Λ
    chosen = _campaign(adsbpc_plus={"profile_days": 4, "cap": 6, "scale_prior": 6})
    assert chosen.mechanism.profile_prior == 6.0
    assert make_plan(chosen).to_json()["scale_prior"] == 6.0


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
        released = release_charges(plan, choice)  # the Gaussian part, and the remainder's
        spent = (
            spent + sum(choice.charges.values(), Rho.zero()) + sum(released.values(), Rho.zero())
        )
        worst = min(plan.budget.rho1.value, worst + gaussian_rho(choice.bound, choice.sigma))
        assert state.gaussian_charged >= worst  # what any single user may have lost so far
        assert ("profile" in choice.charges) == (day + 1 == 5)
        assert 1.0 <= choice.bound <= 6.0 and choice.scale <= 1.0
    assert spent == plan.budget.total


def test_sigma_depends_only_on_public_values():
    """Before the estimate σ_i = σ̄_i·min(ψ0·r_i, ε0·Λ), after it σ̄_i·min(s, r_i)."""
    plan, _, run = _run(_campaign())
    bar = np.asarray(plan.sigma_bar)
    early = np.minimum(0.5 * run.bounds[:4], 0.3 * 6)
    np.testing.assert_allclose(run.sigmas[:4], bar[:4] * early, rtol=1e-15)
    s = run.scales[4:] * run.bounds[4:]  # ψ_i·r_i = min(s, r_i)
    np.testing.assert_allclose(run.sigmas[4:], bar[4:] * s, rtol=1e-15)
    assert run.spend.max() <= float(plan.budget.rho1)


def test_days_before_the_profile_run_at_most_at_the_early_cap_and_are_declared_so():
    """ε0 (``early_scale``, 0.3 by default): days 1..m's σ_i = σ̄_i·min(ψ0·r_i, ε0·Λ). The
    declaration restates the rule apart from the choice, so the day's Gaussian is declared at
    the σ it is drawn with (a declaration that forgot the cap would state a larger σ and a
    smaller loss than the draw's: the sampler refuses that, tests/test_declarations.py); a
    plan recorded before the cap existed reads back without it."""
    plan = make_plan(_campaign())
    assert plan.early_cap == pytest.approx(1.8) and plan.to_json()["early_cap"] == plan.early_cap
    data = prepare_plus(paper_dataset("zipf", users=3000, publishers=5, days=12, seed=1))
    state, noise, capped = PlusState(), SeededNoise(2), 0
    for day in range(4):
        choice, state = choose_bound(
            plan, state, data.histograms[day], publishers=5, profile=None, noise=noise
        )
        unit = min(0.5 * choice.bound, 1.8)
        capped += 0.5 * choice.bound > 1.8
        assert choice.sigma == pytest.approx(plan.sigma_bar[day] * unit, rel=1e-15)
        declared = declare(plan, choice, state)
        assert float(declared.loss) == pytest.approx(
            float(gaussian_rho(choice.bound, choice.sigma)), rel=1e-12
        )
    assert capped == 4  # the cap binds on every day here: what is tested is the capped σ
    record = to_record(plan)
    del record["early_cap"]
    old = from_record(type(plan), json.loads(json.dumps(record)))
    assert old.early_cap is None and old.early_unit(5.0) == 2.5
    loose = make_plan(_campaign(adsbpc_plus={"profile_days": 4, "cap": 6, "early_scale": None}))
    assert loose.early_cap is None and loose.early_unit(np.array([6.0]))[0] == 3.0


def test_estimate_scale_reads_the_noisy_tail_against_the_noisy_user_count():
    h = np.zeros(PROFILE_BINS)
    h[10], h[30] = 990.0, 10.0  # 1 % of users in bin 30
    # z = 0: the plain rule N(>j) <= (1 - q)·K̃; the prior s0 = Λ leaves U as it is
    plain = {"sigma": 1.0, "z": 0.0, "prior": 4}
    s = estimate_scale(h, 0.99, 4, **plain)
    assert s == pytest.approx(4 * np.sqrt(PROFILE_EDGES[11]))
    assert estimate_scale(h, 0.995, 4, **plain) == pytest.approx(4 * np.sqrt(PROFILE_EDGES[31]))
    no_signal = np.full(PROFILE_BINS, -1.0)
    assert estimate_scale(no_signal, 0.99, 4, sigma=5.0, prior=4) == 4.0
    with pytest.raises(ValueError):
        estimate_scale(h, 0.99, 4, sigma=0.0, prior=4)


def test_the_confidence_rule_is_the_plain_rule_with_many_users_and_cautious_with_few():
    assert pytest.approx(3.3055, abs=1e-4) == SCALE_Z  # Bonferroni over 48 bins
    assert pytest.approx(0.0227501, abs=1e-7) == SCALE_ALPHA  # Φ(−2)
    big = np.zeros(PROFILE_BINS)
    big[[10, 20, 30]] = 400_000.0, 96_000.0, 4_000.0  # 0.8 % above bin 20
    edge = 4 * np.sqrt(PROFILE_EDGES[21])
    assert estimate_scale(big, 0.99, 4, sigma=5.0, prior=4) == pytest.approx(edge)
    assert estimate_scale(big, 0.99, 4, sigma=5.0, z=0.0, prior=4) == pytest.approx(edge)
    small = big / 1000.0  # 500 users, 4 above bin 20: not resolvable with σ = 5 per bin
    assert estimate_scale(small, 0.99, 4, sigma=5.0, z=0.0, prior=4) == pytest.approx(edge)
    assert estimate_scale(small, 0.99, 4, sigma=5.0, prior=4) == 4.0  # s = Λ: cut nobody
    rng = np.random.default_rng(0)
    for _ in range(50):  # never below the plain rule; grows with z
        noisy = small + rng.normal(0.0, 5.0, PROFILE_BINS)
        got = [estimate_scale(noisy, 0.99, 4, sigma=5.0, z=z, prior=4) for z in (0.0, 2.0, 3.3)]
        assert got == sorted(got)


def test_the_scale_undershoots_the_true_quantile_at_most_as_often_as_stated():
    """P(s < the true q-quantile's bin edge) ≤ SCALE_ALPHA at ≈ 420 users; the plain rule
    (z = 0) undershoots about half the time there (measured 0.53), which cut heavy users."""
    true = np.zeros(PROFILE_BINS)
    true[np.arange(5, 33)] = np.geomspace(60, 1, 28).round()  # 419 users, a thin tail
    tail = np.concatenate([np.cumsum(true[::-1])[::-1][1:], [0.0]])
    first = int(np.flatnonzero(tail <= 0.01 * true.sum())[0])
    truth = 10 * np.sqrt(PROFILE_EDGES[first + 1])
    rng = np.random.default_rng(7)
    draws = true + rng.normal(0.0, 5.0, (4000, PROFILE_BINS))
    under = {
        z: np.mean([estimate_scale(d, 0.99, 10, sigma=5.0, z=z, prior=10) < truth for d in draws])
        for z in (SCALE_Z, 0.0)
    }
    assert under[SCALE_Z] <= SCALE_ALPHA
    assert under[0.0] > 0.3


def _thin_tail() -> tuple[np.ndarray, float]:
    """419 users (Facebook's size), a thin tail; and the true 0.99-quantile's bin edge (Λ = 10)."""
    true = np.zeros(PROFILE_BINS)
    true[np.arange(5, 33)] = np.geomspace(60, 1, 28).round()
    tail = np.concatenate([np.cumsum(true[::-1])[::-1][1:], [0.0]])
    first = int(np.flatnonzero(tail <= 0.01 * true.sum())[0])
    return true, 10 * np.sqrt(PROFILE_EDGES[first + 1])


def test_the_prior_is_kept_only_where_the_noisy_profile_cannot_rule_it_out():
    big = np.zeros(PROFILE_BINS)
    big[[10, 20, 30]] = 400_000.0, 96_000.0, 4_000.0  # 0.8 % above bin 20: s = edge 21
    upper = 4 * np.sqrt(PROFILE_EDGES[21])
    # many users: the interval is one bin wide, so any prior gives the data's s
    assert estimate_scale(big, 0.99, 4, sigma=5.0, prior=4.0) == pytest.approx(upper)
    assert estimate_scale(big, 0.99, 4, sigma=5.0, prior=upper * 1.5) == pytest.approx(upper)
    assert estimate_scale(big, 0.99, 4, sigma=5.0, prior=upper / 3) == pytest.approx(upper)
    # few users: the tail is unresolvable, U = Λ, and the prior inside the interval is kept
    small = big / 1000.0
    assert estimate_scale(small, 0.99, 4, sigma=5.0, prior=4) == 4.0
    assert estimate_scale(small, 0.99, 4, sigma=5.0, prior=2.0) == 2.0
    assert estimate_scale(small, 0.99, 4, sigma=5.0, prior=4.0) == 4.0  # s0 = Λ: old rule
    # few users but a resolvable bulk far above the prior: L > s0, so s = U, never s0
    high = np.zeros(PROFILE_BINS)
    high[40] = 500.0
    got = estimate_scale(high, 0.99, 4, sigma=5.0, prior=0.1)
    assert got > 0.1 and got == estimate_scale(high, 0.99, 4, sigma=5.0, prior=4)
    assert estimate_scale(np.full(PROFILE_BINS, -1.0), 0.99, 4, sigma=5.0, prior=2.0) == 2.0
    for bad in (0.0, 4.5):
        with pytest.raises(ValueError, match="prior"):
            estimate_scale(big, 0.99, 4, sigma=5.0, prior=bad)


def test_a_prior_at_or_above_the_truth_keeps_the_undershoot_guarantee():
    """s ≥ min(U, s0), so with s0 ≥ the true quantile P(s < truth) ≤ P(U < truth) ≤ α."""
    true, truth = _thin_tail()
    rng = np.random.default_rng(11)
    draws = true + rng.normal(0.0, 5.0, (4000, PROFILE_BINS))
    for prior in (truth, 5.0, 10.0):
        got = np.array([estimate_scale(d, 0.99, 10, sigma=5.0, prior=prior) for d in draws])
        assert np.mean(got < truth) <= SCALE_ALPHA
        assert np.all(got <= max(prior, 10.0))


def test_a_prior_below_the_truth_is_overruled_when_the_users_are_many():
    """The cost of s0 is bias only where the data cannot resolve it; with 10⁵× the users the
    lower confidence bound clears a low prior on every draw and s is the data's U."""
    true, truth = _thin_tail()
    many = true * 1e5
    rng = np.random.default_rng(12)
    for _ in range(200):
        noisy = many + rng.normal(0.0, 5.0, PROFILE_BINS)
        got = estimate_scale(noisy, 0.99, 10, sigma=5.0, prior=truth / 4)
        assert got == estimate_scale(noisy, 0.99, 10, sigma=5.0, prior=10)
        assert got >= truth


class _FixedNoise(NoiseSource):
    """A 'noise source' whose outputs ignore the true counts: only what it returns is seen
    (after the sampler's OpenDP check, which the histograms' declarations must pass)."""

    def __init__(self, outputs):
        self.outputs, self.scales = outputs, []

    def _gaussian(self, vector: np.ndarray, draw: Draw) -> np.ndarray:
        self.scales.append(draw.scale)
        return np.array(self.outputs[vector.size], dtype=np.float64)

    def _laplace(self, vector: np.ndarray, draw: Draw) -> np.ndarray:
        raise AssertionError("AdsBPC+ draws no Laplace noise")

    def _gumbel_max(self, vector: np.ndarray, draw: Draw) -> int:
        raise AssertionError("AdsBPC+ runs no exponential mechanism")

    def _exponential_max(self, vector: np.ndarray, draw: Draw) -> int:
        raise AssertionError("AdsBPC+ runs no report-noisy-max")

    def _uniform(self, low: float, high: float) -> float:
        raise AssertionError("AdsBPC+ draws no uniform point")


def test_the_scale_and_bound_see_only_the_noisy_outputs_and_public_sigma():
    """Two very different true profiles (and day histograms) with the same noisy outputs must
    give the same choice; fails if the rule read K, the tail or any count before the noise."""
    plan = make_plan(_campaign())
    noisy_profile = np.linspace(40.0, -3.0, PROFILE_BINS)
    outputs = {6: [300.0, 40.0, 8.0, 2.0, -1.0, 0.5], PROFILE_BINS: noisy_profile}
    state = PlusState(
        day=4,
        bounds=(3.0,) * 4,
        scales=(0.5,) * 4,
        histograms=((300.0, 40.0, 8.0, 2.0, 0.0, 0.0),) * 4,
        gaussian_charged=Fraction(0),
    )
    light = np.zeros(PROFILE_BINS, dtype=np.int64)
    light[3] = 100_000  # s near the bottom if it were read from the true counts
    heavy = np.zeros(PROFILE_BINS, dtype=np.int64)
    heavy[[20, 47]] = 5000, 900
    choices = []
    for true_profile, day_hist in ((light, [0, 5, 0, 0]), (heavy, [0, 9000, 700, 50, 20, 9, 9])):
        noise = _FixedNoise(outputs)
        choice, new_state = choose_bound(
            plan, state, np.array(day_hist), publishers=5, profile=true_profile, noise=noise
        )
        assert noise.scales == [plan.sigma_histogram, plan.sigma_profile]
        choices.append((choice, new_state.scale_estimate))
    assert choices[0] == choices[1]
    prior = plan.prior
    assert prior == pytest.approx(0.35 * 6)  # default s0 = 0.35·Λ
    floor = estimate_scale(
        noisy_profile, plan.config.quantile, 6, sigma=plan.sigma_profile, prior=prior
    )
    expected = profile_scale(plan, noisy_profile, sigma=plan.sigma_profile, publishers=5)
    assert choices[0][1] == expected >= floor  # the plan's rule (objective), on the noisy P
    assert plan.to_json()["scale_z"] == SCALE_Z


def test_bound_choice_grows_where_the_histogram_cannot_see_the_tail():
    plan = make_plan(_campaign(adsbpc_plus={"profile_days": 4, "cap": 6, "early_scale": None}))
    pooled = np.array([5000, 900, 90, 9, 1, 0])
    sharp = select_bound(plan, 1, pooled, 0.1, None, 5)
    blurred = select_bound(plan, 1, pooled, 50.0, None, 5)
    assert 1.0 <= sharp < blurred <= 6.0
    # with the early cap a bound above ε0·Λ/ψ0 = 3.6 adds no noise, so the risk alone decides
    capped = make_plan(_campaign())
    assert select_bound(capped, 1, pooled, 0.1, None, 5) >= sharp
    assert select_bound(capped, 1, pooled, 50.0, None, 5) == 6.0


def test_state_and_choice_round_trip_through_json():
    plan, data, _ = _run(_campaign())
    choice, state = choose_bound(
        plan, PlusState(), data.histograms[0], publishers=5, noise=SeededNoise(1)
    )
    assert from_record(PlusState, json.loads(json.dumps(to_record(state)))) == state
    assert from_record(PlusChoice, json.loads(json.dumps(to_record(choice)))) == choice
    assert "values" not in to_record(choice)  # a choice carries no data


def test_a_runs_excess_is_what_the_filter_kept_off_capped_per_user_and_day():
    """run_plus(excess_cap=E) (research/…/total_layer.py): Σ_u min(c_ut − k_ut, E) a day."""
    plan = make_plan(_campaign())
    data = prepare_plus(paper_dataset("zipf", users=3000, publishers=5, days=12, seed=0))
    wide, one, none = (
        run_plus(plan, data, SeededNoise(0), excess_cap=cap) for cap in (1e9, 1.0, 0.0)
    )
    assert run_plus(plan, data, SeededNoise(0)).excess is None
    conversions = np.bincount(data.day, minlength=12)  # unit rows, one conversion each
    np.testing.assert_allclose(wide.excess, conversions - wide.clipped.sum(axis=0), atol=1e-9)
    assert wide.excess.sum() > 0
    np.testing.assert_array_equal(none.excess, np.zeros(12))
    active = np.array([np.unique(data.user[data.rows(day)]).size for day in range(12)])
    assert np.all(one.excess <= active) and np.all(one.excess <= wide.excess)
    assert np.any(one.excess < wide.excess)  # some user lost more than one conversion a day
    caps = run_plus(plan, data, SeededNoise(0), excess_cap=np.array([1e9, 1.0, 0.0]))
    assert caps.excess is not None and caps.excess.shape == (12, 3)  # a column per cap
    for column, run in enumerate((wide, one, none)):
        np.testing.assert_allclose(caps.excess[:, column], run.excess, rtol=1e-12)


@pytest.mark.parametrize("strategy", ["diagonal", "sqrt"])
def test_a_paced_filter_keeps_every_users_spend_on_the_flat_schedule(strategy):
    """run_plus(pace=β) (an exploration, research/…/total_layer.py): through day t no user's
    spend passes cap·min(1, W_t + β), W_t the flat profile's share of ρ1 so far; with β ≥ 1
    it is the plain filter, and at β = 0 on heavy users it binds."""
    plan = make_plan(_campaign(strategy, adsbpc_plus={"profile_days": 4, "cap": 6, "pace": None}))
    assert plan.pace is None  # unpaced as written; run_plus(pace=β) paces it
    data = prepare_plus(paper_dataset("zipf", users=3000, publishers=5, days=12, seed=0))
    plain, loose, paced = (
        run_plus(plan, data, SeededNoise(0), keep_costs=True, pace=pace)
        for pace in (None, 1.0, 0.0)
    )
    schedule = np.minimum(np.cumsum(plan.day_weights), 1.0) * plan.filter_cap
    assert paced.day_costs is not None and plain.day_costs is not None
    spent = np.cumsum(paced.day_costs, axis=0)
    assert np.all(spent <= schedule[:, None] * (1 + 1e-9))
    np.testing.assert_array_equal(loose.clipped, plain.clipped)
    early = np.cumsum(plain.day_costs, axis=0)
    assert np.any(early > schedule[:, None] * (1 + 1e-6))  # the plain filter runs ahead ...
    assert not np.allclose(paced.clipped, plain.clipped)  # ... and pacing changes the release


def test_the_day_cap_follows_the_schedule_and_an_old_record_is_unpaced():
    """``pace: β``: the filter's cap on day t is cap·min(1, W_t + β), W_t the plan's cumulative
    day weights — exactly the cap on day n, never above it — and the ledger's charges do not
    change; a plan recorded before pacing existed (no ``pace``) keeps the full cap every day."""
    plain, paced, loose = (
        make_plan(_campaign(adsbpc_plus={"profile_days": 4, "cap": 6, "pace": pace}))
        for pace in (None, 0.0, 0.25)
    )
    days = range(1, plain.days + 1)
    assert [plain.day_cap(t) for t in days] == [plain.filter_cap] * plain.days
    weights = np.cumsum(plain.day_weights)
    for plan, beta in ((paced, 0.0), (loose, 0.25)):
        caps = np.array([plan.day_cap(t) for t in days])
        expected = plan.filter_cap * np.minimum(1.0, weights + beta)
        np.testing.assert_allclose(caps, expected, rtol=1e-12)
        assert caps[-1] == plan.filter_cap and np.all(caps <= plan.filter_cap)
        assert np.all(np.diff(caps) >= 0) and caps[0] < plan.filter_cap
        assert plan.bound_charges(5) == plain.bound_charges(5)
        assert plan.to_json()["pace"] == beta
    record = to_record(paced)
    del record["pace"]  # what a plan registered before pacing holds
    old = from_record(type(paced), json.loads(json.dumps(record)))
    assert old.pace is None and old.day_cap(1) == old.filter_cap
    with pytest.raises(ConfigError, match="pace"):
        _campaign(adsbpc_plus={"pace": -0.1})


def test_a_remainder_share_splits_rho_exactly_and_sizes_its_noise_for_its_charge():
    """``remainder_share``: ρ = ρ1 + n·ρ_h + ρ_p + ρ_R exactly; each day's release is charged
    ρ_R/n for the remainder besides its Gaussian part, and σ_R is the smallest σ with
    E²/(2σ_R²) ≤ ρ_R/n; a plan recorded before the remainder existed reads back without one."""
    campaign = _campaign(adsbpc_plus={"profile_days": 4, "cap": 6, "remainder_share": 0.05})
    plan = make_plan(campaign)
    plain = make_plan(_campaign(adsbpc_plus={"profile_days": 4, "cap": 6, "remainder_share": 0}))
    budget = plan.budget
    assert budget.remainder == Rho.of(0.8) * Fraction(1, 20)
    assert budget.rho1 + budget.histogram_day * 12 + budget.profile + budget.remainder == Rho.of(
        0.8
    )
    assert plan.total == plain.total == Rho.of(0.8)
    assert budget.remainder_day * 12 == budget.remainder
    assert plan.remainder_cap == 2.0 and plan.remainder_sigma is not None
    loss = gaussian_rho(2.0, plan.remainder_sigma)
    assert loss <= budget.remainder_day.value
    assert float(loss) > float(budget.remainder_day.value) * (1 - 1e-12)  # not oversized
    assert plain.remainder_cap is None and plain.budget.remainder == Rho.zero()
    assert plan.to_json()["rho_remainder"] == pytest.approx(0.04)
    record = to_record(plan)
    del record["remainder_cap"], record["remainder_sigma"], record["budget"]["remainder"]
    old = from_record(type(plan), json.loads(json.dumps(record)))
    assert old.remainder_cap is None and old.budget.remainder == Rho.zero()


def test_the_default_releases_a_remainder_only_where_it_counts_on_several_publishers():
    """Unset, ``remainder_share`` is 0.05 for a count campaign on several publishers without a
    breakdown (the default since issue 27) and 0 elsewhere — one listed publisher, the value
    measure — so a campaign the remainder does not apply to is not refused for it."""
    default = make_plan(_campaign())
    assert default.budget.remainder == Rho.of(0.8) * Fraction(repr(DEFAULT_REMAINDER_SHARE))
    assert DEFAULT_REMAINDER_SHARE == 0.05 and default.remainder_cap == 2.0
    assert default.pace == 0.0  # and the filter is paced
    listed = make_plan(_campaign(publishers=["p1", "p2"]))
    assert listed.budget.remainder == default.budget.remainder
    for alone in (
        _campaign(publishers=["p1"]),
        _campaign(measures=["count", "value"], value_cap=10.0),
    ):
        plan = make_plan(alone)
        assert plan.budget.remainder == Rho.zero() and plan.remainder_cap is None
        assert plan.total == Rho.of(0.8)  # ρ1 keeps the share
    written = make_plan(_campaign(publishers=["p1"], adsbpc_plus={"remainder_share": 0.05}))
    assert written.budget.remainder == default.budget.remainder  # as written, it applies
    with pytest.raises(ConfigError, match=r"0\.05 \(the default here\).*set remainder_share: 0"):
        _campaign(adsbpc_plus={"histogram_share": 0.5, "profile_share": 0.46})
    with pytest.raises(ConfigError, match=r"remainder_share 0\.05 must be < 1"):  # as written
        _campaign(
            publishers=["p1"],
            adsbpc_plus={"histogram_share": 0.5, "profile_share": 0.46, "remainder_share": 0.05},
        )
    assert (
        make_plan(
            _campaign(
                adsbpc_plus={"histogram_share": 0.5, "profile_share": 0.46, "remainder_share": 0}
            )
        ).budget.remainder
        == Rho.zero()
    )


def test_a_remainder_is_refused_where_it_would_not_count_conversions():
    with pytest.raises(ConfigError, match="remainder_share"):
        _campaign(
            adsbpc_plus={"remainder_share": 0.05},
            measures=["count", "value"],
            value_cap=10.0,
        )
    with pytest.raises(ConfigError, match="remainder_share is 0 or at least"):
        _campaign(adsbpc_plus={"remainder_share": 1e-4})
    with pytest.raises(ConfigError, match="must be < 1"):
        _campaign(adsbpc_plus={"remainder_share": 0.96})


def test_measure_needs_the_remainder_exactly_when_the_plan_releases_one():
    with_side = make_plan(
        _campaign(adsbpc_plus={"profile_days": 4, "cap": 6, "remainder_share": 0.05})
    )
    plain = make_plan(_campaign(adsbpc_plus={"profile_days": 4, "cap": 6, "remainder_share": 0}))
    for plan, given, message in ((with_side, None, "X_t is missing"), (plain, 2.0, "was given")):
        choice, state = choose_bound(
            plan, PlusState(), np.zeros(7), publishers=3, noise=SeededNoise(1)
        )
        with pytest.raises(ValueError, match=message):
            measure(
                plan,
                choice,
                np.zeros(3),
                allotment=declare(plan, choice, state),
                noise=SeededNoise(2),
                remainder=given,
            )

"""AdsBPC+'s objective rule for the profile scale s (dp_platform/mechanisms/adsbpc_plus_scale.py):
the floor it keeps, what moves it, that it is post-processing that charges nothing more, and that
a plan registered before it keeps the quantile rule."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

from dp_platform.config_loader import parse_campaign
from dp_platform.mechanisms.adsbpc_plus import make_plan
from dp_platform.mechanisms.adsbpc_plus_accounting import release_charges
from dp_platform.mechanisms.adsbpc_plus_bound import (
    PlusState,
    choose_bound,
    estimate_scale,
    profile_scale,
)
from dp_platform.mechanisms.adsbpc_plus_plan import PROFILE_BINS, SCALE_Z, PlusPlan, profile_top
from dp_platform.mechanisms.adsbpc_plus_scale import (
    objective_scale,
    readable_counts,
    scale_interval,
    scale_objective,
)
from dp_platform.privacy.accounting import Rho
from dp_platform.privacy.noise import SeededNoise
from dp_platform.records import from_record, to_record


def _campaign(strategy: str = "diagonal", **settings):
    return parse_campaign(
        {
            "name": "plus",
            "advertiser": "acme",
            "account": "acct",
            "start": "2026-03-01",
            "days": 14,
            "mechanism": "adsbpc_plus",
            "privacy": {"rho": 1.0},
            "adsbpc_plus": {"profile_days": 4, "cap": 10, "strategy": strategy, **settings},
        }
    )


def _profile(bins: dict[int, float]) -> np.ndarray:
    h = np.zeros(PROFILE_BINS)
    for j, count in bins.items():
        h[j] = count
    return h


def _floor(plan: PlusPlan, h: np.ndarray, sigma: float, prior: float = 5.0) -> float:
    """The quantile rule's floor at the prior the tests pass objective_scale (5.0)."""
    lower, upper = scale_interval(
        h, plan.config.quantile, profile_top(plan), sigma=sigma, z=SCALE_Z
    )
    return lower if lower > prior else min(upper, prior)


# 100 000 light users (s ≈ 0.7) and 800 heavy ones (0.8 %, s ≈ 7): the 0.99 quantile is the
# light users', the heavy ones hold the conversions a quantile cut would lose
HEAVY = {20: 100_000.0, 44: 800.0}


def test_a_new_plan_takes_the_objective_rule_and_an_old_record_keeps_the_quantile_rule():
    plan = make_plan(_campaign())
    assert (plan.scale_rule, plan.total_weight) == ("objective", 1.0)
    assert plan.to_json()["scale_rule"] == "objective"
    record = to_record(plan)
    for key in ("scale_rule", "total_weight", "scale_weights"):
        del record[key]  # what a plan registered before the rule existed holds
    old = from_record(PlusPlan, json.loads(json.dumps(record)))
    assert old.scale_rule == "quantile" and old.total_weight == 0.0
    sigma = plan.sigma_profile
    assert sigma is not None
    h = _profile(HEAVY)
    quantile = estimate_scale(h, 0.99, profile_top(plan), sigma=sigma, prior=5.0)
    assert profile_scale(old, h, sigma=sigma, publishers=20) == quantile
    assert profile_scale(plan, h, sigma=sigma, publishers=20) > quantile
    pinned = make_plan(_campaign(scale_rule="quantile"))
    assert profile_scale(pinned, h, sigma=sigma, publishers=20) == quantile


def test_both_rules_draw_and_charge_the_same_so_the_rule_is_post_processing():
    """Seeded alike, the two rules must draw the same noise at the same σ's and charge the
    same ρ every day; fails if the objective rule drew or charged anything of its own."""
    objective = make_plan(_campaign())
    quantile = make_plan(_campaign(scale_rule="quantile"))
    histogram = np.array([0, 20_000, 3_000, 800, 200, 90, 40, 20, 10, 5, 3, 2])
    runs = []
    for plan in (objective, quantile):
        noise, state, days = SeededNoise(11), PlusState(), []
        for day in range(1, plan.days + 1):
            profile = np.bincount([20] * 50 + [40] * 5, minlength=PROFILE_BINS)
            choice, state = choose_bound(
                plan,
                state,
                histogram,
                publishers=20,
                profile=profile if plan.needs_profile(day) else None,
                noise=noise,
            )
            days.append((choice.charges, release_charges(plan, choice)))
        runs.append((days, state.histograms))
    assert runs[0] == runs[1]  # the same draws (noisy histograms) and the same charges
    charges = [part for bound, released in runs[0][0] for part in (bound, released)]
    total = sum((sum(c.values(), Rho.zero()) for c in charges), start=Rho.zero())
    assert total == objective.budget.total  # the remainder's ρ_R/n a day included


@pytest.mark.parametrize("seed", range(40))
def test_s_is_never_below_the_quantile_rules_floor(seed):
    plan = make_plan(_campaign())
    sigma = plan.sigma_profile
    assert sigma is not None
    rng = np.random.default_rng(seed)
    true = np.zeros(PROFILE_BINS)
    centre = rng.integers(5, 40)
    true[centre] = rng.integers(100, 50_000)
    true[rng.integers(centre, PROFILE_BINS, size=4)] += rng.integers(0, 2_000, size=4)
    noisy = true + rng.normal(0.0, sigma, PROFILE_BINS)
    s = objective_scale(plan, noisy, sigma=sigma, publishers=int(rng.integers(1, 300)), prior=5.0)
    assert _floor(plan, noisy, sigma) <= s <= profile_top(plan)


def test_a_readable_heavy_tail_raises_s_and_a_single_mass_keeps_the_floor():
    plan = make_plan(_campaign())
    sigma = plan.sigma_profile
    assert sigma is not None
    heavy = _profile(HEAVY)
    floor = _floor(plan, heavy, sigma)
    assert floor < 1.0
    assert objective_scale(plan, heavy, sigma=sigma, publishers=20, prior=5.0) > 5 * floor
    light = _profile({20: 100_000.0})
    s = objective_scale(plan, light, sigma=sigma, publishers=20, prior=5.0)
    assert s == _floor(plan, light, sigma)


def test_weighing_the_total_raises_s_where_publishers_are_many():
    """Per publisher, the bias of cutting heavy users is spread over k publishers; on the total
    it adds up. Without the total's weight (λ = 0) many publishers let s drop to the quantile;
    with it (λ = 1) s stays above the heavy users."""
    plain = make_plan(_campaign(total_weight=0.0))
    weighted = make_plan(_campaign(total_weight=1.0))
    sigma = plain.sigma_profile
    assert sigma is not None
    heavy = _profile({20: 200_000.0, **{j: 10.0 for j in range(21, 41)}})  # a thin, long tail
    chosen = [
        objective_scale(plan, heavy, sigma=sigma, publishers=k, prior=5.0)
        for plan in (plain, weighted)
        for k in (5, 200)
    ]
    assert chosen[1] < chosen[0]  # λ = 0: more publishers, less bias per publisher
    assert chosen[1] < chosen[3] and chosen[0] <= chosen[2]  # λ = 1 never lowers s


def test_a_thin_tail_that_rules_the_prior_out_is_not_sent_to_the_top():
    """A few thousand users all above the prior: the quantile rule's U is the top of the range
    (nothing readable above), the objective rule stays near the data."""
    plan = make_plan(_campaign(strategy="sqrt"))
    sigma = plan.sigma_profile
    assert sigma is not None
    top = profile_top(plan)
    h = _profile({40: 300.0})
    lower, upper = scale_interval(h, 0.99, top, sigma=sigma, z=SCALE_Z)
    assert lower > plan.config.profile_prior and upper == top
    s = objective_scale(plan, h, sigma=sigma, publishers=5, prior=plan.config.profile_prior)
    assert lower <= s < 0.6 * top


def test_noise_above_the_data_is_not_read_as_users():
    h = _profile({10: 5_000.0, 45: 8.0, 46: -7.0})
    counts = readable_counts(h, sigma=5.0, z=3.3)
    assert counts[10] == 5_000.0 and counts[45:].sum() == 0.0  # 8 users: within the noise
    assert (readable_counts(-h, sigma=5.0, z=3.3) >= 0).all()


def test_a_noise_spike_far_above_the_data_does_not_send_s_to_the_top():
    """About SCALE_ALPHA of noisy profiles have one bin high above the data that passes the
    per-bin level by chance (a real Facebook campaign met it: s = 29.9 of a 32.9 range). The
    bins between the data and the spike must not be read as users."""
    plan = make_plan(_campaign(strategy="sqrt"))
    sigma = plan.sigma_profile
    assert sigma is not None
    rng = np.random.default_rng(6)
    h = _profile({4: 250.0, 5: 40.0}) + rng.normal(0.0, sigma, PROFILE_BINS)
    h[46] = 30.0  # one spike: 30 users-at-or-above over two bins passes z·σ·√2 ≈ 23
    counts = readable_counts(h, sigma, SCALE_Z)
    assert counts[7:].sum() == 0.0
    s = objective_scale(plan, h, sigma=sigma, publishers=1, prior=5.0)
    assert s < 0.5 * profile_top(plan)


def test_the_objective_is_the_planned_variance_when_nobody_is_cut():
    plan = make_plan(_campaign())
    objective = scale_objective(plan)
    weights = np.asarray(plan.scale_weights)
    nobody = np.zeros(PROFILE_BINS)
    assert objective.value(3.0, nobody, 20) == pytest.approx(2.0 * 9.0 * weights @ objective.late)
    below = _profile({5: 1_000.0})  # every user far below s = 3: none is stopped
    assert objective.value(3.0, below, 20) == objective.value(3.0, nobody, 20)
    above = _profile({45: 1_000.0})
    assert objective.value(3.0, above, 20) > objective.value(3.0, nobody, 20)


def test_a_maxvar_plan_weighs_the_worst_query():
    plan = make_plan(
        parse_campaign(
            {
                **json.loads(json.dumps(_campaign().model_dump(mode="json"))),
                "objective": {"kind": "maxvar"},
            }
        )
    )
    assert plan.scale_weights is None
    objective = scale_objective(replace(plan, total_weight=0.0))
    assert objective.value(2.0, np.zeros(PROFILE_BINS), 3) == pytest.approx(
        4.0 * objective.late.max()
    )


def test_a_tail_the_profile_cannot_read_keeps_the_quantile_rules_caution():
    """15 users far above 1 000 are within the noise: the objective alone would read them as
    nobody and cut at the bulk; with q = 0.99 the floor (min(U, s0), U unreadable) keeps s at
    the prior. With the default q = 0.9 the floor is the readable 0.9-quantile, the bulk's
    bin: the 1.5 % above it are cut — the price of a floor a thousand users can read."""
    plan = make_plan(_campaign(quantile=0.99))
    sigma = plan.sigma_profile
    assert sigma is not None
    h = _profile({30: 1_000.0, 46: 15.0})
    assert readable_counts(h, sigma, SCALE_Z)[46] == 0.0
    s = objective_scale(plan, h, sigma=sigma, publishers=20, prior=5.0)
    assert s == _floor(plan, h, sigma) == 5.0
    default = make_plan(_campaign())
    assert default.config.quantile == 0.9
    low = objective_scale(default, h, sigma=sigma, publishers=20, prior=5.0)
    assert low == _floor(default, h, sigma) < 5.0

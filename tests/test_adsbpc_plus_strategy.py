"""AdsBPC+ noise strategies: the algebra, the plan's choice, charges, the draw and decoding, and
plans registered before strategies existed (docs/privacy.md, "AdsBPC+: the individual filter")."""

from __future__ import annotations

import dataclasses
import json
from fractions import Fraction

import numpy as np
import pytest

from dp_platform.config_loader import parse_campaign
from dp_platform.events.paper import paper_dataset
from dp_platform.mechanisms.adsbpc_plus import make_plan
from dp_platform.mechanisms.adsbpc_plus_accounting import declare, measure, release_charges
from dp_platform.mechanisms.adsbpc_plus_bound import PlusChoice, PlusState, choose_bound
from dp_platform.mechanisms.adsbpc_plus_plan import (
    PROFILE_BINS,
    PlusPlan,
    profile_cross,
    profile_top,
)
from dp_platform.mechanisms.adsbpc_plus_strategies import best_band
from dp_platform.mechanisms.base import Measurement
from dp_platform.privacy.accounting import Rho, gaussian_rho
from dp_platform.privacy.noise import SeededNoise
from dp_platform.privacy.strategy import (
    banded_sqrt_matrix,
    bandwidth,
    column_weights,
    cost_gram,
    cross_weight,
    decode_day,
    decoded_std,
    planned_error,
    sqrt_matrix,
    validate,
    worst_row_norm,
)
from dp_platform.records import from_record, to_record
from dp_research.evaluation.plus_data import prepare_plus, run_plus


def _campaign(
    strategy: str = "auto",
    workload: dict | None = None,
    objective: dict | None = None,
    **settings: object,
):
    data = {
        "name": "rows",
        "advertiser": "acme",
        "account": "acct",
        "start": "2026-03-01",
        "days": 12,
        "mechanism": "adsbpc_plus",
        "privacy": {"rho": 0.8},
        "adsbpc_plus": {"profile_days": 4, "cap": 6, "strategy": strategy, **settings},
    }
    if workload:
        data["workload"] = workload
    if objective:
        data["objective"] = objective
    return parse_campaign(data)


# -- privacy/strategy.py ----------------------------------------------------------------------


def test_the_square_root_strategy_squares_to_prefix_sums_and_is_a_valid_strategy():
    c = sqrt_matrix(9)
    np.testing.assert_allclose(c @ c, np.tril(np.ones((9, 9))), atol=1e-12)
    assert validate(c) is not None and np.all(c >= 0)
    for bad in (np.triu(np.ones((3, 3))), -np.eye(3), np.zeros((3, 3)), np.ones((2, 3))):
        with pytest.raises(ValueError):
            validate(bad)


def test_weights_cross_weight_and_worst_row():
    c, sigma = sqrt_matrix(6), np.full(6, 2.0)
    gram = cost_gram(c, sigma)
    np.testing.assert_allclose(gram, c.T @ c / 8.0)
    assert column_weights(c, sigma).sum() == pytest.approx(1.0)
    assert cross_weight(np.eye(6), sigma) == 0.0
    assert cross_weight(c, sigma) == pytest.approx((gram.sum() - np.trace(gram)) / np.trace(gram))
    bounds = np.array([1.0, 2.0, 3.0])
    assert worst_row_norm(c, bounds, 3) == pytest.approx(c[2, :3] @ bounds)
    with pytest.raises(ValueError):
        worst_row_norm(c, bounds, 2)


def test_decoding_inverts_the_rows_and_its_standard_error_is_exact():
    rng = np.random.default_rng(0)
    c = sqrt_matrix(5)
    x = rng.normal(size=(5, 3))
    y = c @ x
    decoded: list[np.ndarray] = []
    for t in range(5):
        decoded.append(decode_day(c, y[t], decoded))
    np.testing.assert_allclose(decoded, x, atol=1e-12)
    sigmas = np.array([1.0, 2.0, 0.5, 1.5, 1.0])
    ell = np.array([1.0, 1.0, 1.0, 0.0, 2.0])
    inverse = np.linalg.inv(c)
    covariance = inverse @ np.diag(sigmas**2) @ inverse.T
    assert decoded_std(c, sigmas, ell) == pytest.approx(np.sqrt(ell @ covariance @ ell))
    draws = rng.normal(size=(200_000, 5)) * sigmas  # the rows' noise, decoded
    assert np.std((draws @ inverse.T) @ ell) == pytest.approx(decoded_std(c, sigmas, ell), rel=0.01)


# -- the plan -----------------------------------------------------------------------------------


def test_the_banded_strategy_keeps_the_square_roots_first_lags():
    c = banded_sqrt_matrix(9, 3)
    assert validate(c) is not None and bandwidth(c) == 3
    np.testing.assert_array_equal(
        c[np.abs(np.subtract.outer(range(9), range(9))) < 3],
        sqrt_matrix(9)[np.abs(np.subtract.outer(range(9), range(9))) < 3],
    )
    np.testing.assert_array_equal(np.triu(c, 1), 0.0)
    assert c[5, 2] == 0.0 and c[5, 3] > 0.0
    np.testing.assert_array_equal(banded_sqrt_matrix(9, 9), sqrt_matrix(9))
    np.testing.assert_array_equal(banded_sqrt_matrix(9, 1), np.eye(9))
    for band in (0, 10):
        with pytest.raises(ValueError):
            banded_sqrt_matrix(9, band)


def test_auto_takes_the_strategy_with_the_lowest_planned_error():
    assert make_plan(_campaign()).strategy_kind == "sqrt"  # prefix sums, wsum
    sliding = _campaign(workload={"kind": "sliding", "window": 4}, objective={"kind": "maxvar"})
    plan = make_plan(sliding)
    assert plan.strategy_kind == "banded" and bandwidth(plan.matrix) == best_band(sliding, plan)
    assert plan.to_json()["band"] == 4  # the window's length: its rows carry the window
    # its planned worst window beats sqrt's and the diagonal's, each at its own normalisation
    planned = {
        kind: planned_error(p.queries, p.matrix, np.asarray(p.sigma_bar), objective="maxvar")
        for kind, p in (
            ("banded", plan),
            (
                "sqrt",
                make_plan(_campaign("sqrt", sliding.workload.model_dump(), {"kind": "maxvar"})),
            ),
            (
                "diagonal",
                make_plan(_campaign("diagonal", sliding.workload.model_dump(), {"kind": "maxvar"})),
            ),
        )
    }
    assert planned["banded"] < min(planned["sqrt"], planned["diagonal"])
    forced = make_plan(_campaign("banded", band=2))
    assert forced.strategy_kind == "banded" and bandwidth(forced.matrix) == 2
    with pytest.raises(ValueError, match="band"):
        _campaign("sqrt", band=2)
    with pytest.raises(ValueError, match="band"):
        _campaign("banded", band=13)
    daily = _campaign(workload={"kind": "daily"})
    assert make_plan(daily).strategy_kind == "diagonal"  # independent days are optimal there
    budget = _campaign(objective={"kind": "min_budget", "max_variance": 50.0})
    assert make_plan(budget).strategy_kind == "diagonal"
    assert make_plan(_campaign("diagonal")).strategy is None
    forced = make_plan(_campaign("sqrt", workload={"kind": "daily"}))
    assert forced.strategy_kind == "sqrt" and forced.correlated


def test_the_sqrt_plan_is_normalised_to_rho1_and_describes_itself():
    plan = make_plan(_campaign("sqrt"))
    rho1 = plan.budget.rho1.value
    assert sum(plan.allotments, Fraction(0)) == rho1
    rows = (plan.matrix**2).sum(axis=1)
    assert (
        sum(gaussian_rho(float(np.sqrt(r)), s) for r, s in zip(rows, plan.sigma_bar, strict=True))
        <= rho1
    )
    assert sum(plan.day_weights) == pytest.approx(1.0)
    assert plan.cross_weight == pytest.approx(cross_weight(plan.matrix, np.asarray(plan.sigma_bar)))
    assert profile_top(plan) == pytest.approx(6 * np.sqrt(1 + plan.cross_weight))
    assert profile_cross(plan) == pytest.approx(plan.cross_weight / 12)
    summary = plan.to_json()
    assert summary["strategy"] == "sqrt" and json.dumps(summary)
    assert make_plan(_campaign("diagonal")).to_json()["strategy"] == "diagonal"


def test_a_plan_registered_before_strategies_reads_back_as_the_diagonal_one():
    new = make_plan(_campaign("diagonal"))
    record = to_record(new)
    for key in ("strategy_kind", "strategy", "cross_weight"):
        del record[key]
    del record["config"]["strategy"]
    old = from_record(PlusPlan, json.loads(json.dumps(record)))
    assert old.strategy is None and not old.correlated and old.cross_weight == 0.0
    assert old.config.strategy == "auto"  # the settings' new default: never read after planning
    assert to_record(old) == {**to_record(new), "config": to_record(old)["config"]}
    data = prepare_plus(paper_dataset("zipf", users=2000, publishers=5, days=12, seed=4))
    a, b = run_plus(old, data, SeededNoise(9)), run_plus(new, data, SeededNoise(9))
    np.testing.assert_array_equal(a.released, b.released)
    np.testing.assert_array_equal(a.spend, b.spend)
    sqrt = run_plus(make_plan(_campaign("sqrt")), data, SeededNoise(9))
    assert not np.array_equal(sqrt.released, a.released)  # the new default does differ


def test_a_sliding_campaign_registered_with_sqrt_keeps_it_and_a_new_one_is_banded():
    """The plan record holds C itself: a campaign whose plan auto chose as sqrt before banded
    strategies existed reads back as sqrt, though the same config plans banded now."""
    sliding = _campaign(workload={"kind": "sliding", "window": 4}, objective={"kind": "maxvar"})
    fresh = make_plan(sliding)
    assert fresh.strategy_kind == "banded"
    registered = make_plan(
        _campaign("sqrt", workload={"kind": "sliding", "window": 4}, objective={"kind": "maxvar"})
    )
    record = to_record(registered)
    record["config"]["strategy"] = "auto"  # what the catalogue said then
    back = from_record(PlusPlan, json.loads(json.dumps(record)))
    assert back.strategy_kind == "sqrt"
    np.testing.assert_array_equal(back.matrix, sqrt_matrix(12))
    assert not np.array_equal(back.matrix, fresh.matrix)


def test_sqrt_plans_choices_and_states_round_trip_through_records():
    plan = make_plan(_campaign("sqrt"))
    assert to_record(from_record(PlusPlan, json.loads(json.dumps(to_record(plan))))) == to_record(
        plan
    )
    data = prepare_plus(paper_dataset("zipf", users=2000, publishers=5, days=12, seed=2))
    state, noise = PlusState(), SeededNoise(1)
    for day in range(3):
        choice, state = choose_bound(
            plan, state, data.histograms[day], publishers=5, profile=None, noise=noise
        )
    for kind, value in ((PlusChoice, choice), (PlusState, state)):
        back = from_record(kind, json.loads(json.dumps(to_record(value))))
        assert to_record(back) == to_record(value)
    assert len(state.sigmas) == 3 and choice.row_bound is not None


# -- charges, the draw, decoding ----------------------------------------------------------------


@pytest.mark.parametrize("settings", [{"strategy": "sqrt"}, {"strategy": "banded", "band": 3}])
def test_a_correlated_campaign_charges_exactly_rho_and_never_less_than_the_worst_case(settings):
    plan = make_plan(_campaign(**settings))
    data = prepare_plus(paper_dataset("zipf", users=3000, publishers=5, days=12, seed=0))
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
        row = worst_row_norm(plan.matrix, np.asarray(state.bounds), day + 1)
        assert choice.row_bound == pytest.approx(row)
        worst = min(plan.budget.rho1.value, worst + gaussian_rho(row, choice.sigma))
        assert state.gaussian_charged >= worst  # what any single user may have lost so far
    assert spent == plan.budget.total


class _Recording(SeededNoise):
    """Seeded noise that records each Gaussian draw's declared ℓ2 sensitivity and allotment."""

    def __init__(self, seed: int) -> None:
        super().__init__(seed)
        self.declared: list[tuple[float, float, object]] = []

    def add_gaussian(self, values, scale, *, l2_sensitivity, rho):
        self.declared.append((scale, l2_sensitivity, rho))
        return super().add_gaussian(values, scale, l2_sensitivity=l2_sensitivity, rho=rho)


def test_measure_declares_the_row_sensitivity_and_publishes_the_decoded_day():
    plan = make_plan(_campaign("sqrt", remainder_share=0))  # the row's draw alone
    data = prepare_plus(paper_dataset("zipf", users=2000, publishers=5, days=12, seed=5))
    state, earlier = PlusState(), []
    rows = np.random.default_rng(3).uniform(0, 50, size=(3, 5))
    noise = _Recording(8)
    for day in range(3):
        choice, state = choose_bound(
            plan, state, data.histograms[day], publishers=5, profile=None, noise=noise
        )
        declared = declare(plan, choice, state)
        release = measure(
            plan, choice, rows[day], allotment=declared, noise=noise, earlier=tuple(earlier)
        )
        scale, sensitivity, allotment = noise.declared[-1]
        assert scale == choice.sigma
        assert sensitivity == pytest.approx(choice.row_bound, rel=1e-15)  # Σ_j C_tj r_j, not r_t
        assert sensitivity >= choice.row_bound
        assert choice.row_bound > choice.bound or day == 0
        assert float(allotment) == pytest.approx(
            float(gaussian_rho(choice.row_bound, choice.sigma)), rel=1e-14
        )
        assert release.row_sigma == choice.sigma and release.sigma == choice.release_sigma
        earlier.append(release)
    inverse = np.linalg.inv(plan.matrix[:3, :3])
    sigmas = np.array(state.sigmas)
    assert earlier[2].sigma == pytest.approx(np.sqrt((inverse[2] ** 2) @ sigmas**2))
    refused = _Recording(9)
    with pytest.raises(ValueError, match="decodes from"):
        measure(
            plan, choice, rows[2], allotment=declared, noise=refused, earlier=tuple(earlier[:1])
        )
    unsized = dataclasses.replace(choice, release_sigma=None)
    with pytest.raises(ValueError, match="needs its release σ"):
        measure(
            plan, unsized, rows[2], allotment=declared, noise=refused, earlier=tuple(earlier[:2])
        )
    assert refused.declared == []  # both refused before any noise was drawn


def test_after_the_profile_sigma_is_sigma_bar_times_s_and_spends_stay_within_rho1():
    plan = make_plan(_campaign("sqrt"))
    data = prepare_plus(paper_dataset("zipf", users=3000, publishers=5, days=12, seed=1))
    run = run_plus(plan, data, SeededNoise(1))
    bar = np.asarray(plan.sigma_bar)
    early = np.minimum(0.5 * run.bounds[:4], plan.early_cap)  # ε0·Λ = 0.3·6
    np.testing.assert_allclose(run.sigmas[:4], bar[:4] * early, rtol=1e-15)
    np.testing.assert_allclose(run.sigmas[4:], bar[4:] * run.scale_estimate, rtol=1e-15)
    assert run.spend.max() <= float(plan.budget.rho1)
    # the released days decode the rows: C·released = the rows' noisy values
    assert run.rows is not None and run.clipped.shape == run.released.shape


def test_the_measurement_record_keeps_the_row_sigma_and_old_records_read_without_it():
    release = Measurement(2, 3.0, 1.5, (1.0, 2.0), {"gaussian": Rho(Fraction(1, 10))}, 1.2)
    back = from_record(Measurement, json.loads(json.dumps(to_record(release))))
    assert back == release
    old = to_record(release)
    del old["row_sigma"]
    assert from_record(Measurement, old).row_sigma is None


def test_the_plan_command_shows_the_strategy():
    from dp_platform.mechanisms.adsbpc_plus import MECHANISM

    shown = "\n".join(MECHANISM.describe(make_plan(_campaign())))
    assert "noise strategy sqrt" in shown and "decoded day" in shown
    assert "noise strategy diagonal" in "\n".join(
        MECHANISM.describe(make_plan(_campaign("diagonal")))
    )
    assert MECHANISM.summary(make_plan(_campaign()))["strategy"] == "sqrt"
    sliding = _campaign(workload={"kind": "sliding", "window": 4}, objective={"kind": "maxvar"})
    shown = "\n".join(MECHANISM.describe(make_plan(sliding)))
    assert "noise strategy banded (4 lags)" in shown
    assert "days 1..4: noise σ̄_i·min(ψ0·r_i, 1.8)" in shown  # ε0·Λ = 0.3·6

"""The all-publisher campaign total: its expected error is P·Var + (Σ bias)², the realised one
agrees with it, and scoring it changes none of the per-publisher numbers."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from dp_platform.events.paper import paper_dataset
from dp_platform.mechanisms.adsbpc import make_plan
from dp_platform.privacy.noise import SeededNoise
from dp_research.baselines import UMM, prefix, prefix_weights, sliding
from dp_research.evaluation.adsbpc_runs import campaign_for, given_bounds_run
from dp_research.evaluation.datasets import dataset_spec
from dp_research.evaluation.experiment import ExperimentConfig, prepare_dataset, run_experiment
from dp_research.evaluation.methods import (
    Context,
    Outcome,
    daily_outcome,
    linear_outcome,
    run_method,
)
from dp_research.evaluation.metrics import workload_error
from dp_research.evaluation.prepared import prepare
from dp_research.evaluation.scoring import score
from dp_research.evaluation.total_layer import gated_errors, layered_total, observed_run
from dp_research.evaluation.total_split import row_configs

DAYS = 10


@pytest.fixture(scope="module")
def data():
    conversions = paper_dataset("zipf", users=400, publishers=3, days=DAYS, seed=2)
    return prepare(conversions, dataset_spec("zipf").global_bound)


def context(data, workload, rho: float = 1.0) -> Context:
    campaign = campaign_for(workload, rho=rho, cap=10)
    return Context(data, dataset_spec("zipf"), workload, rho, campaign, make_plan(campaign), 0.99)


def test_total_expected_is_the_double_sum_over_publisher_pairs(data) -> None:
    """E[(Σ_p e_p)²] = Σ_p Σ_p' E[e_p e_p'] with the publishers' noise independent (covariance
    Var on the diagonal only): written out pair by pair, against P·Var + (Σ bias)²."""
    ctx = context(data, prefix(DAYS))
    r = np.full(DAYS, 2.5)  # clips: the bias is not zero
    run = given_bounds_run(ctx.campaign, data, r, 0.05, SeededNoise(1))
    outcome = daily_outcome(run, ctx)
    q = ctx.queries
    bias = data.per_day_clipped(r) @ q.T - ctx.truth_answers
    variances = (q**2) @ run.sigmas**2
    publishers = data.n_publishers
    brute = np.zeros(q.shape[0])
    for p in range(publishers):
        for other in range(publishers):
            covariance = variances if p == other else 0.0
            brute += covariance + bias[p] * bias[other]
    assert np.abs(bias).sum() > 0
    np.testing.assert_allclose(outcome.total_expected, brute, rtol=1e-12)
    umm = linear_outcome(UMM(12.0, 0.05).plan(ctx.workload), data.global_clipped(12.0), ctx, None)
    umm_bias = data.global_clipped(12.0) @ q.T - ctx.truth_answers
    np.testing.assert_allclose(
        umm.total_expected,
        publishers * umm.variances + umm_bias.sum(axis=0) ** 2,
        rtol=1e-12,
    )


def test_every_method_reports_the_total(data) -> None:
    ctx = context(data, sliding(DAYS, 4))
    for name in ("adsbpc", "ipa", "bin", "stream", "umm", "mmbpc", "oracle"):
        outcome = run_method(name, ctx, 0, lambda m: SeededNoise(len(m)))
        assert outcome.total_expected is not None and outcome.total_expected.shape == (
            ctx.queries.shape[0],
        ), name
        s = score([outcome], ctx.truth_answers, ctx.workload)
        assert s.total_error == workload_error(outcome.total_expected, ctx.workload)
        assert s.total_error is not None and s.total_error > 0


def test_scoring_the_total_leaves_the_per_publisher_numbers_unchanged(data) -> None:
    """The same outcomes scored with and without their totals: every other field is equal."""
    for workload in (prefix(DAYS), sliding(DAYS, 4)):
        ctx = context(data, workload)
        for name in ("adsbpc", "umm", "stream"):
            outcomes = [
                run_method(name, ctx, k, lambda m, k=k: SeededNoise(k + len(m))) for k in range(3)
            ]
            with_total = score(outcomes, ctx.truth_answers, workload)
            without = score(
                [replace(o, total_expected=None) for o in outcomes], ctx.truth_answers, workload
            )
            assert without.total_error is None and with_total.total_error is not None
            assert replace(with_total, total_error=None, total_error_empirical=None) == without
            assert with_total.error == pytest.approx(
                workload_error(np.mean([o.expected for o in outcomes], axis=0), workload),
                rel=1e-12,
            )


@pytest.mark.slow
def test_realised_total_squared_errors_match_the_formula_where_it_clips(data) -> None:
    """2000 seeded repeats of a given-bounds release at r = 2.5 (it clips, ρ = 0.05 so the
    squared bias of the total and its variance are of the same order): the realised mean of
    (Σ_p answer − Σ_p truth)² per query is P·Var + (Σ bias)² within 10 % (sd ≈ 3 %)."""
    ctx = context(data, prefix(DAYS))
    r = np.full(DAYS, 2.5)
    outcomes = [
        daily_outcome(given_bounds_run(ctx.campaign, data, r, 0.05, SeededNoise(seed)), ctx)
        for seed in range(2000)
    ]
    truth = ctx.truth_answers.sum(axis=0)
    realised = np.mean([(o.total_series - truth) ** 2 for o in outcomes], axis=0)
    expected = outcomes[0].total_expected
    bias = (data.per_day_clipped(r) @ ctx.queries.T - ctx.truth_answers).sum(axis=0)
    assert np.all(bias**2 > 0.2 * expected)  # the bias part is tested, not just the noise
    np.testing.assert_allclose(realised, expected, rtol=0.10)


@pytest.mark.slow
@pytest.mark.parametrize("workload", ["prefix", "sliding"])
def test_realised_total_error_agrees_with_the_expected_one(workload: str) -> None:
    """Seeded repeats on small data, AdsBPC+ and the methods whose choices are private among
    them: the realised total error is the expected one within its sampling error (prefix, 400
    repeats: the last query carries 49 of the 58 weights, so the WRMSE's relative sd is about
    √(1/(2R)) ≈ 3.5 %). Sliding: the realised figure is the maximum over windows of means of
    R draws, which sits above its expectation by about the largest of the windows' sampling
    errors; under AdsBPC+'s banded strategy most windows are near the worst, so R = 1 600
    (measured on AdsBPC+: realised ÷ expected 1.18 at 400 repeats, 1.08 at 1 600)."""
    config = ExperimentConfig(
        "zipf",
        workload=workload,
        rho=0.05,
        users=600,
        publishers=4,
        days=DAYS,
        repeats=400 if workload == "prefix" else 1600,
        methods=("adsbpc", "umm", "oracle", "adsbpc_plus"),
        seed=5,
    )
    result = run_experiment(config, show_progress=False)
    for name, method in result.methods.items():
        s = method.score
        assert s.total_error_empirical == pytest.approx(s.total_error, rel=0.12), name
        document = method.to_json()
        assert document["total_error"] == s.total_error
        assert document["total_error_empirical"] == s.total_error_empirical


def test_total_metric_uses_the_gamma_weights_on_one_series() -> None:
    workload = prefix(3)
    total = np.array([1.0, 4.0, 9.0])
    w = prefix_weights(3)
    assert workload_error(total, workload) == pytest.approx(np.sqrt(total @ w / w.sum()))
    assert workload_error(total, sliding(3, 1)) == 9.0


def test_a_layer_with_a_vanishing_cap_leaves_the_reduced_runs_own_total():
    """total_layer.py: as E → 0 the remainder X and its noise vanish, so the layered total's
    error is AdsBPC+'s own total error at (1 − share)·ρ, as the experiment scores it."""
    config = replace(next(row_configs([1_000], ["zipf"])), repeats=1)
    data, _ = prepare_dataset(config)
    reduced = replace(
        config,
        rho=config.rho * 0.9,
        methods=("adsbpc_plus",),
        plus_settings=(("remainder_share", 0.0),),  # the layer is the only remainder
    )
    own, run, _ = observed_run(reduced, data, 8.0)
    assert run.excess is not None and run.excess.sum() > 0  # the filter keeps something off
    total = layered_total(config, 0.1, ["1e-9", "8", "2s"], [None, 1.0])
    layered = total.layered
    vanishing = layered["1e-9", None]
    assert vanishing == pytest.approx(own.methods["adsbpc_plus"].score.total_error, rel=1e-6)
    assert layered["8", None] != pytest.approx(vanishing, rel=1e-3)
    assert total.scale is not None and total.scale > 0
    # E = 2·s is the grid's first cap at or above 2·s, so the row has a column of its own
    assert layered["2s", None] > 0 and layered["2s", 1.0] > 0


def test_a_gate_adds_the_remainder_only_where_it_stands_out():
    """total_layer.gated_errors: with negligible noise the gate passes every positive answer
    (the plain sum's bias + q·X); with a gate no draw clears, nothing is added (bias alone)."""
    queries = prefix(4).matrix
    remainder = np.array([3.0, 0.0, 5.0, 1.0])
    bias = -np.array([2.0, 2.0, 9.0, 10.0])
    exact = gated_errors(bias, remainder, 1e-12, queries, 1.0, seed=0)
    assert exact == pytest.approx((bias + queries @ remainder) ** 2)
    closed = gated_errors(bias, remainder, 2.0, queries, 1e9, seed=0)
    assert closed == pytest.approx(bias**2)
    plain = gated_errors(bias, remainder, 2.0, queries, -1e9, seed=0)  # everything added
    expected = (bias + queries @ remainder) ** 2 + 4.0 * (queries**2).sum(axis=1)
    assert plain == pytest.approx(expected, rel=0.25)


def test_the_score_names_the_worst_sliding_window():
    """Score.worst_window: the 1-based window with the largest mean squared error (the one the
    sliding metric reports); prefix sums have none."""
    window = sliding(6, 2)  # 5 windows
    truth = np.zeros((2, 5))
    expected = np.array([[1.0, 4.0, 9.0, 2.0, 1.0], [1.0, 2.0, 7.0, 8.0, 1.0]])
    outcome = Outcome(truth, expected, variances=np.ones(5), total_expected=np.ones(5))
    scored = score([outcome], truth, window)
    assert scored.worst_window == 3 and scored.error == 8.0
    days = prefix(5)
    assert score([outcome], truth, days).worst_window is None


def test_the_total_with_a_remainder_adds_its_shrunk_answer():
    """methods.remainder_total_errors: a remainder that measures the bias exactly (negligible
    noise) cancels it; one buried in noise is shrunk, so the total errs by far less than its
    noise (what adding it in full would cost) and by more than the bias it cannot see."""
    from dp_research.evaluation.methods import remainder_total_errors

    queries = np.tril(np.ones((10, 10)))
    remainder = np.array([3.0, 0.0, 5.0, 2.0, 1.0, 0.0, 4.0, 2.0, 2.0, 6.0])
    bias = -(queries @ remainder)
    exact = remainder_total_errors(bias, remainder, 1e-9, queries)
    np.testing.assert_allclose(exact, 0.0, atol=1e-12)
    buried = remainder_total_errors(bias, remainder, 1e4, queries)
    noise = 1e8 * (queries**2).sum(axis=1)  # sd² of each remainder answer: adding it in full
    assert buried[-1] < 0.5 * noise[-1] and np.all(buried > bias**2)

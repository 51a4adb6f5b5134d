"""Methods in the runner: the same draws as the production code, honest expected errors, budgets."""

from __future__ import annotations

import numpy as np
import pytest

from dp_platform.events.paper import paper_dataset
from dp_platform.mechanisms.adsbpc import make_plan, run_stream
from dp_platform.privacy.noise import SeededNoise
from dp_research.baselines import UMM, Stream, cached_plan, prefix, prefix_weights, sliding
from dp_research.baselines.contributions import clip_global
from dp_research.evaluation.adsbpc_runs import (
    campaign_for,
    given_bounds_run,
    quantile_every_day,
    run_adsbpc,
)
from dp_research.evaluation.datasets import dataset_spec, to_conversions
from dp_research.evaluation.methods import (
    METHODS,
    Context,
    daily_outcome,
    linear_outcome,
    rho_charged,
    run_method,
)
from dp_research.evaluation.prepared import prepare

DAYS = 10


@pytest.fixture(scope="module")
def conversions():
    return paper_dataset("zipf", users=400, publishers=3, days=DAYS, seed=2)


@pytest.fixture(scope="module")
def data(conversions):
    return prepare(conversions, dataset_spec("zipf").global_bound)


def context(data, workload, rho: float = 1.0) -> Context:
    campaign = campaign_for(workload, rho=rho, cap=10)
    return Context(data, dataset_spec("zipf"), workload, rho, campaign, make_plan(campaign), 0.99)


def test_adsbpc_run_is_the_production_stream_draw_for_draw(conversions, data) -> None:
    """Same seed ⇒ the same bounds, σ's and released values as adsbpc.run_stream."""
    for workload in (prefix(DAYS), sliding(DAYS, 7)):
        plan = make_plan(campaign_for(workload, rho=0.5, cap=10))
        days = [
            (conversions.day_histogram(d), lambda r, d=d: conversions.clipped_vector(d, r))
            for d in range(DAYS)
        ]
        releases, _ = run_stream(plan, days, noise=SeededNoise(17))
        run = run_adsbpc(plan, data, SeededNoise(17))
        np.testing.assert_array_equal(run.bounds, [r.bound for r in releases])
        np.testing.assert_array_equal(run.sigmas, [r.sigma for r in releases])
        # same draws; the clipped sums may differ in the last ulp (cumulative vs weighted sum)
        released = np.array([r.values for r in releases]).T
        np.testing.assert_allclose(run.released, released, rtol=1e-12, atol=1e-12)
        assert run.methods[-1].startswith("svt_") and run.methods[0] == "quantile"


def test_stream_in_the_runner_is_stream_release(conversions, data) -> None:
    """Pre-clipped rungs give exactly StreamPlan.release's answers (same draws, same order)."""
    workload = prefix(DAYS)
    ctx = context(data, workload)
    outcome = run_method("stream", ctx, 0, lambda _: SeededNoise(23))
    plan = cached_plan(Stream(50.0, 1.0), workload)
    expected = plan.release(to_conversions(conversions), 3, SeededNoise(23))
    np.testing.assert_allclose(outcome.answers, expected.answers, atol=1e-9)


def test_given_bounds_spend_exactly_the_measurement_budget(data) -> None:
    workload = prefix(DAYS)
    campaign = campaign_for(workload, rho=1.0, cap=10)
    r = np.linspace(1.0, 4.0, DAYS)
    run = given_bounds_run(campaign, data, r, 0.8, SeededNoise(3))
    assert 0.5 * np.sum(r**2 / run.sigmas**2) == pytest.approx(0.8, rel=1e-9)
    # the per-day shape σ_i / r_i is AdsBPC's planned σ̄ (up to the plan's exact rounding)
    plan = make_plan(campaign_for(workload, rho=0.8 / 0.7, cap=10))
    np.testing.assert_allclose(run.sigmas / r, plan.sigma_bar, rtol=1e-9)


def _realised_and_expected(make, repeats: int, truth: np.ndarray):
    seeds = np.random.default_rng(0).integers(0, 2**31, repeats)
    outcomes = [make(int(s)) for s in seeds]
    realised = np.mean([(o.answers - truth) ** 2 for o in outcomes], axis=0)
    return realised, outcomes[0].expected


@pytest.mark.slow
@pytest.mark.parametrize("workload", [prefix(DAYS), sliding(DAYS, 4)], ids=["prefix", "sliding"])
@pytest.mark.parametrize("method", ["umm", "given_bounds"])
def test_expected_errors_match_monte_carlo(data, workload, method: str) -> None:
    """Realised squared errors averaged over R repeats ≈ Var + bias² (R = 3000: ±2.6% sd).

    Tolerances as in docs/baselines.md#oracle-monte-carlo: 10% per (publisher, query) cell, 5%
    weighted sum. Both clip (GS = 12; r = 2.5, fractional) at a small ρ = 0.05, so the squared
    bias and the variance are of the same order and both are checked.
    """
    ctx = context(data, workload)
    if method == "umm":
        plan = UMM(12.0, 0.05).plan(workload)
        clipped = data.global_clipped(12.0)

        def make(seed: int):
            return linear_outcome(plan, clipped, ctx, SeededNoise(seed))
    else:
        r = np.full(DAYS, 2.5)

        def make(seed: int):
            run = given_bounds_run(ctx.campaign, data, r, 0.05, SeededNoise(seed))
            return daily_outcome(run, ctx)

    realised, expected = _realised_and_expected(make, 3000, ctx.truth_answers)
    np.testing.assert_allclose(realised, expected, rtol=0.10)
    w = prefix_weights(DAYS) if workload.kind == "prefix" else np.ones(expected.shape[1])
    assert (realised @ w).sum() == pytest.approx((expected @ w).sum(), rel=0.05)


def test_mmbpc_uses_adsbpcs_bounds_and_its_measurement_budget(data) -> None:
    ctx = context(data, prefix(DAYS))

    def noise(method: str) -> SeededNoise:
        return SeededNoise({"adsbpc": 1, "mmbpc": 2}[method])

    mm = run_method("mmbpc", ctx, 0, noise)
    ads = run_method("adsbpc", ctx, 0, noise)
    np.testing.assert_array_equal(mm.bounds, ads.bounds)
    assert rho_charged("mmbpc", ctx) == pytest.approx(1.0, rel=1e-12)


@pytest.mark.parametrize("workload", [prefix(DAYS), sliding(DAYS, 7)], ids=["prefix", "sliding"])
def test_every_method_charges_at_most_rho(data, workload) -> None:
    ctx = context(data, workload, rho=0.6)
    for name in METHODS:
        assert rho_charged(name, ctx) <= 0.6 + 1e-9, name
    assert rho_charged("adsbpc", ctx) == 0.6
    assert rho_charged("ipa", ctx) == pytest.approx(0.6)


def test_ipa_expected_error_is_variance_plus_clipping_bias(conversions, data) -> None:
    """Var_t = t·GS²/(2ρ) (docs/baselines.md#ipa) plus the squared bias of the first-GS clipping."""
    workload = prefix(DAYS)
    ctx = context(data, workload)
    outcome = run_method("ipa", ctx, 0, lambda _: SeededNoise(4))
    rows = to_conversions(conversions)
    clipped = rows.to_matrix(clip_global(rows, 50.0), 3, DAYS)
    bias = (clipped - data.truth) @ workload.matrix.T
    variance = np.arange(1, DAYS + 1) * 50.0**2 / 2.0
    np.testing.assert_allclose(outcome.expected, variance[None, :] + bias**2, rtol=1e-12)


def test_quantile_only_rule_runs_a_quantile_every_day(data) -> None:
    workload = prefix(DAYS)
    plan = make_plan(campaign_for(workload, rho=2.0, cap=10))
    run = run_adsbpc(plan, data, SeededNoise(8), quantile_every_day(0.6 / DAYS))
    assert run.methods == ("quantile",) * DAYS
    assert np.all((run.bounds >= 0) & (run.bounds <= 10))

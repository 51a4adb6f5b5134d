"""The generic-library baseline: a fixed per-day bound, ρ/n a day, the bound tuned in hindsight
(not private) on the true data by the tables' own metric."""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction

import numpy as np
import pytest

from dp_platform.events.paper import paper_dataset
from dp_platform.mechanisms.adsbpc import make_plan
from dp_platform.privacy.accounting import gaussian_rho
from dp_platform.privacy.noise import SeededNoise
from dp_research.baselines import prefix, sliding
from dp_research.evaluation.adsbpc_runs import campaign_for
from dp_research.evaluation.datasets import dataset_spec
from dp_research.evaluation.experiment import ExperimentConfig, run_experiment
from dp_research.evaluation.fixed_bound import (
    bound_grid,
    daily_sigma,
    fixed_run,
    zcdp_charged,
)
from dp_research.evaluation.methods import (
    LABELS,
    Context,
    daily_outcome,
    rho_charged,
    run_method,
)
from dp_research.evaluation.metrics import workload_error
from dp_research.evaluation.prepared import prepare

DAYS = 10
FIXED = ("adsbpc", "fixed_3", "fixed_hindsight")


@pytest.fixture(scope="module")
def data():
    conversions = paper_dataset("normal", users=600, publishers=4, days=DAYS, seed=3)
    return prepare(conversions, dataset_spec("normal").global_bound)


def context(data, workload, spec=None, rho: float = 1.0) -> Context:
    campaign = campaign_for(workload, rho=rho, cap=10)
    spec = spec or dataset_spec("normal")
    return Context(data, spec, workload, rho, campaign, make_plan(campaign), 0.99)


def _brute_force(ctx: Context, top: float) -> tuple[float, float]:
    """argmin over the grid of the released outcome's own expected errors (full pipeline)."""
    per_publisher, total = {}, {}
    for b in bound_grid(top):
        outcome = daily_outcome(fixed_run(ctx.data, float(b), ctx.rho, SeededNoise(0)), ctx)
        per_publisher[float(b)] = workload_error(outcome.expected, ctx.workload)
        total[float(b)] = workload_error(outcome.total_expected, ctx.workload)
    return min(per_publisher, key=per_publisher.get), min(total, key=total.get)


@pytest.mark.parametrize("workload", [prefix(DAYS), sliding(DAYS, 4)], ids=["prefix", "sliding"])
def test_the_hindsight_bounds_are_the_grids_argmin(data, workload) -> None:
    ctx = context(data, workload)
    tuned = ctx.hindsight
    assert tuned.grid_top == 20.0  # Λ of the Normal set: the best lay inside it
    assert (tuned.bound, tuned.total_bound) == _brute_force(ctx, 20.0)
    assert tuned.bound < 20.0 and tuned.total_bound < 20.0
    assert ctx.hindsight is tuned  # computed once per experiment


def test_the_grid_is_extended_to_gs_when_the_best_is_the_cap(data) -> None:
    spec = replace(dataset_spec("normal"), cap=1)  # a Λ far below the data's counts
    ctx = context(data, prefix(DAYS), spec)
    tuned = ctx.hindsight
    assert tuned.grid_top == 150.0  # GS of the Normal set
    assert tuned.bound > 1.0
    assert (tuned.bound, tuned.total_bound) == _brute_force(ctx, 150.0)


@pytest.mark.parametrize("bound", [0.25, 3.0, 7.75])
@pytest.mark.parametrize("rho", [1.0, 0.3])
def test_each_day_charges_rho_over_n(bound: float, rho: float) -> None:
    """ρ = Δ²/(2σ²) at Δ = b (the project's formula): exactly ρ/n a day, up to the float σ,
    never more, and the sampler accepts the draw at that declared allotment."""
    sigma = daily_sigma(bound, rho, 31)
    share = Fraction(repr(rho)) / 31
    assert gaussian_rho(bound, sigma) <= share
    assert float(gaussian_rho(bound, sigma)) == pytest.approx(float(share), rel=1e-14)
    assert zcdp_charged(bound, rho, 31) == pytest.approx(rho, rel=1e-14)
    assert sigma == pytest.approx(bound * np.sqrt(31 / (2 * rho)), rel=1e-14)
    SeededNoise(1).add_gaussian(np.zeros(3), sigma, l2_sensitivity=bound, rho=share)


def test_the_release_is_the_clipped_days_plus_their_noise(data) -> None:
    ctx = context(data, prefix(DAYS))
    outcome = run_method("fixed_3", ctx, 0, lambda _: SeededNoise(9))
    clipped = data.per_day_clipped(np.full(DAYS, 3.0))
    noise = SeededNoise(9)
    sigma = daily_sigma(3.0, 1.0, DAYS)
    days = [
        noise.add_gaussian(clipped[:, d], sigma, l2_sensitivity=3.0, rho=0.1) for d in range(DAYS)
    ]
    np.testing.assert_allclose(outcome.answers, np.stack(days, axis=1) @ ctx.queries.T)
    assert rho_charged("fixed_3", ctx) == pytest.approx(1.0, rel=1e-14)


@pytest.fixture(scope="module")
def result():
    config = ExperimentConfig(
        "normal",
        workload="prefix",
        users=600,
        publishers=4,
        days=DAYS,
        repeats=3,
        seed=3,
        methods=FIXED,
    )
    return run_experiment(config, show_progress=False)


def test_tuned_in_hindsight_is_no_worse_than_three_and_labelled_not_private(result) -> None:
    fixed_3, hindsight = result.methods["fixed_3"], result.methods["fixed_hindsight"]
    assert hindsight.score.error <= fixed_3.score.error  # 3 is on the grid
    assert fixed_3.private and not hindsight.private
    assert "not private" in LABELS["fixed_hindsight"]
    document = hindsight.to_json()
    assert document["private"] is False and document["rho_charged"] == pytest.approx(1.0)
    assert document["fixed_bound"]["bound"] == hindsight.mean_bounds[0]
    assert fixed_3.to_json()["fixed_bound"] == {"bound": 3.0, "total_bound": 3.0}
    assert fixed_3.mean_bounds == (3.0,) * DAYS


def test_the_hindsight_total_is_scored_at_its_own_bound(result, data) -> None:
    hindsight = result.methods["fixed_hindsight"]
    bounds = hindsight.fixed_bound
    ctx = context(data, prefix(DAYS))
    assert bounds["bound"] == ctx.hindsight.bound
    assert bounds["total_bound"] == ctx.hindsight.total_bound
    assert hindsight.score.total_error == pytest.approx(ctx.hindsight.total_error, rel=1e-12)
    assert hindsight.score.error == pytest.approx(ctx.hindsight.error, rel=1e-12)
    summary = result.summary()
    assert "adsbpc_plus_over_fixed_hindsight" not in summary  # AdsBPC+ did not run


def test_adding_the_fixed_methods_leaves_the_others_unchanged(result) -> None:
    alone = run_experiment(replace(result.config, methods=("adsbpc",)), show_progress=False)
    assert alone.methods["adsbpc"].score == result.methods["adsbpc"].score

"""AdsBPC+ in the experiment runner: same run as AdsBPC, charged ρ, its own noise stream; its
oracle, the candidates, the consistency projection and the generated blocks."""

from __future__ import annotations

from fractions import Fraction

import pytest

from dp_platform.mechanisms import adsbpc_plus
from dp_research.evaluation.adsbpc_runs import plus_campaign_for
from dp_research.evaluation.experiment import ExperimentConfig, run_experiment
from dp_research.evaluation.methods import BASELINES
from dp_research.evaluation.plus_data import oracle_plan
from dp_research.evaluation.plus_report import (
    CANDIDATE_METHODS,
    CANDIDATES_BEGIN,
    CANDIDATES_END,
    METHODS,
    candidates_block,
    plus_block,
    summary_rows,
    write_block,
)


@pytest.fixture(scope="module")
def result():
    config = ExperimentConfig(
        dataset="zipf",
        workload="prefix",
        users=3000,
        publishers=20,
        repeats=2,
        methods=METHODS,
    )
    return run_experiment(config, show_progress=False)


def test_adsbpc_plus_runs_beside_adsbpc_and_charges_rho(result):
    plus = result.methods["adsbpc_plus"]
    assert plus.rho_charged == pytest.approx(1.0, abs=1e-12)
    assert plus.private and plus.score.error > 0
    assert len(plus.mean_bounds) == 31
    assert len(plus.scales) == 2  # the profile scale s of each repeat, in (0, Λ√(1 + κ)]
    assert all(0 < s <= 33 for s in plus.scales) and plus.to_json()["scales"] == list(plus.scales)
    assert "adsbpc" in result.methods and result.methods["adsbpc"].scales is None
    ratio = result.summary()["adsbpc_plus_over_adsbpc"]
    assert ratio == plus.score.error / result.methods["adsbpc"].score.error


def test_adding_adsbpc_plus_leaves_the_other_methods_unchanged(result):
    alone = run_experiment(
        ExperimentConfig(
            dataset="zipf",
            workload="prefix",
            users=3000,
            publishers=20,
            repeats=2,
            methods=("adsbpc", "oracle"),
        ),
        show_progress=False,
    )
    assert alone.methods["adsbpc"].score == result.methods["adsbpc"].score


def test_the_oracle_runs_once_is_labelled_non_private_and_the_ratios_are_of_the_best(result):
    oracle = result.methods["plus_oracle"]
    assert not oracle.private and oracle.rho_charged == 1.0
    assert len(oracle.score.per_repeat) == 1  # its choices read no noise: one repeat
    (row,) = summary_rows([result])
    errors = {name: result.methods[name].score.error for name in BASELINES}
    assert row["best_error"] == min(errors.values())
    plus = result.methods["adsbpc_plus"].score.error
    assert row["over_best"] == plus / min(errors.values())
    assert row["over_oracle"] == plus / oracle.score.error
    summary = result.summary()
    assert summary["adsbpc_plus_over_best_baseline"] == row["over_best"]
    assert summary["adsbpc_plus_over_its_oracle"] == row["over_oracle"]


def test_every_method_is_scored_with_and_without_the_consistency_projection(result):
    for name, method in result.methods.items():
        consistent = method.score.error_consistent
        assert consistent is not None and consistent > 0, name
    # cumulative counts projected onto non-decreasing series can only move toward the truth
    # in the weighted norm; on these 20 publishers it lowers BIN's realised error
    bin_ = result.methods["bin"].score
    assert bin_.error_consistent <= bin_.error_empirical


def test_the_candidates_share_the_default_draws(tmp_path):
    config = ExperimentConfig(
        dataset="zipf",
        workload="sliding",
        users=3000,
        publishers=20,
        repeats=2,
        methods=CANDIDATE_METHODS,
    )
    result = run_experiment(config, show_progress=False)
    default = result.methods["adsbpc_plus"].score
    # the diagonal strategy is the previous default: a different error on the same draws
    assert result.methods["plus_diagonal"].score.error != default.error
    # the candidate s-rule reads the same noisy profile (one draw), so its bounds agree until
    # the profile day
    assert (
        result.methods["plus_mse"].mean_bounds[:7] == result.methods["adsbpc_plus"].mean_bounds[:7]
    )
    path = tmp_path / "results.md"
    path.write_text("# Results\n\n" + CANDIDATES_BEGIN + "\nold\n" + CANDIDATES_END + "\n")
    write_block(
        path, candidates_block([result], {"total": 1.0}, "n"), CANDIDATES_BEGIN, CANDIDATES_END
    )
    text = path.read_text()
    assert "old" not in text and text.count(CANDIDATES_BEGIN) == 1
    assert "diagonal (the previous default)" in text


def test_the_results_block_is_replaced_in_place(tmp_path, result):
    path = tmp_path / "results.md"
    path.write_text("# Results\n\nkept text\n")
    write_block(path, plus_block([result], {"total": 1.0}, "note one"))
    write_block(path, plus_block([result], {"total": 2.0}, "note two"))
    text = path.read_text()
    assert text.count("BEGIN GENERATED: adsbpc_plus") == 1 and "note two" in text
    assert "kept text" in text
    scales = result.methods["adsbpc_plus"].scales
    assert f"{min(scales):.2f}–{max(scales):.2f}" in text


def test_the_oracle_puts_all_of_rho_on_the_measurement_whatever_the_split():
    """oracle_plan: ρ1 = ρ and its allotments sum to ρ exactly (the objective rule reads a
    day's share of ρ1 from them), so a plan that gives 5 % to a remainder has the same oracle
    as one that does not (before the fix its shares ended at 0.90, and Oracle+ changed with
    the remainder share: 206 against 247 on the 10⁶-user Zipf sliding row)."""
    workload = ExperimentConfig("zipf", workload="sliding", days=12).make_workload()
    oracles = [
        oracle_plan(
            adsbpc_plus.make_plan(
                plus_campaign_for(workload, rho=1.0, cap=10, settings=settings, publishers=20)
            )
        )
        for settings in ((), (("remainder_share", 0.0),))
    ]
    with_remainder, without = oracles
    assert with_remainder.budget.remainder > without.budget.remainder  # the plans differ
    for plan in oracles:
        assert sum(plan.allotments, Fraction(0)) == plan.budget.rho.value == plan.budget.rho1.value
    assert with_remainder.allotments == without.allotments
    assert with_remainder.sigma_bar == pytest.approx(without.sigma_bar, rel=1e-12)

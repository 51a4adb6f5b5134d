"""AdsBPC+ in the experiment runner: same run as AdsBPC, charged ρ, its own noise stream."""

from __future__ import annotations

import pytest

from dp_platform.evaluation.experiment import ExperimentConfig, run_experiment
from dp_platform.evaluation.plus_report import plus_block, write_block


@pytest.fixture(scope="module")
def result():
    config = ExperimentConfig(
        dataset="zipf",
        workload="prefix",
        users=3000,
        publishers=20,
        repeats=2,
        methods=("adsbpc", "adsbpc_plus", "oracle", "umm"),
    )
    return run_experiment(config, show_progress=False)


def test_adsbpc_plus_runs_beside_adsbpc_and_charges_rho(result):
    plus = result.methods["adsbpc_plus"]
    assert plus.rho_charged == pytest.approx(1.0, abs=1e-12)
    assert plus.private and plus.score.error > 0
    assert len(plus.mean_bounds) == 31
    assert len(plus.scales) == 2  # the profile scale s of each repeat, in (0, Λ]
    assert all(0 < s <= 10 for s in plus.scales) and plus.to_json()["scales"] == list(plus.scales)
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

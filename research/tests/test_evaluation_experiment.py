"""The runner: reproducible seeds, honest scoring, the paper's ratios, ablations, sweeps, report."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from dp_research.baselines import prefix, prefix_weights, sliding
from dp_research.evaluation.ablations import run_ablations
from dp_research.evaluation.all_results import CI_SCALE
from dp_research.evaluation.datasets import dataset_spec
from dp_research.evaluation.experiment import ExperimentConfig, prepare_dataset, run_experiment
from dp_research.evaluation.methods import METHODS, Outcome
from dp_research.evaluation.paper import paper_ratio
from dp_research.evaluation.report import BEGIN, END, write_all
from dp_research.evaluation.scoring import score
from dp_research.evaluation.sweeps import plot_sweep, sweep

SMALL = ExperimentConfig("zipf", users=2000, publishers=10, repeats=3, days=12, seed=4)


@pytest.fixture(scope="module")
def small_data():
    data, _ = prepare_dataset(SMALL)
    return data


def test_paper_ratios_are_the_published_ones() -> None:
    """AdsBPC ÷ best baseline from the transcribed Tables IX and X (the brief's list)."""
    expected = {
        ("zipf", "prefix"): 0.56,
        ("normal", "prefix"): 0.67,
        ("uniform", "prefix"): 0.37,
        ("facebook", "prefix"): 0.47,
        ("zipf", "sliding"): 0.33,
        ("normal", "sliding"): 0.08,
        ("uniform", "sliding"): 0.05,
        ("facebook", "sliding"): 0.23,
    }
    for (dataset, workload), ratio in expected.items():
        assert round(paper_ratio(dataset, workload), 2) == ratio


def test_score_prefix_and_sliding_on_known_numbers() -> None:
    truth = np.zeros((2, 3))
    answers = np.array([[1.0, 2.0, 3.0], [0.0, 0.0, 4.0]])
    expected = np.array([[1.0, 1.0, 9.0], [1.0, 1.0, 1.0]])
    s = score([Outcome(answers, expected)], truth, prefix(3))
    w = prefix_weights(3)  # (1, 1, 49)
    assert s.error == pytest.approx(np.sqrt(((1 + 1 + 49 * 9) / 51 + (1 + 1 + 49) / 51) / 2))
    assert s.error_paper_scale == pytest.approx(np.sqrt(((1 + 1 + 441) + 51) / 2) / 3)
    realised = np.array([(1 + 4 + 49 * 9) / 51, (16 * 49) / 51])
    assert s.error_empirical == pytest.approx(np.sqrt(realised.mean()))
    assert w[-1] == 49
    windows = sliding(3, 2)  # two full windows: MSE columns are per window
    s = score([Outcome(answers[:, :2], expected[:, :2])], truth[:, :2], windows)
    assert s.error == pytest.approx(1.0)  # max over windows of the publisher mean
    assert s.error_empirical == pytest.approx((4 + 0) / 2)
    assert s.error_paper_scale == pytest.approx(1e-4)


def test_bias_share_is_the_clipping_part_of_the_weighted_error() -> None:
    truth = np.zeros((2, 3))
    expected = np.array([[1.0, 1.0, 9.0], [1.0, 1.0, 1.0]])  # variance 1 everywhere, bias² 8
    outcome = Outcome(truth, expected, variances=np.ones(3))
    s = score([outcome], truth, prefix(3))
    # weighted with (1, 1, 49): variance 51 of 1 + 1 + 49·5 = 247
    assert s.bias_share == pytest.approx(1 - 51 / 247)
    s = score([outcome], truth, sliding(3, 1))  # worst window is the last: 5 = 1 + 4
    assert s.bias_share == pytest.approx(0.8)
    assert score([Outcome(truth, expected)], truth, prefix(3)).bias_share is None


def test_runs_are_reproducible_and_methods_independent(small_data) -> None:
    first = run_experiment(SMALL, small_data, show_progress=False)
    again = run_experiment(SMALL, small_data, show_progress=False)
    alone = run_experiment(replace(SMALL, methods=("ipa",)), small_data, show_progress=False)
    assert list(first.methods) == list(METHODS)
    for name in METHODS:
        assert first.methods[name].score == again.methods[name].score
        assert first.methods[name].score.error > 0
    assert alone.methods["ipa"].score == first.methods["ipa"].score
    other_seed = run_experiment(replace(SMALL, seed=5), small_data, show_progress=False)
    assert other_seed.methods["adsbpc"].score != first.methods["adsbpc"].score


def test_mmbpc_alone_still_uses_adsbpcs_bounds(small_data) -> None:
    both = run_experiment(replace(SMALL, methods=("adsbpc", "mmbpc")), small_data)
    alone = run_experiment(replace(SMALL, methods=("mmbpc",)), small_data)
    assert alone.methods["mmbpc"].score == both.methods["mmbpc"].score
    assert alone.methods["mmbpc"].mean_bounds == both.methods["adsbpc"].mean_bounds


def test_json_has_the_agreed_keys(small_data) -> None:
    document = run_experiment(replace(SMALL, workload="sliding", days=12), small_data).to_json()
    for key in ["dataset", "workload", "metric", "rho", "days", "repeats", "methods"]:
        assert key in document
    assert document["metric"] == "max_variance"
    for name, method in document["methods"].items():
        assert {"error", "error_std", "seconds", "error_paper_scale"} <= set(method)
        assert document["error_paper_scale"][name] == method["error_paper_scale"]
    assert document["methods"]["oracle"]["private"] is False
    summary = document["summary"]
    assert summary["paper_ratio"] == pytest.approx(0.24 / 0.72)
    errors = {n: m["error"] for n, m in document["methods"].items()}
    best = min(("ipa", "bin", "stream", "umm", "mmbpc"), key=errors.get)
    assert summary["best_baseline"] == best
    assert summary["adsbpc_over_best_baseline"] == pytest.approx(errors["adsbpc"] / errors[best])
    assert summary["adsbpc_over_oracle"] == pytest.approx(errors["adsbpc"] / errors["oracle"])


def test_ablation_default_rows_reproduce_the_main_table(small_data) -> None:
    """λ = 0.3 and T = 50 are the main configuration with the same noise streams."""
    main = run_experiment(replace(SMALL, methods=("adsbpc",)), small_data)
    tables = run_ablations(
        small_data,
        dataset_spec("zipf"),
        repeats=SMALL.repeats,
        seed=SMALL.seed,
        tables=("split", "threshold", "constant"),
        show_progress=False,
    )
    default_split = next(r for r in tables["split"] if r.value == 0.3)
    default_threshold = next(r for r in tables["threshold"] if r.value == 50)
    assert default_split.score.error == pytest.approx(main.methods["adsbpc"].score.error)
    assert default_threshold.score.error == pytest.approx(main.methods["adsbpc"].score.error)
    constant = {r.value: r for r in tables["constant"]}
    assert constant[3.0].mean_bound == 3.0 and constant[3.0].paper_facebook == 9.99


@pytest.mark.slow
def test_sweep_and_plot(small_data, tmp_path) -> None:
    runs = sweep("rho", SMALL, (0.5, 2.0), workloads=("prefix",), data=small_data)
    errors = [r.methods["ipa"].score.error for r in runs["prefix"]]
    assert errors[1] < errors[0]  # IPA: 4× the budget, a quarter of the variance
    path = plot_sweep("rho", {"zipf": runs}, tmp_path / "figure.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.slow
def test_write_all_keeps_hand_written_notes(tmp_path) -> None:
    page = tmp_path / "results.md"
    page.write_text(
        f"# Results\n\nintro\n\n{BEGIN}\nSTALE-GENERATED-BLOCK\n{END}\n\n## Notes\nkept\n"
    )
    written, results = write_all(tmp_path, CI_SCALE, datasets=("zipf",), show_progress=False)
    text = written.read_text()
    assert text.startswith("# Results\n\nintro") and text.endswith("## Notes\nkept\n")
    assert (
        "STALE-GENERATED-BLOCK" not in text and "### Table IX" in text and "| zipf | ours |" in text
    )
    assert (tmp_path / "figures" / "figure1_rho.png").exists()
    assert (tmp_path / "figures" / "figure2_days.png").exists()
    assert set(results.main) == {("zipf", "prefix"), ("zipf", "sliding")}

"""`dp-platform evaluate`: the agreed JSON, the closing note, user errors, sweeps.

The command module is driven through its own ``configure`` (as ``dp_platform.cli`` does), so the
tests do not depend on the other commands importing cleanly.
"""

from __future__ import annotations

import argparse
import json

import pytest

from dp_research.commands import evaluate

SMALL = ["--users", "1500", "--publishers", "8", "--repeats", "2", "--days", "10", "--quiet"]


def run(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="dp-platform evaluate")
    evaluate.configure(parser)
    args = parser.parse_args(argv)
    try:
        return int(args.handler(args) or 0)
    except SystemExit as exit_:
        return int(exit_.code or 0)


def test_json_output(capsys) -> None:
    argv = ["--dataset", "zipf", "--workload", "prefix", "--json", "--seed", "3", *SMALL]
    assert run(argv) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["dataset"] == "zipf" and document["workload"] == "prefix"
    assert document["metric"] == "wrmse" and document["rho"] == 1.0 and document["days"] == 10
    assert document["repeats"] == 2 and document["seed"] == 3
    assert set(document["methods"]) == {"adsbpc", "ipa", "bin", "stream", "umm", "mmbpc", "oracle"}
    for method in document["methods"].values():
        assert method["error"] > 0 and method["error_std"] >= 0 and method["seconds"] >= 0
    assert set(document["error_paper_scale"]) == set(document["methods"])


def test_text_output_closes_with_the_ratios(capsys) -> None:
    argv = ["--dataset", "zipf", "--workload", "sliding", "--methods", "adsbpc", "umm", "oracle"]
    assert run([*argv, *SMALL]) == 0
    out = capsys.readouterr().out
    assert "AdsBPC ÷ best baseline (UMM) =" in out and "(paper 0.33)" in out
    assert "AdsBPC ÷ oracle (non-private) =" in out


@pytest.mark.parametrize(
    "argv",
    [
        ["--workload", "prefix"],  # no dataset
        ["--dataset", "zipf"],  # no workload
        ["--dataset", "zipf", "--workload", "prefix", "--repeats", "0"],
        ["--dataset", "zipf", "--workload", "prefix", "--rho", "-1"],
    ],
)
def test_user_errors_exit_2(argv, capsys) -> None:
    assert run(argv) == 2
    assert "dp-platform evaluate:" in capsys.readouterr().err


@pytest.mark.slow
def test_sweep_writes_a_png(tmp_path, capsys) -> None:
    # Synthetic data, so the test needs nothing outside the repository (the Facebook file is
    # third-party data kept beside the checkout, not in it).
    argv = ["--sweep", "days", "--dataset", "zipf", "--workload", "prefix", "--json"]
    argv += ["--users", "3000", "--publishers", "10"]
    argv += ["--repeats", "2", "--methods", "adsbpc", "ipa", "--out", str(tmp_path), "--quiet"]
    assert run(argv) == 0
    document = json.loads(capsys.readouterr().out)
    days = [r["days"] for r in document["runs"]["prefix"]]
    assert days == [7, 15, 31, 63, 127]
    assert (tmp_path / "sweep_days_zipf.png").read_bytes()[:4] == b"\x89PNG"


def test_users_per_day_sets_the_generators_users(capsys) -> None:
    argv = ["--dataset", "events", "--workload", "prefix", "--users-per-day", "200", "--json"]
    argv += ["--publishers", "5", "--repeats", "2", "--methods", "fixed_3", "--quiet"]
    assert run(argv) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["users_per_day"] == 200 and document["users"] > 3000  # ≈ 5.7 % a day
    assert document["active_per_day"] == pytest.approx(200, rel=0.25)
    assert document["methods"]["fixed_3"]["fixed_bound"]["bound"] == 3.0

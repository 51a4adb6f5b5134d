"""`dp-platform evaluate --slices age,gender`: the Facebook demo from the command, in-process."""

from __future__ import annotations

import argparse
import json

import pytest

from dp_platform.events.facebook import FACEBOOK_ENV
from dp_research.commands import evaluate


def run(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="dp-platform evaluate")
    evaluate.configure(parser)
    args = parser.parse_args(argv)
    try:
        return int(args.handler(args) or 0)
    except SystemExit as exit_:
        return int(exit_.code or 0)


def test_slices_need_the_facebook_dataset(capsys) -> None:
    assert run(["--dataset", "zipf", "--slices", "age,gender"]) == 2
    assert "--slices needs --dataset facebook" in capsys.readouterr().err


def test_a_missing_file_is_one_line_and_exit_2(tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.setenv(FACEBOOK_ENV, str(tmp_path / "absent.csv"))
    assert run(["--dataset", "facebook", "--slices", "age,gender"]) == 2
    err = capsys.readouterr().err.strip()
    assert "Facebook data not found" in err and "\n" not in err


@pytest.mark.slow
def test_json_has_every_day_consistent_totals_and_the_charge(facebook_csv, monkeypatch, capsys):
    monkeypatch.setenv(FACEBOOK_ENV, str(facebook_csv()))
    argv = ["--dataset", "facebook", "--slices", "age,gender", "--days", "5", "--rho", "0.5"]
    assert run([*argv, "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["rho_charged"] == 0.5
    assert len(payload["days"]) == 5
    assert payload["max_inconsistency"] == 0.0
    for row in payload["rows"]:
        assert row["ci_low"] < row["value"] < row["ci_high"]
    grand = [r for r in payload["rows"] if r["age"] == r["gender"] == "all"]
    assert {r["measure"] for r in grand} == {"approved_conversions", "spent"}
    assert 0.85 < payload["coverage"]["approved_conversions vs clipped"] <= 1.0
    assert run(argv) == 0
    assert "| all | all | approved_conversions |" in capsys.readouterr().out


@pytest.mark.parametrize("axes", ["age", "gender,age", "interest"])
def test_other_slices_are_refused_by_the_parser(axes: str) -> None:
    with pytest.raises(SystemExit):
        run(["--dataset", "facebook", "--slices", axes])


def test_isotonic_coverage_prints_the_table_docs_slices_shows(capsys) -> None:
    """The command behind docs/slices.md's coverage table: one row per truth shape, and the
    per-day shares in --json (4000 runs, a few seconds)."""
    from dp_research.evaluation.consistency_gains import TRUTH_SHAPES

    assert run(["--isotonic-coverage", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["isotonic_coverage"]
    assert [row["shape"] for row in rows] == list(TRUTH_SHAPES)
    assert all(len(row["as_of"]) == len(row["latest"]) == 31 for row in rows)
    assert run(["--isotonic-coverage"]) == 0
    text = capsys.readouterr().out
    assert "burst: 100 on day 1, else 0 | " in text and "80.7 / " in text  # docs/slices.md

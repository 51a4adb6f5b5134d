"""Issue 27's scale table and the one command: the bars, the block replaced in place, and
``--all`` writing every generated block of docs/results.md."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from dp_platform.events.facebook import FACEBOOK_ENV
from dp_research.commands import evaluate
from dp_research.evaluation.plus_report import write_block
from dp_research.evaluation.scale_report import (
    BEGIN,
    DEFAULT_METHOD,
    END,
    METHODS,
    ScaleRow,
    scale_block,
    write_scale_table,
)
from dp_research.evaluation.tiers import CI_TIERS, Tier

DOCS = Path(__file__).resolve().parents[2] / "docs" / "results.md"
BLOCK = re.compile(r"<!-- BEGIN GENERATED.*?<!-- END GENERATED[^>]*-->", re.DOTALL)


def _outside(text: str) -> str:
    """The hand-written page: every generated block cut out."""
    return BLOCK.sub("", text)


def run(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="dp-platform evaluate")
    evaluate.configure(parser)
    args = parser.parse_args(argv)
    return int(args.handler(args) or 0)


@pytest.fixture(scope="module")
def rows(tmp_path_factory) -> list[ScaleRow]:
    out = tmp_path_factory.mktemp("rows")
    _, found = write_scale_table(out, ci=True, facebook=False)
    return found


def test_the_ci_table_replaces_its_block_in_place(
    tmp_path, facebook_csv, monkeypatch, rows
) -> None:
    """The command on a copy of docs/results.md: its block rewritten where it stands."""
    monkeypatch.setenv(FACEBOOK_ENV, str(facebook_csv()))
    page = tmp_path / "results.md"
    page.write_text(DOCS.read_text())
    assert run(["--scale-table", "--ci", "--out", str(tmp_path), "--quiet"]) == 0
    text = page.read_text()
    assert text.count(BEGIN) == 1 and text.count(END) == 1
    assert _outside(text) == _outside(DOCS.read_text())  # nothing hand-written moved or went
    block = text[text.index(BEGIN) : text.index(END)]
    assert "--scale-table --out" in block and "--ci" in block
    assert "| 400 × 200 | events | sliding |" in block and "Facebook (" in block
    write_block(page, scale_block(rows, {"total": 1.0}, "note two"), BEGIN, END)
    again = page.read_text()
    assert again.count(BEGIN) == 1 and "note two" in again
    assert _outside(again) == _outside(DOCS.read_text())


def test_every_row_runs_the_five_methods_and_the_bars_are_the_issues(rows) -> None:
    assert len(rows) == len(CI_TIERS) * 4 * 2  # no Facebook here
    for row in rows:
        assert len(row.results) == row.tier.seeds
        for result in row.results:
            assert set(result.methods) == set(METHODS)
        checks = row.checks()
        assert checks["÷ Oracle+"] is None  # below 20 000 users a day
        ratio, per_seed = row.ratio(DEFAULT_METHOD, "fixed_hindsight")
        assert checks["÷ hindsight"] == (ratio <= 1.0)
        if len(per_seed) == 1:
            assert ratio == pytest.approx(
                row.error(DEFAULT_METHOD) / row.error("fixed_hindsight"), rel=1e-12
            )
        total, _ = row.ratio(DEFAULT_METHOD, "fixed_hindsight", "total_error")
        assert checks["total"] == (total <= 1.0)
        assert row.passed == all(ok is not False for ok in checks.values())
        assert row.to_json()["passed"] == row.passed
    large = ScaleRow(rows[0].dataset, rows[0].workload, Tier(20_000, 5, 1), rows[0].results)
    oracle, _ = large.ratio(DEFAULT_METHOD, "plus_oracle")
    assert large.checks()["÷ Oracle+"] == (oracle <= 1.05)


@pytest.mark.slow
def test_all_writes_every_generated_block_in_place(tmp_path, facebook_csv, monkeypatch) -> None:
    monkeypatch.setenv(FACEBOOK_ENV, str(facebook_csv()))
    (tmp_path / "results.md").write_text(DOCS.read_text())
    assert run(["--all", "--ci", "--out", str(tmp_path), "--quiet"]) == 0
    text = (tmp_path / "results.md").read_text()
    for marker in (
        "<!-- BEGIN GENERATED: dp-platform evaluate --all",
        "<!-- BEGIN GENERATED: adsbpc_plus;",
        "<!-- BEGIN GENERATED: adsbpc_plus candidates;",
        BEGIN,
    ):
        assert text.count(marker) == 1, marker
    assert text.count("<!-- END GENERATED") == 4
    assert _outside(text) == _outside(DOCS.read_text())
    assert "dp-platform evaluate --all --out" in text[text.index(BEGIN) :]
    assert (tmp_path / "figures" / "figure1_rho.png").exists()


def test_a_candidate_default_is_measured_with_its_settings_named(tmp_path, monkeypatch) -> None:
    """``--plus NAME=VALUE``: AdsBPC+ runs with those settings over the defaults (a plan that
    releases a remainder, paced) and the note names them; a bad setting is refused."""
    from dp_platform.mechanisms.adsbpc_plus import make_plan
    from dp_research.baselines import prefix, sliding
    from dp_research.commands.evaluate import _setting
    from dp_research.evaluation.adsbpc_runs import plus_campaign_for

    settings = (("pace", 0.0), ("remainder_share", 0.05))
    plan = make_plan(plus_campaign_for(prefix(31), rho=1.0, cap=10, settings=settings))
    assert plan.pace == 0.0 and plan.remainder_cap == 2.0
    monkeypatch.delenv(FACEBOOK_ENV, raising=False)
    path, rows = write_scale_table(tmp_path, ci=True, facebook=False, plus_settings=settings)
    assert "with pace 0, remainder_share 0.05 over the platform's defaults" in path.read_text()
    assert len(rows) == len(CI_TIERS) * 4 * 2
    with pytest.raises(SystemExit):
        run(["--scale-table", "--ci", "--out", str(tmp_path), "--plus", "pace"])
    # a word or null as the value: a setting that is not a number is measured too
    words = (("strategy", "sqrt"), ("early_scale", None))
    plan = make_plan(plus_campaign_for(sliding(31, 7), rho=1.0, cap=10, settings=words))
    assert plan.strategy_kind == "sqrt" and plan.early_cap is None
    assert _setting("strategy=sqrt") == ("strategy", "sqrt")
    assert _setting("early_scale=null") == ("early_scale", None)

"""`dp-platform plan` and `simulate`: the JSON of docs/operators.md, and one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from dp_platform.cli import main
from dp_platform.config_loader import load_catalogue

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "campaigns.yaml"


def test_plan_json_has_the_design_keys(capsys) -> None:
    assert main(["plan", str(EXAMPLE), "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    spring = document["campaigns"]["spring_sale"]
    for key in ["rho", "rho1", "rho2", "rho3", "eps_quantile", "eps_svt", "sigma_bar", "query_std"]:
        assert key in spring
    assert len(spring["sigma_bar"]) == 31 and len(spring["query_std"]) == 31
    assert spring["rho1"] + 7 * spring["rho2"] + spring["rho3"] == pytest.approx(spring["rho"])
    assert spring["epsilon_at_delta"]["1e-06"] > 0
    weekly = document["campaigns"]["summer_weekly"]
    assert weekly["sensitivity_factor"] == 2  # replace with three publishers
    # spring 1.0 + summer 0.5 (+ its reach 0.1) + autumn (AdsBPC+) 1.0 + winter (one-shot) 0.5
    assert document["accounts"]["acme-users"] == {
        "rho_cap": 4.0,
        "planned": pytest.approx(3.1),
        "within_cap": True,
    }
    assert set(document["campaigns"]) == {
        "spring_sale",
        "summer_weekly",
        "autumn_plus",
        "winter_total",
    }


def test_plan_text_lists_every_day(capsys) -> None:
    assert main(["plan", str(EXAMPLE), "--campaign", "summer_weekly"]) == 0
    out = capsys.readouterr().out
    assert "campaign summer_weekly: 28 days" in out
    assert "account acme-users" in out


def test_bad_config_is_one_line_with_exit_2(tmp_path, capsys) -> None:
    bad = tmp_path / "c.yaml"
    bad.write_text(EXAMPLE.read_text().replace("s_up: 1.3", "s_up: 0.5"))
    assert main(["plan", str(bad)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0
    assert "campaigns[0].mechanism.bounds.s_up: s_up must be > 1" in err


def test_over_cap_plan_exits_1(tmp_path, capsys) -> None:
    over = tmp_path / "c.yaml"
    over.write_text(EXAMPLE.read_text().replace("rho_cap: 4.0", "rho_cap: 1.2"))
    assert main(["plan", str(over)]) == 1
    assert "OVER CAP" in capsys.readouterr().out


@pytest.mark.system
@pytest.mark.parametrize(
    ("campaign", "mechanism", "releases"),
    [
        ("spring_sale", "adsbpc", []),
        ("summer_weekly", "adsbpc", ["reach"]),
        ("autumn_plus", "adsbpc_plus", []),
        ("winter_total", None, ["one_shot"]),
    ],
)
def test_simulate_rehearses_each_campaign_through_its_own_mechanism(
    capsys, campaign, mechanism, releases
) -> None:
    """The rehearsal runs the registered mechanism (from the registry) over simulated events:
    the whole plan is spent, every day is released and the data reaches the releases."""
    argv = ["simulate", str(EXAMPLE), "--campaign", campaign, "--users", "800", "--json"]
    assert main(argv) == 0
    document = json.loads(capsys.readouterr().out)
    config = load_catalogue(EXAMPLE).campaign(campaign)
    assert document["mechanism"] == mechanism
    assert document["rho_spent"] == pytest.approx(document["rho_planned"], abs=1e-12)
    assert sorted(document["campaign_level"]) == releases
    if mechanism is None:
        assert document["days"] == []
        total = document["campaign_level"]["one_shot"]["total"]
        # data, not just noise (secure noise): the simulated total is ≈ 899 (fixed data seed) and
        # 20 std ≈ 54; the total's noise is two Laplace(b = 1.92) draws, below −845 w.p.
        # ≤ 2·exp(−422/1.92) < 1e-95 (tests/sampler_laws.py)
        assert total > 20 * document["campaign_level"]["one_shot"]["std"]
        return
    assert len(document["days"]) == config.days
    assert all(day["sigma"] > 0 for day in document["days"])
    assert sum(day["true_total"] for day in document["days"]) > 0


def test_plan_text_of_an_adsbpc_plus_campaign_shows_its_split_and_scale_prior(
    tmp_path, capsys
) -> None:
    plus = tmp_path / "c.yaml"
    catalogue = yaml.safe_load(EXAMPLE.read_text())
    catalogue["campaigns"][0]["mechanism"] = {"kind": "adsbpc_plus", "scale_prior": 2.5}
    plus.write_text(yaml.safe_dump(catalogue))
    assert main(["plan", str(plus), "--campaign", "spring_sale"]) == 0
    out = capsys.readouterr().out
    assert "mechanism adsbpc_plus" in out
    assert "profile after day 3: q 0.9, scale prior s0 2.5" in out
    assert "days 1..3: noise σ̄_i·min(ψ0·r_i, 3) (the early cap ε0·Λ)" in out

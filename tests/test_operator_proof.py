"""Operator-proof privacy: after registration, the ledger's plan is the only truth.

Every path an operator can take — a single-asset materialisation through Dagster after editing
the catalogue, a publisher that appears mid-campaign, a platform whose planning code changed —
either runs on the registered plan and keys or is refused before anything is drawn or charged.
"""

from __future__ import annotations

import json
import sqlite3
from copy import deepcopy
from datetime import date, timedelta
from fractions import Fraction

import dagster as dg
import duckdb
import numpy as np
import pandas as pd
import pytest
import yaml

from assets.definitions import build_definitions
from assets.partitions import daily_job_name, final_job_name
from assets.runner import run_campaigns
from dp_platform.cli import main
from dp_platform.ledger import Ledger
from dp_platform.mechanisms import adsbpc, adsbpc_plus
from dp_platform.privacy.noise import SeededNoise
from dp_platform.registration import load_registration
from dp_platform.warehouse import Warehouse
from tests.platform_fixtures import DAILY_ASSETS, START, copy_home, make_home

TODAY = date(2026, 11, 22)
DAYS = 10
DAY4 = (START + timedelta(days=3)).isoformat()

BASE = {
    "advertiser": "acme",
    "account": "acme-users",
    "start": START.isoformat(),
    "days": DAYS,
    "publishers": "all",
    "attribution": {"rule": "lta", "lookback_days": 30},
    "privacy": {"rho": 0.5, "adjacency": "add_remove"},
    "workload": {"kind": "prefix"},
}
CAMPAIGNS = [
    {**BASE, "name": "spring", "mechanism": {"kind": "adsbpc", "bounds": {"quantile_days": 3}}},
    {**BASE, "name": "plus", "mechanism": {"kind": "adsbpc_plus", "profile_days": 2}},
    {**BASE, "name": "final", "mechanism": {"kind": "one_shot"}, "reach": {"rho": 0.1}},
]
CATALOGUE = {"accounts": [{"name": "acme-users", "rho_cap": 5.0}], "campaigns": CAMPAIGNS}
STREAM_ASSETS = DAILY_ASSETS[2:]  # a campaign's own: the raw event assets are shared
FINAL_ASSETS = ("one_shot_release", "reach_and_frequency")


def _edit(field: str, campaign: dict) -> dict | None:
    """The catalogue entry with ``field`` edited, or None where the edit is not a valid config
    (the catalogue then does not load at all: refused before any asset runs)."""
    edited = deepcopy(campaign)
    stream = campaign["mechanism"]["kind"] != "one_shot"
    plus = campaign["mechanism"]["kind"] == "adsbpc_plus"
    if field == "rho":
        edited["privacy"]["rho"] = 5.0
    elif field == "split":
        edited["privacy"]["split"] = {"measurement": 0.8, "quantile": 0.1, "svt": 0.1}
    elif field == "adjacency":
        if plus:
            return None  # adsbpc_plus refuses replace when the catalogue loads
        edited["privacy"]["adjacency"] = "replace"
    elif field == "days":
        edited["days"] = DAYS + 2
    elif field == "start":
        edited["start"] = (START - timedelta(days=1)).isoformat()
    elif field == "workload":
        edited["workload"] = {"kind": "sliding", "window": 3}
    elif field == "rule":
        edited["attribution"] = {"rule": "fta", "lookback_days": 30}
    elif field == "mechanism":
        if not stream:
            return None  # one_shot replaces the daily mechanism
        edited["mechanism"] = {"kind": "adsbpc" if plus else "adsbpc_plus"}
    elif field == "publishers":
        edited["publishers"] = ["pub_0", "pub_1"]
    else:
        raise AssertionError(field)
    return edited


CHANGED_PATH = {
    "rho": "privacy.rho",
    "split": "privacy.split",
    "adjacency": "privacy.adjacency",
    "days": "days",
    "start": "start",
    "workload": "workload",
    "rule": "attribution.rule",
    "mechanism": "mechanism",
    "publishers": "publishers",
}
FIELDS = tuple(CHANGED_PATH)


def _ledger_state(home) -> dict:
    """Every row of the tables a draw or a charge writes (the campaigns' reservations too)."""
    with sqlite3.connect(home.ledger) as db:
        return {
            table: sorted(db.execute(f"SELECT * FROM {table}").fetchall())
            for table in ("charges", "releases", "bound_choices", "campaign_releases")
        } | {"planned": sorted(db.execute("SELECT name, planned FROM campaigns").fetchall())}


def _spends(home) -> list[tuple]:
    with duckdb.connect(str(home.warehouse), read_only=True) as db:
        return sorted(db.execute("SELECT * FROM plus_user_spend").fetchall()) + sorted(
            db.execute("SELECT * FROM plus_spend_days").fetchall()
        )


@pytest.fixture(scope="module")
def started(tmp_path_factory):
    """Days 1–3 of both streams released, day 4's bounds chosen; the one-shot registered."""
    home = make_home(tmp_path_factory.mktemp("operator") / "home", config=CATALOGUE)
    config = home.root / "campaigns.yaml"
    instance = dg.DagsterInstance.ephemeral()
    run_campaigns(config, home.root, instance=instance, today=TODAY, through=START + timedelta(2))
    definitions = build_definitions(config, home.root)
    for name in ("spring", "plus"):
        job = definitions.resolve_job_def(daily_job_name(name))
        upstream = ("attributed_conversions", "user_day_contributions", "contribution_bound")
        assert job.execute_in_process(
            instance=instance,
            partition_key=DAY4,
            asset_selection=[dg.AssetKey([name, asset]) for asset in upstream],
        ).success
    with Ledger.at_home(home.root) as ledger:
        assert [r.day for r in ledger.releases("plus")] == [1, 2, 3]
        assert ledger.bound_choice("plus", 4, adsbpc_plus.MECHANISM.chain) is not None
    return home


@pytest.mark.parametrize("field", FIELDS)
def test_an_edited_field_is_refused_by_every_asset_alone(started, tmp_path, field) -> None:
    home = copy_home(started, tmp_path / "home")
    edited = [_edit(field, c) or c for c in CAMPAIGNS]
    config = home.root / "campaigns.yaml"
    config.write_text(yaml.safe_dump({**CATALOGUE, "campaigns": edited}))
    definitions = build_definitions(config, home.root)
    before, spends_before = _ledger_state(home), _spends(home)
    instance = dg.DagsterInstance.ephemeral()
    tried = 0
    for campaign, original in zip(edited, CAMPAIGNS, strict=True):
        if campaign is original:
            continue  # not a valid edit for this campaign (see _edit)
        name = campaign["name"]
        stream = campaign["mechanism"]["kind"] != "one_shot"
        for asset in STREAM_ASSETS if stream else FINAL_ASSETS:
            job = definitions.resolve_job_def(
                daily_job_name(name) if stream else final_job_name(name)
            )
            keys = {"partition_key": DAY4} if stream else {}
            result = job.execute_in_process(
                instance=instance,
                asset_selection=[dg.AssetKey([name, asset])],
                raise_on_error=False,
                **keys,
            )
            assert not result.success, (field, name, asset)
            failure = next(e for e in result.all_events if e.is_step_failure)
            error = str(failure.step_failure_data.error)
            assert "PlanMismatch" in error and CHANGED_PATH[field] in error, (asset, error)
            assert "campaign end" in error  # it says what the operator can do
            tried += 1
    assert tried >= len(STREAM_ASSETS)
    assert _ledger_state(home) == before  # nothing drawn, nothing charged, nothing reserved
    assert _spends(home) == spends_before  # the filter's spends untouched
    with Ledger.at_home(home.root) as ledger:
        rho1 = load_registration(ledger, "plus").plan.stream.budget.rho1.value
    with duckdb.connect(str(home.warehouse), read_only=True) as db:
        spends = [row[0] for row in db.execute("SELECT spend FROM plus_user_spend").fetchall()]
    assert spends and all(Fraction(s) <= rho1 for s in spends)  # exact, every user


def test_the_cli_run_refuses_an_edit_naming_each_field(started, tmp_path, capsys) -> None:
    home = copy_home(started, tmp_path / "home")
    edited = deepcopy(CAMPAIGNS)
    edited[0]["privacy"] = {"rho": 5.0, "adjacency": "replace"}
    config = home.root / "campaigns.yaml"
    config.write_text(yaml.safe_dump({**CATALOGUE, "campaigns": edited}))
    before = _ledger_state(home)
    code = main(["run", "--home", str(home.root), "--config", str(config)])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "\n" not in err
    assert "privacy.rho: 0.5 → 5.0" in err and "privacy.adjacency: add_remove → replace" in err
    assert _ledger_state(home) == before


def test_releases_follow_the_registered_plan_when_planning_changes(
    started, tmp_path, monkeypatch
) -> None:
    """A newer platform that plans differently (here: twice the noise) must not change a
    running campaign: day 4 is drawn with the registered σ̄_4, read back from the ledger."""
    home = copy_home(started, tmp_path / "home")
    with Ledger.at_home(home.root) as ledger:
        registered = load_registration(ledger, "spring").plan.stream
    real = adsbpc.make_plan

    def noisier(campaign, base_dir=None):
        plan = real(campaign, base_dir)
        doubled = tuple(2 * s for s in plan.sigma_bar)
        return adsbpc.AdsbpcPlan(**{**plan.__dict__, "sigma_bar": doubled})

    monkeypatch.setattr(adsbpc, "make_plan", noisier)  # what the registry's adsbpc calls
    config = home.root / "campaigns.yaml"
    run_campaigns(
        config,
        home.root,
        campaign="spring",
        instance=dg.DagsterInstance.ephemeral(),
        today=TODAY,
        through=START + timedelta(3),
    )
    with Ledger.at_home(home.root) as ledger:
        day4 = ledger.releases("spring")[3]
    expected = adsbpc._sigma_for_allotment(day4.bound, registered.allotments[3], registered.factor)
    assert day4.sigma == expected


def _new_publisher_events(directory, day: date) -> tuple:
    """One impression on a publisher the advertiser never used, and a conversion after it."""
    ts = pd.Timestamp(day, tz="UTC") + pd.Timedelta(hours=10)
    impressions = pd.DataFrame(
        {
            "impression_id": ["new_i"],
            "user_id": ["brand_new_user"],
            "publisher_id": ["pub_new"],
            "advertiser_id": ["acme"],
            "ts": [ts],
            "interaction": ["click"],
        }
    )
    conversions = pd.DataFrame(
        {
            "conversion_id": ["new_c"],
            "user_id": ["brand_new_user"],
            "advertiser_id": ["acme"],
            "ts": [ts + pd.Timedelta(hours=1)],
            "value": [1.0],
        }
    )
    imps, convs = directory / "new_imps.parquet", directory / "new_convs.parquet"
    impressions.to_parquet(imps)
    conversions.to_parquet(convs)
    return imps, convs


def test_a_new_publisher_changes_neither_keys_nor_k_and_the_campaign_finishes(
    started, tmp_path, monkeypatch
) -> None:
    home = copy_home(started, tmp_path / "home")
    with Warehouse(home.warehouse) as warehouse:
        warehouse.ingest(*_new_publisher_events(tmp_path, START + timedelta(5)))
        assert "pub_new" in warehouse.advertiser_publishers("acme")
    from dp_platform.mechanisms import adsbpc_plus

    seen_k = []
    choose = adsbpc_plus.choose_bound

    def spy(*args, publishers, **kwargs):
        seen_k.append(publishers)
        return choose(*args, publishers=publishers, **kwargs)

    monkeypatch.setattr(adsbpc_plus, "choose_bound", spy)
    runs = run_campaigns(
        home.root / "campaigns.yaml",
        home.root,
        instance=dg.DagsterInstance.ephemeral(),
        today=TODAY,
    )
    assert {r.campaign for r in runs} == {"spring", "plus", "final"}
    keys = ["pub_0", "pub_1", "pub_2", "pub_3"]
    with Ledger.at_home(home.root) as ledger:
        for name in ("spring", "plus"):
            assert load_registration(ledger, name).publishers == keys
            released = ledger.releases(name)
            assert [r.day for r in released] == list(range(1, DAYS + 1))  # it finished
            assert {len(r.values) for r in released} == {len(keys)}
        one_shot = ledger.campaign_releases("final")["one_shot"]
        assert list(one_shot["values"]) == keys
    assert seen_k and set(seen_k) == {len(keys)}


def test_ending_a_campaign_returns_its_unspent_reservation_and_stops_it(
    started, tmp_path, capsys
) -> None:
    home = copy_home(started, tmp_path / "home")
    with Ledger.at_home(home.root) as ledger:
        spent = ledger.campaign_budget("spring").spent
        planned = ledger.campaign_budget("spring").planned
    assert main(["campaign", "cancel", "spring", "--home", str(home.root)]) == 2
    assert "day(s) 1, 2, 3, 4" in capsys.readouterr().err  # charged days named, nothing done
    assert main(["campaign", "end", "spring", "--home", str(home.root), "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["returned"] == pytest.approx(float(planned - spent))
    with Ledger.at_home(home.root) as ledger:
        assert ledger.campaign_budget("spring").planned == spent  # exact
        before = _ledger_state(home)
        report = ledger.budget_report()["campaigns"]["spring"]
    assert report["status"] == "ended"
    assert [h["action"] for h in report["history"]] == ["registered", "ended"]
    definitions = build_definitions(home.root / "campaigns.yaml", home.root)
    result = definitions.resolve_job_def(daily_job_name("spring")).execute_in_process(
        instance=dg.DagsterInstance.ephemeral(),
        partition_key=DAY4,
        asset_selection=[dg.AssetKey(["spring", "noisy_daily_release"])],
        raise_on_error=False,
    )
    assert not result.success
    failure = next(e for e in result.all_events if e.is_step_failure)
    assert "CampaignEnded" in str(failure.step_failure_data.error)
    assert _ledger_state(home) == before


def test_cancel_returns_the_whole_reservation_of_an_unstarted_campaign(tmp_path, capsys) -> None:
    home = make_home(tmp_path / "home", config=CATALOGUE)
    config = home.root / "campaigns.yaml"
    run_campaigns(config, home.root, instance=dg.DagsterInstance.ephemeral(), today=START)
    with Ledger.at_home(home.root) as ledger:
        assert ledger.budget_report()["accounts"]["acme-users"]["reserved"] == pytest.approx(1.6)
    assert main(["campaign", "cancel", "final", "--home", str(home.root)]) == 0
    with Ledger.at_home(home.root) as ledger:
        assert ledger.campaign_budget("final").planned.value == 0
        reserved = ledger.budget_report()["accounts"]["acme-users"]["reserved"]
    assert reserved == pytest.approx(1.0)
    assert "returned" in capsys.readouterr().out


def test_a_zero_bound_is_floored_so_noise_is_never_zero() -> None:
    """PrivateQuantile can return r ≈ 0 (interval [0, 1), uniform point near 0); the floor is
    post-processing and keeps σ_i = σ̄_i·r_i > 0, and a zero bound is refused at the draw."""
    from dp_platform.config_loader import parse_campaign

    campaign = parse_campaign({**CAMPAIGNS[0], "bounds": {"quantile_days": 3, "min_bound": 0.05}})
    plan = adsbpc.make_plan(campaign)

    class ZeroPoint(SeededNoise):
        """Picks interval 0 and the point 0.0 in it: the quantile's lowest possible output."""

        def _gumbel_max(self, vector, draw) -> int:
            return 0

        def _uniform(self, low: float, high: float) -> float:
            return low

    choice, _ = adsbpc.choose_bound(
        plan, adsbpc.BoundState(), np.bincount([1, 1, 2]), noise=ZeroPoint(0)
    )
    assert choice.bound == 0.05
    with pytest.raises(ValueError, match="finite and > 0"):
        adsbpc._sigma_for_allotment(0.0, plan.allotments[0], plan.factor)
    with pytest.raises(Exception, match="min_bound"):
        parse_campaign({**CAMPAIGNS[0], "bounds": {"min_bound": 11}})


def test_demo_refuses_a_home_it_did_not_make(tmp_path, capsys) -> None:
    """The demo prints the truth of its data: never of a real warehouse, nor of a demo home
    made with other options (checked before anything is generated or read)."""
    foreign = make_home(tmp_path / "real", users=50)
    assert main(["demo", "--home", str(foreign.root)]) == 2
    err = capsys.readouterr().err.strip()
    assert "holds data the demo did not generate" in err and "\n" not in err
    made = tmp_path / "made"
    made.mkdir()
    marker = {"seed": 20_261_122, "days": 31, "users": 20_000, "publishers": 20}
    (made / "demo.json").write_text(json.dumps(marker))
    assert main(["demo", "--home", str(made), "--users", "500"]) == 2
    assert "made with --days 31, --users 20000, --publishers 20" in capsys.readouterr().err
    # the same options, but made before the demo had its sliced campaign (no cells in its data)
    assert main(["demo", "--home", str(made), "--users", "20000"]) == 2
    assert "made by an older demo" in capsys.readouterr().err

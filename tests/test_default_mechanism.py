"""The default daily mechanism follows the adjacency, and a registered campaign keeps its own.

A campaign that names no mechanism gets AdsBPC+ under add/remove adjacency and AdsBPC under
replace (AdsBPC+'s filter needs add/remove); one that writes AdsBPC's own keys (``bounds:``,
``privacy.split``) keeps AdsBPC. A campaign registered as AdsBPC when AdsBPC was the default,
re-read from the same entry, is not an edit: it keeps its registered mechanism and plan
(docs/operators.md#default-mechanism).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dp_platform import mechanisms
from dp_platform.config import AccountConfig, CampaignConfig
from dp_platform.config_loader import load_catalogue, parse_campaign
from dp_platform.daily import stream_of
from dp_platform.ledger import Ledger, PlanMismatch
from dp_platform.ledger_records import CampaignRecord
from dp_platform.plans import campaign_plan
from dp_platform.registration import (
    Declaration,
    Registration,
    declaration,
    registered_campaign,
)

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "campaigns.yaml"
ACCOUNT = AccountConfig(name="users", rho_cap=10.0)
ENTRY = {
    "name": "spring",
    "advertiser": "acme",
    "account": "users",
    "start": "2026-03-01",
    "days": 10,
    "publishers": ["a", "b", "c"],
}
"""A catalogue entry that names no mechanism."""


def entry(**fields: object) -> CampaignConfig:
    return parse_campaign({**ENTRY, **fields})


def register(ledger: Ledger, campaign: CampaignConfig) -> Registration:
    """What every path does: plan the entry as read (the plan is used only if it is new), then
    register it or check it against its registration."""
    return registered_campaign(
        ledger,
        campaign,
        campaign_plan(campaign),
        ACCOUNT,
        advertiser_publishers=lambda: [],
        warehouse_identity=lambda: "one warehouse",
    )


@pytest.fixture
def ledger(tmp_path: Path):
    with Ledger(tmp_path / "ledger.sqlite") as opened:
        yield opened


# -- the default ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("privacy", "kind"),
    [
        ({}, "adsbpc_plus"),  # add/remove is the default adjacency
        ({"adjacency": "add_remove"}, "adsbpc_plus"),
        ({"adjacency": "replace"}, "adsbpc"),  # AdsBPC+ refuses replace
    ],
)
def test_the_default_mechanism_follows_the_adjacency(privacy: dict, kind: str) -> None:
    campaign = entry(privacy=privacy)
    assert campaign.mechanism.kind == kind
    assert campaign.mechanism_defaulted
    adjacency = privacy.get("adjacency", "add_remove")
    assert mechanisms.default_stream(adjacency) == kind


def test_an_unknown_adjacency_is_refused_by_its_field() -> None:
    with pytest.raises(Exception, match=r"privacy\.adjacency: Input should be"):
        entry(privacy={"adjacency": "event"})
    with pytest.raises(ValueError, match="unknown adjacency 'event'"):
        mechanisms.default_stream("event")


@pytest.mark.parametrize(
    "fields",
    [
        {"bounds": {"quantile_days": 3}},  # AdsBPC's legacy block
        {"privacy": {"split": {"measurement": 0.8, "quantile": 0.1, "svt": 0.1}}},
        {"mechanism": {"bounds": {"cap": 5}}},  # its settings, no kind
        {"mode": "adsbpc"},  # the older format's daily mode
        {"mechanism": "adsbpc"},
    ],
    ids=["bounds", "split", "kindless-block", "mode", "named"],
)
def test_a_campaign_writing_adsbpc_keys_keeps_adsbpc(fields: dict) -> None:
    campaign = entry(**fields)
    assert campaign.mechanism.kind == "adsbpc"
    assert not campaign.mechanism_defaulted


def test_adsbpc_plus_keys_choose_it_and_other_mechanisms_blocks_are_still_refused() -> None:
    assert entry(adsbpc_plus={"profile_days": 3}).mechanism.kind == "adsbpc_plus"
    with pytest.raises(Exception, match="bounds: only with mechanism adsbpc"):
        entry(mechanism="adsbpc_plus", bounds={"quantile_days": 3})


def test_the_example_catalogue_keeps_adsbpc_under_replace() -> None:
    catalogue = load_catalogue(EXAMPLE)
    kinds = {c.name: c.mechanism.kind for c in catalogue.campaigns}
    assert kinds["summer_weekly"] == "adsbpc"  # adjacency replace, no mechanism written
    assert kinds["spring_sale"] == "adsbpc"
    assert kinds["autumn_plus"] == "adsbpc_plus"


# -- registered campaigns keep their mechanism ------------------------------------------------


def test_an_entry_registered_as_adsbpc_keeps_adsbpc_when_the_default_changes(
    ledger: Ledger,
) -> None:
    """What an earlier release registered for this entry: AdsBPC, ``mechanism.kind`` among the
    written fields (the folding wrote it). Re-read now, the entry defaults to AdsBPC+: not an
    edit, and every step runs the registered AdsBPC plan."""
    first = register(ledger, entry(mechanism="adsbpc"))
    record = ledger.campaign_record("spring")
    assert record is not None
    assert "mechanism.kind" in Declaration.from_record(record.declared).explicit

    again = entry()
    assert again.mechanism.kind == "adsbpc_plus"
    registration = register(ledger, again)  # no PlanMismatch
    assert registration.plan.to_record() == first.plan.to_record()
    assert registration.plan.mechanism == "adsbpc"
    assert registration.config.mechanism.kind == "adsbpc"
    assert stream_of(registration)[0] is mechanisms.stream("adsbpc")
    assert ledger.campaign_record("spring") == record  # nothing rewritten


def test_an_adsbpc_plus_entry_registered_with_m_7_keeps_it_when_the_default_becomes_3(
    ledger: Ledger,
) -> None:
    """Issue 27 lowered AdsBPC+'s default ``profile_days`` from 7 to 4, then to 3. What an
    earlier release registered for an entry that wrote no ``profile_days``: m = 7 in its config
    and plan, the field not among those written. Re-read now it is not an edit, and the plan
    keeps m = 7."""
    written = entry(mechanism="adsbpc_plus")
    assert written.mechanism.profile_days == 3
    then = entry(mechanism={"kind": "adsbpc_plus", "profile_days": 7})
    ledger.register(
        CampaignRecord(
            name="spring",
            account=ACCOUNT.name,
            days=then.days,
            planned=campaign_plan(then).total,
            declared=declaration(written, None).to_record(),
            config=then.model_dump(mode="json"),
            plan=campaign_plan(then).to_record(),
        ),
        ACCOUNT,
    )
    registration = register(ledger, written)  # no PlanMismatch
    assert registration.config.mechanism.profile_days == 7
    assert registration.plan.stream.profile_day == 8  # the profile after day 7, as registered


def test_naming_another_mechanism_than_the_registered_one_is_refused(ledger: Ledger) -> None:
    register(ledger, entry(mechanism="adsbpc"))
    with pytest.raises(PlanMismatch, match=r"mechanism\.kind: adsbpc → adsbpc_plus[;)]"):
        register(ledger, entry(mechanism="adsbpc_plus"))


def test_a_defaulted_entry_is_still_compared_field_by_field(ledger: Ledger) -> None:
    """Only the mechanism's kind follows the registration: an edit elsewhere, or a registered
    AdsBPC setting that the entry no longer writes, is refused."""
    register(ledger, entry(mechanism={"kind": "adsbpc", "bounds": {"quantile_days": 3}}))
    with pytest.raises(PlanMismatch, match=r"mechanism\.bounds\.quantile_days: 3 → 7[;)]"):
        register(ledger, entry())
    with pytest.raises(PlanMismatch, match=r"privacy\.rho: 1\.0 → 0\.5[;)]"):
        register(ledger, entry(privacy={"rho": 0.5}, bounds={"quantile_days": 3}))


def test_a_release_that_replaces_the_stream_is_not_taken_for_a_default(ledger: Ledger) -> None:
    register(ledger, entry(mode="one_shot"))
    with pytest.raises(PlanMismatch, match=r"mechanism\.kind: one_shot → adsbpc_plus[;)]"):
        register(ledger, entry())


def test_a_defaulted_entry_registers_the_default_and_reads_back_as_it(ledger: Ledger) -> None:
    registration = register(ledger, entry())
    assert registration.plan.mechanism == "adsbpc_plus"
    assert register(ledger, entry()).plan.to_record() == registration.plan.to_record()
    with pytest.raises(PlanMismatch, match=r"mechanism\.kind: adsbpc_plus → adsbpc[;)]"):
        register(ledger, entry(mechanism="adsbpc"))


# -- what `dp-platform plan` shows ------------------------------------------------------------


def test_plan_shows_the_default_and_with_home_the_registered_plan(tmp_path, capsys) -> None:
    """Without a home, `plan` plans the entry as written (the default, said so); with the home
    whose ledger registered it as AdsBPC, it shows the registered AdsBPC plan that runs."""
    import yaml

    from dp_platform.cli import main
    from dp_platform.home import Home

    config = tmp_path / "campaigns.yaml"
    entries = {"accounts": [ACCOUNT.model_dump()], "campaigns": [ENTRY]}
    config.write_text(yaml.safe_dump(entries))
    assert main(["plan", str(config), "--json"]) == 0
    assert capsys.readouterr().out.count('"mechanism": "adsbpc_plus"') == 1
    assert main(["plan", str(config)]) == 0
    assert "mechanism adsbpc_plus: the default for add_remove adjacency" in capsys.readouterr().out

    home = Home.at(tmp_path / "home")
    with Ledger.at_home(home.root) as ledger:
        register(ledger, entry(mechanism="adsbpc"))  # as an earlier release registered it
    assert main(["plan", str(config), "--home", str(home.root), "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)["campaigns"]["spring"]
    assert shown["registered"] is True
    assert shown["quantile_days"] == 7 and "mechanism" not in shown  # AdsBPC's plan
    assert main(["plan", str(config), "--home", str(home.root)]) == 0
    out = capsys.readouterr().out
    assert "campaign spring: registered, its registered plan (what runs)" in out
    assert "adsbpc_plus" not in out


def test_plan_with_home_does_not_point_a_registered_campaign_at_home(tmp_path, capsys) -> None:
    """A campaign registered under the default, shown with ``--home``, is shown with the
    mechanism that runs (its registered configuration names it): no note points at ``--home``."""
    import yaml

    from dp_platform.cli import main
    from dp_platform.home import Home

    config = tmp_path / "campaigns.yaml"
    entries = {"accounts": [ACCOUNT.model_dump()], "campaigns": [ENTRY]}
    config.write_text(yaml.safe_dump(entries))
    home = Home.at(tmp_path / "home")
    with Ledger.at_home(home.root) as ledger:
        register(ledger, entry())
    assert main(["plan", str(config)]) == 0
    assert "(--home shows it)" in capsys.readouterr().out
    assert main(["plan", str(config), "--home", str(home.root)]) == 0
    out = capsys.readouterr().out
    assert "campaign spring: registered, its registered plan (what runs)" in out
    assert "--home shows it" not in out

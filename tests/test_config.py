"""A bad configuration is refused with the field and the rule named."""

from __future__ import annotations

import pytest

from dp_platform.config_loader import load_catalogue, parse_campaign, parse_catalogue
from dp_platform.errors import ConfigError


def campaign(**overrides) -> dict:
    data = {
        "name": "c1",
        "advertiser": "acme",
        "account": "users",
        "start": "2026-03-01",
        "mechanism": "adsbpc",  # named: these cases test AdsBPC's keys (the default is AdsBPC+)
    }
    data.update(overrides)
    return data


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (
            {"privacy": {"split": {"measurement": 0.7, "quantile": 0.2, "svt": 0.15}}},
            "split must sum to 1",
        ),
        ({"days": 7, "bounds": {"quantile_days": 7}}, "bounds.quantile_days: l must be < days"),
        ({"bounds": {"s_up": 0.9}}, "bounds.s_up: s_up must be > 1"),
        ({"bounds": {"s_down": 1.2}}, r"bounds.s_down: s_down must be in \(0, 1\)"),
        ({"bounds": {"p": 1.5}}, "bounds.p"),
        ({"privacy": {"rho": -1}}, "privacy.rho"),
        ({"privacy": {"adjacency": "event"}}, "privacy.adjacency"),
        ({"workload": {"kind": "sliding", "window": 40}}, "workload.window must be <= days"),
        ({"workload": {"kind": "range", "ranges": [[3, 2]]}}, r"workload.ranges"),
        ({"objective": {"kind": "min_budget"}}, "max_variance is required"),
        ({"attribution": {"rule": "magic"}}, "attribution.rule"),
        ({"name": "9lives"}, "name must start with a letter"),
        ({"publishers": ["a", "a"]}, "publishers must not repeat"),
        ({"surprise": 1}, "surprise: Extra inputs are not permitted"),
        (
            {"privacy": {"split": {"measurement": 1.0, "quantile": 0.0, "svt": 0.0}}},
            "must be > 0 for adsbpc",
        ),
    ],
)
def test_bad_campaign_names_field_and_rule(overrides: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_campaign(campaign(**overrides))


def test_defaults_are_those_of_the_paper() -> None:
    parsed = parse_campaign(campaign())
    assert parsed.days == 31
    assert parsed.privacy.adjacency == "add_remove"
    assert (parsed.privacy.split.measurement, parsed.privacy.split.quantile) == (0.7, 0.15)
    bounds = parsed.mechanism.bounds
    assert (bounds.quantile_days, bounds.p, bounds.cap, bounds.max_reports) == (7, 0.99, 10, 7)
    assert (bounds.s_up, bounds.s_down, bounds.t_up, bounds.t_down) == (1.3, 0.8, 50, 50)
    assert parsed.objective.last_weight == 7


def test_catalogue_refuses_unknown_account_and_duplicates() -> None:
    with pytest.raises(
        ConfigError, match=r"campaigns\[0\].account: account 'users' is not declared"
    ):
        parse_catalogue({"accounts": [{"name": "other", "rho_cap": 1}], "campaigns": [campaign()]})
    with pytest.raises(ConfigError, match="campaigns: names must be unique"):
        parse_catalogue(
            {"accounts": [{"name": "users", "rho_cap": 1}], "campaigns": [campaign(), campaign()]}
        )


def test_missing_file_and_bad_yaml(tmp_path) -> None:
    with pytest.raises(ConfigError, match="file not found"):
        load_catalogue(tmp_path / "nope.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("accounts: [")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_catalogue(bad)


def test_a_campaign_is_read_by_the_loader_only() -> None:
    """The models know no mechanism (config.py imports no registry): validated without the
    loader's registry, a campaign is refused with the loader named, never read half-typed."""
    from pydantic import ValidationError

    from dp_platform.config import CampaignConfig

    with pytest.raises(ValidationError, match="read by the catalogue loader"):
        CampaignConfig.model_validate(campaign())
    assert parse_campaign(campaign()).mechanism.kind == "adsbpc"

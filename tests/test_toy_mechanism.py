"""Adding a mechanism is one new file and one registry line: a toy one runs a 3-day campaign
through Dagster and the ledger, write-once, charging exactly its plan."""

from __future__ import annotations

from datetime import date, timedelta
from fractions import Fraction

import dagster as dg
import numpy as np
import pytest
import yaml

from assets.runner import run_campaigns
from dp_platform import mechanisms
from dp_platform.config_loader import load_catalogue
from dp_platform.errors import ConfigError
from dp_platform.ledger import Ledger
from dp_platform.privacy.accounting import Rho
from dp_platform.privacy.noise import SeededNoise
from dp_platform.warehouse import Warehouse
from tests.platform_fixtures import START, RoutedNoise, catalogue, make_home

DAYS = 3
TODAY = date(2026, 11, 22)


@pytest.fixture
def toy_registered(monkeypatch):
    monkeypatch.setattr(mechanisms, "STREAM", dict(mechanisms.STREAM))  # undone after the test
    mechanisms.register("toy_fixed", "tests.toy_mechanism")  # the one registry line


def _toy_catalogue(bound: float = 2.0) -> dict:
    document = catalogue(days=DAYS)
    document["campaigns"][0]["mechanism"] = {"kind": "toy_fixed", "bound": bound}
    return document


def test_a_registered_toy_mechanism_runs_through_dagster_and_the_ledger(
    toy_registered, tmp_path
) -> None:
    home = make_home(tmp_path / "home", users=400, days=DAYS, config=_toy_catalogue())
    config = home.root / "campaigns.yaml"
    instance = dg.DagsterInstance.ephemeral()
    run_campaigns(config, home.root, instance=instance, today=TODAY, noise=RoutedNoise(1, 2))

    with Ledger.at_home(home.root) as ledger:
        stored = ledger.releases("spring")
        budget = ledger.campaign_budget("spring")
    # charges = plan: ρ/3 per day for the Gaussian, nothing for the public bound
    assert [r.day for r in stored] == [1, 2, 3]
    assert budget.planned == Rho(Fraction(1)) and budget.spent == budget.planned
    assert all(budget.per_day[d] == {"gaussian": Rho(Fraction(1, 3))} for d in (1, 2, 3))

    # each release is the day's clipped vector (bound 2) plus the seeded Gaussian, in day order
    campaign = load_catalogue(config).campaign("spring")
    sigma = stored[0].sigma
    assert sigma == pytest.approx(2.0 / np.sqrt(2 / 3))
    expected_noise = SeededNoise(2)
    with Warehouse(home.warehouse, read_only=True) as warehouse:
        publishers = warehouse.campaign_publishers(campaign)
    with Warehouse(home.warehouse) as warehouse:
        for release in stored:
            day = START + timedelta(days=release.day - 1)
            clipped = warehouse.clipped_vector(campaign, day, 2.0, publishers=publishers)
            assert clipped.sum() > 0  # the data reached the release
            expected = expected_noise.add_gaussian(
                clipped, sigma, l2_sensitivity=2.0, rho=Fraction(1, 3)
            )
            assert release.values == tuple(map(float, expected))

    # Dagster recorded every day of every asset of the chain
    for asset in ("contribution_bound", "noisy_daily_release", "cumulative_query_answers"):
        partitions = instance.get_materialized_partitions(dg.AssetKey(["spring", asset]))
        assert len(partitions) == DAYS, asset

    # write-once: a re-run with other noise returns the stored releases and charges nothing
    run_campaigns(config, home.root, instance=instance, today=TODAY, noise=RoutedNoise(5, 6))
    with Ledger.at_home(home.root) as ledger:
        assert ledger.releases("spring") == stored
        assert ledger.campaign_budget("spring").spent == budget.spent


def test_the_toy_mechanisms_block_is_validated_like_any_other(toy_registered, tmp_path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(_toy_catalogue(bound=-1.0)))
    with pytest.raises(ConfigError, match=r"campaigns\[0\]\.mechanism\.bound"):
        load_catalogue(path)


def test_without_its_registry_line_the_toy_is_unknown(tmp_path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(_toy_catalogue()))
    with pytest.raises(ConfigError, match="toy_fixed"):
        load_catalogue(path)

"""Build the code location: every campaign of a catalogue, with resources and schedules."""

from __future__ import annotations

from pathlib import Path

import dagster as dg

from assets.factory import CampaignScope, campaign_definitions
from assets.resources import CatalogueResource, LedgerResource, WarehouseResource
from dp_platform.config_loader import load_catalogue
from dp_platform.home import Home
from dp_platform.ledger_backends import backend_name
from dp_platform.plans import campaign_plans
from dp_platform.privacy.noise import IntegerNoiseSource, NoiseSource


def build_definitions(
    config_path: str | Path,
    home: str | Path,
    *,
    noise: NoiseSource | None = None,
    integer_noise: IntegerNoiseSource | None = None,
) -> dg.Definitions:
    """Definitions for a catalogue over a platform home. The noise sources are for tests only.

    Every job runs its steps in the run's own process (the in-process executor): a step here
    works for well under a second, and a process per step cost 15–25 s of start-up each."""
    config_path = Path(config_path).resolve()
    catalogue = load_catalogue(config_path)
    plans = campaign_plans(catalogue, config_path.parent)
    root = str(Home.at(home).root)
    campaigns = [
        campaign_definitions(
            CampaignScope(
                campaign=campaign,
                plan=plans[campaign.name],
                account=catalogue.account(campaign.account),
                base_dir=config_path.parent,
                noise=noise,
                integer_noise=integer_noise,
                warehouse_kind=catalogue.warehouse.engine,
                ledger_kind=backend_name(catalogue.ledger),
            )
        )
        for campaign in catalogue.campaigns
    ]
    resources = dg.Definitions(
        executor=dg.in_process_executor,
        resources={
            "warehouse": WarehouseResource(home=root, catalogue=str(config_path)),
            "ledger": LedgerResource(home=root, catalogue=str(config_path)),
            "catalogue": CatalogueResource(path=str(config_path)),
        },
    )
    return dg.Definitions.merge(*campaigns, resources)

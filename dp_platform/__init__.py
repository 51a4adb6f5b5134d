"""dp_platform: user-level differentially private daily ad-conversion releases (AdsBPC, AdsBPC+).

Where things live (the library; the Dagster layer is ``assets/``, which only calls this):

==========================  ===============================================================
noise (the only sampler)    ``privacy/noise.py`` (every draw OpenDP's, checked against its ρ/ε);
                            integer noise and Exp(1) draws in ``privacy/discrete.py``
                            (the check itself: ``privacy/noise_check.py``)
ρ and its arithmetic        ``privacy/accounting.py`` (exact ``Rho``, the ρ1 + lρ2 + ρ3 split)
the budget, enforced        ``ledger.py`` (accounts, reservations, charges, write-once releases)
                            and ``ledger_budget.py`` (the check before a draw)
clipping, specified         ``clipping.py`` (the NumPy reference every SQL and simulator meets)
mechanisms                  ``mechanisms/`` (registry in ``__init__``; protocols in ``base.py``)
the daily flow              ``daily.py`` (one function per asset), ``registration.py``
configuration               ``config.py`` (the catalogue's models), ``config_loader.py``
                            (reading it), ``config_legacy.py`` (older shapes),
                            ``settings.py`` (warehouse, ledger), ``plans.py``, ``workload.py``
data                        ``warehouse/`` (DuckDB default, Spark), ``events/``, ``schemas.py``
attribution                 warehouse SQL; private last touch in ``attribution/``
the command line            ``cli.py`` and ``commands/`` (``dp-platform --help``)
research                    not here: the package in ``research/`` (docs/results.md), which
                            depends on this one and adds ``dp-platform evaluate``
==========================  ===============================================================

Why each rule holds: docs/algorithm.md (the algorithm and its proofs), docs/privacy.md (the
guarantee), docs/data.md (the data layer), docs/operators.md (running it).

The names below are the public API, imported on first use (importing the package stays cheap:
every ``dp-platform`` command starts with it).
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from dp_platform.config import CampaignConfig, Catalogue
    from dp_platform.config_loader import load_catalogue
    from dp_platform.daily import (
        answers_through,
        bound_day,
        campaign_release,
        clipped_day,
        register_campaigns,
        release_day,
    )
    from dp_platform.errors import ConfigError
    from dp_platform.home import Home
    from dp_platform.ledger import BudgetExceeded, Ledger
    from dp_platform.mechanisms.base import Measurement
    from dp_platform.plans import CampaignPlan, campaign_plan, campaign_plans
    from dp_platform.privacy.accounting import Rho
    from dp_platform.privacy.noise import NoiseSource, SecureNoise
    from dp_platform.publication import PublishedDay, published_days
    from dp_platform.registration import Registration
    from dp_platform.rehearsal import rehearse
    from dp_platform.warehouse.base import WarehouseEngine, open_warehouse

_PUBLIC = {
    "CampaignConfig": "dp_platform.config",
    "Catalogue": "dp_platform.config",
    "ConfigError": "dp_platform.errors",
    "load_catalogue": "dp_platform.config_loader",
    "answers_through": "dp_platform.daily",
    "bound_day": "dp_platform.daily",
    "campaign_release": "dp_platform.daily",
    "clipped_day": "dp_platform.daily",
    "register_campaigns": "dp_platform.daily",
    "release_day": "dp_platform.daily",
    "Home": "dp_platform.home",
    "BudgetExceeded": "dp_platform.ledger",
    "Ledger": "dp_platform.ledger",
    "Measurement": "dp_platform.mechanisms.base",
    "CampaignPlan": "dp_platform.plans",
    "campaign_plan": "dp_platform.plans",
    "campaign_plans": "dp_platform.plans",
    "Rho": "dp_platform.privacy.accounting",
    "NoiseSource": "dp_platform.privacy.noise",
    "SecureNoise": "dp_platform.privacy.noise",
    "PublishedDay": "dp_platform.publication",
    "published_days": "dp_platform.publication",
    "Registration": "dp_platform.registration",
    "rehearse": "dp_platform.rehearsal",
    "WarehouseEngine": "dp_platform.warehouse.base",
    "open_warehouse": "dp_platform.warehouse.base",
}

__all__ = [
    "BudgetExceeded",
    "CampaignConfig",
    "CampaignPlan",
    "Catalogue",
    "ConfigError",
    "Home",
    "Ledger",
    "Measurement",
    "NoiseSource",
    "PublishedDay",
    "Registration",
    "Rho",
    "SecureNoise",
    "WarehouseEngine",
    "answers_through",
    "bound_day",
    "campaign_plan",
    "campaign_plans",
    "campaign_release",
    "clipped_day",
    "load_catalogue",
    "open_warehouse",
    "published_days",
    "register_campaigns",
    "rehearse",
    "release_day",
]


def __getattr__(name: str) -> object:
    """Import a public name's module when it is first asked for (PEP 562)."""
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'dp_platform' has no attribute {name!r}")
    return getattr(import_module(module), name)

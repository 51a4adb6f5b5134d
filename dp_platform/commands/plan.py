"""``dp-platform plan CONFIG``: what every campaign will spend and the noise it will get.

Data-independent, so it can run (and be audited by the privacy officer) before anything is
spent: the ρ split, ε of the quantile and SVT, (ε, δ) equivalents, σ̄_i per day and the expected
standard error of every query at bound r = 1, plus each account's cap against its campaigns' plans.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from dp_platform.config import Catalogue, load_catalogue
from dp_platform.plans import CampaignPlan, campaign_plans
from dp_platform.privacy.accounting import Rho


def configure(parser: argparse.ArgumentParser) -> None:
    parser.description = __doc__
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument("config", help="campaign catalogue (YAML)")
    parser.add_argument("--campaign", help="only this campaign")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.set_defaults(handler=run)


def account_totals(catalogue: Catalogue, plans: dict[str, CampaignPlan]) -> dict[str, dict]:
    """Planned ρ per account against its cap (the ledger refuses a campaign that breaks it)."""
    totals: dict[str, dict] = {}
    for account in catalogue.accounts:
        planned = sum(
            (plans[c.name].total for c in catalogue.campaigns if c.account == account.name),
            Rho.zero(),
        )
        totals[account.name] = {
            "rho_cap": account.rho_cap,
            "planned": float(planned),
            "within_cap": planned <= Rho.of(account.rho_cap),
        }
    return totals


def run(args: argparse.Namespace) -> int:
    catalogue = load_catalogue(args.config)
    campaigns = [catalogue.campaign(args.campaign)] if args.campaign else catalogue.campaigns
    base_dir = Path(args.config).resolve().parent
    plans = campaign_plans(catalogue, base_dir)
    shown = {c.name: plans[c.name] for c in campaigns}
    accounts = account_totals(catalogue, plans)
    if args.json:
        document = {
            "campaigns": {name: plan.summary() for name, plan in shown.items()},
            "accounts": accounts,
        }
        print(json.dumps(document, indent=2))
    else:
        for plan in shown.values():
            print("\n".join(plan.describe()))
        for name, account in accounts.items():
            state = "ok" if account["within_cap"] else "OVER CAP"
            print(
                f"account {name}: planned ρ {account['planned']:.6g} of cap "
                f"{account['rho_cap']:.6g} ({state})"
            )
    return 0 if all(a["within_cap"] for a in accounts.values()) else 1

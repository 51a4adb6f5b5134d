"""``dp-platform plan CONFIG``: what every campaign will spend and the noise it will get.

Data-independent, so it can run (and be audited by the privacy officer) before anything is
spent: the ρ split, ε of the quantile and SVT, (ε, δ) equivalents, σ̄_i per day and the expected
standard error of every query at bound r = 1, plus each account's cap against its campaigns' plans.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from dp_platform.adsbpc import AdsbpcPlan, make_plan
from dp_platform.config import Catalogue, load_catalogue


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "plan",
        help="show each campaign's privacy plan (ρ split, ε, σ̄ per day, query errors)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("config", help="campaign catalogue (YAML)")
    parser.add_argument("--campaign", help="only this campaign")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.set_defaults(handler=run)


def account_totals(catalogue: Catalogue, plans: dict[str, AdsbpcPlan]) -> dict[str, dict]:
    """Planned ρ per account against its cap (the ledger refuses a campaign that breaks it)."""
    totals: dict[str, dict] = {}
    for account in catalogue.accounts:
        planned = sum(
            float(plans[c.name].budget.total)
            for c in catalogue.campaigns
            if c.account == account.name
        )
        totals[account.name] = {
            "rho_cap": account.rho_cap,
            "planned": planned,
            "within_cap": planned <= account.rho_cap,
        }
    return totals


def run(args: argparse.Namespace) -> int:
    catalogue = load_catalogue(args.config)
    campaigns = [catalogue.campaign(args.campaign)] if args.campaign else catalogue.campaigns
    base_dir = Path(args.config).resolve().parent
    plans = {c.name: make_plan(c, base_dir) for c in catalogue.campaigns}
    shown = {c.name: plans[c.name] for c in campaigns}
    accounts = account_totals(catalogue, plans)
    if args.json:
        document = {
            "campaigns": {name: plan.to_json() for name, plan in shown.items()},
            "accounts": accounts,
        }
        print(json.dumps(document, indent=2))
    else:
        for plan in shown.values():
            print(render(plan))
        for name, account in accounts.items():
            state = "ok" if account["within_cap"] else "OVER CAP"
            print(
                f"account {name}: planned ρ {account['planned']:.6g} of cap "
                f"{account['rho_cap']:.6g} ({state})"
            )
    return 0 if all(a["within_cap"] for a in accounts.values()) else 1


def render(plan: AdsbpcPlan) -> str:
    data = plan.to_json()
    eps = ", ".join(f"ε={e:.3f} at δ={d}" for d, e in data["epsilon_at_delta"].items())
    lines = [
        f"campaign {plan.campaign}: {plan.days} days, adjacency {plan.adjacency}"
        + (" (×2 Gaussian cost: several publishers)" if plan.factor == 2 else ""),
        f"  ρ = {data['rho']:.6g} = ρ1 {data['rho1']:.6g} + {plan.budget.quantile_days}·ρ2 "
        f"{data['rho2']:.6g} + ρ3 {data['rho3']:.6g}   ({eps})",
        f"  ε quantile (per day) = {data['eps_quantile']:.4f}, ε SVT (total) = "
        f"{data['eps_svt']:.4f}",
        "  day  σ̄_i (r=1)   query std (r=1)",
    ]
    for day, sigma in enumerate(plan.sigma_bar, start=1):
        std = plan.query_std[day - 1] if day <= len(plan.query_std) else float("nan")
        lines.append(f"  {day:>3}  {sigma:>10.4f}   {std:>12.4f}")
    for j in range(plan.days, len(plan.query_std)):
        lines.append(f"  q{j + 1:<3}             {plan.query_std[j]:>12.4f}")
    return "\n".join(lines)

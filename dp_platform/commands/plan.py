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
from dp_platform.mechanisms.adsbpc import AdsbpcPlan
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
            "campaigns": {name: plan_json(plan) for name, plan in shown.items()},
            "accounts": accounts,
        }
        print(json.dumps(document, indent=2))
    else:
        for plan in shown.values():
            print(render_campaign(plan))
        for name, account in accounts.items():
            state = "ok" if account["within_cap"] else "OVER CAP"
            print(
                f"account {name}: planned ρ {account['planned']:.6g} of cap "
                f"{account['rho_cap']:.6g} ({state})"
            )
    return 0 if all(a["within_cap"] for a in accounts.values()) else 1


def plan_json(plan: CampaignPlan) -> dict:
    """design.md §3.3's keys for the daily mechanism, plus the campaign-level releases."""
    document = {} if plan.stream is None else plan.stream.to_json()
    document["total_rho"] = float(plan.total)
    if plan.one_shot is not None:
        document["one_shot"] = plan.one_shot.to_json()
    if plan.reach is not None:
        document["reach"] = plan.reach.to_json()
    return document


def render_campaign(plan: CampaignPlan) -> str:
    lines = []
    if isinstance(plan.stream, AdsbpcPlan):
        lines.append(render(plan.stream))
    elif plan.stream is not None:
        data = plan.stream.to_json()
        lines.append(
            f"campaign {plan.campaign}: {plan.days} days, mechanism adsbpc_plus, ρ "
            f"{data['rho']:.6g} (ρ1 {data['rho1']:.6g}, histograms "
            f"{data['rho_histogram_per_day']:.6g}/day, profile {data['rho_profile']:.6g})"
        )
        if data["profile_days"]:
            lines.append(
                f"  profile after day {data['profile_days']}: q {data['quantile']:g}, scale prior "
                f"s0 {data['scale_prior']:g} (kept unless the noisy profile rules it out), "
                f"cap {data['cap']}"
            )
    else:
        lines.append(f"campaign {plan.campaign}: {plan.days} days, mode one_shot")
    if plan.one_shot is not None:
        o = plan.one_shot.to_json()
        lines.append(
            f"  one-shot release: ρ {o['rho']:.6g} (ε {o['epsilon']:.4f}), C0 {o['c0']:g}, "
            f"bound {o['bound']:g}, Laplace scale {o['scale']:.4g} per publisher"
        )
    if plan.reach is not None:
        r = plan.reach.to_json()
        lines.append(
            f"  reach & frequency: ρ {r['rho']:.6g}, up to {r['max_frequency']}+, reach std "
            f"{r['reach_std']:.4g}"
        )
    lines.append(f"  total ρ reserved on the account: {float(plan.total):.6g}")
    return "\n".join(lines)


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

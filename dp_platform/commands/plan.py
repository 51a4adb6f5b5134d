"""``dp-platform plan CONFIG``: what every campaign will spend and the noise it will get.

Data-independent, so it can run (and be audited by the privacy officer) before anything is
spent: the ρ split, ε of the quantile and SVT, (ε, δ) equivalents, σ̄_i per day and the expected
standard error of every query at bound r = 1, plus each account's cap against its campaigns' plans.
A campaign with a breakdown or the value measure also shows its cells and each measure's
expected error per cell: σ of a cell at bound r is r·σ̄_i times the measure's public factor
(1/s for counts, cap/s for values: docs/algorithm.md#cells).

With ``--home DIR``, a campaign already registered in that home's ledger is shown with its
registered plan — the one that runs, whatever the catalogue now plans for it (a campaign that
names no mechanism keeps the one it registered with when the default changes:
docs/operators.md#default-mechanism).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from dp_platform.cells import layout_of, weight_text
from dp_platform.config import CampaignConfig, Catalogue
from dp_platform.config_loader import load_catalogue
from dp_platform.home import Home
from dp_platform.ledger import Ledger
from dp_platform.mechanisms.base import plan_marginals
from dp_platform.plans import CampaignPlan, campaign_plans
from dp_platform.privacy.accounting import Rho
from dp_platform.registration import find_registration


def configure(parser: argparse.ArgumentParser) -> None:
    parser.description = __doc__
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument("config", help="campaign catalogue (YAML)")
    parser.add_argument("--campaign", help="only this campaign")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.add_argument(
        "--home",
        help="platform home: campaigns registered in its ledger are shown with their registered "
        "plan (what runs)",
    )
    parser.set_defaults(handler=run)


def registered_plans(
    catalogue: Catalogue, home: str
) -> dict[str, tuple[CampaignConfig, CampaignPlan]]:
    """Name → (registered configuration, registered plan) of the catalogue's campaigns that
    the home's ledger has registered (read-only)."""
    found = {}
    with Ledger.at_home(
        Home.existing(home).root, read_only=True, declared=catalogue.ledger
    ) as ledger:
        for campaign in catalogue.campaigns:
            registration = find_registration(ledger, campaign.name)
            if registration is not None:
                found[campaign.name] = (registration.config, registration.plan)
    return found


def default_note(campaign: CampaignConfig) -> list[str]:
    """A line for a campaign whose catalogue entry names no mechanism (text output). A
    registered campaign shown with ``--home`` gets none: its registered configuration names
    the mechanism it registered with."""
    if not campaign.mechanism_defaulted:
        return []
    return [
        f"  mechanism {campaign.mechanism.kind}: the default for {campaign.privacy.adjacency} "
        "adjacency (the entry names none);",
        "    once registered, the campaign keeps its registered mechanism (--home shows it)",
    ]


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


def cell_errors(campaign: CampaignConfig, plan: CampaignPlan) -> dict | None:
    """Per measure, the σ of one cell per day at bound r = 1, and per marginal the advertiser
    reads (publisher totals, publisher × each dimension, …) the σ of one of its numbers — all
    public: the plan's σ̄_i times the layout's strategy factor. None for a count-only campaign
    without breakdown. A marginal's σ under a residual strategy depends on how many publishers
    there are: shown when the entry lists them (or is registered: ``--home``)."""
    stream = plan.stream
    sigma_bar = getattr(stream, "sigma_bar", None)
    known = campaign.publishers if isinstance(campaign.publishers, list) else None
    marginals = None if stream is None else plan_marginals(stream)
    layout = layout_of(campaign, known or [], marginals)
    if layout.plain or sigma_bar is None:
        return None
    axes = layout.axis_names[:-1]
    errors: dict = {
        "breakdown": list(layout.dimension_names),
        "cells_per_publisher": layout.combinations * len(layout.measures),
        "measures": list(layout.measures),
        "strategy": "independent" if marginals is None else "residual",
    }
    if marginals is not None and not known:
        errors["marginals"] = None  # the number of publishers is fixed at registration
        return errors
    strategy = layout.strategy
    errors["sigma_per_cell_at_unit_bound"] = {
        measure: [float(s) * strategy.entry_std(axes, measure) for s in sigma_bar]
        for measure in layout.measures
    }
    errors["marginals"] = [
        {
            "keeps": row["keeps"],
            "weight": row["weight"],
            "sigma_at_unit_bound": {
                measure: [float(s) * one for s in sigma_bar]
                for measure, one in row["sigma"].items()
            },
        }
        for row in layout.marginal_sigmas(1.0)
    ]
    return errors


def describe_cells(name: str, errors: dict) -> list[str]:
    dims = " × ".join(errors["breakdown"]) or "no breakdown"
    measures = ", ".join(errors["measures"])
    lines = [
        f"campaign {name}: cells = publishers × {errors['cells_per_publisher']} "
        f"({dims}; measures {measures}; {errors['strategy']} strategy)"
    ]
    if errors["marginals"] is None:
        lines.append(
            "  each marginal's σ depends on the number of publishers, fixed at registration "
            "(the entry reads all of them): --home shows it once registered"
        )
        return lines
    for measure, sigmas in errors["sigma_per_cell_at_unit_bound"].items():
        lines.append(
            f"  σ of a {measure} cell at r = 1: day 1 {sigmas[0]:.4g}, day {len(sigmas)} "
            f"{sigmas[-1]:.4g} (× the day's bound r_i)"
        )
    for marginal in errors["marginals"]:
        keeps = " × ".join(marginal["keeps"]) or "campaign total"
        text = weight_text(marginal["weight"])
        weight = "" if text is None else f" (weight {text})"
        spread = ", ".join(
            f"{measure} {sigmas[0]:.4g}"
            for measure, sigmas in marginal["sigma_at_unit_bound"].items()
        )
        lines.append(f"  σ of a number of {keeps}{weight} at r = 1, day 1: {spread}")
    return lines


def run(args: argparse.Namespace) -> int:
    catalogue = load_catalogue(args.config)
    base_dir = Path(args.config).resolve().parent
    plans = campaign_plans(catalogue, base_dir)
    registered = registered_plans(catalogue, args.home) if args.home else {}
    configs = {c.name: c for c in catalogue.campaigns}
    for name, (config, plan) in registered.items():
        configs[name], plans[name] = config, plan
    names = [catalogue.campaign(args.campaign).name] if args.campaign else list(configs)
    accounts = account_totals(catalogue, plans)
    cells = {name: cell_errors(configs[name], plans[name]) for name in names}
    if args.json:
        summaries = {name: plans[name].summary() for name in names}
        for name in names:
            if cells[name] is not None:
                summaries[name]["cells"] = cells[name]
            if args.home:
                summaries[name]["registered"] = name in registered
        document = {"campaigns": summaries, "accounts": accounts}
        print(json.dumps(document, indent=2))
    else:
        for name in names:
            if name in registered:
                print(f"campaign {name}: registered, its registered plan (what runs):")
            lines = plans[name].describe()
            print("\n".join([lines[0], *default_note(configs[name]), *lines[1:]]))
            if cells[name] is not None:
                print("\n".join(describe_cells(name, cells[name])))
        for name, account in accounts.items():
            state = "ok" if account["within_cap"] else "OVER CAP"
            print(
                f"account {name}: planned ρ {account['planned']:.6g} of cap "
                f"{account['rho_cap']:.6g} ({state})"
            )
    return 0 if all(a["within_cap"] for a in accounts.values()) else 1

"""``dp-platform simulate CONFIG``: rehearse one campaign's plan on simulated events.

Runs the campaign's own mechanism (whichever its ``mechanism:`` block names, and its
campaign-level releases) day by day through the same library calls as a Dagster run, on events
generated for it, in a throwaway warehouse and ledger. Prints each day's private bound r_i, noise
scale σ_i, and the noisy answer to the query ending that day next to the truth, so an operator
can see what the plan buys before any real data is touched. A campaign with a breakdown gets
events carrying its dimensions' columns (values drawn from the public lists) and log-normal
order values: its cells are released as they would be, the answers are its count cells summed
over the breakdown, and with the value measure each day's noisy and true value total is shown
too. The data is simulated (seeded); the noise is drawn from the secure sampler, as always.
Nothing is written to any platform home.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict
from pathlib import Path


def configure(parser: argparse.ArgumentParser) -> None:
    parser.description = __doc__
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument("config", help="campaign catalogue (YAML)")
    parser.add_argument("--campaign", help="campaign to simulate (default: the first)")
    parser.add_argument("--users", type=int, default=20_000, help="simulated users (20000)")
    parser.add_argument("--data-seed", type=int, default=7, help="seed of the simulated data")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from dp_platform.config_loader import load_catalogue
    from dp_platform.errors import ConfigError
    from dp_platform.rehearsal import rehearse

    if args.users < 1:
        raise ConfigError("--users: must be at least 1")
    catalogue = load_catalogue(args.config)
    campaign = catalogue.campaign(args.campaign) if args.campaign else catalogue.campaigns[0]
    result = rehearse(
        campaign,
        catalogue.account(campaign.account),
        users=args.users,
        data_seed=args.data_seed,
        base_dir=Path(args.config).resolve().parent,
    )
    if args.json:
        print(json.dumps(asdict(result), indent=2))
        return 0
    cells = f", {result.cells_per_publisher} cells each" if result.cells_per_publisher > 1 else ""
    print(
        f"simulated {args.users} users × {result.publishers} publishers{cells} for campaign "
        f"{result.campaign} ({result.mechanism or 'no daily releases'})"
    )
    values = any(row.noisy_value_total is not None for row in result.days)
    if result.days:
        print(
            " day   bound method     σ_i   noisy query   true query    error   ρ charged"
            + ("   noisy value    true value" if values else "")
        )
    for row in result.days:
        noisy, true = row.noisy_answer, row.true_answer
        error = "" if noisy is None or true is None else f"{noisy - true:+8.1f}"
        line = (
            f"{row.day:>4} {row.bound:>7.3f} {row.bound_method:<9} {row.sigma:>7.2f} "
            f"{'' if noisy is None else f'{noisy:12.1f}':>12} "
            f"{'' if true is None else f'{true:12.1f}':>12} {error:>8} {row.rho_charged:>10.5f}"
        )
        if row.noisy_value_total is not None and row.true_value_total is not None:
            line += f" {row.noisy_value_total:13.1f} {row.true_value_total:13.1f}"
        print(line)
    for name, payload in result.campaign_level.items():
        print(f"{name}: {json.dumps(payload)[:200]}")
    print(f"ρ spent {result.rho_spent:.6g} of planned {result.rho_planned:.6g}")
    return 0

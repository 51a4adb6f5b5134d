"""``dp-platform simulate CONFIG``: run one campaign's mechanism on a simulated stream.

Prints each day's private bound r_i, noise scale σ_i, and the noisy answer to the campaign's
last query next to the truth, so an operator can see what the plan buys before any real data is
touched. The data is simulated (seeded); the noise is drawn from the secure sampler, as always.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from dp_platform.config import load_catalogue
from dp_platform.mechanisms.adsbpc import make_plan, run_stream
from dp_platform.simulation import simulate_stream


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
    catalogue = load_catalogue(args.config)
    campaign = catalogue.campaign(args.campaign) if args.campaign else catalogue.campaigns[0]
    plan = make_plan(campaign, Path(args.config).resolve().parent)
    k = len(campaign.publishers) if isinstance(campaign.publishers, list) else 5
    stream = simulate_stream(
        days=campaign.days, users=args.users, publishers=k, seed=args.data_seed
    )
    releases, state = run_stream(plan, [(d.histogram(), d.clipped_sums()) for d in stream.days])
    truth = np.array([d.truth() for d in stream.days])  # day × publisher
    rows = []
    for release in releases:
        day = release.day
        ready = [j for j in release.answers if plan.query_ends[j] == day]
        # the query of the workload that ends today (e.g. the prefix sum through today)
        j = ready[-1] if ready else None
        true_answer = None if j is None else float((plan.queries[j, :day] @ truth[:day]).sum())
        noisy_answer = None if j is None else float(sum(release.answers[j]))
        rows.append(
            {
                "day": day,
                "bound": release.bound,
                "bound_method": release.bound_method,
                "sigma": release.sigma,
                "noisy_total": float(sum(release.values)),
                "true_total": float(truth[day - 1].sum()),
                "query": j,
                "noisy_answer": noisy_answer,
                "true_answer": true_answer,
                "rho_charged": float(release.rho_charged),
            }
        )
    summary = {"campaign": campaign.name, "rho_planned": float(plan.budget.total)}
    summary["rho_spent"] = float(state.spent)
    if args.json:
        print(json.dumps({**summary, "days": rows}, indent=2))
        return 0
    print(f"simulated {args.users} users × {k} publishers for campaign {campaign.name}")
    print(" day   bound method     σ_i   noisy query   true query    error   ρ charged")
    for row in rows:
        noisy, true = row["noisy_answer"], row["true_answer"]
        error = "" if noisy is None else f"{noisy - true:+8.1f}"
        print(
            f"{row['day']:>4} {row['bound']:>7.3f} {row['bound_method']:<9} {row['sigma']:>7.2f} "
            f"{'' if noisy is None else f'{noisy:12.1f}':>12} "
            f"{'' if true is None else f'{true:12.1f}':>12} {error:>8} {row['rho_charged']:>10.5f}"
        )
    print(f"ρ spent {summary['rho_spent']:.6g} of planned {summary['rho_planned']:.6g}")
    return 0

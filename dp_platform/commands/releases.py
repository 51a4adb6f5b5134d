"""``dp-platform releases --home DIR --campaign NAME``: the published data, and only that.

Reads the ledger's write-once releases: per day the bound r_i, σ_i, ρ charged, the noisy value
of every publisher and the answers of the campaign's queries that end by that day (post-
processing of the noisy values); and the campaign-level releases (one-shot, reach and
frequency) when there are any. This is what an advertiser may see. Releases live in the
ledger whatever the warehouse engine: ``--config`` is accepted (and checked) for symmetry with
the other commands, and opens no warehouse.
"""

from __future__ import annotations

import argparse
import json

import numpy as np

from dp_platform.config import load_catalogue
from dp_platform.home import Home
from dp_platform.ledger import Ledger
from dp_platform.privacy.accounting import Rho


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "releases",
        help="print a campaign's published (noisy) releases",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--home", required=True, help="platform home directory")
    parser.add_argument("--campaign", required=True, help="campaign name")
    parser.add_argument("--config", help="campaign catalogue (checked; releases need no engine)")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.set_defaults(handler=run)


def published(ledger: Ledger, campaign: str) -> list[dict]:
    """Per-day published records (design.md §3.3)."""
    info = ledger.campaign_info(campaign)
    stream = info["plan"].get("stream")
    if stream is None:  # mode: one_shot — no daily releases
        return []
    queries = np.asarray(stream["queries"], dtype=np.float64)
    ends = queries.shape[1] - np.argmax((queries != 0)[:, ::-1], axis=1)
    publishers = info["publishers"] or []
    budget = ledger.campaign_budget(campaign)
    records, history = [], []
    for release in ledger.releases(campaign):
        history.append(release.values)
        day = release.day
        ready = np.flatnonzero(ends <= day)
        answers = queries[ready, :day] @ np.asarray(history)
        charged = sum(budget.per_day.get(day, {}).values(), Rho.zero())
        records.append(
            {
                "day": day,
                "bound": release.bound,
                "sigma": release.sigma,
                "rho_charged": float(charged),
                "values": dict(zip(publishers, release.values, strict=True)),
                "answers": {
                    str(int(j) + 1): dict(zip(publishers, (float(v) for v in row), strict=True))
                    for j, row in zip(ready, answers, strict=True)
                    if ends[j] == day
                },
            }
        )
    return records


def run(args: argparse.Namespace) -> int:
    if args.config:
        load_catalogue(args.config).campaign(args.campaign)  # a typo fails here, not silently
    with Ledger.at_home(Home.at(args.home).root) as ledger:
        records = published(ledger, args.campaign)
        campaign_level = ledger.campaign_releases(args.campaign)
    if args.json:
        document = {"campaign": args.campaign, "days": records, **campaign_level}
        print(json.dumps(document, indent=2))
        return 0
    for kind, payload in campaign_level.items():
        if kind == "one_shot":
            print(
                f"one-shot release (whole period, ρ {payload['rho_charged']:.6g}): noisy total "
                f"{payload['total']:.1f} ± {payload['std']:.1f} per publisher"
            )
        elif kind == "reach":
            at_least = ", ".join(f"{k}+: {v}" for k, v in enumerate(payload["at_least"], 1))
            print(f"reach (ρ {payload['rho_charged']:.6g}): {payload['reach']} users; {at_least}")
    print(f"campaign {args.campaign}: {len(records)} released days")
    print(" day    bound      σ_i   ρ charged   noisy total   answer(s) ending today (total)")
    for record in records:
        total = sum(record["values"].values())
        answers = ", ".join(f"q{j}={sum(v.values()):.1f}" for j, v in record["answers"].items())
        print(
            f"{record['day']:>4} {record['bound']:>8.3f} {record['sigma']:>8.2f} "
            f"{record['rho_charged']:>11.5f} {total:>13.1f}   {answers}"
        )
    return 0

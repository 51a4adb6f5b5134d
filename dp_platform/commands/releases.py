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


def configure(parser: argparse.ArgumentParser) -> None:
    parser.description = __doc__
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument("--home", required=True, help="platform home directory")
    parser.add_argument("--campaign", required=True, help="campaign name")
    parser.add_argument("--config", help="campaign catalogue (checked; releases need no engine)")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from dp_platform import mechanisms
    from dp_platform.config import load_catalogue
    from dp_platform.display import round_to_noise, significant
    from dp_platform.home import Home
    from dp_platform.ledger import Ledger
    from dp_platform.publication import published_days

    if args.config:
        load_catalogue(args.config).campaign(args.campaign)  # a typo fails here, not silently
    with Ledger.at_home(Home.existing(args.home).root, read_only=True) as ledger:
        days = published_days(ledger, args.campaign)
        records = [day.to_json() for day in days]
        campaign_level = ledger.campaign_releases(args.campaign)
    if args.json:
        document = {"campaign": args.campaign, "days": records, **campaign_level}
        print(json.dumps(document, indent=2))
        return 0
    for kind, payload in campaign_level.items():
        print(mechanisms.campaign_level(kind).describe_release(payload))
    print(f"campaign {args.campaign}: {len(records)} released days")
    print(" day    bound      σ_i   ρ charged   noisy total   answer(s) ending today (total)")
    for day in days:  # shown rounded to what the noise justifies (display.py); --json is exact
        std = day.sigma * len(day.values) ** 0.5
        total = round_to_noise(sum(day.values.values()), std)
        answers = ", ".join(
            f"q{j}={round_to_noise(sum(v.values()), day.answer_std[j]):g}"
            for j, v in day.answers.items()
        )
        print(
            f"{day.day:>4} {significant(day.bound):>8g} {significant(day.sigma):>8g} "
            f"{significant(day.rho_charged):>11g} {total:>13g}   {answers}"
        )
    return 0

"""``dp-platform campaign end|cancel NAME --home DIR``: stop a campaign for good.

A registered campaign's configuration cannot change (its releases follow the registered plan).
To change one, end it and register the edited campaign under a new name:

- ``end``: the campaign releases nothing more; its reservation shrinks to what it has spent, so
  the unspent rest returns to its account for the new campaign.
- ``cancel``: for a campaign that has spent nothing; its whole reservation returns. Refused,
  naming the days, once anything was charged.

Both are recorded in the campaign's history (``dp-platform budget``) for the privacy officer.
"""

from __future__ import annotations

import argparse
import json

from dp_platform.home import Home
from dp_platform.journal import ReleaseJournal
from dp_platform.ledger import Ledger


def configure(parser: argparse.ArgumentParser) -> None:
    parser.description = __doc__
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument("action", choices=("end", "cancel"), help="what to do")
    parser.add_argument("name", help="campaign name")
    parser.add_argument("--home", required=True, help="platform home directory")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    home = Home.existing(args.home).root
    with Ledger.at_home(home) as ledger:
        # a ledger restored from an old backup lacks charges: ending would return spent ρ
        ReleaseJournal.at_home(home).reconcile(ledger)
        before, after = ledger.end_campaign(args.name, cancel=args.action == "cancel")
    returned = before - after
    if args.json:
        document = {
            "campaign": args.name,
            "action": "cancelled" if args.action == "cancel" else "ended",
            "planned_before": float(before),
            "planned_after": float(after),
            "returned": float(returned),
        }
        print(json.dumps(document, indent=2))
        return 0
    verb = "cancelled" if args.action == "cancel" else "ended"
    print(
        f"campaign {args.name} {verb}: reservation ρ {float(before):.6g} → {float(after):.6g}; "
        f"ρ {float(returned):.6g} returned to its account"
    )
    return 0

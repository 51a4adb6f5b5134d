"""``dp-platform budget --home DIR``: the privacy officer's view of the ledger.

Per account: the cap, what campaigns reserve and what they have spent; per campaign: planned,
spent and remaining ρ, and the charge of every day by part (quantile, svt, gaussian). With
``--set-cap ACCOUNT RHO`` it changes an account's cap (refused below what is already reserved).
"""

from __future__ import annotations

import argparse
import json

from dp_platform.home import Home
from dp_platform.ledger import Ledger


def configure(parser: argparse.ArgumentParser) -> None:
    parser.description = __doc__
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument("--home", required=True, help="platform home directory")
    parser.add_argument(
        "--set-cap", nargs=2, metavar=("ACCOUNT", "RHO"), help="change an account's ρ cap"
    )
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    home = Home.existing(args.home).root
    with Ledger.at_home(home, read_only=not args.set_cap) as ledger:
        if args.set_cap:
            account, value = args.set_cap
            ledger.set_cap(account, float(value))
        report = ledger.budget_report()
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    for name, account in report["accounts"].items():
        print(
            f"account {name}: cap ρ {account['rho_cap']:.6g}, reserved {account['reserved']:.6g}, "
            f"spent {account['spent']:.6g}"
        )
    for name, campaign in report["campaigns"].items():
        print(
            f"  campaign {name}: planned {campaign['planned']:.6g}, spent {campaign['spent']:.6g}, "
            f"remaining {campaign['remaining']:.6g} ({len(campaign['per_day'])} days charged)"
        )
    return 0

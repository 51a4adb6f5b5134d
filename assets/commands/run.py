"""``dp-platform run --home DIR --config CONFIG``: materialise every due day through Dagster.

Reserves each campaign's plan in the ledger (refused, with the figures, over an account's cap),
then runs each campaign's daily job over its due days — complete days (before today, UTC) from
the first one without a release, up to ``--through`` — as one single-run backfill, in day
order. Re-running is safe: stored days return their stored releases and spend nothing.
Each run is launched against the code location through the Dagster instance, like a run from the
UI, so the UI lists it on its job's page (docs/operators.md, "What starts what"). Campaigns run
one after another; ``--parallel`` launches them all at once (their steps still take turns at the
warehouse's lock).
"""

from __future__ import annotations

import argparse
import json
from datetime import date


def configure(parser: argparse.ArgumentParser) -> None:
    parser.description = __doc__
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument("--home", required=True, help="platform home directory")
    parser.add_argument("--config", required=True, help="campaign catalogue (YAML)")
    parser.add_argument("--campaign", help="only this campaign")
    parser.add_argument("--through", type=date.fromisoformat, help="last day to run (YYYY-MM-DD)")
    parser.add_argument(
        "--parallel", action="store_true", help="launch every campaign's run at once"
    )
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from assets.runner import run_campaigns  # imports Dagster: only when this command runs

    runs = run_campaigns(
        args.config,
        args.home,
        campaign=args.campaign,
        through=args.through,
        parallel=args.parallel,
    )
    if args.json:
        print(json.dumps({"runs": [r.to_json() for r in runs]}, indent=2))
        return 0
    for result in runs:
        if result.days:
            print(
                f"campaign {result.campaign}: materialised {result.days[0]} .. {result.days[-1]} "
                f"({len(result.days)} days, run {result.run_id})"
            )
        else:
            print(f"campaign {result.campaign}: nothing due")
    return 0

"""``dp-platform ingest --home DIR --impressions PATH --conversions PATH``: load event files.

Both files (CSV or Parquet, the columns of design.md §3.2) are checked first; a missing column
or an unreadable file loads nothing and exits 2 naming the file and the problem. Bad rows go to
the warehouse's quarantine table with a reason code; the report counts rows read, accepted and
quarantined per reason (never showing ids or values). A file loaded before (same content) is
skipped, so re-running an ingest adds nothing. ``--config CONFIG`` names the catalogue whose
``warehouse:`` block chooses the engine (default: the embedded DuckDB warehouse).
"""

from __future__ import annotations

import argparse
import json
from datetime import UTC, datetime

from dp_platform.config import ConfigError, WarehouseConfig, load_catalogue
from dp_platform.home import Home
from dp_platform.warehouse import IngestReport, KindReport
from dp_platform.warehouse.base import open_warehouse


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "ingest",
        help="validate and load impression and conversion files into the warehouse",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--home", required=True, help="platform home directory")
    parser.add_argument(
        "--config", help="campaign catalogue (its warehouse: block picks the engine)"
    )
    parser.add_argument("--impressions", required=True, help="impressions file (.csv/.parquet)")
    parser.add_argument("--conversions", required=True, help="conversions file (.csv/.parquet)")
    parser.add_argument(
        "--now",
        help="ISO time that counts as 'now' for the future-timestamp check (default: the clock)",
    )
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.set_defaults(handler=run)


def _now(text: str | None) -> datetime | None:
    if text is None:
        return None
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise ConfigError(f"--now: not an ISO date-time ({text!r})") from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _describe(kind: str, part: KindReport) -> list[str]:
    if part.already_loaded:
        return [f"{kind}: {part.source_file} was loaded before; nothing added"]
    lines = [
        f"{kind}: {part.source_file}: {part.rows} rows, {part.accepted} accepted, "
        f"{part.quarantined} quarantined"
    ]
    lines += [f"  {reason:<22} {n}" for reason, n in sorted(part.reasons.items())]
    return lines


def render(report: IngestReport) -> str:
    return "\n".join(
        _describe("impressions", report.impressions) + _describe("conversions", report.conversions)
    )


def run(args: argparse.Namespace) -> int:
    now = _now(args.now)
    settings = load_catalogue(args.config).warehouse if args.config else WarehouseConfig()
    with open_warehouse(settings, Home.at(args.home)) as warehouse:
        report = warehouse.ingest(args.impressions, args.conversions, now=now)
    print(json.dumps(report.to_json(), indent=2) if args.json else render(report))
    return 0

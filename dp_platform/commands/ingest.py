"""``dp-platform ingest --home DIR --impressions PATH --conversions PATH``: load event files.

Both files (CSV or Parquet, the columns of docs/data.md) are checked first; a missing column
or an unreadable file loads nothing and exits 2 naming the file and the problem. Bad rows go to
the warehouse's quarantine table with a reason code; the report counts rows read, accepted and
quarantined per reason (never showing ids or values). A file loaded before (same content) is
skipped, so re-running an ingest adds nothing. ``--config CONFIG`` names the catalogue whose
``warehouse:`` block chooses the engine (default: the embedded DuckDB warehouse) and whose
``dimensions:`` name the breakdown columns each conversion (``source: conversions``) or
impression (``source: impressions``) must carry. A value outside a dimension's public list is
stored as its catch-all (``catch_all``, default ``other``), so the event still counts in every
campaign; an empty one is quarantined as ``missing_<dimension>``, and with ``catch_all: null``
an unlisted one as ``unknown_<dimension>_value``.
"""

from __future__ import annotations

import argparse
import json
import os
from datetime import UTC, datetime
from pathlib import Path

import duckdb

from dp_platform.config_loader import load_catalogue
from dp_platform.errors import ConfigError
from dp_platform.home import Home
from dp_platform.settings import WarehouseConfig
from dp_platform.warehouse import IngestError, IngestReport, KindReport
from dp_platform.warehouse.base import open_warehouse
from dp_platform.warehouse.ingest import TS_WINDOW
from dp_platform.warehouse.ingest_sources import shown


def configure(parser: argparse.ArgumentParser) -> None:
    parser.description = __doc__
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument("--home", required=True, help="platform home directory")
    parser.add_argument(
        "--config",
        help="campaign catalogue (its warehouse: block picks the engine, its dimensions: the "
        "breakdown columns)",
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
    """The operator's 'now': an ISO date-time inside the accepted window (UTC if no offset).
    The refusal does not echo the argument (it may hold anything, a newline too)."""
    if text is None:
        return None
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise ConfigError("--now: not an ISO date-time (e.g. 2026-04-01T00:00:00Z)") from None
    moment = moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    low, high = TS_WINDOW
    if not low <= moment < high:
        raise ConfigError(
            f"--now: outside the accepted time window {low:%Y-%m-%d} .. {high:%Y-%m-%d} UTC"
        )
    return moment


def _home(text: str) -> Home:
    """The home directory, created if missing; anything else in its place is one line."""
    path = Path(text).expanduser()
    if path.exists() and not path.is_dir():
        raise ConfigError(f"--home {shown(path)}: exists and is not a directory")
    try:
        return Home.at(path)
    except OSError as error:
        cause = os.strerror(error.errno) if error.errno else type(error).__name__
        raise ConfigError(f"--home {shown(path)}: cannot be used ({cause})") from None


def _describe(kind: str, part: KindReport) -> list[str]:
    if part.already_loaded:
        return [f"{kind}: {shown(part.source_file)} was loaded before; nothing added"]
    lines = [
        f"{kind}: {shown(part.source_file)}: {part.rows} rows, {part.accepted} accepted, "
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
    catalogue = load_catalogue(args.config) if args.config else None
    settings = catalogue.warehouse if catalogue else WarehouseConfig()
    lists = {
        source: {
            name: dimension
            for name, dimension in (catalogue.dimensions if catalogue else {}).items()
            if dimension.source == source
        }
        for source in ("conversions", "impressions")
    }
    # impression columns only when declared: an engine that cannot load them has no keyword
    by_impression = {"impression_dimensions": lists["impressions"]} if lists["impressions"] else {}
    home = _home(args.home)
    try:
        with open_warehouse(settings, home) as warehouse:
            report = warehouse.ingest(
                args.impressions,
                args.conversions,
                now=now,
                dimensions=lists["conversions"] or None,
                **by_impression,
            )
    except (IngestError, FileNotFoundError):
        raise
    except (duckdb.Error, OSError) as error:
        # DuckDB's text may quote a value from the data: only its kind is shown
        raise ConfigError(
            f"warehouse {shown(home.warehouse)}: ingest failed ({type(error).__name__}); "
            "nothing was loaded"
        ) from None
    print(json.dumps(report.to_json(), indent=2) if args.json else render(report))
    return 0

"""The ``dp-platform`` command: one sub-command per module under ``dp_platform.commands``.

Each command module exposes ``register(subparsers)``, adds its own parser with ``--json``, and
sets ``handler``; the handler returns the process exit code. Errors the user can fix (bad config,
bad file, a refused budget) are printed as one line on stderr with exit code 2, never as a
traceback.

The commands that orchestrate through Dagster (``run``, ``demo``) live in the Dagster layer
(``assets.commands``): the library itself never imports Dagster, and their parsers import it only
when they run.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from dp_platform.config import ConfigError
from dp_platform.ledger import LedgerError

COMMAND_MODULES = (
    "plan",
    "simulate",
    "releases",
    "budget",
    "campaign",
    "evaluate",
    "ingest",
    "bench",
    "check_config",
)
DAGSTER_COMMAND_MODULES = ("run", "demo")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="dp-platform",
        description="User-level differentially private daily ad-conversion releases (AdsBPC).",
    )
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(f"dp_platform.commands.{name}").register(subparsers)
    for name in DAGSTER_COMMAND_MODULES:
        importlib.import_module(f"assets.commands.{name}").register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.handler(args) or 0)
    except (ConfigError, FileNotFoundError, LedgerError) as error:
        print(f"dp-platform {args.command}: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())

"""The ``dp-platform`` command: one sub-command per module, imported only when it runs.

Each command module exposes ``configure(parser)`` (adds its arguments and sets ``handler``; the
handler returns the process exit code). This module imports nothing heavy: the table below holds
each command's one-line help, so ``dp-platform --help`` starts without NumPy, cvxpy or Dagster,
and a command imports only what it needs. Errors the user can fix (bad config, bad file, a
refused budget) are printed as one line on stderr with exit code 2, never as a traceback.

The commands that orchestrate through Dagster (``run``, ``demo``, ``ui``) live in the Dagster
layer (``assets.commands``): the library itself never imports Dagster.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from dp_platform.errors import ConfigError, LedgerError

COMMANDS: dict[str, tuple[str, str]] = {
    "plan": (
        "dp_platform.commands.plan",
        "show each campaign's privacy plan (ρ split, ε, σ̄ per day, query errors)",
    ),
    "simulate": (
        "dp_platform.commands.simulate",
        "run a campaign's mechanism on a simulated stream and compare with the truth",
    ),
    "releases": ("dp_platform.commands.releases", "print a campaign's published (noisy) releases"),
    "budget": (
        "dp_platform.commands.budget",
        "show planned / spent / remaining ρ per account and campaign",
    ),
    "campaign": (
        "dp_platform.commands.campaign",
        "end or cancel a registered campaign (returns its unspent reservation)",
    ),
    "evaluate": (
        "dp_platform.commands.evaluate",
        "compare AdsBPC with the paper's baselines on the paper's datasets",
    ),
    "ingest": (
        "dp_platform.commands.ingest",
        "validate and load impression and conversion files into the warehouse",
    ),
    "bench": (
        "dp_platform.commands.bench",
        "time the warehouse stages (and a pandas reference) on generated data",
    ),
    "check-config": (
        "dp_platform.commands.check_config",
        "is (rule, adjacency, enforcement) a valid configuration, and its C0",
    ),
    "run": (
        "assets.commands.run",
        "materialise every due day of the catalogue's campaigns through Dagster",
    ),
    "demo": (
        "assets.commands.demo",
        "simulate, ingest, materialise through Dagster and compare releases with the truth",
    ),
    "ui": ("assets.commands.ui", "the Dagster UI over a platform home (stops within 10 s)"),
}
"""Command name → (module with ``configure``, one-line help)."""


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser; only the command named in ``argv`` (all, if None) is configured in full."""
    parser = argparse.ArgumentParser(
        prog="dp-platform",
        description="User-level differentially private daily ad-conversion releases (AdsBPC).",
    )
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    chosen = None if argv is None else next((a for a in argv if not a.startswith("-")), "")
    for name, (module, summary) in COMMANDS.items():
        command = subparsers.add_parser(name, help=summary)
        if chosen is None or name == chosen:
            importlib.import_module(module).configure(command)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    args = build_parser(arguments).parse_args(arguments)
    try:
        return int(args.handler(args) or 0)
    except (ConfigError, FileNotFoundError, LedgerError) as error:
        print(f"dp-platform {args.command}: {error}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # output piped into `head` and closed early: not an error
        sys.stderr.close()
        return 0


if __name__ == "__main__":
    sys.exit(main())

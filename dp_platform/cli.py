"""The ``dp-platform`` command: one sub-command per module, imported only when it runs.

Each command module exposes ``configure(parser)`` (adds its arguments and sets ``handler``; the
handler returns the process exit code). This module imports nothing heavy: the table below holds
each command's one-line help, so ``dp-platform --help`` starts without NumPy, cvxpy or Dagster,
and a command imports only what it needs. Errors the user can fix (bad config, bad file, a
refused budget) and storage faults (a full disk, a read-only or vanished home) are printed as one
line on stderr with exit code 2, never as a traceback; a Dagster run that failed otherwise (its
worker process killed) is one line with exit code 1.

The commands that orchestrate through Dagster (``run``, ``demo``, ``ui``) live in the Dagster
layer (``assets.commands``): the library itself never imports Dagster.
"""

from __future__ import annotations

import argparse
import errno
import importlib
import re
import sys
from collections.abc import Sequence

from dp_platform.errors import ConfigError, LedgerError, RunFailed

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
    "ledger": (
        "dp_platform.commands.ledger",
        "back up the privacy ledger consistently, or restore a backup (checked against the "
        "release journal)",
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
    "ui": ("assets.commands.ui", "the Dagster UI over a platform home (stops within 5 s)"),
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


# Storage faults the operator can fix (space, quota, permissions, a vanished path): one line.
_STORAGE_ERRNOS = frozenset(
    {
        errno.ENOSPC,
        errno.EDQUOT,
        errno.EFBIG,
        errno.EROFS,
        errno.EACCES,
        errno.EPERM,
        errno.ENOENT,
        errno.ENOTDIR,
        errno.EISDIR,
        errno.ELOOP,
        errno.EIO,
    }
)
# The same faults as the embedded engines word them (their errors carry no errno).
_STORAGE_TEXTS = (
    "No space left on device",
    "database or disk is full",
    "File too large",
    "Read-only file system",
    "attempt to write a readonly database",
    "Permission denied",
    "No such file or directory",
    "disk I/O error",
    "unable to open database file",
)


def _one_line(text: object) -> str:
    return " ".join(str(text).split())


def _os_error(error: OSError) -> str:
    if error.strerror is None:  # raised with a message of its own, e.g. "<path>: not found"
        return _one_line(error)
    where = f"{error.filename}: " if error.filename else ""
    return _one_line(f"{where}{error.strerror}")


def _names_a_path(fault: str, home: str) -> bool:
    """Whether a fault's line already says where (the home, or an absolute path: "I/O" is not)."""
    return home in fault or re.search(r"(^|\s)/\S", fault) is not None


def storage_fault(error: BaseException) -> str | None:
    """The storage fault behind ``error`` (followed through causes, contexts and a failed
    Dagster step's ``user_exception``), as one line naming the path; None if there is none."""
    seen: BaseException | None = error
    for _ in range(20):
        if seen is None:
            return None
        if isinstance(seen, OSError) and (seen.errno is None or seen.errno in _STORAGE_ERRNOS):
            return _os_error(seen)  # errno None: raised with its own message by our code
        text = str(seen)
        if not isinstance(seen, OSError) and any(t in text for t in _STORAGE_TEXTS):
            return _one_line(text.splitlines()[0] if text else type(seen).__name__)
        user = getattr(seen, "user_exception", None)
        if isinstance(user, BaseException):
            seen = user
        else:
            context = None if seen.__suppress_context__ else seen.__context__
            seen = seen.__cause__ or context
    return None


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    args = build_parser(arguments).parse_args(arguments)
    try:
        return int(args.handler(args) or 0)
    except BrokenPipeError:  # output piped into `head` and closed early: not an error
        sys.stderr.close()
        return 0
    except (ConfigError, LedgerError) as error:
        print(f"dp-platform {args.command}: {_one_line(error)}", file=sys.stderr)
        return 2
    except Exception as error:
        fault = storage_fault(error)
        if fault is None and isinstance(error, RunFailed):  # e.g. its worker was killed
            print(f"dp-platform {args.command}: {_one_line(error)}", file=sys.stderr)
            return 1
        if fault is None:
            raise
        home = getattr(args, "home", None)
        if home and not _names_a_path(fault, str(home)):  # e.g. Dagster's storage
            fault = f"{home}: {fault}"
        print(f"dp-platform {args.command}: {fault}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())

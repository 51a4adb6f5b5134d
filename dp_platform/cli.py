"""The ``dp-platform`` command: one sub-command per module, imported only when it runs.

Each command module exposes ``configure(parser)`` (adds its arguments and sets ``handler``; the
handler returns the process exit code). This module imports nothing heavy: the table below holds
each command's one-line help, so ``dp-platform --help`` starts without NumPy, cvxpy or Dagster,
and a command imports only what it needs. Errors the user can fix (bad config, bad file, a
refused budget) and storage faults (a full disk, a read-only or vanished home) are printed as one
line on stderr with exit code 2, never as a traceback; a Dagster run that failed otherwise (its
worker process killed) is one line with exit code 1.

The commands that orchestrate through Dagster (``run``, ``demo``, ``ui``) live in the Dagster
layer (``assets.commands``): the library itself never imports Dagster. Separately installed
packages add commands through the ``dp_platform.commands`` entry-point group (``PLUGIN_GROUP``):
the paper-reproduction harness (research/) adds ``evaluate`` that way, so this package imports
nothing of it; without it, ``dp-platform evaluate`` is one line saying how to install it.
"""

from __future__ import annotations

import argparse
import errno
import importlib
import re
import sys
from collections.abc import Sequence
from importlib.metadata import entry_points

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
    "audit": (
        "dp_platform.commands.audit",
        "measure on the real pipeline, with canary users, that no user shows more than the "
        "claimed ρ",
    ),
    "spark-connect-server": (
        "dp_platform.commands.spark_connect_server",
        "a private Spark Connect server (warehouse.spark.remote: no JVM in each command)",
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

PLUGIN_GROUP = "dp_platform.commands"
"""The entry-point group of commands other packages add: each entry loads to a (module with
``configure``, one-line help) pair, as in ``COMMANDS``; a built-in name is never replaced."""

OPTIONAL: dict[str, tuple[str, str]] = {
    "evaluate": (
        "the research package (the paper's reproduction harness, docs/results.md)",
        "from the repository's root, pip install -e ./research",
    ),
}
"""Commands that come with another package (the product's wheel does not carry them) → (what
provides them, how to install it): ``--help`` lists them as not installed, and running one
without its package is one line saying how to install it (exit code 2)."""


def missing_command(name: str) -> str:
    """The one line ``dp-platform NAME`` prints when the package providing NAME is absent."""
    what, how = OPTIONAL[name]
    return f"dp-platform {name}: needs {what}, which is not installed: {how}"


def plugin_commands() -> dict[str, tuple[str, str]]:
    """The commands installed packages add (``PLUGIN_GROUP``), by name."""
    found: dict[str, tuple[str, str]] = {}
    for entry in entry_points(group=PLUGIN_GROUP):
        if entry.name in COMMANDS or entry.name in found:
            continue
        command: object = entry.load()
        if not (
            isinstance(command, tuple)
            and len(command) == 2
            and all(isinstance(part, str) for part in command)
        ):
            raise TypeError(
                f"{PLUGIN_GROUP} entry point {entry.name} = {entry.value}: expected a "
                f"(module, one-line help) pair, got {command!r}"
            )
        found[entry.name] = (command[0], command[1])
    return found


def _chosen(argv: Sequence[str] | None) -> str | None:
    """The command ``argv`` names ("" if none); None if ``argv`` is (every command is wanted)."""
    return None if argv is None else next((a for a in argv if not a.startswith("-")), "")


def build_parser(
    argv: Sequence[str] | None = None, plugins: dict[str, tuple[str, str]] | None = None
) -> argparse.ArgumentParser:
    """The parser; only the command named in ``argv`` (all, if None) is configured in full.
    ``plugins`` are the installed packages' commands (looked up if None); an ``OPTIONAL`` command
    that none provides is listed with what to install."""
    parser = argparse.ArgumentParser(
        prog="dp-platform",
        description="User-level differentially private daily ad-conversion releases "
        "(AdsBPC+, AdsBPC).",
    )
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    chosen = _chosen(argv)
    available = {**COMMANDS, **(plugin_commands() if plugins is None else plugins)}
    for name, (module, summary) in available.items():
        command = subparsers.add_parser(name, help=summary)
        if chosen is None or name == chosen:
            importlib.import_module(module).configure(command)
    for name, missing in OPTIONAL.items():
        if name not in available:
            subparsers.add_parser(name, help=f"not installed: needs {missing[0]}")
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
    plugins = plugin_commands()
    chosen = _chosen(arguments)
    if chosen in OPTIONAL and chosen not in COMMANDS and chosen not in plugins:
        print(missing_command(chosen), file=sys.stderr)
        return 2
    args = build_parser(arguments, plugins).parse_args(arguments)
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

"""``dp-platform ledger backup|restore --home DIR``: consistent copies of the privacy ledger.

- ``backup --to FILE``: an online backup (SQLite's backup API): one consistent snapshot even
  while a run is writing, in a new self-contained file (never overwrites one), integrity-checked.
- ``restore --from FILE``: writes a backup into the home's ledger, after keeping the current
  ledger as ``ledger-before-restore-<time>.sqlite`` in the home. The release journal
  (``<home>/journal/releases.jsonl``) is not part of a backup and is never restored: if the
  backup lacks a day that was already published, this says so, and every run refuses (naming
  the days, drawing nothing) until a backup that holds them is restored (docs/operators.md).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from dp_platform.errors import LedgerError, PublishedReleaseMissing
from dp_platform.home import Home
from dp_platform.journal import ReleaseJournal
from dp_platform.ledger import Ledger
from dp_platform.ledger_backends import home_ledger
from dp_platform.ledger_backup import restore_sqlite_ledger


def configure(parser: argparse.ArgumentParser) -> None:
    parser.description = __doc__
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    backup = actions.add_parser("backup", help="copy the ledger, consistently, into a new file")
    backup.add_argument("--home", required=True, help="platform home directory")
    backup.add_argument("--to", required=True, type=Path, help="backup file to create")
    backup.add_argument("--json", action="store_true", help="machine-readable output")
    backup.set_defaults(handler=run_backup)
    restore = actions.add_parser("restore", help="replace the home's ledger with a backup")
    restore.add_argument("--home", required=True, help="platform home directory")
    restore.add_argument("--from", dest="source", required=True, type=Path, help="backup file")
    restore.add_argument("--json", action="store_true", help="machine-readable output")
    restore.set_defaults(handler=run_restore)


def run_backup(args: argparse.Namespace) -> int:
    home = Home.existing(args.home)
    written = args.to.expanduser().resolve()
    with Ledger.at_home(home.root, read_only=True) as ledger:
        ledger.backup(written)
        where = str(ledger.path)
    if args.json:
        print(json.dumps({"ledger": where, "backup": str(written)}, indent=2))
    else:
        print(f"ledger {where} backed up to {written}")
    return 0


def run_restore(args: argparse.Namespace) -> int:
    home = Home.existing(args.home)
    if not isinstance(home_ledger(home.root), Path):
        raise LedgerError(
            f"{home.root}: this home's ledger is a PostgreSQL database: restore its backup with "
            "`pg_restore --clean --dbname URL FILE` (docs/operators.md); the next run checks it "
            "against the release journal the same way"
        )
    kept = restore_sqlite_ledger(args.source, home.ledger)
    refusal = None
    with Ledger.at_home(home.root) as ledger:
        try:
            ReleaseJournal.at_home(home.root).check(ledger)
        except PublishedReleaseMissing as error:
            refusal = " ".join(str(error).split())
    if args.json:
        document = {
            "ledger": str(home.ledger),
            "restored_from": str(args.source.expanduser().resolve()),
            "previous_ledger_kept_as": None if kept is None else str(kept),
            "runs_refused": refusal,
        }
        print(json.dumps(document, indent=2))
        return 0
    print(f"ledger {home.ledger} restored from {args.source}")
    if kept is not None:
        print(f"the ledger it replaced is kept as {kept}")
    if refusal is not None:
        print(f"dp-platform ledger restore: warning: runs will refuse: {refusal}", file=sys.stderr)
    return 0

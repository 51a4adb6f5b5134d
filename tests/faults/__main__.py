"""``python -m tests.faults --schedules N --seed S [--ledger-url URL | --postgres]``: the
fault-injection harness (docs/faults.md). Prints one line per schedule and a JSON summary; exit
1 on any invariant violation, with each failing schedule's replay command."""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from contextlib import ExitStack
from pathlib import Path

from tests.faults.harness import run_many, scratch_dir


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.faults", description=__doc__)
    parser.add_argument("--schedules", type=int, default=50, help="how many schedules")
    parser.add_argument(
        "--seed",
        type=int,
        default=1,
        help="seed of the first schedule (schedule i: seed + i); seeds -6 .. -1 are the "
        "constructed schedules CI runs",
    )
    backend = parser.add_mutually_exclusive_group()
    backend.add_argument(
        "--ledger-url",
        help="ledger backend: sqlite (default, the home's file) or postgresql://user@host/db "
        "(a fresh database per schedule on that server)",
    )
    backend.add_argument(
        "--postgres",
        action="store_true",
        help="the ledger on a throwaway PostgreSQL server started (and removed) for this run, "
        "from the machine's server binaries (tests/postgres_server.py)",
    )
    parser.add_argument(
        "--workdir",
        type=Path,
        help="where homes go (default: a new directory in /dev/shm, else in the temporary dir)",
    )
    parser.add_argument("--keep", action="store_true", help="keep every schedule's home")
    parser.add_argument("--json", type=Path, help="also write the summary to this file")
    parser.add_argument(
        "--max-minutes",
        type=float,
        help="start no new schedule after this many minutes (the summary counts those run)",
    )
    args = parser.parse_args(argv)
    if args.schedules < 1:
        parser.error("--schedules must be >= 1")
    workdir = args.workdir or scratch_dir()
    workdir.mkdir(parents=True, exist_ok=True)
    with ExitStack() as stack:
        ledger_url = args.ledger_url
        if args.postgres:
            from tests.postgres_server import throwaway_postgres

            ledger_url = stack.enter_context(throwaway_postgres()).url("postgres")
            _echo(f"throwaway PostgreSQL server: {ledger_url}")
        summary = run_many(
            args.schedules,
            args.seed,
            workdir,
            ledger_url,
            keep=args.keep,
            echo=_echo,
            max_seconds=None if args.max_minutes is None else 60 * args.max_minutes,
            backend_option="--postgres" if args.postgres else None,
        ).to_json()
    if args.workdir is None and not args.keep and not summary["failed_seeds"]:
        shutil.rmtree(workdir, ignore_errors=True)  # the scratch directory in memory: empty now
    text = json.dumps(summary, indent=2)
    print(text)
    if args.json:
        args.json.write_text(text + "\n")
    return 1 if summary["invariant_violations"] else 0


def _echo(line: str) -> None:
    print(line, flush=True)


if __name__ == "__main__":
    sys.exit(main())

"""``dp-platform audit CONFIG``: measure, on the real pipeline, that no user shows more than ρ.

For each campaign (or ``--campaign``), runs its registered configuration end to end — ingest,
attribution, clipping, bound choice, noise, publication, with the catalogue's engine and the
production secure sampler — ``--runs`` times in a throwaway home, on a simulated population with
``--canaries`` canary users each included by a fair coin. A distinguisher learns from half the
runs how a canary shows in the releases and guesses on the other half; the guesses prove, at
``--confidence``, that the step is *not* ρ-zCDP for any ρ below the printed lower bound. The
claim holds while every lower bound stays below its claimed ρ; the exit code is 1 if one does not.

A lower bound, not a proof: a correct pipeline shows a lower bound well below its claim (the
tightness column says how far), and a broken one — noise too small, a clip too loose, one user's
events changing another's — shows one above it. What it can and cannot show:
docs/privacy.md, "The empirical audit". The production home, ledger and warehouse are never
opened. The simulated data is seeded (``--data-seed``); which canaries are in is not.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import asdict
from pathlib import Path

from dp_platform.audit.options import AuditOptions
from dp_platform.audit.runner import Progress, StepAudit

_DEFAULTS = AuditOptions()


def configure(parser: argparse.ArgumentParser) -> None:
    parser.description = __doc__
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument("config", help="campaign catalogue (YAML)")
    parser.add_argument("--campaign", help="only this campaign (default: every campaign)")
    parser.add_argument(
        "--engine",
        choices=("duckdb", "spark"),
        help="warehouse engine of the runs (default: the catalogue's)",
    )
    numbers = (
        ("--runs", int, _DEFAULTS.runs, "end-to-end runs per step; half train, half are scored"),
        ("--canaries", int, _DEFAULTS.canaries, "canary users per run (reach: one per bin)"),
        ("--users", int, _DEFAULTS.users, "simulated users besides the canaries"),
        ("--data-seed", int, _DEFAULTS.data_seed, "seed of the simulated population"),
        ("--confidence", float, _DEFAULTS.confidence, "confidence of the lower bounds"),
        ("--delta", float, _DEFAULTS.delta, "δ of the (ε, δ) figures"),
    )
    for flag, kind, default, text in numbers:
        parser.add_argument(flag, type=kind, default=default, help=f"{text} ({default:g})")
    parser.add_argument(
        "--per-day",
        type=int,
        help="each canary's conversions a day (default: 2⌈largest bound of the plan⌉ + 1)",
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=os.cpu_count() or 1,
        help="runs side by side, each in its own process, home and engine (default: the "
        "machine's cores)",
    )
    parser.add_argument(
        "--shadows",
        type=int,
        help="users reusing each canary's event ids (default: its conversions a day)",
    )
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.add_argument("--plot", type=Path, help="write the held-out scores' histograms (PNG)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from dp_platform.audit.runner import audit_campaign
    from dp_platform.config_loader import load_catalogue
    from dp_platform.errors import ConfigError
    from dp_platform.settings import WarehouseConfig

    try:
        options = AuditOptions(
            runs=args.runs,
            canaries=args.canaries,
            per_day=args.per_day,
            shadows=args.shadows,
            users=args.users,
            data_seed=args.data_seed,
            confidence=args.confidence,
            delta=args.delta,
            workers=args.workers,
        )
    except ValueError as error:
        raise ConfigError(f"audit options: {error}") from None
    catalogue = load_catalogue(args.config)
    names = [args.campaign] if args.campaign else [c.name for c in catalogue.campaigns]
    settings = catalogue.warehouse
    if args.engine is not None:
        settings = WarehouseConfig(engine=args.engine, spark=settings.spark)
    if not args.json:
        print(
            f"auditing {', '.join(names)} on {settings.engine}: {options.runs} runs per step in a "
            "throwaway home (the production ledger and warehouse are never opened)"
        )
    results: list[StepAudit] = []
    for name in names:
        results += audit_campaign(
            catalogue,
            name,
            options,
            warehouse=settings,
            base_dir=Path(args.config).resolve().parent,
            progress=_progress(name),
        )
    _finish_progress()
    if args.plot is not None:
        from dp_platform.audit.report import plot_scores

        plot_scores(results, args.plot)
    if args.json:
        print(json.dumps([_document(r) for r in results], indent=2))
    else:
        from dp_platform.audit.report import text_report

        print(text_report(results))
        if args.plot is not None:
            print(f"scores plotted to {args.plot}")
    return 0 if all(r.holds for r in results) else 1


def _document(result: StepAudit) -> dict:
    document = asdict(result)
    document.update(tightness=result.tightness, holds=result.holds)
    return document


_WIDTH = 30


def _progress(campaign: str) -> Progress:
    def show(step: str, done: int, total: int) -> None:
        filled = _WIDTH * done // total
        bar = "#" * filled + "-" * (_WIDTH - filled)
        line = f"{campaign} · {step}: [{bar}] {done}/{total} runs"
        if sys.stderr.isatty():
            print(f"\r{line}", end="", file=sys.stderr, flush=True)
        elif done == total or done % max(1, total // 4) == 0:
            print(line, file=sys.stderr, flush=True)

    return show


def _finish_progress() -> None:
    if sys.stderr.isatty():
        print(file=sys.stderr)

"""``dp-platform evaluate``: AdsBPC against the paper's baselines on the paper's datasets.

One run: ``--dataset`` × ``--workload``, every method (or ``--methods``) over ``--repeats``
seeded repeats; prints each method's error and closes with AdsBPC ÷ the best baseline next to
the paper's ratio, and AdsBPC ÷ the non-private oracle. ``--sweep rho|days`` redoes it over the
grid of the paper's Figure 1 or 2 and writes a PNG. ``--all`` regenerates every generated block
of docs/results.md: the paper's tables and figures (report.py), the AdsBPC+ blocks
(plus_report.py) and the default mechanism's table from 1 000 to 200 000 users a day
(scale_report.py), which ``--scale-table`` writes alone. This evaluates on synthetic or public
data with seeded noise: nothing it prints is a differentially private release.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import replace
from pathlib import Path

from dp_research.evaluation.adsbpc_runs import shown_setting
from dp_research.evaluation.all_results import CI_SCALE, Scale
from dp_research.evaluation.datasets import DATASETS
from dp_research.evaluation.experiment import ExperimentConfig, ExperimentResult, run_experiment
from dp_research.evaluation.methods import ALL_METHODS, LABELS, METHODS
from dp_research.evaluation.plus_report import write_candidates, write_plus
from dp_research.evaluation.report import write_all
from dp_research.evaluation.scale_report import write_scale_table
from dp_research.evaluation.sweeps import plot_sweep, sweep


def configure(parser: argparse.ArgumentParser) -> None:
    parser.description = __doc__
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument("--dataset", choices=tuple(DATASETS))
    parser.add_argument("--workload", choices=("prefix", "sliding"))
    parser.add_argument("--rho", type=float, default=1.0, help="total zCDP budget (1)")
    parser.add_argument("--days", type=int, default=31, help="campaign length n (31)")
    parser.add_argument("--users", type=int, default=1_000_000, help="synthetic users (10⁶)")
    parser.add_argument(
        "--users-per-day",
        type=int,
        help="synthetic sets: generate as many users as make this many convert a day "
        "(overrides --users)",
    )
    parser.add_argument("--publishers", type=int, default=1000, help="synthetic publishers")
    parser.add_argument("--repeats", type=int, default=10, help="seeded repeats (10)")
    parser.add_argument("--methods", nargs="+", choices=ALL_METHODS, default=list(METHODS))
    parser.add_argument("--seed", type=int, default=0, help="seed of the data and the noise")
    parser.add_argument("--sweep", choices=("rho", "days"), help="Figure 1 (rho) or 2 (days)")
    parser.add_argument(
        "--all",
        action="store_true",
        help="regenerate every generated block of docs/results.md (about an hour)",
    )
    parser.add_argument(
        "--scale-table",
        action="store_true",
        help="only the default mechanism's table from 1 000 to 200 000 users a day",
    )
    parser.add_argument(
        "--plus",
        nargs="+",
        type=_setting,
        default=[],
        metavar="NAME=VALUE",
        help="with --scale-table: AdsBPC+ with these settings over the defaults (a candidate "
        "default measured, e.g. pace=0 remainder_share=0.05)",
    )
    parser.add_argument("--out", default="docs", help="where --all/--sweep write (docs)")
    parser.add_argument(
        "--ci",
        action="store_true",
        help="with --all or --scale-table: tiny data and grids (seconds, for CI)",
    )
    parser.add_argument(
        "--slices",
        choices=("age,gender",),
        help="with --dataset facebook: daily noisy age × gender slices with intervals",
    )
    parser.add_argument(
        "--consistency",
        action="store_true",
        help="what isotonic projection and WLS gain (docs/slices.md; a few minutes)",
    )
    parser.add_argument(
        "--isotonic-coverage",
        action="store_true",
        help="coverage of the published campaign-to-date interval (docs/slices.md; seconds)",
    )
    parser.add_argument(
        "--marginals",
        action="store_true",
        help="what the residual strategy gains per marginal on the demo's layout, and the "
        "demo's sliced campaign against its error bars (docs/slices.md; seconds)",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.set_defaults(handler=run)


def _config(args: argparse.Namespace, workload: str) -> ExperimentConfig:
    """The experiment the flags describe; a value it refuses is a user error (exit 2)."""
    try:
        return _make_config(args, workload)
    except ValueError as error:
        print(f"dp-platform evaluate: {error}", file=sys.stderr)
        raise SystemExit(2) from None


def _make_config(args: argparse.Namespace, workload: str) -> ExperimentConfig:
    return ExperimentConfig(
        dataset=args.dataset,
        workload=workload,
        rho=args.rho,
        days=args.days,
        users=args.users,
        publishers=args.publishers,
        repeats=args.repeats,
        methods=tuple(args.methods),
        seed=args.seed,
        users_per_day=args.users_per_day,
    )


def closing_note(result: ExperimentResult) -> str:
    """AdsBPC ÷ best baseline (ours and the paper's), AdsBPC ÷ oracle, and whether it won."""
    s = result.summary()
    parts = []
    if "adsbpc_over_best_baseline" in s:
        paper = s["paper_ratio"]
        paper_text = f"paper {paper:.2f}" if paper is not None else "not in the paper"
        parts.append(
            f"AdsBPC ÷ best baseline ({LABELS[s['best_baseline']]}) = "
            f"{s['adsbpc_over_best_baseline']:.2f} ({paper_text})"
        )
    if "adsbpc_over_oracle" in s:
        parts.append(f"AdsBPC ÷ oracle (non-private) = {s['adsbpc_over_oracle']:.2f}")
    if "adsbpc_below_every_baseline" in s:
        won = s["adsbpc_below_every_baseline"]
        parts.append(
            "AdsBPC is below every baseline" if won else "AdsBPC is NOT below every baseline"
        )
    if "adsbpc_plus_over_best_baseline" in s:
        parts.append(
            f"AdsBPC+ ÷ best baseline ({LABELS[s['best_baseline']]}) = "
            f"{s['adsbpc_plus_over_best_baseline']:.2f}"
        )
    if "adsbpc_plus_over_its_oracle" in s:
        parts.append(f"AdsBPC+ ÷ its oracle (non-private) = {s['adsbpc_plus_over_its_oracle']:.2f}")
    if "adsbpc_plus_over_fixed_hindsight" in s:
        parts.append(
            "AdsBPC+ ÷ fixed bound tuned in hindsight (non-private) = "
            f"{s['adsbpc_plus_over_fixed_hindsight']:.2f}"
        )
    if "adsbpc_plus_total_over_fixed_total" in s:
        parts.append(
            "campaign total: AdsBPC+ ÷ the fixed bound's best = "
            f"{s['adsbpc_plus_total_over_fixed_total']:.2f}"
        )
    return "; ".join(parts) + "." if parts else ""


def _print_result(result: ExperimentResult) -> None:
    c = result.config
    metric = (
        "WRMSE sqrt(Σw·MSE/Σw), w = (1,…,1,49); paper scale sqrt(Σw·MSE)/n"
        if c.workload == "prefix"
        else f"max over {c.window}-day windows of the MSE; paper scale ÷ 10⁴"
    )
    print(
        f"{c.dataset} / {c.workload}: {metric}\n"
        f"ρ = {c.rho:g}, n = {c.days}, {c.repeats} repeats, {result.users:,} users "
        f"({result.active_per_day or 0:,.0f} a day) × {result.publishers:,} publishers, "
        f"{result.conversions:,} conversions (prepared in {result.prepare_seconds:.1f}s)"
    )
    columns = (
        ("error", 12),
        ("± std", 11),
        ("empirical", 12),
        ("paper scale", 13),
        ("bias", 6),
        ("seconds", 9),
    )
    label = max(22, *(len(LABELS[name]) + 1 for name in result.methods))
    print(f"{'method':<{label}}" + "".join(f"{name:>{width}}" for name, width in columns))
    for name, m in result.methods.items():
        s = m.score
        bias = "—" if s.bias_share is None else f"{100 * s.bias_share:.0f}%"
        print(
            f"{LABELS[name]:<{label}}{s.error:>12.2f}{s.error_std:>11.2f}{s.error_empirical:>12.2f}"
            f"{s.error_paper_scale:>13.3f}{bias:>6}{m.seconds:>9.2f}"
        )
    note = closing_note(result)
    if note:
        print(note)


def _need(args: argparse.Namespace, *names: str) -> None:
    missing = [f"--{n}" for n in names if getattr(args, n) is None]
    if missing:
        print(f"dp-platform evaluate: {', '.join(missing)} required", file=sys.stderr)
        raise SystemExit(2)


def _slices(args: argparse.Namespace) -> int:
    """The residual strategy's gains, the consistency gains, the campaign-to-date coverage, or
    the Facebook age × gender demo (docs/slices.md)."""
    from dp_platform.events.facebook import facebook_ad_groups
    from dp_research.evaluation.facebook_slices import SliceSettings
    from dp_research.evaluation.marginals_report import marginals_report
    from dp_research.evaluation.slices_report import (
        consistency_report,
        coverage_report,
        facebook_report,
    )

    if args.marginals:
        text, payload = marginals_report(seed=args.seed)
    elif args.consistency:
        text, payload = consistency_report(seed=args.seed)
    elif args.isotonic_coverage:
        text, payload = coverage_report(seed=args.seed)
    else:
        if args.dataset != "facebook":
            print("dp-platform evaluate: --slices needs --dataset facebook", file=sys.stderr)
            raise SystemExit(2)
        try:
            groups = facebook_ad_groups()
            settings = SliceSettings(days=args.days, rho=args.rho)
        except (OSError, ValueError) as error:
            print(f"dp-platform evaluate: {error}", file=sys.stderr)
            raise SystemExit(2) from None
        text, payload = facebook_report(groups, settings)
    print(json.dumps(payload) if args.json else text)
    return 0


def _setting(text: str) -> tuple[str, float | str | None]:
    """NAME=VALUE of ``--plus``: an AdsBPC+ setting and a number, ``null`` or a word."""
    name, sep, value = text.partition("=")
    if not sep or not name or not value:
        raise argparse.ArgumentTypeError(f"{text!r}: expected NAME=VALUE")
    if value == "null":
        return name, None
    try:
        return name, float(value)
    except ValueError:
        return name, value


def run(args: argparse.Namespace) -> int:
    show = False if args.quiet else None
    out = Path(args.out)
    if args.slices or args.consistency or args.isotonic_coverage or args.marginals:
        return _slices(args)
    if args.plus and not args.scale_table:
        raise SystemExit("dp-platform evaluate: --plus goes with --scale-table")
    if args.scale_table:
        command = "dp-platform evaluate --scale-table --out " + str(args.out)
        if args.plus:
            command += " --plus " + " ".join(
                f"{name}={shown_setting(value)}" for name, value in args.plus
            )
        path, rows = write_scale_table(
            out,
            ci=args.ci,
            command=command + (" --ci" if args.ci else ""),
            show_progress=show,
            plus_settings=tuple(args.plus),
        )
        if args.json:
            print(json.dumps({"page": str(path), "rows": [row.to_json() for row in rows]}))
        else:
            passed = sum(row.passed for row in rows)
            print(f"wrote the scale table to {path}: {passed} of {len(rows)} rows pass")
        return 0
    if args.all:
        scale = Scale(args.users, args.publishers, args.repeats, args.seed)
        if args.ci:
            scale = replace(CI_SCALE, seed=args.seed)
        command = "dp-platform evaluate --all --out " + str(args.out)
        if args.ci:
            command += " --ci"
        elif scale != Scale():
            command += (
                f" --users {args.users} --publishers {args.publishers} "
                f"--repeats {args.repeats} --seed {args.seed}"
            )
        started = time.perf_counter()
        page, results = write_all(out, scale, command=command, show_progress=show)
        write_plus(out, ci=args.ci)
        write_candidates(out, ci=args.ci)
        _, rows = write_scale_table(out, ci=args.ci, command=command, show_progress=show)
        seconds = time.perf_counter() - started
        if args.json:
            main = [r.to_json() for r in results.main.values()]
            scale_rows = [row.to_json() for row in rows]
            print(
                json.dumps(
                    {
                        "page": str(page),
                        "seconds": {**results.seconds, "all blocks": seconds},
                        "main": main,
                        "scale": scale_rows,
                    }
                )
            )
        else:
            for result in results.main.values():
                print(f"{result.config.dataset}/{result.config.workload}: {closing_note(result)}")
            passed = sum(row.passed for row in rows)
            print(f"scale table: {passed} of {len(rows)} rows pass every bar")
            print(f"wrote every generated block of {page} in {seconds:.0f}s")
        return 0
    if args.sweep:
        _need(args, "dataset")
        workloads = (args.workload,) if args.workload else ("prefix", "sliding")
        runs = sweep(
            args.sweep, _config(args, workloads[0]), workloads=workloads, show_progress=show
        )
        path = plot_sweep(
            args.sweep, {args.dataset: runs}, out / f"sweep_{args.sweep}_{args.dataset}.png"
        )
        if args.json:
            print(
                json.dumps(
                    {
                        "figure": str(path),
                        "runs": {w: [r.to_json() for r in rs] for w, rs in runs.items()},
                    }
                )
            )
        else:
            for rs in runs.values():
                for result in rs:
                    _print_result(result)
                    print()
            print(f"wrote {path}")
        return 0
    _need(args, "dataset", "workload")
    result = run_experiment(_config(args, args.workload), show_progress=show)
    if args.json:
        print(json.dumps(result.to_json()))
    else:
        _print_result(result)
    return 0

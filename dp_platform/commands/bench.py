"""``dp-platform bench``: seconds per warehouse stage and peak memory on generated data.

Generates a seeded event-level campaign (not timed), then times DuckDB's ingest, attribution,
contributions, histogram and clipping over every day of the campaign, each side in a fresh
process so peak RSS is its own. ``--reference pandas`` also times a straightforward pandas
implementation of the same stages on the same files, reports the speed-up and checks that both
produce the same histograms and clipped vectors. Defaults are the full scale of the issue
(10⁷ conversions, 5·10⁷ impressions, 10⁶ users, 1000 publishers, 31 days, LTA, 30-day look-back).
``--engine spark`` (or a catalogue given with ``--config`` whose ``warehouse:`` block says spark)
times the Spark warehouse instead; docs/scale.md has measured figures for both. ``--cells``
releases cells instead of one count per publisher: 2 conversion dimensions of 5 values each
(ingested and checked) × [count, value] — 50 cells per publisher, on either engine;
``--impression-cells`` makes the second an impressions column (attribution then records the
credited impression's value), on either engine too.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile

from dp_platform.config_loader import load_catalogue
from dp_platform.errors import ConfigError
from dp_platform.warehouse.bench import PIPELINE, STAGES, BenchSpec, run_bench

RULES = ("lta", "fta", "uni", "time_decay", "u_shaped")


def configure(parser: argparse.ArgumentParser) -> None:
    parser.description = __doc__
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    defaults = BenchSpec()
    parser.add_argument("--conversions", type=int, default=defaults.conversions)
    parser.add_argument("--impressions", type=int, default=defaults.impressions)
    parser.add_argument("--publishers", type=int, default=defaults.publishers)
    parser.add_argument("--days", type=int, default=defaults.days)
    parser.add_argument("--users", type=int, default=defaults.users)
    parser.add_argument("--rule", choices=RULES, default=defaults.rule)
    parser.add_argument("--lookback-days", type=int, default=defaults.lookback_days)
    parser.add_argument("--bound", type=float, default=defaults.bound, help="clipping bound r")
    parser.add_argument("--seed", type=int, default=defaults.seed)
    parser.add_argument(
        "--mode",
        choices=("backfill", "daily"),
        default=defaults.mode,
        help="backfill: one SQL pass per step over all days; daily: the one-day calls",
    )
    parser.add_argument("--threads", type=int, help="DuckDB threads (default: all cores)")
    parser.add_argument("--memory-limit", default=defaults.memory_limit, help="DuckDB limit")
    parser.add_argument(
        "--config",
        help="campaign catalogue: its warehouse: block gives the engine and Spark settings",
    )
    parser.add_argument("--engine", choices=("duckdb", "spark"), help="override the engine")
    parser.add_argument("--reference", choices=("none", "pandas"), default="none")
    parser.add_argument(
        "--cells",
        action="store_true",
        help="breakdown by 2 dimensions of 5 values × [count, value]",
    )
    parser.add_argument(
        "--impression-cells",
        action="store_true",
        help="with --cells: the second dimension is an impressions column",
    )
    parser.add_argument(
        "--floor",
        action="store_true",
        help="with Spark: also time Spark's floor on the same files (one Delta write of each "
        "file, one last-touch sort; no checks or records): what no Spark engine can beat here",
    )
    parser.add_argument("--workdir", help="keep data and warehouse here (default: a temp dir)")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.set_defaults(handler=run)


def _spec(args: argparse.Namespace) -> BenchSpec:
    for name in ("conversions", "impressions", "publishers", "users"):
        if getattr(args, name) < 1:
            raise ConfigError(f"--{name} must be >= 1")
    if args.days < 2:
        raise ConfigError("--days must be >= 2")
    if not args.bound > 0:
        raise ConfigError("--bound must be > 0")
    warehouse = load_catalogue(args.config).warehouse if args.config else None
    engine = args.engine or (warehouse.engine if warehouse else "duckdb")
    spark = warehouse.spark if warehouse else None
    if engine == "spark" and spark is not None and spark.remote is not None:
        raise ConfigError(  # it measures its own JVM's start-up and memory
            "bench runs Spark in a JVM of its own: give a catalogue without warehouse.spark.remote"
        )
    if args.cells and args.reference != "none":
        raise ConfigError("--cells runs without --reference (the pandas reference has no cells)")
    if args.floor and engine != "spark":
        raise ConfigError("--floor measures Spark: give --engine spark (or a Spark catalogue)")
    if args.impression_cells and not args.cells:
        raise ConfigError("--impression-cells needs --cells")
    return BenchSpec(
        conversions=args.conversions,
        impressions=args.impressions,
        publishers=args.publishers,
        days=args.days,
        users=args.users,
        rule=args.rule,
        lookback_days=args.lookback_days,
        bound=args.bound,
        seed=args.seed,
        mode=args.mode,
        threads=args.threads,
        memory_limit=args.memory_limit,
        engine=engine,
        spark_master=spark.master if spark else "local[2]",
        spark_conf=tuple(sorted(spark.conf.items())) if spark else (),
        cells=args.cells,
        impression_cells=args.impression_cells,
    )


def render(result: dict) -> str:
    lines = [
        f"{result['conversions']:,} conversions, {result['impressions']:,} impressions, "
        f"{result['users']:,} users, {result['publishers']} publishers, {result['days']} days, "
        f"{result['rule']}, {result['mode']}"
        + (", cells (2 dimensions × 5 values × [count, value])" if result.get("cells") else "")
        + (", the second an impressions column" if result.get("impression_cells") else ""),
        f"{'stage':<14}{result['engine'] + ' s':>10}"
        + (f"{'pandas s':>10}{'speed-up':>10}" if "reference" in result else ""),
    ]
    for stage in (*STAGES, "pipeline", "total"):
        line = f"{stage:<14}{result['seconds'][stage]:>10.2f}"
        if "reference" in result:
            speed = result["speedup"][stage]
            line += f"{result['reference']['seconds'][stage]:>10.2f}"
            line += f"{speed:>9.1f}x" if speed is not None else f"{'-':>10}"
        lines.append(line)
    lines.append(
        f"peak RSS: {result['engine']} {result['peak_rss_mb']:.0f} MB (ingest "
        f"{result['peak_rss_mb_by_phase']['ingest']:.0f}, pipeline "
        f"{result['peak_rss_mb_by_phase']['pipeline']:.0f})"
        + (f", pandas {result['reference']['peak_rss_mb']:.0f} MB" if "reference" in result else "")
    )
    if "agreement" in result:
        agree = result["agreement"]
        lines.append(
            f"same results: histograms {'yes' if agree['histograms_equal'] else 'NO'}, "
            f"max |vector difference| {agree['max_abs_vector_difference']:.2e}"
        )
    if "jvm_start_seconds" in result:
        lines.append(
            "JVM start (not in the stages): "
            + ", ".join(f"{k} {v:.1f} s" for k, v in result["jvm_start_seconds"].items())
        )
    if "floor_seconds" in result:
        lines.append(
            "Spark's floor (no checks or records): "
            + ", ".join(f"{k} {v:.1f} s" for k, v in result["floor_seconds"].items())
        )
    lines.append(f"(pipeline = {' + '.join(PIPELINE)}; data generation not timed)")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    spec = _spec(args)
    reference = None if args.reference == "none" else args.reference
    if args.workdir:
        result = run_bench(spec, args.workdir, reference=reference, floor=args.floor)
    else:
        workdir = tempfile.mkdtemp(prefix="dp-bench-")
        try:
            result = run_bench(spec, workdir, reference=reference, floor=args.floor)
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
    print(json.dumps(result, indent=2) if args.json else render(result))
    return 0

"""The warehouse benchmark behind ``dp-platform bench``.

1. Generate an event-level campaign (seeded) and write it as Parquet — not timed.
2. DuckDB, in a fresh process: ingest both files into a new warehouse (timed: ``ingest``).
3. DuckDB, in another fresh process: attribution → contributions → histogram → clipping for
   every day of the campaign (timed per stage; the issue's throughput target).
4. Optionally the straightforward pandas implementation of the same stages on the same files
   (:mod:`.pandas_reference`), in its own process, and a check that both sides agree.

Separate processes keep each side's peak RSS (``ru_maxrss``, DuckDB runs in-process) its own;
generating the data never counts. ``mode="backfill"`` attributes and counts all days in one SQL
pass each (how a Dagster single-run backfill calls the warehouse); ``mode="daily"`` calls the
one-day methods day after day (the daily schedule). Histograms and clipping are per day in both.

``engine="spark"`` runs the same stages on the Spark warehouse (``warehouse/spark``) instead:
the session is started in each child process and its start-up is reported apart
(``jvm_start_seconds``, not in the stage times); peak memory is the Python process's plus the
JVM's own high-water mark (``VmHWM``), since Spark's work happens in the JVM.
"""

from __future__ import annotations

import multiprocessing
import os
import resource
import shutil
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any, Literal

import numpy as np

from dp_platform.config import CampaignConfig
from dp_platform.config_loader import parse_campaign
from dp_platform.warehouse.base import WarehouseEngine

__all__ = ["PIPELINE", "STAGES", "BenchSpec", "run_bench"]

STAGES = ("ingest", "attribution", "contributions", "histogram", "clipping")
PIPELINE = STAGES[1:]
START = date(2026, 3, 1)
BENCH_DIMS = ("region", "device")
BENCH_DIMENSION_VALUES = 5
BENCH_VALUE_CAP = 100.0


@dataclass(frozen=True)
class BenchSpec:
    """What to generate and how to run it (defaults: the issue's full scale)."""

    conversions: int = 10_000_000
    impressions: int = 50_000_000
    publishers: int = 1000
    days: int = 31
    users: int = 1_000_000
    rule: Literal["lta", "fta", "uni", "time_decay", "u_shaped"] = "lta"
    lookback_days: int = 30
    bound: float = 2.5
    seed: int = 0
    mode: Literal["backfill", "daily"] = "backfill"
    threads: int | None = None
    memory_limit: str | None = "3GB"
    engine: Literal["duckdb", "spark"] = "duckdb"
    spark_master: str = "local[2]"
    spark_conf: tuple[tuple[str, str], ...] = ()
    cells: bool = False
    """Release cells: publishers × 2 conversion dimensions of 5 values × [count, value]."""
    impression_cells: bool = False
    """With ``cells``: the second dimension is an impressions column (attribution credits the
    impression's value: docs/algorithm.md#cells)."""

    def source(self, name: str) -> str:
        """The event file a benchmark dimension is a column of."""
        return "impressions" if self.impression_cells and name == BENCH_DIMS[1] else "conversions"

    def dimensions(self, source: str | None = None) -> dict[str, list[str]]:
        """The benchmark's breakdown (empty without ``cells``): region and device, 5 each;
        ``source``: only the columns of that file."""
        if not self.cells:
            return {}
        return {
            name: [f"{name}{i}" for i in range(BENCH_DIMENSION_VALUES)]
            for name in BENCH_DIMS
            if source is None or self.source(name) == source
        }

    def campaign(self) -> CampaignConfig:
        cells: dict[str, object] = {}
        if self.cells:
            cells = {
                "breakdown": [
                    {"name": name, "source": self.source(name), "values": values}
                    for name, values in self.dimensions().items()
                ],
                "measures": ["count", "value"],
                "value_cap": BENCH_VALUE_CAP,
            }
        return parse_campaign(
            {
                "name": "bench",
                "advertiser": "acme",
                "account": "bench",
                "start": START.isoformat(),
                "days": self.days,
                "publishers": "all",
                "attribution": {"rule": self.rule, "lookback_days": self.lookback_days},
                "bounds": {"quantile_days": min(7, self.days - 1)},
                **cells,
            }
        )

    @property
    def now(self) -> datetime:
        """A 'now' just after the data, for the future-timestamp check."""
        end = START + timedelta(days=self.days + 1)
        return datetime(end.year, end.month, end.day, tzinfo=UTC)


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # Linux: KiB


def _in_fresh_process(function: Callable[..., dict], *args: Any) -> dict:
    """Run ``function(*args)`` in a new interpreter so its peak memory is its own."""
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=1, mp_context=context) as pool:
        return pool.submit(function, *args).result()


# -- the phases (top-level functions: they run in child processes) ------------------------------


def generate(spec: BenchSpec, directory: str) -> dict:
    from dp_platform.events import generate_campaign, write_events

    started = time.perf_counter()
    events = generate_campaign(
        seed=spec.seed,
        users=spec.users,
        publishers=spec.publishers,
        impressions=spec.impressions,
        conversions=spec.conversions,
        days=spec.days,
        start=START,
        lookback_days=spec.lookback_days,
    )
    files = write_events(events, directory, fmt="parquet")
    paths = {"impressions": str(files.impressions), "conversions": str(files.conversions)}
    for kind, path in paths.items():
        if spec.dimensions(kind):
            paths[kind] = _with_dimensions(spec, path, kind)
    return {
        **paths,
        "seconds": time.perf_counter() - started,
    }


def _with_dimensions(spec: BenchSpec, path: str, kind: str) -> str:
    """The ``kind`` file with one column per benchmark dimension of it, each row's value picked
    by a hash of its id (uniform over the 5 values, reproducible)."""
    import duckdb

    target = path.replace(".parquet", "_cells.parquet")
    key = "conversion_id" if kind == "conversions" else "impression_id"
    columns = ", ".join(
        f"list_extract({values!r}, CAST(hash({key} || '{name}') % {len(values)} AS "
        f"INTEGER) + 1) AS {name}"
        for name, values in spec.dimensions(kind).items()
    )
    with duckdb.connect() as con:
        con.execute(
            f"COPY (SELECT *, {columns} FROM read_parquet('{path}')) TO '{target}' (FORMAT parquet)"
        )
    return target


def _open(spec: BenchSpec, database: str):
    from dp_platform.warehouse import Warehouse

    return Warehouse(database, threads=spec.threads, memory_limit=spec.memory_limit)


def duckdb_ingest(spec: BenchSpec, files: dict, database: str) -> dict:
    with _open(spec, database) as warehouse:
        warehouse.sql.timings = []
        wall, cpu = time.perf_counter(), time.process_time()
        report = warehouse.ingest(
            files["impressions"],
            files["conversions"],
            now=spec.now,
            dimensions=spec.dimensions("conversions") or None,
            impression_dimensions=spec.dimensions("impressions") or None,
        )
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        profile = list(warehouse.sql.timings)
    return {
        "seconds": {"ingest": wall},
        "cpu_seconds": {"ingest": cpu},
        "peak_rss_mb": _peak_rss_mb(),
        "report": report.to_json(),
        "profile": profile,
    }


class _Stopwatch:
    """Wall and CPU seconds (all threads of this process) per stage."""

    def __init__(self) -> None:
        self.wall = dict.fromkeys(STAGES, 0.0)
        self.cpu = dict.fromkeys(STAGES, 0.0)

    def __call__(self, stage: str) -> _Stopwatch:
        self._stage = stage
        return self

    def __enter__(self) -> None:
        self._wall, self._cpu = time.perf_counter(), time.process_time()

    def __exit__(self, *exc: object) -> None:
        self.wall[self._stage] += time.perf_counter() - self._wall
        self.cpu[self._stage] += time.process_time() - self._cpu


def duckdb_pipeline(spec: BenchSpec, database: str) -> dict:
    with _open(spec, database) as warehouse:
        warehouse.sql.timings = []
        result = _pipeline(spec, warehouse)
        result["profile"] = list(warehouse.sql.timings)
    result["peak_rss_mb"] = _peak_rss_mb()
    return result


def _pipeline(spec: BenchSpec, warehouse: WarehouseEngine) -> dict:
    """The timed stages on an open warehouse of either engine."""
    campaign = spec.campaign()
    days = [campaign.start + timedelta(days=i) for i in range(campaign.days)]
    clock = _Stopwatch()
    load = os.getloadavg()  # other work on the machine slows every stage: recorded, not hidden
    with clock("attribution"):
        if spec.mode == "backfill":
            rows = warehouse.attribute_days(campaign, days[0], days[-1])
        else:
            parts = [warehouse.attribute_day(campaign, day) for day in days]
            rows = {k: sum(p[k] for p in parts) for k in ("attributed", "unattributed")}
    with clock("contributions"):
        if spec.mode == "backfill":
            user_days = warehouse.contributions_days(campaign, days[0], days[-1])["user_days"]
        else:
            user_days = sum(warehouse.contributions_day(campaign, d)["user_days"] for d in days)
    with clock("histogram"):
        histograms = [warehouse.day_histogram(campaign, day).tolist() for day in days]
    with clock("clipping"):
        vectors = [warehouse.clipped_vector(campaign, day, spec.bound).tolist() for day in days]
    return {
        "seconds": {stage: clock.wall[stage] for stage in PIPELINE},
        "cpu_seconds": {stage: clock.cpu[stage] for stage in PIPELINE},
        "load_average": [round(x, 2) for x in load],
        "rows": {
            "attributed": rows["attributed"],
            "unattributed": rows["unattributed"],
            "user_days": user_days,
        },
        "histograms": histograms,
        "vectors": vectors,
        "profile": [],
    }


# -- Spark -------------------------------------------------------------------------------------


def _descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (Linux /proc: each thread's ``children``)."""
    found: list[int] = []
    for children in Path(f"/proc/{pid}/task").glob("*/children"):
        try:
            listed = children.read_text().split()
        except FileNotFoundError:  # a thread or process that ended meanwhile
            continue
        for child in listed:
            found += [int(child), *_descendants(int(child))]
    return found


def _jvm_peak_mb() -> float:
    """High-water mark of the resident memory of this process's children, in MB: the session's
    JVM, which PySpark starts as one (read from /proc, not through the Py4J gateway)."""
    peak = 0.0
    for pid in _descendants(os.getpid()):
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except FileNotFoundError:  # ended since it was listed
            continue
        for line in status.splitlines():
            if line.startswith("VmHWM:"):
                peak += int(line.split()[1]) / 1024.0
    return peak


def _spark_open(spec: BenchSpec, directory: str):
    from dp_platform.settings import SparkSettings
    from dp_platform.warehouse.spark.session import private_session
    from dp_platform.warehouse.spark.store import SparkWarehouse

    started = time.perf_counter()
    spark = private_session(SparkSettings(master=spec.spark_master, conf=dict(spec.spark_conf)))
    warehouse = SparkWarehouse(spark, f"{directory}/tables")
    return spark, warehouse, time.perf_counter() - started


def spark_ingest(spec: BenchSpec, files: dict, directory: str) -> dict:
    spark, warehouse, start_up = _spark_open(spec, directory)
    with warehouse:
        wall, cpu = time.perf_counter(), time.process_time()
        report = warehouse.ingest(
            files["impressions"],
            files["conversions"],
            now=spec.now,
            dimensions=spec.dimensions("conversions") or None,
            impression_dimensions=spec.dimensions("impressions") or None,
        )
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    peak = _peak_rss_mb() + _jvm_peak_mb()
    spark.stop()
    return {
        "seconds": {"ingest": wall},
        "cpu_seconds": {"ingest": cpu},
        "peak_rss_mb": peak,
        "jvm_start_seconds": start_up,
        "report": report.to_json(),
        "profile": [],
    }


def spark_pipeline(spec: BenchSpec, directory: str) -> dict:
    spark, warehouse, start_up = _spark_open(spec, directory)
    with warehouse:
        result = _pipeline(spec, warehouse)
    result["peak_rss_mb"] = _peak_rss_mb() + _jvm_peak_mb()
    result["jvm_start_seconds"] = start_up
    spark.stop()
    return result


def spark_floor_phase(spec: BenchSpec, files: dict, directory: str) -> dict:
    """Spark's floor (spark/floor.py) on the same files, in a session of its own settings."""
    from dp_platform.settings import SparkSettings
    from dp_platform.warehouse.spark.floor import spark_floor
    from dp_platform.warehouse.spark.session import private_session

    spark = private_session(SparkSettings(master=spec.spark_master, conf=dict(spec.spark_conf)))
    spark.sql("CREATE DATABASE IF NOT EXISTS bench_floor")
    spark.catalog.setCurrentDatabase("bench_floor")
    seconds = spark_floor(
        spark, files["impressions"], files["conversions"], directory, spec.lookback_days
    )
    spark.stop()
    return seconds


def pandas_reference(spec: BenchSpec, files: dict) -> dict:
    from dp_platform.warehouse.pandas_reference import PandasPipeline

    pipeline = PandasPipeline(spec.campaign())
    clock = _Stopwatch()
    with clock("ingest"):
        pipeline.ingest(files["impressions"], files["conversions"], now=spec.now)
    histograms, vectors = [], []
    for day in pipeline.days():
        with clock("attribution"):
            pipeline.attribute_day(day)
        with clock("contributions"):
            pipeline.contributions_day(day)
        with clock("histogram"):
            histograms.append(pipeline.day_histogram(day).tolist())
        with clock("clipping"):
            vectors.append(pipeline.clipped_vector(day, spec.bound).tolist())
    return {
        "seconds": clock.wall,
        "cpu_seconds": clock.cpu,
        "peak_rss_mb": _peak_rss_mb(),
        "histograms": histograms,
        "vectors": vectors,
    }


# -- the report --------------------------------------------------------------------------------


def _with_totals(seconds: dict[str, float]) -> dict[str, float]:
    out = {stage: round(seconds.get(stage, 0.0), 3) for stage in STAGES}
    out["pipeline"] = round(sum(seconds.get(stage, 0.0) for stage in PIPELINE), 3)
    out["total"] = round(sum(seconds.get(stage, 0.0) for stage in STAGES), 3)
    return out


def _top_statements(profile: list[tuple[str, float]], limit: int = 8) -> dict[str, float]:
    totals: dict[str, float] = {}
    for label, seconds in profile:
        totals[label] = totals.get(label, 0.0) + seconds
    ranked = sorted(totals.items(), key=lambda item: -item[1])[:limit]
    return {label: round(seconds, 3) for label, seconds in ranked}


def run_bench(
    spec: BenchSpec, workdir: str | Path, *, reference: str | None = None, floor: bool = False
) -> dict:
    """Generate, then time the DuckDB warehouse (and the pandas reference); a JSON-ready dict.
    ``floor`` (Spark): also Spark's floor on the same files (spark/floor.py)."""
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    database = str(workdir / "bench.duckdb")
    for stale in (Path(database), Path(database + ".wal")):
        stale.unlink(missing_ok=True)
    files = _in_fresh_process(generate, spec, str(workdir / "events"))
    if spec.engine == "spark":
        store = workdir / "spark"
        shutil.rmtree(store, ignore_errors=True)
        loaded = _in_fresh_process(spark_ingest, spec, files, str(store))
        piped = _in_fresh_process(spark_pipeline, spec, str(store))
    else:
        loaded = _in_fresh_process(duckdb_ingest, spec, files, database)
        piped = _in_fresh_process(duckdb_pipeline, spec, database)
    seconds = _with_totals({**loaded["seconds"], **piped["seconds"]})
    cpu_seconds = _with_totals({**loaded["cpu_seconds"], **piped["cpu_seconds"]})
    result: dict[str, Any] = {
        "engine": spec.engine,
        "conversions": spec.conversions,
        "impressions": spec.impressions,
        "publishers": spec.publishers,
        "days": spec.days,
        "users": spec.users,
        "rule": spec.rule,
        "lookback_days": spec.lookback_days,
        "mode": spec.mode,
        "bound": spec.bound,
        "threads": spec.threads,
        "memory_limit": spec.memory_limit,
        "cells": spec.cells,
        "impression_cells": spec.impression_cells,
        "seconds": seconds,
        "cpu_seconds": cpu_seconds,
        "load_average_before_pipeline": piped["load_average"],
        "peak_rss_mb": round(max(loaded["peak_rss_mb"], piped["peak_rss_mb"]), 1),
        "peak_rss_mb_by_phase": {
            "ingest": round(loaded["peak_rss_mb"], 1),
            "pipeline": round(piped["peak_rss_mb"], 1),
        },
        "generate_seconds": round(files["seconds"], 3),
        "rows": piped["rows"],
        "ingest_report": loaded["report"],
        "profile": {
            "ingest": _top_statements(loaded["profile"]),
            "pipeline": _top_statements(piped["profile"]),
        },
        "spec": asdict(spec),
    }
    if spec.engine == "spark":
        result["jvm_start_seconds"] = {
            "ingest": round(loaded["jvm_start_seconds"], 3),
            "pipeline": round(piped["jvm_start_seconds"], 3),
        }
    if floor:
        scratch = workdir / "spark-floor"
        shutil.rmtree(scratch, ignore_errors=True)
        result["floor_seconds"] = _in_fresh_process(
            spark_floor_phase, spec, files, str(scratch.absolute())
        )
        shutil.rmtree(scratch, ignore_errors=True)
    if reference == "pandas":
        ref = _in_fresh_process(pandas_reference, spec, files)
        ref_seconds = _with_totals(ref["seconds"])
        result["reference"] = {
            "engine": "pandas",
            "seconds": ref_seconds,
            "cpu_seconds": _with_totals(ref["cpu_seconds"]),
            "peak_rss_mb": round(ref["peak_rss_mb"], 1),
        }
        result["speedup"] = {
            stage: round(ref_seconds[stage] / seconds[stage], 2) if seconds[stage] > 0 else None
            for stage in (*STAGES, "pipeline", "total")
        }
        ours, theirs = np.asarray(piped["vectors"]), np.asarray(ref["vectors"])
        result["agreement"] = {
            "max_abs_vector_difference": float(np.max(np.abs(ours - theirs), initial=0.0)),
            "histograms_equal": piped["histograms"] == ref["histograms"],
        }
    return result

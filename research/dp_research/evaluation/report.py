"""Regenerate every table and figure of docs/results.md in one run (``dp-platform evaluate --all``).

Order: for each dataset, generate and prepare its data once (n = 31), run both workloads with
every method, then — for the sweep datasets — the ρ sweep and the ablations on the same data;
finally the n sweep, which needs new data per n. Heavy steps run one after another (the machine
is shared). The markdown between the ``GENERATED`` markers is rewritten; anything outside them
(the hand-written account of differences) is kept.
"""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path

from dp_research.evaluation.ablations import run_ablations
from dp_research.evaluation.all_results import FULL_SCALE, AllResults, Scale
from dp_research.evaluation.datasets import PAPER_SETS, dataset_spec
from dp_research.evaluation.experiment import prepare_dataset, run_experiment
from dp_research.evaluation.markdown import render_results
from dp_research.evaluation.sweeps import plot_sweep, sweep

__all__ = ["run_all", "write_all"]

WORKLOADS = ("prefix", "sliding")
SWEEP_DATASETS = ("zipf", "facebook")
BEGIN = "<!-- BEGIN GENERATED: dp-platform evaluate --all; edits here are overwritten -->"
END = "<!-- END GENERATED -->"


def run_all(
    scale: Scale = FULL_SCALE,
    *,
    datasets: tuple[str, ...] = PAPER_SETS,
    sweep_datasets: tuple[str, ...] = SWEEP_DATASETS,
    show_progress: bool | None = None,
) -> AllResults:
    """Every experiment of the results page (see the module docstring for the order)."""
    results = AllResults(scale)
    results.sweeps = {"rho": {}, "days": {}}
    for dataset in datasets:
        started = time.perf_counter()
        base = scale.base(dataset)
        data, seconds = prepare_dataset(base)
        for workload in WORKLOADS:
            results.main[(dataset, workload)] = run_experiment(
                replace(base, workload=workload),
                data,
                prepare_seconds=seconds,
                show_progress=show_progress,
            )
        if dataset in sweep_datasets:
            results.sweeps["rho"][dataset] = sweep(
                "rho", base, scale.rho_grid, data=data, show_progress=show_progress
            )
            results.ablations[dataset] = run_ablations(
                data,
                dataset_spec(dataset),
                repeats=scale.repeats,
                seed=scale.seed,
                show_progress=show_progress,
            )
        del data
        results.seconds[dataset] = time.perf_counter() - started
    for dataset in sweep_datasets:
        started = time.perf_counter()
        results.sweeps["days"][dataset] = sweep(
            "days", scale.base(dataset), scale.days_grid, show_progress=show_progress
        )
        results.seconds[f"{dataset} n sweep"] = time.perf_counter() - started
    return results


def _merge(existing: str, generated: str) -> str:
    """Replace the generated block of ``existing`` (or the whole page if it has none)."""
    block = f"{BEGIN}\n{generated.rstrip()}\n{END}"
    if BEGIN in existing and END in existing:
        head, rest = existing.split(BEGIN, 1)
        _, tail = rest.split(END, 1)
        return f"{head}{block}{tail}"
    return f"# Results\n\n{block}\n"


def write_all(
    out_dir: Path,
    scale: Scale = FULL_SCALE,
    *,
    command: str = "dp-platform evaluate --all --out docs/",
    datasets: tuple[str, ...] = PAPER_SETS,
    show_progress: bool | None = None,
) -> tuple[Path, AllResults]:
    """Run everything, write ``out_dir/figures/*.png`` and ``out_dir/results.md``."""
    started = time.perf_counter()
    sweep_datasets = tuple(d for d in SWEEP_DATASETS if d in datasets)
    results = run_all(
        scale, datasets=datasets, sweep_datasets=sweep_datasets, show_progress=show_progress
    )
    figures = out_dir / "figures"
    for kind, name in (("rho", "figure1_rho.png"), ("days", "figure2_days.png")):
        if results.sweeps[kind]:
            plot_sweep(kind, results.sweeps[kind], figures / name)
    results.seconds["total"] = time.perf_counter() - started
    page = out_dir / "results.md"
    existing = page.read_text() if page.exists() else ""
    generated = render_results(results, command=command)
    page.parent.mkdir(parents=True, exist_ok=True)
    page.write_text(_merge(existing, generated))
    return page, results

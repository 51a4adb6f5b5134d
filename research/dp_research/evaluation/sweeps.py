"""Figures 1–2: every method's error as ρ or the number of days n varies (PNG via matplotlib Agg).

The paper sweeps on Criteo, which we do not have; the sweeps run on whichever dataset is asked
for. A ρ sweep prepares the data once; an n sweep regenerates it for every n (the same
conversions spread over a different number of days).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from dp_research.evaluation.experiment import (
    ExperimentConfig,
    ExperimentResult,
    prepare_dataset,
    run_experiment,
    run_workloads,
)
from dp_research.evaluation.methods import LABELS
from dp_research.evaluation.prepared import PreparedData

__all__ = ["DAYS_GRID", "RHO_GRID", "plot_sweep", "sweep"]

RHO_GRID = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0)  # Figure 1
DAYS_GRID = (7, 15, 31, 63, 127)  # Figure 2


def sweep(
    kind: str,
    base: ExperimentConfig,
    values: Sequence[float] | None = None,
    *,
    workloads: Sequence[str] = ("prefix", "sliding"),
    data: PreparedData | None = None,
    show_progress: bool | None = None,
) -> dict[str, list[ExperimentResult]]:
    """Results per workload, one per swept value (``kind`` is ``rho`` or ``days``)."""
    if kind not in ("rho", "days"):
        raise ValueError(f"sweep must be rho or days, got {kind!r}")
    grid = tuple(values) if values is not None else (RHO_GRID if kind == "rho" else DAYS_GRID)
    out: dict[str, list[ExperimentResult]] = {w: [] for w in workloads}
    if kind == "rho":
        seconds = 0.0
        if data is None or data.n_days != base.days:
            data, seconds = prepare_dataset(base)
        for workload in workloads:
            for rho in grid:
                config = replace(base, workload=workload, rho=float(rho))
                out[workload].append(
                    run_experiment(
                        config, data, prepare_seconds=seconds, show_progress=show_progress
                    )
                )
        return out
    for days in grid:
        config = replace(base, days=int(days))
        prepared, seconds = prepare_dataset(config)
        results = run_workloads(
            config, prepared, workloads, prepare_seconds=seconds, show_progress=show_progress
        )
        for workload, result in results.items():
            out[workload].append(result)
    return out


def plot_sweep(
    kind: str, results: dict[str, dict[str, list[ExperimentResult]]], path: Path
) -> Path:
    """One panel per (dataset, workload): error against ρ or n, log scale, one line per method."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [(d, w, rs) for d, by_workload in results.items() for w, rs in by_workload.items()]
    columns = min(2, len(panels))
    rows = -(-len(panels) // columns)
    figure, axes = plt.subplots(rows, columns, figsize=(6 * columns, 4 * rows), squeeze=False)
    for axis, (dataset, workload, runs) in zip(axes.flat, panels, strict=False):
        xs = [r.config.rho if kind == "rho" else r.config.days for r in runs]
        for name, label in LABELS.items():
            ys = [r.error(name) for r in runs]
            if all(y is not None for y in ys):
                style = "--" if name == "oracle" else "-"
                axis.plot(xs, ys, style, marker="o", label=label)
        axis.set_xscale("log", base=2)
        axis.set_yscale("log")
        axis.set_xticks(xs, [f"{x:g}" for x in xs])
        axis.set_xlabel("ρ (zCDP)" if kind == "rho" else "days n")
        metric = "WRMSE (γ_n = 7)" if workload == "prefix" else "max window variance"
        axis.set_ylabel(metric)
        axis.set_title(f"{dataset}, {workload}")
        axis.grid(True, which="both", alpha=0.3)
    for axis in list(axes.flat)[len(panels) :]:
        axis.set_visible(False)
    axes.flat[0].legend(fontsize=8)
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path

"""AdsBPC+ against AdsBPC on the paper's four datasets: the generated block of docs/results.md.

    .venv/bin/python -m dp_platform.evaluation.plus_report --out docs/   [--ci]

Each dataset is generated once and prepared twice (rank tensors for AdsBPC and the baselines,
row arrays for AdsBPC+); both workloads then run AdsBPC, AdsBPC+, UMM (the best baseline in
docs/results.md) and the oracle in one :func:`~.experiment.run_experiment` each — the same
seeds as the main tables, so the AdsBPC and UMM columns equal theirs. Evaluation, not a release.
"""

from __future__ import annotations

import argparse
import json
import re
import time
from pathlib import Path

import numpy as np

from dp_platform.evaluation.datasets import DATASETS, dataset_spec, load_dataset
from dp_platform.evaluation.experiment import ExperimentConfig, ExperimentResult, run_experiment
from dp_platform.evaluation.plus_data import prepare_plus
from dp_platform.evaluation.prepared import prepare

__all__ = ["main", "plus_block", "run_all"]

BEGIN = "<!-- BEGIN GENERATED: adsbpc_plus; python -m dp_platform.evaluation.plus_report -->"
END = "<!-- END GENERATED: adsbpc_plus -->"
METHODS = ("adsbpc", "umm", "oracle", "adsbpc_plus")


def run_all(
    users: int, publishers: int, repeats: int, seed: int = 0
) -> tuple[list[ExperimentResult], dict[str, float]]:
    """Every (dataset, workload) with the four methods; returns results and step seconds."""
    results, seconds = [], {}
    for name in DATASETS:
        started = time.perf_counter()
        conversions = load_dataset(name, users=users, publishers=publishers, days=31, seed=seed)
        data = prepare(conversions, dataset_spec(name).global_bound)
        plus = prepare_plus(conversions)
        del conversions
        seconds[f"{name}: generate + prepare (both)"] = time.perf_counter() - started
        for workload in ("prefix", "sliding"):
            config = ExperimentConfig(
                dataset=name,
                workload=workload,
                users=users,
                publishers=publishers,
                repeats=repeats,
                methods=METHODS,
                seed=seed,
            )
            results.append(run_experiment(config, data, show_progress=False, plus_data=plus))
        del data, plus
    return results, seconds


def _split(result: ExperimentResult, name: str) -> str:
    """bias² / variance in MSE units (prefix: the weighted MSE; sliding: the worst window's)."""
    score = result.methods[name].score
    share = score.bias_share or 0.0
    mse = score.error**2 if result.config.workload == "prefix" else score.error
    return f"{mse * share:,.0f} / {mse * (1 - share):,.0f}"


def _scales(scales: tuple[float, ...] | None) -> str:
    """The profile scale s over the repeats (the filter's planned per-user scale after day m)."""
    if not scales:
        return "—"
    s = np.asarray(scales)
    return f"{np.median(s):.2f} ({s.min():.2f}–{s.max():.2f})"


def plus_block(results: list[ExperimentResult], seconds: dict[str, float], note: str) -> str:
    """The markdown of the generated block (tables only; the prose lives outside it)."""
    lines = [
        BEGIN,
        note,
        "",
        "| dataset | workload | AdsBPC | AdsBPC+ | **AdsBPC+ ÷ AdsBPC** | UMM | "
        "AdsBPC+ ÷ UMM | Oracle † | AdsBPC bias share | AdsBPC+ bias share | "
        "AdsBPC+ bias² / variance | AdsBPC+ r, days 1–7 / 8–n | AdsBPC+ s: median (range) | "
        "AdsBPC+ seconds |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in results:
        m = r.methods
        ours, plus = m["adsbpc"].score.error, m["adsbpc_plus"].score.error
        bounds = np.asarray(m["adsbpc_plus"].mean_bounds)
        lines.append(
            f"| {r.config.dataset} | {r.config.workload} | {ours:,.2f} | {plus:,.2f} | "
            f"**{plus / ours:.2f}** | {m['umm'].score.error:,.2f} | "
            f"{plus / m['umm'].score.error:.2f} | {m['oracle'].score.error:,.2f} | "
            f"{100 * (m['adsbpc'].score.bias_share or 0):.0f}% | "
            f"{100 * (m['adsbpc_plus'].score.bias_share or 0):.0f}% | "
            f"{_split(r, 'adsbpc_plus')} | {bounds[:7].mean():.2f} / {bounds[7:].mean():.2f} | "
            f"{_scales(m['adsbpc_plus'].scales)} | {m['adsbpc_plus'].seconds:.1f} |"
        )
    lines += ["", "| step | seconds |", "| --- | --- |"]
    lines += [f"| {step} | {value:.1f} |" for step, value in seconds.items()]
    lines.append(END)
    return "\n".join(lines)


def write_block(path: Path, block: str) -> None:
    """Replace the generated block in ``path`` (or append it under its own heading)."""
    text = path.read_text() if path.exists() else ""
    pattern = re.compile(re.escape(BEGIN) + r".*?" + re.escape(END), re.DOTALL)
    if pattern.search(text):
        text = pattern.sub(lambda _: block, text)
    else:
        text = text.rstrip() + "\n\n## AdsBPC+ against AdsBPC\n\n" + block + "\n"
    path.write_text(text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", default="docs")
    parser.add_argument("--ci", action="store_true", help="toy scale (seconds)")
    parser.add_argument("--json", help="also write the raw results here")
    args = parser.parse_args(argv)
    users, publishers, repeats = (2000, 20, 2) if args.ci else (1_000_000, 1000, 10)
    started = time.perf_counter()
    results, seconds = run_all(users, publishers, repeats)
    seconds["total"] = time.perf_counter() - started
    note = (
        f"Generated ({users:,} users × {publishers:,} publishers, {repeats} repeats, seed 0; "
        "ρ = 1, n = 31). Errors in our normalisation (prefix WRMSE, sliding max-window MSE); "
        "the ratio is of that metric. † not private. bias² / variance: the two parts of the "
        "MSE (prefix: the weighted MSE; sliding: the worst window's)."
    )
    write_block(Path(args.out) / "results.md", plus_block(results, seconds, note))
    if args.json:
        Path(args.json).write_text(json.dumps([r.to_json() for r in results], indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""AdsBPC+ against every baseline, AdsBPC and its own oracle: generated blocks of docs/results.md.

    .venv/bin/python -m dp_research.evaluation.plus_report --out docs/   [--ci]
    .venv/bin/python -m dp_research.evaluation.plus_report --candidates --out docs/

Each dataset is generated once and prepared twice (rank tensors for AdsBPC and the baselines,
row arrays for AdsBPC+); both workloads then run AdsBPC, the five baselines, the AdsBPC oracle,
AdsBPC+ and the AdsBPC+ oracle in one :func:`~.experiment.run_experiment` each — the same seeds
as the main tables, so the AdsBPC and baseline columns equal theirs. Every method's realised
error is also reported after the consistency post-processing (:mod:`.scoring`).

``--candidates`` writes the second block: the AdsBPC+ variants measured for the default (the
diagonal strategy, the square-root strategy, and the square-root strategy with s chosen by
estimated bias² + variance, :mod:`.plus_scale`) on the same draws — 3 repeats on the synthetic
sets (their repeat-to-repeat spread is < 2 %), 10 on Facebook. Evaluation, not a release.
"""

from __future__ import annotations

import argparse
import json
import re
import time
from pathlib import Path

import numpy as np

from dp_research.evaluation.adsbpc_runs import PLUS_PROFILE_DAYS
from dp_research.evaluation.datasets import PAPER_SETS, dataset_spec, load_dataset
from dp_research.evaluation.experiment import ExperimentConfig, ExperimentResult, run_experiment
from dp_research.evaluation.methods import BASELINES, LABELS
from dp_research.evaluation.plus_data import prepare_plus
from dp_research.evaluation.prepared import prepare

__all__ = [
    "R_SPLIT",
    "candidates_block",
    "main",
    "plus_block",
    "r_split",
    "run_all",
    "write_candidates",
    "write_plus",
]

BEGIN = "<!-- BEGIN GENERATED: adsbpc_plus; python -m dp_research.evaluation.plus_report -->"
END = "<!-- END GENERATED: adsbpc_plus -->"
CANDIDATES_BEGIN = (
    "<!-- BEGIN GENERATED: adsbpc_plus candidates; "
    "python -m dp_research.evaluation.plus_report --candidates -->"
)
CANDIDATES_END = "<!-- END GENERATED: adsbpc_plus candidates -->"
METHODS = ("adsbpc", *BASELINES, "oracle", "adsbpc_plus", "plus_oracle")
CANDIDATE_METHODS = (*BASELINES, "adsbpc_plus", "plus_diagonal", "plus_mse")
TARGET = 0.8  # the bar: AdsBPC+ ÷ best baseline ≤ 0.8 on at least 7 of the 8 rows


R_SPLIT = f"r, days 1–{PLUS_PROFILE_DAYS} / {PLUS_PROFILE_DAYS + 1}–n"
"""Header of AdsBPC+'s mean bound before and after its profile day (m = the default)."""


def r_split(bounds: np.ndarray) -> str:
    """Mean r on days 1..m / m+1..n (:data:`R_SPLIT`)."""
    b = np.asarray(bounds, dtype=np.float64)
    return f"{b[:PLUS_PROFILE_DAYS].mean():.2f} / {b[PLUS_PROFILE_DAYS:].mean():.2f}"


def run_all(
    users: int,
    publishers: int,
    repeats: int,
    seed: int = 0,
    *,
    methods: tuple[str, ...] = METHODS,
    synthetic_repeats: int | None = None,
) -> tuple[list[ExperimentResult], dict[str, float]]:
    """Every (dataset, workload) with ``methods``; returns results and step seconds."""
    results, seconds = [], {}
    for name in PAPER_SETS:
        started = time.perf_counter()
        conversions = load_dataset(name, users=users, publishers=publishers, days=31, seed=seed)
        data = prepare(conversions, dataset_spec(name).global_bound)
        plus = prepare_plus(conversions)
        del conversions
        seconds[f"{name}: generate + prepare (both)"] = time.perf_counter() - started
        synthetic = dataset_spec(name).synthetic and synthetic_repeats is not None
        for workload in ("prefix", "sliding"):
            config = ExperimentConfig(
                dataset=name,
                workload=workload,
                users=users,
                publishers=publishers,
                repeats=synthetic_repeats if synthetic else repeats,  # type: ignore[arg-type]
                methods=methods,
                seed=seed,
            )
            results.append(run_experiment(config, data, show_progress=False, plus_data=plus))
        del data, plus
    return results, seconds


def _mse(result: ExperimentResult, error: float) -> float:
    """The metric as an MSE (prefix: the weighted MSE; sliding: the worst window's)."""
    return error**2 if result.config.workload == "prefix" else error


def _split(result: ExperimentResult, name: str) -> str:
    """bias² / variance in MSE units (prefix: the weighted MSE; sliding: the worst window's)."""
    score = result.methods[name].score
    share = score.bias_share or 0.0
    mse = _mse(result, score.error)
    return f"{mse * share:,.0f} / {mse * (1 - share):,.0f}"


def _scales(scales: tuple[float, ...] | None) -> str:
    """The profile scale s over the repeats (the filter's planned per-user scale after day m)."""
    if not scales:
        return "—"
    s = np.asarray(scales)
    return f"{np.median(s):.2f} ({s.min():.2f}–{s.max():.2f})"


def _best(result: ExperimentResult, *, consistent: bool = False) -> tuple[str, float]:
    """The best of the five baselines on the expected error (or the realised error after the
    consistency projection)."""

    def value(name: str) -> float:
        score = result.methods[name].score
        return float(score.error_consistent if consistent else score.error)  # type: ignore[arg-type]

    name = min(BASELINES, key=value)
    return name, value(name)


def summary_rows(results: list[ExperimentResult]) -> list[dict]:
    """The 8-row summary as data (tests read it; the table prints it)."""
    rows = []
    for r in results:
        m = r.methods
        best, best_error = _best(r)
        plus = m["adsbpc_plus"].score
        best_consistent, consistent_error = _best(r, consistent=True)
        rows.append(
            {
                "dataset": r.config.dataset,
                "workload": r.config.workload,
                "best": best,
                "best_error": best_error,
                "plus": plus.error,
                "over_best": plus.error / best_error,
                "over_adsbpc": plus.error / m["adsbpc"].score.error,
                "oracle": m["plus_oracle"].score.error,
                "over_oracle": plus.error / m["plus_oracle"].score.error,
                "consistent_over_best": float(plus.error_consistent or np.nan) / consistent_error,
                "consistent_best": best_consistent,
                "bias_share": plus.bias_share or 0.0,
            }
        )
    return rows


def plus_block(results: list[ExperimentResult], seconds: dict[str, float], note: str) -> str:
    """The markdown of the generated block (tables only; the prose lives outside it)."""
    rows = summary_rows(results)
    within = sum(row["over_best"] <= 1.0 for row in rows)
    target = sum(row["over_best"] <= TARGET for row in rows)
    lines = [
        BEGIN,
        note,
        "",
        "**AdsBPC+ (default: the square-root strategy) against the best of the five baselines "
        "and against its own oracle.**",
        "",
        "| dataset | workload | best baseline | its error | AdsBPC+ | **AdsBPC+ ÷ best** | "
        f"≤ {TARGET} | AdsBPC+ ÷ AdsBPC | Oracle+ † | **AdsBPC+ ÷ Oracle+** | "
        "AdsBPC+ bias share | AdsBPC+ bias² / variance | ÷ best, both consistent ‡ |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r, row in zip(results, rows, strict=True):
        lines.append(
            f"| {row['dataset']} | {row['workload']} | {LABELS[row['best']]} | "
            f"{row['best_error']:,.2f} | {row['plus']:,.2f} | **{row['over_best']:.2f}** | "
            f"{'yes' if row['over_best'] <= TARGET else '**no**'} | {row['over_adsbpc']:.2f} | "
            f"{row['oracle']:,.2f} | **{row['over_oracle']:.2f}** | "
            f"{100 * row['bias_share']:.0f}% | {_split(r, 'adsbpc_plus')} | "
            f"{row['consistent_over_best']:.2f} ({LABELS[row['consistent_best']]}) |"
        )
    lines += [
        "",
        f"AdsBPC+ ÷ best baseline ≤ 1 on {within} of {len(rows)} rows and ≤ {TARGET} on "
        f"{target} of {len(rows)}.",
        "",
        "| dataset | workload | AdsBPC | AdsBPC+ | Oracle (AdsBPC) † | AdsBPC bias share | "
        f"AdsBPC+ {R_SPLIT} | AdsBPC+ s: median (range) | AdsBPC+ seconds | "
        "Oracle+ seconds |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in results:
        m = r.methods
        bounds = np.asarray(m["adsbpc_plus"].mean_bounds)
        lines.append(
            f"| {r.config.dataset} | {r.config.workload} | {m['adsbpc'].score.error:,.2f} | "
            f"{m['adsbpc_plus'].score.error:,.2f} | {m['oracle'].score.error:,.2f} | "
            f"{100 * (m['adsbpc'].score.bias_share or 0):.0f}% | "
            f"{r_split(bounds)} | "
            f"{_scales(m['adsbpc_plus'].scales)} | {m['adsbpc_plus'].seconds:.1f} | "
            f"{m['plus_oracle'].seconds:.1f} |"
        )
    names = [n for n in METHODS if n != "oracle"]
    lines += [
        "",
        "**Consistency post-processing ‡, every method alike**: realised error (the tables' "
        "metric on the seeded releases) without → with the projection, same draws.",
        "",
        "| dataset | workload | " + " | ".join(LABELS[n] for n in names) + " |",
        "| --- | --- | " + " | ".join("---" for _ in names) + " |",
    ]
    for r in results:
        cells = []
        for name in names:
            score = r.methods[name].score
            cells.append(f"{score.error_empirical:,.2f} → {score.error_consistent:,.2f}")
        lines.append(f"| {r.config.dataset} | {r.config.workload} | " + " | ".join(cells) + " |")
    lines += ["", "| step | seconds |", "| --- | --- |"]
    lines += [f"| {step} | {value:.1f} |" for step, value in seconds.items()]
    lines.append(END)
    return "\n".join(lines)


def candidates_block(results: list[ExperimentResult], seconds: dict[str, float], note: str) -> str:
    """The candidates' block: each variant ÷ the best baseline, with its bias share."""
    variants = ("plus_diagonal", "adsbpc_plus", "plus_mse")
    titles = {
        "plus_diagonal": "diagonal (the previous default)",
        "adsbpc_plus": "square root (the default)",
        "plus_mse": "square root, s by bias² + variance",
    }
    lines = [
        CANDIDATES_BEGIN,
        note,
        "",
        "| dataset | workload | best baseline | "
        + " | ".join(f"{titles[v]}: error, ÷ best, bias" for v in variants)
        + " |",
        "| --- | --- | --- | " + " | ".join("---" for _ in variants) + " |",
    ]
    for r in results:
        best, best_error = _best(r)
        cells = []
        for v in variants:
            score = r.methods[v].score
            cells.append(
                f"{score.error:,.2f}, **{score.error / best_error:.3f}**, "
                f"{100 * (score.bias_share or 0):.0f}%"
            )
        lines.append(
            f"| {r.config.dataset} | {r.config.workload} | {LABELS[best]} | "
            + " | ".join(cells)
            + " |"
        )
    lines += ["", "| step | seconds |", "| --- | --- |"]
    lines += [f"| {step} | {value:.1f} |" for step, value in seconds.items()]
    lines.append(CANDIDATES_END)
    return "\n".join(lines)


def write_block(
    path: Path,
    block: str,
    begin: str = BEGIN,
    end: str = END,
    heading: str = "## AdsBPC+ against AdsBPC",
) -> None:
    """Replace the generated block in ``path`` (or append it under its own heading)."""
    text = path.read_text() if path.exists() else ""
    pattern = re.compile(re.escape(begin) + r".*?" + re.escape(end), re.DOTALL)
    if pattern.search(text):
        text = pattern.sub(lambda _: block, text)
    else:
        text = text.rstrip() + f"\n\n{heading}\n\n" + block + "\n"
    path.write_text(text)


def _scale(ci: bool) -> tuple[int, int, int]:
    """(users, publishers, repeats): the tables' 10⁶ × 1000 × 10, or a toy run in seconds."""
    return (2000, 20, 2) if ci else (1_000_000, 1000, 10)


def write_plus(out_dir: Path, *, ci: bool = False) -> list[ExperimentResult]:
    """Run and write the AdsBPC+ block of ``out_dir/results.md``."""
    users, publishers, repeats = _scale(ci)
    started = time.perf_counter()
    results, seconds = run_all(users, publishers, repeats)
    seconds["total"] = time.perf_counter() - started
    note = (
        f"Generated ({users:,} users × {publishers:,} publishers, {repeats} repeats — "
        "Oracle+ one, its choices read no noise —, seed 0; ρ = 1, n = 31). Errors in our "
        "normalisation (prefix WRMSE, sliding max-window MSE); ratios are of that metric. "
        "† not private. ‡ realised errors after the consistency projection (below). "
        "bias² / variance: the two parts of the MSE (prefix: the weighted MSE; sliding: "
        "the worst window's)."
    )
    write_block(out_dir / "results.md", plus_block(results, seconds, note))
    return results


def write_candidates(out_dir: Path, *, ci: bool = False) -> list[ExperimentResult]:
    """Run and write the candidates' block of ``out_dir/results.md``."""
    users, publishers, repeats = _scale(ci)
    started = time.perf_counter()
    results, seconds = run_all(
        users,
        publishers,
        repeats,
        methods=CANDIDATE_METHODS,
        synthetic_repeats=min(3, repeats),
    )
    seconds["total"] = time.perf_counter() - started
    note = (
        f"Generated ({users:,} users × {publishers:,} publishers; {min(3, repeats)} repeats "
        f"on the synthetic sets, {repeats} on Facebook; seed 0; ρ = 1, n = 31). Each cell: "
        "the error (our normalisation), it ÷ the best of the five baselines, and the bias "
        "share of the error. The variants share their draws."
    )
    block = candidates_block(results, seconds, note)
    write_block(
        out_dir / "results.md",
        block,
        CANDIDATES_BEGIN,
        CANDIDATES_END,
        heading="### Candidates for the default",
    )
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", default="docs")
    parser.add_argument("--ci", action="store_true", help="toy scale (seconds)")
    parser.add_argument(
        "--candidates", action="store_true", help="the candidates' block instead (module doc)"
    )
    parser.add_argument("--json", help="also write the raw results here")
    args = parser.parse_args(argv)
    write = write_candidates if args.candidates else write_plus
    results = write(Path(args.out), ci=args.ci)
    if args.json:
        Path(args.json).write_text(json.dumps([r.to_json() for r in results], indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

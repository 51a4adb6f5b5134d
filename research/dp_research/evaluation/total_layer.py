"""Exploration for issue 27, not part of the scale table: the campaign total as the sum of the
publishers' answers plus a released remainder, what AdsBPC+ clipped off, capped per user.

    python -m dp_research.evaluation.total_layer [--share 0.1] [--caps 4 8 16]
        [--tiers 20000 200000] [--datasets zipf normal uniform events]

Where the default's total fails, its error is the clipping bias every publisher shares
(:mod:`.total_split`). A total measured on its own needs a bound chosen privately, and seven
days of noisy histograms choose it badly. This measures a total that needs no new choice:

- AdsBPC+ runs at (1 − share)·ρ, as the default does at ρ.
- Each day it would also release X_t = Σ_u min(c_ut − k_ut, E) with Gaussian noise at
  share·ρ over the n days, independent of the publishers' noise. Here c_ut is user u's
  conversions on day t and k_ut what the filter kept of them (:func:`~.plus_data.run_plus`,
  ``excess_cap``). One user moves X_t by at most E: ℓ2 sensitivity E a day, the fixed-bound
  baseline's σ at bound E (:func:`~.fixed_bound.daily_sigma`), so ρ = share·ρ in all.
- The total's answer to query q is Σ_p answer_pq + Σ_t q_t X̃_t.
- Its expected squared error is P·Var_q + Σ_t q_t² σ_E² + (Σ_p bias_pq + Σ_t q_t X_t)²: the
  added remainder cancels the shared bias up to what lies above k_ut + E.

E is a public constant per run (no data read to choose it). Seeded noise on synthetic data, one
noise repeat per row; nothing printed is a release.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, replace

import numpy as np

import dp_research.evaluation.methods as methods
from dp_research.evaluation.experiment import ExperimentConfig, prepare_dataset, run_experiment
from dp_research.evaluation.fixed_bound import daily_sigma
from dp_research.evaluation.metrics import workload_error
from dp_research.evaluation.plus_data import PlusRun, run_plus
from dp_research.evaluation.prepared import PreparedData
from dp_research.evaluation.total_split import DATASETS, row_configs, row_label


@dataclass(frozen=True)
class LayeredTotal:
    row: str
    default_total: float  # AdsBPC+ at ρ: its total (Σ_p answers), the tables' metric
    fixed_total: float  # the fixed bound's best total (b*_total, not private)
    layered: dict[float, float]  # E → the layered total's error, AdsBPC+ at (1 − share)·ρ
    per_publisher: tuple[float, float]  # AdsBPC+'s per-publisher error at ρ and (1 − share)·ρ


def observed_run(config: ExperimentConfig, data: PreparedData, cap: float):
    """Run ``config`` (AdsBPC+ its first method); return its result, AdsBPC+'s first run, with
    each day's remainder at cap E, and that run's total's (Var_q, Σ_p bias_pq)."""
    runs: list[PlusRun] = []
    split: list[tuple[np.ndarray, np.ndarray]] = []
    recorded_total, recorded_run = methods.total_squared_errors, methods.run_plus

    def total(variances: np.ndarray, bias: np.ndarray) -> np.ndarray:
        split.append((np.asarray(variances), bias.sum(axis=0)))
        return recorded_total(variances, bias)

    def plus(*args, **kwargs) -> PlusRun:
        run = run_plus(*args, excess_cap=cap, **kwargs)
        runs.append(run)
        return run

    methods.total_squared_errors, methods.run_plus = total, plus  # restored below
    try:
        result = run_experiment(config, data, show_progress=False)
    finally:
        methods.total_squared_errors, methods.run_plus = recorded_total, recorded_run
    return result, runs[0], split[0]  # AdsBPC+'s first repeat, before any projection


def layered_total(config: ExperimentConfig, share: float, caps: list[float]) -> LayeredTotal:
    data, _ = prepare_dataset(config)
    full = run_experiment(config, data, show_progress=False)
    reduced = replace(config, rho=config.rho * (1 - share), methods=("adsbpc_plus",))
    workload = config.make_workload()
    queries = workload.matrix
    layered = {}
    for cap in caps:
        result, run, (variances, bias) = observed_run(reduced, data, cap)
        assert run.excess is not None
        sigma = daily_sigma(cap, share * config.rho, data.n_days)
        squared = (
            data.n_publishers * variances
            + (queries**2).sum(axis=1) * sigma**2
            + (bias + queries @ run.excess) ** 2
        )
        layered[cap] = workload_error(squared, workload)
    return LayeredTotal(
        row=row_label(config),
        default_total=float(full.methods["adsbpc_plus"].score.total_error),
        fixed_total=float(full.methods["fixed_hindsight"].score.total_error),
        layered=layered,
        per_publisher=(
            float(full.methods["adsbpc_plus"].score.error),
            float(result.methods["adsbpc_plus"].score.error),
        ),
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m dp_research.evaluation.total_layer")
    parser.add_argument("--share", type=float, default=0.1, help="ρ share of the remainder")
    parser.add_argument("--caps", type=float, nargs="+", default=[4.0, 8.0, 16.0])
    parser.add_argument("--tiers", type=int, nargs="+", default=[20_000, 200_000])
    parser.add_argument("--datasets", nargs="+", default=list(DATASETS))
    args = parser.parse_args(argv)
    caps = " | ".join(f"layered, E = {cap:g}" for cap in args.caps)
    print(
        f"| row | AdsBPC+ total | fixed best total † | {caps} | per publisher at ρ → "
        f"{1 - args.share:g}ρ |"
    )
    print("|---|---:|---:|" + "---:|" * len(args.caps) + "---|")
    for config in row_configs(args.tiers, args.datasets):
        r = layered_total(replace(config, repeats=1), args.share, args.caps)
        cells = " | ".join(f"{r.layered[cap]:.4g}" for cap in args.caps)
        print(
            f"| {r.row} | {r.default_total:.4g} | {r.fixed_total:.4g} | {cells} | "
            f"{r.per_publisher[0]:.4g} → {r.per_publisher[1]:.4g} |",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

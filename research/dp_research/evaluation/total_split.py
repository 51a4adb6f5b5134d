"""Exploration for issue 27, not part of the scale table: why the default's campaign total
misses the fixed bound's best total, and what a total measured on its own would give.

    python -m dp_research.evaluation.total_split [--share 0.1] [--tiers 20000 200000]

Per row (a tier of :mod:`.tiers` × dataset × workload, data seed 0):

- **AdsBPC+'s total, split.** Its expected squared error on the all-publisher total is
  P·Var + (Σ_p bias)² (:func:`~.methods.total_squared_errors`); both parts at the worst query
  (two noise repeats, the first shown).
- **A total of its own.** A share of ρ releases each day's total over publishers, every user's
  daily conversions clipped at b (ℓ2 sensitivity b), with independent Gaussian noise at
  (share·ρ)/n a day, as the fixed-bound baseline does per publisher (:mod:`.fixed_bound`). Its
  error in the tables' metric, at the b tuned in hindsight on the true data (**not private**)
  and at a b chosen privately: 20 % of the share buys the first m = 7 days' histograms of users'
  daily totals (one user in one bin a day: ℓ2 sensitivity 1 a day, √m in all), summed; b then
  minimises the workload's planned variance plus the squared bias those noisy counts imply
  (unbiased: the noise's own variance taken off), every day at that b. The private choice reads
  the days it then releases, so it is a measurement of the idea, not a mechanism.
- The per-publisher cost: AdsBPC+'s error at (1 − share)·ρ against at ρ.

Seeded noise on synthetic data; nothing printed is a release.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from unittest.mock import patch

import numpy as np

import dp_research.evaluation.methods as methods
from dp_research.evaluation.datasets import dataset_spec
from dp_research.evaluation.experiment import ExperimentConfig, prepare_dataset, run_experiment
from dp_research.evaluation.fixed_bound import daily_sigma
from dp_research.evaluation.metrics import workload_error
from dp_research.evaluation.prepared import PreparedData
from dp_research.evaluation.tiers import TIERS

HISTOGRAM_SHARE = 0.2  # of the total's share: the private choice of b
PROFILE_DAYS = 7
GRID_STEP = 0.5


@dataclass(frozen=True)
class TotalSplit:
    row: str
    noise_part: float  # AdsBPC+: P·Var at its worst total query
    bias_part: float  # AdsBPC+: (Σ_p bias)² there
    default_total: float  # AdsBPC+'s total error (the tables' metric)
    fixed_total: float  # the fixed bound's best total (b*_total, not private)
    own_hindsight: tuple[float, float]  # (b, error) of a total of its own, b in hindsight
    own_private: tuple[float, float, float]  # (lowest b, highest b, mean error), private b
    per_publisher: tuple[float, float]  # AdsBPC+ at ρ and at (1 − share)·ρ


def _own_total_error(
    data: PreparedData, config: ExperimentConfig, bound: float, rho: float
) -> float:
    workload = config.make_workload()
    queries = workload.matrix
    truth = data.truth.sum(axis=0) @ queries.T
    clipped = data.per_day_clipped(np.full(data.n_days, bound)).sum(axis=0) @ queries.T
    variance = (queries**2).sum(axis=1) * daily_sigma(bound, rho, data.n_days) ** 2
    return workload_error(variance + (clipped - truth) ** 2, workload)


def _private_bound(
    data: PreparedData, config: ExperimentConfig, grid: np.ndarray, rho: float, rng
) -> float:
    """b from m days' noisy histograms of users' daily totals (bins 0..top, the last ≥ top)."""
    m, top = PROFILE_DAYS, int(grid[-1])
    counts = np.zeros((m, top + 1))
    width = min(top, data.histograms.shape[1])
    counts[:, :width] = data.histograms[:m, :width]
    counts[:, top] += data.histograms[:m, top:].sum(axis=1)
    sigma = float(np.sqrt(m / (2 * HISTOGRAM_SHARE * rho)))  # m days, sensitivity 1 each
    noisy = (counts + rng.normal(0.0, sigma, counts.shape)).sum(axis=0)
    workload = config.make_workload()
    queries = workload.matrix
    sizes = np.arange(top + 1)
    best, best_error = float(grid[0]), np.inf
    for bound in grid:
        excess = np.maximum(sizes - bound, 0.0)
        lost = float(noisy @ excess) / m  # conversions a day above b, unbiased
        lost_variance = sigma**2 * m * float(excess @ excess) / m**2
        release = (1 - HISTOGRAM_SHARE) * rho
        variance = (queries**2).sum(axis=1) * daily_sigma(bound, release, data.n_days) ** 2
        bias = max(lost**2 - lost_variance, 0.0) * queries.sum(axis=1) ** 2
        error = workload_error(variance + bias, workload)
        if error < best_error:
            best, best_error = float(bound), error
    return best


DATASETS = ("zipf", "normal", "uniform", "events")


def row_label(config: ExperimentConfig) -> str:
    """A row's name in the explorations' tables."""
    return (
        f"{config.users_per_day:,} users × {config.publishers} {config.dataset} {config.workload}"
    )


def row_configs(tiers: Sequence[int], datasets: Sequence[str]) -> Iterator[ExperimentConfig]:
    """The explorations' rows: every tier of :mod:`.tiers` with its users a day in ``tiers`` ×
    dataset × workload, AdsBPC+ first and the fixed bound tuned in hindsight beside it."""
    for tier in (t for t in TIERS if t.users_per_day in tiers):
        for dataset in datasets:
            for workload in ("prefix", "sliding"):
                yield tier.configs(dataset, workload, ("adsbpc_plus", "fixed_hindsight"))[0]


@contextmanager
def recorded_totals() -> Iterator[list[tuple[np.ndarray, np.ndarray]]]:
    """Within the block every campaign total the experiment scores
    (methods.total_squared_errors) is recorded, in order, as (Var_q of one publisher's
    answer, Σ_p bias_pq): the parts of its expected squared error P·Var_q + (Σ_p bias_pq)²."""
    split: list[tuple[np.ndarray, np.ndarray]] = []
    recorded = methods.total_squared_errors

    def record(variances: np.ndarray, bias: np.ndarray) -> np.ndarray:
        split.append((np.asarray(variances), bias.sum(axis=0)))
        return recorded(variances, bias)

    with patch.object(methods, "total_squared_errors", record):
        yield split


def total_split(config: ExperimentConfig, share: float, repeats: int = 20) -> TotalSplit:
    data, _ = prepare_dataset(config)
    spec = dataset_spec(config.dataset)
    with recorded_totals() as split:
        full = run_experiment(config, data, show_progress=False)
    less = replace(config, rho=config.rho * (1 - share))
    reduced = run_experiment(less, data, show_progress=False)
    variances, shared = split[0]
    noise, bias = data.n_publishers * variances, shared**2
    worst = int(np.argmax(noise + bias))
    grid = np.arange(GRID_STEP, 2 * spec.cap + GRID_STEP / 2, GRID_STEP)
    own = [_own_total_error(data, config, float(b), share * config.rho) for b in grid]
    rng = np.random.default_rng(config.seed)
    chosen = [_private_bound(data, config, grid, share * config.rho, rng) for _ in range(repeats)]
    release = share * (1 - HISTOGRAM_SHARE) * config.rho
    private = [_own_total_error(data, config, b, release) for b in chosen]
    default = full.methods["adsbpc_plus"].score
    return TotalSplit(
        row=row_label(config),
        noise_part=float(noise[worst]),
        bias_part=float(bias[worst]),
        default_total=float(default.total_error),
        fixed_total=float(full.methods["fixed_hindsight"].score.total_error),
        own_hindsight=(float(grid[int(np.argmin(own))]), float(min(own))),
        own_private=(min(chosen), max(chosen), float(np.mean(private))),
        per_publisher=(float(default.error), float(reduced.methods["adsbpc_plus"].score.error)),
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m dp_research.evaluation.total_split")
    parser.add_argument("--share", type=float, default=0.1, help="ρ share of the own total")
    parser.add_argument("--tiers", type=int, nargs="*", default=[20_000, 200_000])
    args = parser.parse_args(argv)
    print(
        "| row | AdsBPC+ total: P·Var / (Σ bias)² at its worst query | AdsBPC+ total | fixed best "
        "total † | own total, b in hindsight † | own total, private b (range) | per publisher "
        f"at ρ → {1 - args.share:g}ρ |"
    )
    print("|---|---|---:|---:|---:|---:|---|")
    for config in row_configs(args.tiers, DATASETS):
        r = total_split(replace(config, repeats=2), args.share)
        low, high, private = r.own_private
        print(
            f"| {r.row} | {r.noise_part:.3g} / {r.bias_part:.3g} | "
            f"{r.default_total:.4g} | {r.fixed_total:.4g} | "
            f"{r.own_hindsight[1]:.4g} (b {r.own_hindsight[0]:g}) | "
            f"{private:.4g} (b {low:g}–{high:g}) | "
            f"{r.per_publisher[0]:.4g} → {r.per_publisher[1]:.4g} |",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

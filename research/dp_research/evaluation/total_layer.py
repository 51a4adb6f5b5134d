"""Exploration for issue 27, not part of the scale table: the campaign total as the sum of the
publishers' answers plus a released remainder, what AdsBPC+ clipped off, capped per user.

    python -m dp_research.evaluation.total_layer [--share 0.1] [--caps 4 8 16 2s]
        [--gates none 1] [--pace 0] [--tiers 20000 200000]
        [--datasets zipf normal uniform events]

Where the default's total fails, its error is the clipping bias every publisher shares
(:mod:`.total_split`). A total measured on its own needs a bound chosen privately, and seven
days of noisy histograms choose it badly. This measures a total that needs no new choice:

- AdsBPC+ runs at (1 − share)·ρ without a remainder of its own, as the default does at ρ
  with its own (0.05·ρ since issue 27, the platform's ``remainder_share``).
- Each day it would also release X_t = Σ_u min(c_ut − k_ut, E) with Gaussian noise at
  share·ρ over the n days, independent of the publishers' noise. Here c_ut is user u's
  conversions on day t and k_ut what the filter kept of them (:func:`~.plus_data.run_plus`,
  ``excess_cap``). One user moves X_t by at most E: ℓ2 sensitivity E a day, the fixed-bound
  baseline's σ at bound E (:func:`~.fixed_bound.daily_sigma`), so ρ = share·ρ in all.
- The total's answer to query q is Σ_p answer_pq + Σ_t q_t X̃_t.
- Its expected squared error is P·Var_q + Σ_t q_t² σ_E² + (Σ_p bias_pq + Σ_t q_t X_t)²: the
  added remainder cancels the shared bias up to what lies above k_ut + E.

E is a public constant (``--caps 8``) or κ times AdsBPC+'s profile scale s (``--caps 2s``), a
DP output of the same run, so post-processing. Every cap is measured in one run
(:data:`CAP_GRID`). ``--gates z`` adds q·X̃ only where it exceeds z times its standard
deviation (post-processing; its error is averaged over seeded draws, :func:`gated_errors`).
``--pace β`` runs every AdsBPC+ run (the full-ρ one, its oracle and the reduced one) with a
paced filter (:func:`~.plus_data.run_plus`): a user's spend may not run ahead of a flat
profile's by more than β·ρ1, so a heavy user is clipped day by day instead of cut for good
part-way through the campaign — fewer conversions lost, and the ones lost are spread over the
days, where a remainder capped at E catches them. Seeded noise on synthetic data, one noise
repeat per row; the per-publisher columns compare AdsBPC+ at (1 − share)·ρ with the fixed
bound and Oracle+ at ρ; nothing printed is a release.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from unittest.mock import patch

import numpy as np

import dp_research.evaluation.methods as methods
from dp_research.evaluation.experiment import ExperimentConfig, prepare_dataset, run_experiment
from dp_research.evaluation.fixed_bound import daily_sigma
from dp_research.evaluation.metrics import workload_error
from dp_research.evaluation.plus_data import PlusRun, run_plus
from dp_research.evaluation.prepared import PreparedData
from dp_research.evaluation.total_split import DATASETS, recorded_totals, row_configs, row_label

CAP_GRID = np.arange(1.0, 20.25, 0.25)  # caps measured in one run; E = κ·s rounds up, at most 20
GATE_DRAWS = 400  # seeded draws of the remainder's noise per row, for a gated total's error


@dataclass(frozen=True)
class LayeredTotal:
    row: str
    default_total: float  # AdsBPC+ at ρ: its total (Σ_p answers), the tables' metric
    fixed_total: float  # the fixed bound's best total (b*_total, not private)
    layered: dict[tuple[str, float | None], float]  # (E's rule, gate z) → the layered total's
    # error, AdsBPC+ at (1 − share)·ρ; rule "8" is E = 8, "2s" is E = 2·s (s: AdsBPC+'s scale)
    per_publisher: tuple[float, float]  # AdsBPC+'s per-publisher error at ρ and (1 − share)·ρ
    fixed: float  # the fixed bound's per-publisher error at b* (not private)
    oracle: float  # Oracle+'s per-publisher error at ρ (not private)
    scale: float | None  # s, AdsBPC+'s profile scale in that run (a DP output)


@contextmanager
def plus_runs(**options: object) -> Iterator[list[PlusRun]]:
    """Within the block every AdsBPC+ run of the experiment (methods.run_plus) takes
    ``options`` (``excess_cap``, ``pace``); yields the runs, in order, as they happen."""
    runs: list[PlusRun] = []

    def plus(*args, **kwargs) -> PlusRun:
        run = run_plus(*args, **options, **kwargs)
        runs.append(run)
        return run

    with patch.object(methods, "run_plus", plus):
        yield runs


def observed_run(
    config: ExperimentConfig,
    data: PreparedData,
    cap: float | np.ndarray,
    pace: float | None = None,
):
    """Run ``config`` (AdsBPC+ its first method); return its result, AdsBPC+'s first run, with
    each day's remainder at cap E (a column per cap if several), and that run's total's
    (Var_q, Σ_p bias_pq)."""
    with recorded_totals() as split, plus_runs(excess_cap=cap, pace=pace) as runs:
        result = run_experiment(config, data, show_progress=False)
    return result, runs[0], split[0]  # AdsBPC+'s first repeat, before any projection


def gated_errors(
    bias: np.ndarray,
    remainder: np.ndarray,
    sigma: float,
    queries: np.ndarray,
    z: float,
    seed: int,
) -> np.ndarray:
    """E[(bias_q + g(q·X̃))²] per query q over seeded draws of X̃ = X + N(0, σ²) a day, where
    g adds the remainder's answer only where it exceeds z times its standard deviation (with
    z ≥ 0 never a negative one: X ≥ 0). g reads only the noisy remainder and public values, so it
    is post-processing; the publishers' independent noise adds P·Var_q outside it."""
    rng = np.random.default_rng(seed)
    draws = rng.normal(0.0, sigma, size=(GATE_DRAWS, remainder.size)) @ queries.T
    answers = queries @ remainder + draws
    sd = sigma * np.sqrt((queries**2).sum(axis=1))
    gated = np.where(answers > z * sd, answers, 0.0)
    return ((bias + gated) ** 2).mean(axis=0)


def _rule_cap(rule: str, scale: float | None, grid: np.ndarray) -> int:
    """The column of ``grid`` for ``rule``: "8" is E = 8; "2s" is the first cap ≥ 2·s."""
    if rule.endswith("s"):
        if scale is None:
            raise ValueError("E = κ·s needs AdsBPC+'s scale")
        target = float(rule[:-1]) * scale
    else:
        target = float(rule)
    return int(np.searchsorted(grid, target * (1 - 1e-9)).clip(max=grid.size - 1))


def layered_total(
    config: ExperimentConfig,
    share: float,
    rules: list[str],
    gates: list[float | None],
    pace: float | None = None,
) -> LayeredTotal:
    data, _ = prepare_dataset(config)
    with plus_runs(pace=pace):
        full = run_experiment(
            replace(config, methods=(*config.methods, "plus_oracle")), data, show_progress=False
        )
    reduced = replace(
        config,
        rho=config.rho * (1 - share),
        methods=("adsbpc_plus",),
        # the layer is this module's own remainder: the run it is added to releases none
        plus_settings=(*config.plus_settings, ("remainder_share", 0.0)),
    )
    workload = config.make_workload()
    queries = workload.matrix
    grid = np.union1d(CAP_GRID, [float(rule) for rule in rules if not rule.endswith("s")])
    result, run, (variances, bias) = observed_run(reduced, data, grid, pace)
    assert run.excess is not None
    layered = {}
    for rule in rules:
        column = _rule_cap(rule, run.scale_estimate, grid)
        cap, remainder = float(grid[column]), run.excess[:, column]
        sigma = daily_sigma(cap, share * config.rho, data.n_days)
        for z in gates:
            if z is None:  # the plain sum, in closed form
                shared = (queries**2).sum(axis=1) * sigma**2 + (bias + queries @ remainder) ** 2
            else:
                shared = gated_errors(bias, remainder, sigma, queries, z, config.seed)
            layered[rule, z] = workload_error(data.n_publishers * variances + shared, workload)
    return LayeredTotal(
        row=row_label(config),
        default_total=float(full.methods["adsbpc_plus"].score.total_error),
        fixed_total=float(full.methods["fixed_hindsight"].score.total_error),
        layered=layered,
        fixed=float(full.methods["fixed_hindsight"].score.error),
        oracle=float(full.methods["plus_oracle"].score.error),
        per_publisher=(
            float(full.methods["adsbpc_plus"].score.error),
            float(result.methods["adsbpc_plus"].score.error),
        ),
        scale=run.scale_estimate,
    )


def _gate(text: str) -> float | None:
    return None if text == "none" else float(text)


def _column(rule: str, z: float | None) -> str:
    e = f"E = {rule[:-1]}·s" if rule.endswith("s") else f"E = {rule}"
    return e if z is None else f"{e}, gate {z:g}σ"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m dp_research.evaluation.total_layer")
    parser.add_argument("--share", type=float, default=0.1, help="ρ share of the remainder")
    parser.add_argument(
        "--caps",
        nargs="+",
        default=["4", "8", "16"],
        help="E per column: a number, or κ followed by s for E = κ·s (AdsBPC+'s scale)",
    )
    parser.add_argument(
        "--gates",
        nargs="+",
        type=_gate,
        default=[None],
        help="none (the plain sum) or z: add the remainder only where it exceeds z·sd",
    )
    parser.add_argument(
        "--pace",
        type=float,
        default=None,
        help="β: every AdsBPC+ run paces its filter (run_plus(pace=β)); default: the plan's "
        "(β = 0 since issue 27)",
    )
    parser.add_argument("--tiers", type=int, nargs="+", default=[20_000, 200_000])
    parser.add_argument("--datasets", nargs="+", default=list(DATASETS))
    args = parser.parse_args(argv)
    keys = [(rule, z) for rule in args.caps for z in args.gates]
    heads = " | ".join(_column(rule, z) for rule, z in keys)
    reduced = f"{1 - args.share:g}ρ"
    print(
        f"| row | AdsBPC+ total | fixed best total † | {heads} | s | per publisher at ρ → "
        f"{reduced} | {reduced} ÷ fixed † | {reduced} ÷ Oracle+ † |"
    )
    print("|---|---:|---:|" + "---:|" * (len(keys) + 1) + "---|---:|---:|")
    for config in row_configs(args.tiers, args.datasets):
        r = layered_total(replace(config, repeats=1), args.share, args.caps, args.gates, args.pace)
        cells = " | ".join(f"{r.layered[key]:.4g}" for key in keys)
        scale = "" if r.scale is None else f"{r.scale:.3g}"
        print(
            f"| {r.row} | {r.default_total:.4g} | {r.fixed_total:.4g} | {cells} | {scale} | "
            f"{r.per_publisher[0]:.4g} → {r.per_publisher[1]:.4g} | "
            f"{r.per_publisher[1] / r.fixed:.3f} | {r.per_publisher[1] / r.oracle:.3f} |",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""One experiment = one dataset × one workload × one ρ and n, every method over R seeded repeats.

The data is generated once per (dataset, n, users, seed) and prepared once
(:func:`~.prepared.prepare`); methods, ρ's and workloads reuse it. Each (method, repeat) gets its
own :class:`~dp_platform.privacy.noise.SeededNoise` stream derived from (seed, method, repeat),
so a method's numbers do not change when another method is added or dropped. This is an
evaluation on synthetic or public data, not a release (see :mod:`.adsbpc_runs`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from dp_platform.events.model import ConversionSet
from dp_platform.mechanisms import adsbpc_plus
from dp_platform.mechanisms.adsbpc import make_plan
from dp_platform.privacy.noise import NoiseSource, SeededNoise
from dp_research.baselines import Workload, prefix, sliding
from dp_research.evaluation.adsbpc_runs import (
    PlusSettingValues,
    campaign_for,
    plus_campaign_for,
)
from dp_research.evaluation.datasets import (
    DatasetSpec,
    dataset_spec,
    generator_users,
    load_dataset,
)
from dp_research.evaluation.fixed_bound import DEFAULT_BOUND
from dp_research.evaluation.methods import (
    ALL_METHODS,
    BASELINES,
    LABELS,
    METHODS,
    NOT_PRIVATE,
    ONE_REPEAT,
    PLUS_METHODS,
    Context,
    Outcome,
    rho_charged,
    run_method,
)
from dp_research.evaluation.paper import paper_ratio
from dp_research.evaluation.plus_data import PlusData, prepare_plus
from dp_research.evaluation.prepared import PreparedData, prepare
from dp_research.evaluation.progress import Progress
from dp_research.evaluation.scoring import Score, metric_name, score

__all__ = [
    "ExperimentConfig",
    "ExperimentResult",
    "MethodResult",
    "noise_seed",
    "prepare_dataset",
    "run_experiment",
    "run_workloads",
]

WINDOW = 7


@dataclass(frozen=True)
class ExperimentConfig:
    """What to run; the defaults are the paper's Tables IX–X setting."""

    dataset: str
    workload: str = "prefix"
    rho: float = 1.0
    days: int = 31
    users: int = 1_000_000
    publishers: int = 1000
    repeats: int = 10
    methods: tuple[str, ...] = METHODS
    seed: int = 0
    window: int = WINDOW
    users_per_day: int | None = None
    """When set, ``users`` is ignored: the generator gets as many users as make this the
    expected number converting on a day (datasets.generator_users; synthetic sets only)."""
    plus_settings: PlusSettingValues = ()
    """AdsBPC+ settings over the platform's defaults (``evaluate --scale-table --plus``)."""

    def __post_init__(self) -> None:
        spec = dataset_spec(self.dataset)
        if self.users_per_day is not None and (self.users_per_day < 1 or not spec.synthetic):
            raise ValueError(
                f"users_per_day needs a synthetic dataset and a value >= 1 ({self.dataset} has "
                f"{'a fixed size' if not spec.synthetic else 'synthetic users'})"
            )
        if self.workload not in ("prefix", "sliding"):
            raise ValueError(f"workload must be prefix or sliding, got {self.workload!r}")
        unknown = set(self.methods) - set(ALL_METHODS)
        if unknown or not self.methods:
            raise ValueError(f"methods must be among {ALL_METHODS}, got {self.methods}")
        if self.repeats < 1 or self.users < 1 or self.publishers < 1 or not self.rho > 0:
            raise ValueError("repeats, users and publishers must be >= 1 and rho > 0")

    def generator_users(self) -> int:
        """Users the data is generated for: ``users``, or the number for ``users_per_day``."""
        if self.users_per_day is None:
            return self.users
        return generator_users(self.dataset, self.users_per_day, self.days)

    def conversions(self) -> ConversionSet:
        """The config's dataset, generated (seeded) for :meth:`generator_users` users."""
        return load_dataset(
            self.dataset,
            users=self.generator_users(),
            publishers=self.publishers,
            days=self.days,
            seed=self.seed,
        )

    def make_workload(self) -> Workload:
        return prefix(self.days) if self.workload == "prefix" else sliding(self.days, self.window)


def noise_seed(seed: int, method: str, repeat: int) -> int:
    """Independent stream per (experiment seed, method, repeat)."""
    sequence = np.random.SeedSequence([seed, 1 + ALL_METHODS.index(method), repeat])
    return int(sequence.generate_state(1, np.uint64)[0])


def prepare_dataset(config: ExperimentConfig) -> tuple[PreparedData, float]:
    """Generate and prepare the config's data; returns it with the seconds it took."""
    started = time.perf_counter()
    spec = dataset_spec(config.dataset)
    data = prepare(config.conversions(), spec.global_bound)
    return data, time.perf_counter() - started


@dataclass(frozen=True)
class MethodResult:
    name: str
    score: Score
    seconds: float
    rho_charged: float
    mean_bounds: tuple[float, ...] | None = None
    scales: tuple[float, ...] | None = None  # AdsBPC+'s profile scale s, one per repeat
    fixed_bound: dict[str, float] | None = None  # a fixed-bound method's b (and b*_total)

    @property
    def private(self) -> bool:
        return self.name not in NOT_PRIVATE

    def to_json(self) -> dict:
        out = {
            "label": LABELS[self.name],
            "private": self.private,
            "error": self.score.error,
            "error_std": self.score.error_std,
            "error_empirical": self.score.error_empirical,
            "error_paper_scale": self.score.error_paper_scale,
            "seconds": self.seconds,
            "rho_charged": self.rho_charged,
            "bias_share": self.score.bias_share,
            "worst_window": self.score.worst_window,
            "error_consistent": self.score.error_consistent,
            "total_error": self.score.total_error,
            "total_error_empirical": self.score.total_error_empirical,
        }
        if self.mean_bounds is not None:
            out["mean_bounds"] = list(self.mean_bounds)
        if self.scales is not None:
            out["scales"] = list(self.scales)
        if self.fixed_bound is not None:
            out["fixed_bound"] = dict(self.fixed_bound)
        return out


@dataclass(frozen=True)
class ExperimentResult:
    config: ExperimentConfig
    spec: DatasetSpec
    users: int
    publishers: int
    conversions: int
    prepare_seconds: float
    methods: dict[str, MethodResult] = field(default_factory=dict)
    active_per_day: float | None = None  # users with a conversion, mean over the days

    @property
    def metric(self) -> str:
        return metric_name(self.config.make_workload())

    def error(self, name: str) -> float | None:
        result = self.methods.get(name)
        return None if result is None else result.score.error

    def summary(self) -> dict:
        """AdsBPC against the best evaluated baseline (and the paper's ratio), and the oracle."""
        baselines = {n: r.score.error for n, r in self.methods.items() if n in BASELINES}
        out: dict = {"paper_ratio": paper_ratio(self.config.dataset, self.config.workload)}
        ours = self.error("adsbpc")
        if baselines:
            best = min(baselines, key=lambda n: baselines[n])
            out["best_baseline"] = best
            if ours is not None:
                out["adsbpc_over_best_baseline"] = ours / baselines[best]
                out["improvement"] = 1.0 - ours / baselines[best]
                out["adsbpc_below_every_baseline"] = all(ours < v for v in baselines.values())
        oracle = self.error("oracle")
        if ours is not None and oracle:
            out["adsbpc_over_oracle"] = ours / oracle
        plus = self.error("adsbpc_plus")
        if plus is not None and ours:
            out["adsbpc_plus_over_adsbpc"] = plus / ours
        if plus is not None and baselines:
            best = min(baselines, key=lambda n: baselines[n])
            out["adsbpc_plus_over_best_baseline"] = plus / baselines[best]
        plus_oracle = self.error("plus_oracle")
        if plus is not None and plus_oracle:
            out["adsbpc_plus_over_its_oracle"] = plus / plus_oracle
        hindsight = self.methods.get("fixed_hindsight")
        if plus is not None and hindsight is not None:
            out["adsbpc_plus_over_fixed_hindsight"] = plus / hindsight.score.error
            plus_total = self.methods["adsbpc_plus"].score.total_error
            if plus_total is not None and hindsight.score.total_error:
                out["adsbpc_plus_total_over_fixed_total"] = plus_total / hindsight.score.total_error
        return out

    def to_json(self) -> dict:
        c = self.config
        methods = {name: result.to_json() for name, result in self.methods.items()}
        return {
            "dataset": c.dataset,
            "workload": c.workload,
            "metric": self.metric,
            "rho": c.rho,
            "days": c.days,
            "repeats": c.repeats,
            "seed": c.seed,
            "users": self.users,
            "users_per_day": c.users_per_day,
            "active_per_day": self.active_per_day,
            "publishers": self.publishers,
            "conversions": self.conversions,
            "global_bound": self.spec.global_bound,
            "cap": self.spec.cap,
            "window": c.window if c.workload == "sliding" else None,
            "weights": "gamma^2 = (1, ..., 1, 49)" if c.workload == "prefix" else None,
            "prepare_seconds": self.prepare_seconds,
            "methods": methods,
            "error_paper_scale": {n: m["error_paper_scale"] for n, m in methods.items()},
            "summary": self.summary(),
        }


def _fixed_bound(name: str, ctx: Context) -> dict[str, float] | None:
    """The bound a fixed-bound method released with; the hindsight one's b*_total too."""
    if name == "fixed_3":
        return {"bound": DEFAULT_BOUND, "total_bound": DEFAULT_BOUND}
    if name == "fixed_hindsight":
        tuned = ctx.hindsight
        return {"bound": tuned.bound, "total_bound": tuned.total_bound, "grid_top": tuned.grid_top}
    return None


def run_workloads(
    config: ExperimentConfig,
    data: PreparedData,
    workloads: Sequence[str],
    *,
    prepare_seconds: float,
    show_progress: bool | None,
    plus_data: PlusData | None = None,
) -> dict[str, ExperimentResult]:
    """``config`` on the same prepared data once per workload (the data does not depend on it)."""
    return {
        workload: run_experiment(
            replace(config, workload=workload),
            data,
            prepare_seconds=prepare_seconds,
            show_progress=show_progress,
            plus_data=plus_data,
        )
        for workload in workloads
    }


def _ordered(methods: Sequence[str]) -> list[str]:
    """AdsBPC before MMBPC (which reuses its bounds); otherwise the order given."""
    names = list(dict.fromkeys(methods))
    if "mmbpc" in names and "adsbpc" in names:
        names.remove("adsbpc")
        names.insert(names.index("mmbpc"), "adsbpc")
    return names


def run_experiment(
    config: ExperimentConfig,
    data: PreparedData | None = None,
    *,
    prepare_seconds: float = 0.0,
    show_progress: bool | None = None,
    plus_data: PlusData | None = None,
) -> ExperimentResult:
    """Run every method of ``config`` on ``data`` (prepared here when not given).

    AdsBPC+ needs row-level data (:func:`~.plus_data.prepare_plus`): pass ``plus_data``, or it
    is built here from the regenerated (same-seed, identical) dataset.
    """
    spec = dataset_spec(config.dataset)
    if data is None:
        data, prepare_seconds = prepare_dataset(config)
    plus_plan = plus_diagonal_plan = None
    if set(PLUS_METHODS) & set(config.methods):
        if plus_data is None:
            started = time.perf_counter()
            plus_data = prepare_plus(config.conversions())
            prepare_seconds += time.perf_counter() - started
        plus_campaign = plus_campaign_for(
            config.make_workload(),
            rho=config.rho,
            cap=spec.cap,
            settings=config.plus_settings,
            publishers=plus_data.n_publishers,
        )
        plus_plan = adsbpc_plus.make_plan(plus_campaign)
        if "plus_diagonal" in config.methods:
            settings = plus_campaign.mechanism.model_copy(update={"strategy": "diagonal"})
            diagonal = plus_campaign.model_copy(update={"mechanism": settings})
            plus_diagonal_plan = adsbpc_plus.make_plan(diagonal)
    if data.n_days != config.days:
        raise ValueError(f"data has {data.n_days} days, config {config.days}")
    workload = config.make_workload()
    campaign = campaign_for(workload, rho=config.rho, cap=spec.cap)
    ctx = Context(
        data=data,
        spec=spec,
        workload=workload,
        rho=config.rho,
        campaign=campaign,
        plan=make_plan(campaign),
        quantile=campaign.mechanism.bounds.p,
        plus_plan=plus_plan,
        plus_data=plus_data,
        plus_diagonal_plan=plus_diagonal_plan,
    )
    names = _ordered(config.methods)
    results: dict[str, MethodResult] = {}
    label = f"{config.dataset}/{config.workload} ρ={config.rho:g} n={config.days}"
    total = sum(1 if name in ONE_REPEAT else config.repeats for name in names)
    with Progress(total, label, enabled=show_progress) as bar:
        for name in names:
            started = time.perf_counter()
            outcomes: list[Outcome] = []
            for repeat in range(1 if name in ONE_REPEAT else config.repeats):
                noise: Callable[[str], NoiseSource] = lambda m, k=repeat: SeededNoise(  # noqa: E731
                    noise_seed(config.seed, m, k)
                )
                outcomes.append(run_method(name, ctx, repeat, noise))
                bar.advance(name)
            seconds = time.perf_counter() - started
            bounds = [o.bounds for o in outcomes if o.bounds is not None]
            scales = [o.scale for o in outcomes if o.scale is not None]
            results[name] = MethodResult(
                name=name,
                score=score(outcomes, ctx.truth_answers, workload),
                seconds=seconds,
                rho_charged=rho_charged(name, ctx),
                mean_bounds=tuple(np.mean(bounds, axis=0).tolist()) if bounds else None,
                scales=tuple(scales) if scales else None,
                fixed_bound=_fixed_bound(name, ctx),
            )
    ordered = {name: results[name] for name in ALL_METHODS if name in results}
    return ExperimentResult(
        config=config,
        spec=spec,
        users=data.n_users,
        publishers=data.n_publishers,
        conversions=data.n_conversions,
        prepare_seconds=prepare_seconds,
        methods=ordered,
        active_per_day=float(data.histograms[:, 1:].sum(axis=1).mean()),
    )

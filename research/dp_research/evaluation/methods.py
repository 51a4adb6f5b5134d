"""Every compared method as "one repeat → answers and their expected squared errors".

For each repeat a method returns the answers it released (P × m, from the seeded noise) and
E[(answer − truth)²] *given that repeat's private, data-dependent choices* (AdsBPC's and
MMBPC's bounds r, Stream's rung path; none for IPA, BIN, UMM and the oracle): the Gaussian
measurement noise is independent of those choices and of the data, so that expectation is the
analytic variance plus the squared clipping bias against the unclipped truth. Averaging it over
repeats is an exact-in-expectation, much less noisy estimate of the error than the realised
squared errors, which are kept too.

Budgets (all add/remove user-level zCDP, total ρ):

- AdsBPC: ρ1 = 0.7ρ measurement, 0.15ρ quantiles, 0.15ρ SVT (the plan's exact split).
- IPA, BIN, UMM, Stream: all of ρ, global cap GS (Stream: its τ ladder up to GS).
- MMBPC: **uses the bounds r AdsBPC chose in the same repeat and gets the same measurement
  budget ρ1 = 0.7ρ**, so it pays for choosing r exactly what AdsBPC paid and its total is ρ.
  (Giving it all of ρ would hand it r for free; the paper does not say which it did.)
- Oracle: NOT private. The true per-day p-quantile as bound and all of ρ on the Gaussian.
- AdsBPC+ oracle: NOT private. AdsBPC+'s own choices on exact inputs — the true daily
  histograms for r_i, the true profile's q-quantile for s — and all of ρ on the measurement.
- Fixed bound (:mod:`.fixed_bound`, a generic library's release): ρ/n a day on a Gaussian at
  ℓ2 sensitivity b. ``fixed_hindsight`` is NOT private: its b is tuned on the true data.
- AdsBPC+ (:mod:`dp_platform.mechanisms.adsbpc_plus`): ρ = ρ1 (each user's filter budget) + the
  daily noisy histograms + the profile histogram, its plan's exact split (default 0.95/0.03/0.02).
  Its expected error uses the *filtered* clipped vectors of the repeat (each user's cut
  depends on their own spend), not a per-day bound alone.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import cached_property

import numpy as np

from dp_platform.campaign_total import total_additions
from dp_platform.config import CampaignConfig
from dp_platform.mechanisms.adsbpc import AdsbpcPlan
from dp_platform.mechanisms.adsbpc_plus_plan import PlusPlan
from dp_platform.privacy.noise import NoiseSource
from dp_research.baselines import (
    BIN,
    IPA,
    MMBPC,
    UMM,
    LinearPlan,
    Stream,
    Workload,
    cached_plan,
    prefix_weights,
)
from dp_research.evaluation.adsbpc_runs import DailyRun, given_bounds_run, run_adsbpc
from dp_research.evaluation.datasets import DatasetSpec
from dp_research.evaluation.fixed_bound import (
    DEFAULT_BOUND,
    Hindsight,
    fixed_run,
    tune_in_hindsight,
    zcdp_charged,
)
from dp_research.evaluation.plus_data import PlusData, run_plus
from dp_research.evaluation.plus_scale import mse_choose, mse_scale
from dp_research.evaluation.prepared import PreparedData

__all__ = [
    "ALL_METHODS",
    "BASELINES",
    "FIXED_METHODS",
    "LABELS",
    "METHODS",
    "NOT_PRIVATE",
    "ONE_REPEAT",
    "Context",
    "Outcome",
    "daily_outcome",
    "linear_outcome",
    "run_method",
    "total_squared_errors",
]

METHODS = ("adsbpc", "ipa", "bin", "stream", "umm", "mmbpc", "oracle")  # the paper's comparison
ALL_METHODS = (
    *METHODS,
    "adsbpc_plus",
    "plus_oracle",
    "plus_diagonal",
    "plus_mse",
    "fixed_3",
    "fixed_hindsight",
)
BASELINES = ("ipa", "bin", "stream", "umm", "mmbpc")
LABELS = {
    "adsbpc": "AdsBPC",
    "ipa": "IPA",
    "bin": "BIN",
    "stream": "Stream",
    "umm": "UMM",
    "mmbpc": "MMBPC",
    "oracle": "Oracle (non-private)",
    "adsbpc_plus": "AdsBPC+",
    "plus_oracle": "Oracle+ (non-private)",
    "plus_diagonal": "AdsBPC+ diagonal",
    "plus_mse": "AdsBPC+ s by MSE",
    "fixed_3": "Fixed bound 3 (library default)",
    "fixed_hindsight": "Fixed bound, tuned in hindsight (not private †)",
}
PLUS_METHODS = ("adsbpc_plus", "plus_oracle", "plus_diagonal", "plus_mse")  # row-level data
CANDIDATES = ("plus_diagonal", "plus_mse")  # AdsBPC+ variants measured, not the default
FIXED_METHODS = ("fixed_3", "fixed_hindsight")  # a generic library's release (.fixed_bound)
NOT_PRIVATE = ("oracle", "plus_oracle", "fixed_hindsight")  # read the true data to choose
ONE_REPEAT = ("plus_oracle",)
"""Methods whose choices read no noise: their expected error (the tables' "error") is the same
in every repeat, so one repeat gives it; their realised error and ± std are of that one run."""


@dataclass(frozen=True)
class Outcome:
    """One repeat of one method: released answers and expected squared errors, both (P × m).

    ``variances`` (m,) is the noise part of ``expected`` (the rest is squared clipping bias).
    ``total_expected`` (m,) is E[(Σ_p answer − Σ_p truth)²] of the all-publisher campaign total,
    what an advertiser reads first: P·Var + (Σ_p bias)², since every method here draws its noise
    independently per publisher (:func:`total_squared_errors`). ``total_answers`` (m,) replaces
    Σ_p answers when the total comes from a release of its own (the fixed bound tuned in
    hindsight for the total, :mod:`.fixed_bound`).
    """

    answers: np.ndarray
    expected: np.ndarray
    bounds: np.ndarray | None = None
    variances: np.ndarray | None = None
    scale: float | None = None  # AdsBPC+'s profile scale s (DP output; evaluation only)
    total_expected: np.ndarray | None = None
    total_answers: np.ndarray | None = None

    @property
    def total_series(self) -> np.ndarray:
        """(m,) the released campaign total of every query."""
        return self.answers.sum(axis=0) if self.total_answers is None else self.total_answers


@dataclass
class Context:
    """One experiment's shared, read-only inputs, and the AdsBPC runs MMBPC reuses."""

    data: PreparedData
    spec: DatasetSpec
    workload: Workload
    rho: float
    campaign: CampaignConfig
    plan: AdsbpcPlan
    quantile: float
    adsbpc_runs: dict[int, DailyRun] = field(default_factory=dict)
    plus_plan: PlusPlan | None = None
    plus_data: PlusData | None = None
    plus_diagonal_plan: PlusPlan | None = None  # the candidate "plus_diagonal"

    @cached_property
    def queries(self) -> np.ndarray:
        """Q (m × n): full windows only for ``sliding`` (docs/baselines.md#sliding-workload)."""
        return self.workload.matrix

    @cached_property
    def truth_answers(self) -> np.ndarray:
        """(P × m) answers on the unclipped data: clipping bias counts as error."""
        return self.data.truth @ self.queries.T

    @cached_property
    def hindsight(self) -> Hindsight:
        """NOT PRIVATE: the fixed bounds tuned on this experiment's true data (once)."""
        return tune_in_hindsight(
            self.data,
            self.workload,
            self.rho,
            cap=float(self.spec.cap),
            global_bound=float(self.spec.global_bound),
        )


def total_squared_errors(variances: np.ndarray, bias: np.ndarray) -> np.ndarray:
    """(m,) expected squared error of the all-publisher total, P·Var_q + (Σ_p bias_pq)²: the
    noise of different publishers is independent (one Gaussian per coordinate), so variances
    add, while the publishers' clipping biases add before squaring."""
    return bias.shape[0] * variances + bias.sum(axis=0) ** 2


REMAINDER_DRAWS = 400  # seeded draws of the remainder's noise for the total's expected error


def remainder_total_errors(
    bias: np.ndarray, remainder: np.ndarray, sigma: float, queries: np.ndarray
) -> np.ndarray:
    """(m,) E[(Σ_p bias_q + q·X̂)²] over seeded draws of X̃ = X + N(0, σ_R² I), the campaign
    total's error besides the publishers' noise (dp_platform/campaign_total.py: the total adds
    q·X̂, X̂ the days' estimate: their level and their differences from it, shrunk apart)."""
    rng = np.random.default_rng(0)  # an expectation, not a release: any fixed draws will do
    days = remainder.size
    draws = rng.normal(0.0, sigma, size=(REMAINDER_DRAWS, days))
    added = total_additions(queries, remainder[None, :] + draws, sigma)
    return ((bias[None, :] + added) ** 2).mean(axis=0)


def linear_outcome(
    plan: LinearPlan, clipped: np.ndarray, ctx: Context, noise: NoiseSource
) -> Outcome:
    """A baseline's release on its clipped matrix, and Var + bias² (data-independent noise)."""
    answers = plan.release(clipped, noise)
    bias = clipped @ ctx.queries.T - ctx.truth_answers
    variances = plan.query_variances()
    return Outcome(
        answers,
        variances[None, :] + bias**2,
        variances=variances,
        total_expected=total_squared_errors(variances, bias),
    )


def daily_outcome(run: DailyRun, ctx: Context) -> Outcome:
    """AdsBPC-shaped release: answers Q x̃, Var_q = Σ_i Q_qi² σ_i², bias Q(clipped − truth)."""
    q = ctx.queries
    answers = run.released @ q.T
    variances = (q**2) @ run.sigmas**2
    bias = ctx.data.per_day_clipped(run.bounds) @ q.T - ctx.truth_answers
    return Outcome(
        answers,
        variances[None, :] + bias**2,
        run.bounds,
        variances,
        total_expected=total_squared_errors(variances, bias),
    )


def _adsbpc_run(ctx: Context, repeat: int, noise: Callable[[], NoiseSource]) -> DailyRun:
    if repeat not in ctx.adsbpc_runs:
        ctx.adsbpc_runs[repeat] = run_adsbpc(ctx.plan, ctx.data, noise())
    return ctx.adsbpc_runs[repeat]


def _stream(ctx: Context, noise: NoiseSource) -> Outcome:
    """Stream's release from pre-clipped rungs: the draws and their order of StreamPlan.release."""
    plan = cached_plan(Stream(float(ctx.spec.global_bound), ctx.rho), ctx.workload)
    rungs = plan.rung_path(ctx.data.exceed_counts(plan.taus[:-1]), noise)
    ends = ctx.workload.ends
    truth = ctx.truth_answers
    answers = np.zeros_like(truth)
    bias = np.zeros_like(truth)
    for j, (tau, tree) in enumerate(zip(plan.taus, plan.trees, strict=True)):
        clipped = ctx.data.global_clipped(float(tau))
        rung_answers = tree.release(clipped, noise)
        chosen = rungs[ends] == j
        answers[:, chosen] = rung_answers[:, chosen]
        bias[:, chosen] = (clipped @ ctx.queries.T - truth)[:, chosen]
    variances = plan.conditional_variances(rungs)
    return Outcome(
        answers,
        variances[None, :] + bias**2,
        variances=variances,
        total_expected=total_squared_errors(variances, bias),
    )


def _plus(ctx: Context, noise: NoiseSource, name: str = "adsbpc_plus") -> Outcome:
    """AdsBPC+'s repeat (its non-private oracle's, or a candidate's): answers Q x̂,
    Var_q = Σ_t ((QC⁻¹)_qt σ_t)² (Σ_i Q_qi² σ_i² for the diagonal strategy), bias
    Q(what the days estimate − truth)."""
    plan = ctx.plus_diagonal_plan if name == "plus_diagonal" else ctx.plus_plan
    if plan is None or ctx.plus_data is None:
        raise ValueError(f"{name} needs the context's plan and plus_data")
    choose = None
    if name == "plus_mse":
        weights = None if ctx.workload.kind == "sliding" else prefix_weights(ctx.workload.n)
        choose = mse_choose(mse_scale(plan, ctx.plus_data.n_publishers, weights))
    run = run_plus(plan, ctx.plus_data, noise, oracle=name == "plus_oracle", choose=choose)
    q = ctx.queries
    decoder = np.linalg.solve(plan.matrix.T, q.T).T if plan.correlated else q  # Q C⁻¹
    variances = (decoder**2) @ run.sigmas**2
    bias = run.clipped @ q.T - ctx.truth_answers
    answers = run.released @ q.T
    total = total_squared_errors(variances, bias)
    total_answers = None
    if run.remainder_truth is not None and plan.remainder_sigma is not None:
        assert run.remainders is not None
        total = bias.shape[0] * variances + remainder_total_errors(
            bias.sum(axis=0), run.remainder_truth, plan.remainder_sigma, q
        )
        # the total as published (``total_estimates``): the publishers' sum plus q·X̂
        added = total_additions(q, run.remainders[None, :], plan.remainder_sigma)[0]
        total_answers = answers.sum(axis=0) + added
    return Outcome(
        answers,
        variances[None, :] + bias**2,
        run.bounds,
        variances,
        run.scale_estimate,
        total,
        total_answers,
    )


def _fixed(ctx: Context, name: str, noise: Callable[[str], NoiseSource]) -> Outcome:
    """A fixed-bound release (:mod:`.fixed_bound`). The hindsight method's total is that of the
    release at b*_total, on the same draws (a fresh source of the same seed) when it differs."""
    if name == "fixed_3":
        return daily_outcome(fixed_run(ctx.data, DEFAULT_BOUND, ctx.rho, noise(name)), ctx)
    tuned = ctx.hindsight
    outcome = daily_outcome(fixed_run(ctx.data, tuned.bound, ctx.rho, noise(name)), ctx)
    if tuned.total_bound == tuned.bound:
        return outcome
    total = daily_outcome(fixed_run(ctx.data, tuned.total_bound, ctx.rho, noise(name)), ctx)
    return replace(outcome, total_expected=total.total_expected, total_answers=total.total_series)


def run_method(
    name: str,
    ctx: Context,
    repeat: int,
    noise: Callable[[str], NoiseSource],
) -> Outcome:
    """Repeat ``repeat`` of method ``name``; ``noise(method)`` gives that method's seeded source.

    MMBPC reads the bounds of AdsBPC's run of the same repeat (run here if not yet).
    """
    gs = float(ctx.spec.global_bound)
    if name in FIXED_METHODS:
        return _fixed(ctx, name, noise)
    if name in PLUS_METHODS:  # candidates share AdsBPC+'s noise: paired with it
        return _plus(ctx, noise("adsbpc_plus" if name in CANDIDATES else name), name)
    if name == "adsbpc":
        return daily_outcome(_adsbpc_run(ctx, repeat, lambda: noise("adsbpc")), ctx)
    if name == "oracle":
        bounds = ctx.data.true_bounds(ctx.quantile)
        return daily_outcome(
            given_bounds_run(ctx.campaign, ctx.data, bounds, ctx.rho, noise("oracle")), ctx
        )
    if name == "stream":
        return _stream(ctx, noise("stream"))
    if name == "mmbpc":
        run = _adsbpc_run(ctx, repeat, lambda: noise("adsbpc"))
        mechanism = MMBPC(tuple(run.bounds), float(ctx.plan.budget.rho1))
        outcome = linear_outcome(
            mechanism.plan(ctx.workload),
            ctx.data.per_day_clipped(run.bounds),
            ctx,
            noise("mmbpc"),
        )
        return replace(outcome, bounds=run.bounds)
    mechanisms = {"ipa": IPA(gs, ctx.rho), "bin": BIN(gs, ctx.rho), "umm": UMM(gs, ctx.rho)}
    if name not in mechanisms:
        raise ValueError(f"unknown method {name!r}; expected one of {ALL_METHODS}")
    plan = cached_plan(mechanisms[name], ctx.workload)
    return linear_outcome(plan, ctx.data.global_clipped(gs), ctx, noise(name))


def rho_charged(name: str, ctx: Context) -> float:
    """zCDP the method charges (the oracle's bound is not private: only its Gaussian counts)."""
    gs = float(ctx.spec.global_bound)
    if name in ("adsbpc_plus", *CANDIDATES):
        assert ctx.plus_plan is not None
        return float(ctx.plus_plan.budget.total)
    if name == "adsbpc":
        return float(ctx.plan.budget.total)
    if name in FIXED_METHODS:
        bound = DEFAULT_BOUND if name == "fixed_3" else ctx.hindsight.bound
        return zcdp_charged(bound, ctx.rho, ctx.data.n_days)
    if name in ("oracle", "plus_oracle"):
        return ctx.rho
    if name == "stream":
        return cached_plan(Stream(gs, ctx.rho), ctx.workload).zcdp_cost()
    if name == "mmbpc":  # its Gaussian at ρ1 plus what choosing AdsBPC's r cost
        choosing = float(ctx.plan.budget.total - ctx.plan.budget.rho1)
        gaussian = MMBPC((1.0,) * ctx.workload.n, float(ctx.plan.budget.rho1))
        return gaussian.plan(ctx.workload).zcdp_cost() + choosing
    mechanisms = {"ipa": IPA(gs, ctx.rho), "bin": BIN(gs, ctx.rho), "umm": UMM(gs, ctx.rho)}
    return cached_plan(mechanisms[name], ctx.workload).zcdp_cost()

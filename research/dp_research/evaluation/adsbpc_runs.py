"""AdsBPC in experiments: the real mechanism, day by day, on prepared (synthetic or public) data.

Each repeat runs the production code of :mod:`dp_platform.mechanisms.adsbpc`:
``choose_bound`` (private quantile on days ≤ l, the two sparse-vector tests after) on the day's
histogram, then ``measure`` (Gaussian with the planned σ̄_i·r_i) on the day's clipped
per-publisher vector, in the same order as :func:`dp_platform.mechanisms.adsbpc.step`, so a
seeded run equals ``run_stream`` bit for bit (tested). Only the data access is vectorised
(:class:`~.prepared.PreparedData`).

**Evaluation is not a release.** Runs here use :class:`~dp_platform.privacy.noise.SeededNoise`
so that experiments repeat exactly; that is acceptable only because the data is synthetic or
public and nothing computed here is ever published as a DP statistic. Production releases go
through the ledger with the secure sampler.

Also here: the two *given-bounds* variants, which are not the mechanism — the non-private oracle
(the true per-day quantile as the bound and all of ρ on measurement) and the constant-bound
ablation — and the quantile-every-day ablation (Table XVII).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache

import numpy as np

from dp_platform.config import CampaignConfig
from dp_platform.config_loader import parse_campaign
from dp_platform.mechanisms.adsbpc import (
    AdsbpcPlan,
    BoundChoice,
    BoundState,
    choose_bound,
    declare,
    gaussian_allotments,
    measure,
    sensitivity_factor,
)
from dp_platform.mechanisms.adsbpc_plus_plan import PlusSettings
from dp_platform.privacy.accounting import epsilon_for_exponential_rho
from dp_platform.privacy.noise import NoiseSource
from dp_platform.privacy.quantile import private_quantile
from dp_platform.workload import campaign_scales, workload_matrix
from dp_research.baselines import Workload
from dp_research.evaluation.prepared import PreparedData

__all__ = [
    "BoundRule",
    "DailyRun",
    "campaign_for",
    "given_bounds_run",
    "plus_campaign_for",
    "quantile_every_day",
    "run_adsbpc",
]

PAPER_QUANTILE_DAYS = 7
# AdsBPC+ settings over the defaults, (name, value): a number, a word (strategy: sqrt) or None
PlusSettingValues = tuple[tuple[str, float | str | None], ...]


def shown_setting(value: float | str | None) -> str:
    """A setting's value as ``--plus`` takes it (``null`` for None)."""
    if value is None:
        return "null"
    return f"{value:g}" if isinstance(value, float) else value


PLUS_PROFILE_DAYS = int(PlusSettings.model_fields["profile_days"].default)
"""m of AdsBPC+ in the evaluation: the platform's default (the tables split r at it)."""

BoundRule = Callable[
    [AdsbpcPlan, BoundState, np.ndarray, NoiseSource], tuple[BoundChoice, BoundState]
]


def campaign_for(
    workload: Workload,
    *,
    rho: float,
    cap: int,
    split: tuple[float, float, float] = (0.7, 0.15, 0.15),
    bounds: dict | None = None,
    last_weight: float = 7.0,
) -> CampaignConfig:
    """The paper's §6.4 AdsBPC configuration for one evaluation workload.

    Prefix → ``wsum`` with γ_n = 7 (weight 49); sliding → ``maxvar`` over width-``window``
    windows. l = 7 quantile days, or n − 1 when n ≤ 7 (the config needs l < n; the paper's n = 7
    point of Figure 2 does not say what it did).
    """
    if workload.kind == "prefix":
        kind: dict = {"kind": "prefix"}
        objective: dict = {"kind": "wsum", "last_weight": last_weight}
    else:
        kind = {"kind": "sliding", "window": workload.window}
        objective = {"kind": "maxvar"}
    measurement, quantile, svt = split
    return parse_campaign(
        {
            "name": "evaluation",
            "advertiser": "evaluation",
            "account": "evaluation",
            "start": "2024-01-01",
            "days": workload.n,
            "privacy": {
                "rho": rho,
                "split": {"measurement": measurement, "quantile": quantile, "svt": svt},
            },
            "workload": kind,
            "objective": objective,
            "bounds": {
                "quantile_days": min(PAPER_QUANTILE_DAYS, workload.n - 1),
                "cap": cap,
                **(bounds or {}),
            },
        }
    )


def plus_campaign_for(
    workload: Workload,
    *,
    rho: float,
    cap: int,
    settings: PlusSettingValues = (),
    publishers: int | None = None,
) -> CampaignConfig:
    """The same campaign as :func:`campaign_for` run by AdsBPC+: the platform's defaults, Λ =
    the dataset's, the profile read from the default m days (fewer when the campaign is short),
    and ``settings`` (name, value) over those defaults. ``publishers``: the dataset's count,
    listed as a campaign on it would (None: ``publishers: all``)."""
    data = campaign_for(workload, rho=rho, cap=cap).model_dump(mode="json")
    if publishers is not None:
        data["publishers"] = [f"publisher_{index}" for index in range(publishers)]
    data["mechanism"] = "adsbpc_plus"
    data["adsbpc_plus"] = {
        "cap": cap,
        "profile_days": min(PLUS_PROFILE_DAYS, workload.n - 1),
        **dict(settings),
    }
    return parse_campaign(data)


@dataclass(frozen=True)
class DailyRun:
    """One repeat: per-day bounds and σ's, and the (P × n) noisy released vectors."""

    bounds: np.ndarray
    sigmas: np.ndarray
    released: np.ndarray
    methods: tuple[str, ...]


def _default_rule(
    plan: AdsbpcPlan, state: BoundState, histogram: np.ndarray, noise: NoiseSource
) -> tuple[BoundChoice, BoundState]:
    return choose_bound(plan, state, histogram, noise=noise)


def run_adsbpc(
    plan: AdsbpcPlan, data: PreparedData, noise: NoiseSource, rule: BoundRule = _default_rule
) -> DailyRun:
    """All n days of the mechanism (``rule`` replaces the bound choice for ablations)."""
    if plan.days != data.n_days:
        raise ValueError(f"plan has {plan.days} days, data has {data.n_days}")
    state = BoundState()
    bounds, sigmas, methods = [], [], []
    released = np.empty((data.n_publishers, data.n_days))
    for day in range(data.n_days):
        choice, state = rule(plan, state, data.histograms[day], noise)
        clipped = data.day_clipped(day, choice.bound)
        measurement = measure(plan, choice, clipped, allotment=declare(plan, choice), noise=noise)
        bounds.append(choice.bound)
        sigmas.append(measurement.sigma)
        methods.append(choice.method)
        released[:, day] = measurement.values
    return DailyRun(np.array(bounds), np.array(sigmas), released, tuple(methods))


def quantile_every_day(rho_per_day: float) -> BoundRule:
    """Table XVII's rule: PrivateQuantile on every day at ρ2' each, no SVT (an ablation).

    Pair it with a plan whose ρ1 is the measurement share; the whole run then costs
    ρ1 + n·ρ2' (the caller picks ρ2' so that this is the stated ρ).
    """
    epsilon = epsilon_for_exponential_rho(rho_per_day)

    def rule(
        plan: AdsbpcPlan, state: BoundState, histogram: np.ndarray, noise: NoiseSource
    ) -> tuple[BoundChoice, BoundState]:
        cfg = plan.bounds
        bound = private_quantile(histogram, p=cfg.p, cap=cfg.cap, epsilon=epsilon, noise=noise)
        day = state.day + 1
        choice = BoundChoice(day=day, bound=bound, method="quantile", charges={})
        return choice, BoundState(day=day, bounds=(*state.bounds, bound))

    return rule


@lru_cache(maxsize=64)
def _planned(campaign_json: str, rho_measure: float) -> tuple[np.ndarray, tuple[Fraction, ...]]:
    """σ̄ and each day's exact share of ρ_measure in the same shape (g_i ∝ 1/σ̄_i²)."""
    campaign = parse_campaign(json.loads(campaign_json))
    scales = campaign_scales(campaign.objective, workload_matrix(campaign), rho_measure)
    allotments = gaussian_allotments(Fraction(repr(rho_measure)), scales.variances)
    return np.sqrt(scales.variances), allotments


def given_bounds_run(
    campaign: CampaignConfig,
    data: PreparedData,
    bounds: np.ndarray,
    rho_measure: float,
    noise: NoiseSource,
) -> DailyRun:
    """NOT the mechanism: AdsBPC's release with bounds handed in and ρ_measure on the Gaussian.

    σ_i = σ̄_i·r_i with σ̄ shaped for the campaign's workload and objective at ρ1 = ρ_measure
    (as :func:`dp_platform.mechanisms.adsbpc.make_plan` does, without its exact-rational
    rounding). Used
    for the non-private oracle (true bounds, all of ρ) and the constant-bound ablation. Each
    day's draw declares ℓ2 sensitivity r_i·√factor and that day's share g_i of ρ_measure; the
    sampler refuses it if OpenDP's map says more.
    """
    r = np.asarray(bounds, dtype=np.float64)
    sigma_bar, allotments = _planned(campaign.model_dump_json(), rho_measure)
    sigmas = sigma_bar * r
    root_factor = math.sqrt(sensitivity_factor(campaign))
    clipped = data.per_day_clipped(r)
    released = np.empty_like(clipped)
    for day in range(data.n_days):  # one Gaussian vector per day, as the mechanism draws them
        released[:, day] = noise.add_gaussian(
            clipped[:, day],
            float(sigmas[day]),
            l2_sensitivity=float(r[day]) * root_factor,
            rho=allotments[day],
        )
    return DailyRun(r, sigmas, released, ("given",) * data.n_days)

"""AdsBPC+'s daily bound choice: (r_i, σ_i) and the day's charges from noisy histograms.

:func:`choose_bound` draws the day's noisy capped histogram (ρ_h; on day m+1 also the profile
histogram, ρ_p); :func:`decide` is post-processing of those DP outputs and the public plan. The
objective and the profile scale s are derived in docs/algorithm.md#adsbpc-plus.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from dp_platform.mechanisms.adsbpc_plus_plan import (
    PROFILE_BINS,
    SCALE_Z,
    PlusPlan,
    profile_top,
)
from dp_platform.mechanisms.adsbpc_plus_scale import objective_scale, scale_interval
from dp_platform.privacy.accounting import Rho, gaussian_rho
from dp_platform.privacy.filter import worst_case_charge
from dp_platform.privacy.noise import NoiseSource, resolve
from dp_platform.privacy.noisy_histogram import noisy_histogram
from dp_platform.privacy.quantile import cap_histogram
from dp_platform.privacy.strategy import decoded_std, worst_row_norm

__all__ = [
    "BOUND_STEP",
    "PlusChoice",
    "PlusState",
    "choose_bound",
    "day_sigma",
    "decide",
    "estimate_scale",
    "profile_scale",
    "row_sensitivity",
    "select_bound",
]


BOUND_STEP = 0.01  # grid of candidate r_i


@dataclass(frozen=True)
class PlusState:
    """Public-parameter chain after ``day``. Secret by policy (ledger only), like AdsBPC's."""

    day: int = 0
    bounds: tuple[float, ...] = ()
    scales: tuple[float, ...] = ()
    histograms: tuple[tuple[float, ...], ...] = ()  # noisy daily histograms (DP outputs)
    scale_estimate: float | None = None
    gaussian_charged: Fraction = Fraction(0)
    sigmas: tuple[float, ...] = ()  # rows' σ_1..σ_day (correlated strategies only)


@dataclass(frozen=True)
class PlusChoice:
    """Day i's public parameters (r_i, σ_i, ψ_i), what choosing them cost, its Gaussian charge."""

    day: int
    bound: float
    sigma: float
    scale: float
    charges: dict[str, Rho]
    gaussian: Rho
    method: str = "histogram"
    # correlated strategies only (None otherwise: a diagonal day's row is its release)
    row_bound: float | None = None  # the row's L2 sensitivity Σ_{j≤i} C_ij r_j
    release_sigma: float | None = None  # σ of each entry of the decoded x̂_i


def estimate_scale(
    noisy_profile: np.ndarray,
    quantile: float,
    cap: float,
    *,
    sigma: float,
    prior: float,
    z: float = SCALE_Z,
) -> float:
    """s: the profile scale the filter must not cut — an upper confidence bound on the
    profile's q-quantile, or the public prior s0 where the noisy profile cannot rule s0 out.

    With t_j the number of bins above j and B = :data:`PROFILE_BINS`, the excess
    E_j = N(>j) − (1 − q)·K = q·N(>j) − (1 − q)·N(≤j) is a signed sum of the bins, so its noisy
    value Ẽ_j (from the noisy tail and the noisy user count K̃ = Σ h̃) has the exact standard
    deviation sd_j = σ·√(q²·t_j + (1 − q)²·(B − t_j)) — K̃'s noise is counted once, jointly
    with the tail's, not bounded a second time.

    - Upper bound U: √ of the upper edge of the first j with Ẽ_j + z·sd_j ≤ 0 (z = 0 is the
      plain rule N(>j) ≤ (1 − q)·K̃). Let j* be the first bin whose *true* excess is ≤ 0; E_j
      falls with j, so every j < j* passes only if its noise is below −z·sd_j, probability
      Φ(−z); over at most B bins P(U below j*'s edge) ≤ B·Φ(−z) = :data:`SCALE_ALPHA` ≈ 2.3 %
      at the default z = :data:`SCALE_Z` (Bonferroni: the first crossing of B tests). No
      qualifying bin: U = Λ; K̃ ≤ 0 (no signal at all): s = s0.
    - Lower bound L: √ of the lower edge of the first j with Ẽ_j − z·sd_j ≤ 0; every bin below
      it has, at confidence, more than (1 − q) of the users above it.

    s = min(U, s0), except s = U when L > s0 (the profile shows, at confidence, that the
    quantile is above the prior); s0 = Λ gives U itself. So s ≠ U only when s0 < U and
    the profile cannot tell s0 from the quantile — with many users L and U are one bin apart
    and s = U whenever s0 ≥ U. Whenever s0 is at or above the true quantile, s is too, except
    with probability ≤ SCALE_ALPHA (as for U). A prior below the quantile that the profile
    cannot resolve cuts the users above s0: bias (never privacy), the cost of trusting s0.

    Privacy: reads only the noisy histogram (a DP output) and public values (q, Λ, z, s0 and
    σ = the plan's σ_p): post-processing, free; the ledger charges ρ_p exactly as before.
    """
    h = np.asarray(noisy_profile, dtype=np.float64)
    if h.shape != (PROFILE_BINS,):
        raise ValueError(f"the profile histogram has {PROFILE_BINS} bins")
    if not sigma > 0 or not z >= 0:
        raise ValueError("sigma must be > 0 and z >= 0")
    if not 0 < prior <= cap:
        raise ValueError(f"prior must be in (0, {cap}]")
    if not float(h.sum()) > 0:
        return float(prior)
    lower, upper = scale_interval(h, quantile, cap, sigma=sigma, z=z)
    if upper <= prior:
        return upper
    return upper if lower > prior else float(prior)


def profile_scale(
    plan: PlusPlan,
    noisy_profile: np.ndarray,
    *,
    sigma: float,
    publishers: int,
    prior: float | None = None,
    z: float = SCALE_Z,
) -> float:
    """s by the plan's rule: ``quantile`` (plans registered before issue 27) or ``objective``
    (:mod:`~dp_platform.mechanisms.adsbpc_plus_scale`). Both are post-processing of the noisy
    profile; ``prior`` defaults to the configured s0 (the evaluation's oracle passes the top)."""
    s0 = plan.prior if prior is None else prior
    if plan.scale_rule == "objective":
        return objective_scale(
            plan, noisy_profile, sigma=sigma, publishers=publishers, prior=s0, z=z
        )
    return estimate_scale(
        noisy_profile, plan.config.quantile, profile_top(plan), sigma=sigma, prior=s0, z=z
    )


def day_sigma(plan: PlusPlan, day: int, bound: float, scale: float | None) -> float:
    """σ_i = σ̄_i·ψ0·r_i before the profile estimate (at most σ̄_i·ε0·Λ where the plan caps
    it, :meth:`PlusPlan.early_unit`), σ̄_i·min(s, r_i) after (s absolute).

    With a correlated strategy a row carries earlier days too, so its norm is not capped by
    r_i: after the profile σ_i = σ̄_i·s."""
    sigma_bar = plan.sigma_bar[day - 1]
    if scale is None:
        return float(sigma_bar * plan.early_unit(bound))
    return sigma_bar * (scale if plan.correlated else min(scale, bound))


def select_bound(
    plan: PlusPlan,
    day: int,
    pooled: np.ndarray,
    pooled_sigma: float,
    scale: float | None,
    k: int,
) -> float:
    """r_i on a 0.01 grid in [1, Λ] minimising α_i·E[B(r)²]/k² + a_i·σ_i(r)² (module doc).

    E[B(r)²] ≈ max(B̃(r), 0)² + Var B̃(r): the noise of the pooled histogram counts as
    uncertainty about the cut, so where the histogram cannot see the tail, r grows (cautious).
    """
    cap = plan.config.cap
    grid = np.arange(round(1 / BOUND_STEP), round(cap / BOUND_STEP) + 1) * BOUND_STEP
    counts = np.arange(1, cap + 1, dtype=np.float64)
    excess = np.maximum(counts[None, :] - grid[:, None], 0.0)
    cut = excess @ np.asarray(pooled, dtype=np.float64)
    cut_sq = np.maximum(cut, 0.0) ** 2 + pooled_sigma**2 * (excess**2).sum(axis=1)
    sigma_bar = plan.sigma_bar[day - 1]
    if scale is None:
        sigmas = sigma_bar * plan.early_unit(grid)
    elif plan.correlated:
        sigmas = np.full_like(grid, sigma_bar * scale)
    else:
        sigmas = sigma_bar * np.minimum(scale, grid)
    i = day - 1
    objective = (
        plan.bias_weights[i] * cut_sq / max(k, 1) ** 2 + plan.variance_weights[i] * sigmas**2
    )
    return float(grid[int(np.argmin(objective))])


def choose_bound(
    plan: PlusPlan,
    state: PlusState,
    histogram: np.ndarray,
    *,
    publishers: int,
    profile: np.ndarray | None = None,
    noise: NoiseSource | None = None,
) -> tuple[PlusChoice, PlusState]:
    """Day ``state.day + 1``'s (r_i, σ_i): noisy histogram (+ the profile on day m+1), then r_i.

    ``histogram[c]`` = users with exactly c attributed conversions that day (uncapped, index 0
    ignored); ``profile`` = users per :data:`PROFILE_EDGES` bin of T_u (needed on day m+1 only;
    compute it with :func:`profile_factors`). Costs ρ_h (+ ρ_p on day m+1); the Gaussian charge
    for :func:`measure` is fixed here, from public values.
    """
    source = resolve(noise)
    day = state.day + 1
    if day > plan.days:
        raise ValueError(f"campaign {plan.campaign} has {plan.days} days; day {day} is past it")
    cfg = plan.config
    capped = cap_histogram(histogram, cfg.cap)[1:]
    noisy = noisy_histogram(
        capped, plan.sigma_histogram, rho=plan.budget.histogram_day, noise=source
    )
    estimate = state.scale_estimate
    if plan.needs_profile(day):
        if profile is None:
            raise ValueError(f"day {day} needs the profile histogram of days 1..{day - 1}")
        if plan.sigma_profile is None:
            raise ValueError(f"day {day} needs the profile, and the plan has no profile σ")
        noisy_profile = noisy_histogram(
            profile, plan.sigma_profile, rho=plan.budget.profile, noise=source
        )
        estimate = profile_scale(
            plan, noisy_profile, sigma=plan.sigma_profile, publishers=publishers
        )
    elif profile is not None:
        raise ValueError(f"day {day} takes no profile histogram (only day {plan.profile_day})")
    return decide(plan, state, noisy, estimate, publishers=publishers)


def row_sensitivity(plan: PlusPlan, bounds: tuple[float, ...]) -> float:
    """The ℓ2 bound of one user's row on day t = len(bounds), what the day is charged at: r_t
    for the diagonal strategy (L1 ≤ r_t), Σ_{j≤t} C_tj r_j for a correlated one."""
    if not plan.correlated:
        return bounds[-1]
    return worst_row_norm(plan.matrix, np.asarray(bounds), len(bounds))


def decide(
    plan: PlusPlan,
    state: PlusState,
    noisy: np.ndarray,
    estimate: float | None,
    *,
    publishers: int,
    histogram_sigma: float | None = None,
) -> tuple[PlusChoice, PlusState]:
    """Day ``state.day + 1``'s (r_i, σ_i) and charges from the day's noisy capped histogram
    (bins 1..Λ) and the profile scale s (None before day m+1): post-processing of DP outputs
    and public values. ``histogram_sigma`` is the histograms' noise σ (the plan's σ_h; the
    non-private oracle of the evaluation passes 0 with exact histograms)."""
    day = state.day + 1
    cfg = plan.config
    sigma_h = plan.sigma_histogram if histogram_sigma is None else histogram_sigma
    histograms = (*state.histograms, tuple(float(v) for v in noisy))
    window = np.asarray(histograms[-cfg.pool_days :])
    pooled_sigma = sigma_h / math.sqrt(len(window))
    bound = select_bound(plan, day, window.mean(axis=0), pooled_sigma, estimate, publishers)
    sigma = day_sigma(plan, day, bound, estimate)
    scale = sigma / (plan.sigma_bar[day - 1] * bound)  # ψ_i = σ_i/(σ̄_i r_i)
    bounds = (*state.bounds, bound)
    row_bound, release_sigma, sigmas = None, None, state.sigmas
    sensitivity = row_sensitivity(plan, bounds)
    if plan.correlated:
        if len(sigmas) != day - 1:
            raise ValueError(f"day {day}: the chain holds {len(sigmas)} earlier rows' σ")
        sigmas = (*sigmas, sigma)
        row_bound = sensitivity
        release_sigma = decoded_std(plan.matrix, np.asarray(sigmas), np.eye(day)[day - 1])
    rho1 = plan.budget.rho1.value
    worst = gaussian_rho(sensitivity, sigma)
    if day == plan.days:
        gaussian = rho1 - state.gaussian_charged  # the rest of ρ1: totals are exact
    else:
        gaussian = worst_case_charge(state.gaussian_charged, worst, rho1)
    choice = PlusChoice(
        day,
        bound,
        sigma,
        scale,
        plan.bound_charges(day),
        Rho(gaussian),
        row_bound=row_bound,
        release_sigma=release_sigma,
    )
    new_state = PlusState(
        day=day,
        bounds=bounds,
        scales=(*state.scales, scale),
        histograms=histograms,
        scale_estimate=estimate,
        gaussian_charged=state.gaussian_charged + gaussian,
        sigmas=sigmas,
    )
    return choice, new_state

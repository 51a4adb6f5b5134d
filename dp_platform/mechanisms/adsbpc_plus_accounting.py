"""AdsBPC+'s Gaussian release: the day's declared sensitivity and loss, checked against the
ledger's charges, and the draw.

The filter (:mod:`dp_platform.privacy.filter`, in the warehouse) charges each user their own row;
:func:`declare` states the worst case any one user's row can cost from the registered plan and
the stored chain, and :func:`measure` draws at it (docs/algorithm.md#adsbpc-plus).
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from dp_platform.mechanisms.adsbpc import clipped_vector
from dp_platform.mechanisms.adsbpc_plus_bound import PlusChoice, PlusState
from dp_platform.mechanisms.adsbpc_plus_plan import PlusPlan
from dp_platform.mechanisms.base import Measurement
from dp_platform.privacy.accounting import Rho
from dp_platform.privacy.allotment import Allotment, float_above
from dp_platform.privacy.noise import NoiseSource, resolve
from dp_platform.privacy.noise_check import SLACK, AllotmentExceeded
from dp_platform.privacy.strategy import decode_day

__all__ = ["declare", "measure", "release_charges", "remainder_allotment", "remainder_sigma"]


def _planned_rows(plan: PlusPlan, state: PlusState) -> tuple[np.ndarray, np.ndarray]:
    """Rows 1..t's ℓ2 sensitivity Δ_j = Σ_{k≤j} C_jk r_k and noise unit u_j (σ_j = σ̄_j·u_j)
    from the plan and the chain's DP outputs (bounds, profile scale s): u_j = ψ0·r_j before
    the profile (at most ε0·Λ where the plan caps it), min(s, r_j) after, s with a correlated
    strategy (the plan's rule, restated apart from :func:`day_sigma`)."""
    bounds = np.asarray(state.bounds, dtype=np.float64)
    t = bounds.size
    deltas = np.tril(plan.matrix[:t, :t]) @ bounds
    s = state.scale_estimate
    after = np.arange(1, t + 1) >= (plan.profile_day or t + 1)
    early = np.minimum(
        plan.config.prior_scale * bounds, np.inf if plan.early_cap is None else plan.early_cap
    )
    if s is None:
        units = early
    else:
        measured = np.full(t, s) if plan.correlated else np.minimum(s, bounds)
        units = np.where(after, measured, early)
    return deltas, units


def declare(plan: PlusPlan, choice: PlusChoice, state: PlusState) -> Allotment:
    """Day t's Gaussian as the registered plan states it (privacy/allotment.py), from the plan
    and the stored chain after day t — bounds r_1..r_t and the profile scale s, DP outputs —
    never from the σ_t, Δ_t or charge :func:`decide` computed: ℓ2 sensitivity
    Δ_t = Σ_{j≤t} C_tj r_j (r_t for the diagonal strategy) and loss Δ_t²/(2(σ̄_t·u_t)²), the
    worst case any one user's row can cost (the filter charges each user their own row).

    Δ_t holds whatever the plan's cells are measured by (``plan.marginals``): the Gaussian is
    added to encode(row), and one conversion's encoded norm is ≤ 1 for independent cells and
    for a residual strategy alike (normalised so; brute-forced over every vertex and every
    two-conversion user in tests/test_marginals.py), so a day keeping ≤ r_j conversions has
    ‖encode(k_j)‖ ≤ r_j and, by the triangle inequality, ‖encode(row)‖ ≤ Σ_j C_tj r_j. The
    filter charges each user the exact ‖encode(row)‖² (plus_filter.sql, in the layout's Gram).

    Refuses (AllotmentExceeded, before any draw) a chain whose Gaussian charges through day t
    fall below min(ρ1, Σ_{j≤t} Δ_j²/(2(σ̄_j·u_j)²)), the most any one user can have lost: a
    sensitivity understated where the days were charged.
    """
    t = choice.day
    if state.day != t or state.bounds[-1:] != (choice.bound,):
        raise ValueError(f"day {t}'s declaration needs the chain's state after day {t}")
    deltas, units = _planned_rows(plan, state)
    sigmas = np.asarray(plan.sigma_bar[:t]) * units
    rho1 = plan.budget.rho1.value
    owed = min(float(rho1), float(np.sum(deltas**2 / (2.0 * sigmas**2))))
    if float(state.gaussian_charged) < owed * (1.0 - SLACK):
        raise AllotmentExceeded(
            f"AdsBPC+ day {t}: the ledger's Gaussian charges through this day are below the "
            "most the registered plan lets one user lose by then; nothing was drawn"
        )
    row = [Fraction(float(c)) for c in plan.matrix[t - 1, :t]]
    delta = float_above(sum((c * Fraction(r) for c, r in zip(row, state.bounds, strict=True))))
    sigma = Fraction(plan.sigma_bar[t - 1]) * Fraction(float(units[-1]))
    return Allotment(delta, Fraction(delta) ** 2 / (2 * sigma * sigma))


def release_charges(plan: PlusPlan, choice: PlusChoice) -> dict[str, Rho]:
    """What a day's release charges: its Gaussian part, and ρ_R/n if it releases a remainder."""
    charges = {"gaussian": choice.gaussian}
    if plan.remainder_cap is not None:
        charges["remainder"] = plan.budget.remainder_day
    return charges


def remainder_allotment(plan: PlusPlan) -> Allotment:
    """The remainder's draw as the registered plan states it: X_t = Σ_u min(c_ut − k_ut, E).

    Privacy unit one user, add/remove. Removing user u changes no other user's term — each
    user's kept conversions k_ut depend only on their own data and the public (r_t, σ_t, cap)
    — and moves X_t by min(c_ut − k_ut, E) ∈ [0, E]: ℓ2 sensitivity E. Its loss is declared
    as the day's charge ρ_R/n, so the sampler refuses (before drawing) a σ_R whose privacy map
    at E says more: over the n days the remainder costs at most ρ_R."""
    if plan.remainder_cap is None:
        raise ValueError(f"campaign {plan.campaign}: the plan releases no remainder")
    return Allotment(plan.remainder_cap, plan.budget.remainder_day.value)


def remainder_sigma(plan: PlusPlan) -> float:
    """σ_R, the remainder's noise: the plan's, sized for E²/(2σ_R²) ≤ ρ_R/n at plan time."""
    if plan.remainder_sigma is None:
        raise ValueError(f"campaign {plan.campaign}: the plan releases no remainder")
    return plan.remainder_sigma


def measure(
    plan: PlusPlan,
    choice: PlusChoice,
    clipped: np.ndarray,
    *,
    allotment: Allotment,
    noise: NoiseSource | None = None,
    earlier: tuple[Measurement, ...] = (),
    remainder: float | None = None,
) -> Measurement:
    """Release row y_i = (C x̄)_i + N(0, σ_i² I); ``clipped`` must be the filter's row at
    (r_i, σ_i) — for the diagonal strategy the day's filtered vector x̄_i itself.

    Privacy unit one user, add/remove: a user's part of the row has ℓ2 ≤ Σ_{j≤i} C_ij r_j
    (r_i for the diagonal strategy: L1 ≤ r_i), and the filter charges them at most that squared
    over 2σ_i². ``allotment`` is :func:`declare`'s statement of both from the registered plan;
    the sampler refuses the draw if OpenDP's map of it at σ_i says more. With a correlated
    strategy the published values are the decoded x̂_i = (y_i − Σ_{j<i} C_ij x̂_j)/C_ii from
    ``earlier`` (days 1..i−1 as released): post-processing; ``sigma`` is then each entry's σ
    and ``row_sigma`` the row's σ_i.

    ``remainder``: the day's X_t (warehouse ``plus_remainder``), required exactly when the plan
    releases it; drawn second, at :func:`remainder_allotment`, into ``remainder``/
    ``remainder_sigma`` of the release.
    """
    vector = clipped_vector(clipped)
    if choice.day > plan.days or not choice.sigma > 0:
        raise ValueError("choice does not belong to this plan")
    side = None
    if remainder is None and plan.remainder_cap is not None:
        raise ValueError(f"day {choice.day}: the plan releases a remainder; X_t is missing")
    if remainder is not None and plan.remainder_cap is None:
        raise ValueError(f"day {choice.day}: the plan releases no remainder; X_t was given")
    source = resolve(noise)
    if remainder is not None:  # refused before any draw, the day's row included
        side = remainder_allotment(plan)
        source.check_gaussian(remainder_sigma(plan), l2_sensitivity=side.sensitivity, rho=side.loss)
    release_sigma: float | None = None  # a correlated strategy's days are decoded
    if plan.correlated:  # refused before the draw: no noise is spent on a refused day
        if [m.day for m in earlier] != list(range(1, choice.day)):
            raise ValueError(
                f"day {choice.day} decodes from the releases of days 1..{choice.day - 1}"
            )
        if choice.release_sigma is None:
            raise ValueError(
                f"day {choice.day}: a correlated strategy's choice needs its release σ"
            )
        release_sigma = choice.release_sigma
    noisy = source.add_gaussian(
        vector, choice.sigma, l2_sensitivity=allotment.sensitivity, rho=allotment.loss
    )
    extra = {}
    if side is not None:
        sigma = remainder_sigma(plan)
        drawn = source.add_gaussian(
            np.array([float(remainder)]), sigma, l2_sensitivity=side.sensitivity, rho=side.loss
        )
        extra = {"remainder": float(drawn[0]), "remainder_sigma": sigma}
    charges = release_charges(plan, choice)
    if release_sigma is None:
        values = tuple(float(v) for v in noisy)
        return Measurement(choice.day, choice.bound, choice.sigma, values, charges, **extra)
    decoded = decode_day(plan.matrix, noisy, [np.asarray(m.values) for m in earlier])
    return Measurement(
        choice.day,
        choice.bound,
        release_sigma,
        tuple(float(v) for v in decoded),
        charges,
        row_sigma=choice.sigma,
        **extra,
    )

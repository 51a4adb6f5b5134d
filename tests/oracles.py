"""Test oracles: exact laws, theorem bounds and reference computations the tests compare the
library with. The library never calls them (they moved here from it); each is the form a paper
or a proof states, kept apart from the code it checks.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from dp_platform.attribution.private_touch import Score, scores, sensitivity
from dp_platform.matching import _weights, all_matchings
from dp_platform.privacy.accounting import _cks_log_delta_at, _min_over_orders, gaussian_rho
from dp_platform.privacy.discrete import IntegerNoiseSource, exponentials
from dp_platform.privacy.exponential import _check, _scores, grouped_exponential, utility_gap
from dp_platform.privacy.noisy_histogram import SENSITIVITY
from dp_platform.privacy.quantile import UTILITY_SENSITIVITY, unit_utilities


def exponential_probabilities(
    scores: np.ndarray | list[float], *, epsilon: float, sensitivity: float
) -> np.ndarray:
    """The exact law of :func:`exponential_mechanism`: P(y) ∝ exp(ε·s(y)/(2Δ))."""
    _check(epsilon, sensitivity)
    exponent = epsilon * _scores(scores) / (2.0 * sensitivity)
    weights = np.exp(exponent - exponent.max())
    return weights / weights.sum()


def zcdp_delta(rho: float, epsilon: float) -> float:
    """Smallest δ such that ρ-zCDP implies (ε, δ)-DP by the Canonne–Kamath–Steinke bound."""
    if rho < 0 or epsilon < 0:
        raise ValueError("rho and epsilon must be >= 0")
    if rho == 0:
        return 0.0
    log_delta = _min_over_orders(lambda alpha: _cks_log_delta_at(alpha, rho, epsilon))
    return float(min(1.0, math.exp(log_delta)))


def histogram_rho(sigma: float) -> Fraction:
    """Exact zCDP cost of one noisy histogram with per-bin noise σ: 1/(2σ²)."""
    return gaussian_rho(SENSITIVITY, sigma)


def interval_probabilities(histogram: np.ndarray, p: float, cap: int, epsilon: float) -> np.ndarray:
    """Exact probability of each unit interval (for tests and for the docs' worked examples)."""
    scores = epsilon * unit_utilities(histogram, p, cap) / (2.0 * UTILITY_SENSITIVITY)
    weights = np.exp(scores - scores.max())
    return weights / weights.sum()


def expected_utility_gap(candidates: int, *, epsilon: float, sensitivity: float) -> float:
    """2Δ(ln d + 1)/ε: a bound on s_max − E[s(Y)]."""
    return utility_gap(candidates, epsilon=epsilon, sensitivity=sensitivity, t=1.0)


def log_ratio_bound(probabilities: np.ndarray, neighbour: np.ndarray) -> float:
    """max_y |ln P(y) − ln P′(y)|: the privacy loss of one output law against another."""
    p, q = np.asarray(probabilities, dtype=np.float64), np.asarray(neighbour, dtype=np.float64)
    if p.shape != q.shape:
        raise ValueError("the two laws must be over the same candidates")
    both = (p > 0) & (q > 0)
    if np.any((p > 0) != (q > 0)):
        return math.inf
    return float(np.max(np.abs(np.log(p[both]) - np.log(q[both]))))


def greedy_law(
    weights: np.ndarray, *, epsilon: float, sensitivity: float = 1.0
) -> dict[tuple[int, ...], float]:
    """Exact output law of :func:`greedy_exponential_matching` (small graphs; for tests)."""
    w = _weights(weights)
    law: dict[tuple[int, ...], float] = {}
    for matching in all_matchings(*w.shape):
        free = list(range(w.shape[1]))
        p = 1.0
        for bag, click in enumerate(matching):
            step = exponential_probabilities(w[bag, free], epsilon=epsilon, sensitivity=sensitivity)
            p *= step[free.index(click)]
            free.remove(click)
        law[matching] = p
    return law


def theorem6_gap(bags: int, clicks: int, *, epsilon: float, gamma: float) -> float:
    """(2m/ε)·ln(mn/γ): Laplace matching's shortfall bound, holding w.p. ≥ 1 − γ (Δ = 1)."""
    return 2.0 * bags / epsilon * math.log(bags * clicks / gamma)


def theorem7_gap(bags: int, clicks: int, *, epsilon: float, k: float) -> float:
    """2(m ln n + k)/ε: the exponential mechanism's shortfall, exceeded w.p. ≤ e^{−k}."""
    return 2.0 * (bags * math.log(clicks) + k) / epsilon


def theorem3_gap(candidates: int, *, epsilon: float, tau: float, k: float) -> float:
    """Agarwal et al. Thm 3 (score ``time``): P(s(chosen) < s_max − 2τ(ln n + k)/ε) ≤ e^{−k}."""
    return utility_gap(candidates, epsilon=epsilon, sensitivity=tau, t=k)


def choose_touches(
    group_starts: np.ndarray,
    ages: np.ndarray,
    *,
    score: Score,
    epsilon: float,
    tau: float,
    alpha: float | None = None,
    noise: IntegerNoiseSource | None = None,
) -> np.ndarray:
    """Vectorised draw for many conversions: candidates of conversion g are
    ages[group_starts[g]:group_starts[g+1]]; returns the chosen global index per conversion."""
    if not (epsilon > 0 and math.isfinite(epsilon)):
        raise ValueError("epsilon must be finite and > 0")
    delta = sensitivity(score, tau, alpha)
    multiplier = epsilon / (2.0 * delta)  # the race's 1/b, as the SQL applies it
    exponents = multiplier * scores(score, ages, alpha)
    draws = exponentials(
        len(exponents), noise, gumbel_scale=1.0 / multiplier, sensitivity=delta, epsilon=epsilon
    )
    return grouped_exponential(group_starts, exponents, draws)


def frequency_histogram(impressions_per_user: np.ndarray, max_frequency: int) -> np.ndarray:
    """h[k−1] = users with exactly k impressions (k < K), h[K−1] = users with ≥ K; zeros
    (users who saw nothing) are in no bin. Reference for the SQL and for sensitivity tests."""
    counts = np.asarray(impressions_per_user, dtype=np.int64)
    counts = counts[counts > 0]
    return np.bincount(np.minimum(counts, max_frequency) - 1, minlength=max_frequency)[
        :max_frequency
    ]

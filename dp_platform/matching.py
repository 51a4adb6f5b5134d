"""Private max-weight bipartite matching (Agarwal et al., *Privacy for attribution algorithms*,
§3): m bags (left) × n clicks (right), m ≤ n,
every bag matched to a distinct click, weights W ≥ 0 (an m × n matrix; a missing edge is 0).

Privacy unit: one click (a right vertex). Neighbouring graphs (Agarwal et al. Def. 3) differ only in
the weights of the edges at one click, by at most Δ in ℓ1 (Δ = 1 in the seed).

* :func:`laplace_matching`: W + Lap(Δ/ε) on every edge, then an exact assignment
  (post-processing). ε-DP, ρ = ε·tanh(ε/2). Thm 6: ≥ OPT − (2m/ε)·ln(mn/γ) w.p. ≥ 1 − γ.
* :func:`exponential_matching`: the exponential mechanism over all matchings, score W(M)
  (Δ-sensitive). ε-DP and ε-bounded-range, ρ = ε²/8. Thm 7: E ≥ OPT − 2(m ln n + 1)/ε.
  Exponential time: tiny graphs only.
* :func:`greedy_exponential_matching`: bag by bag, the exponential mechanism over the free
  clicks with score W(b, v). ε-DP in total (below), ρ = ε·tanh(ε/2); O(m log n)/ε shortfall
  for disjoint bags.
* :func:`private_matching_value`: OPT + Lap(Δ/ε) (OPT moves by ≤ Δ). ε-DP, E|error| = Δ/ε.

Greedy's total: between neighbours only the click v's edges change, by d_b at bag b with
Σ_b d_b ≤ Δ; bag b's step (exponent ε·s/(2Δ)) changes each output's log-probability by at most
ε·d_b/Δ, so the product over the steps is within e^{ε·Σ d_b/Δ} ≤ e^ε — the per-step ε's do
not add up, the ℓ1 budget of the click is shared. (Only one score moves per step, so the loss
is in fact ≤ ε/2; we keep the seed's exponent and charge ε — tested both ways.)
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
from scipy.optimize import linear_sum_assignment

from dp_platform.privacy.accounting import exponential_mechanism_rho, pure_dp_rho_tanh
from dp_platform.privacy.exponential import exponential_mechanism
from dp_platform.privacy.noise import NoiseSource, resolve

__all__ = [
    "MatchingRelease",
    "all_matchings",
    "exponential_matching",
    "greedy_exponential_matching",
    "laplace_matching",
    "matching_weight",
    "optimal_matching",
    "private_matching_value",
]

_MAX_ENUMERATED = 50_000  # exact exponential mechanism only below this many matchings


@dataclass(frozen=True)
class MatchingRelease:
    """A private output: ``assignment[b]`` is bag b's click (or the value, for value-only)."""

    assignment: tuple[int, ...]
    epsilon: float
    rho: Fraction


def _weights(weights: np.ndarray) -> np.ndarray:
    w = np.asarray(weights, dtype=np.float64)
    if w.ndim != 2 or w.shape[0] > w.shape[1] or w.shape[0] == 0:
        raise ValueError("weights must be an m × n matrix with 1 ≤ m ≤ n")
    if not np.all(np.isfinite(w)) or np.any(w < 0):
        raise ValueError("weights must be finite and >= 0")
    return w


def _check(epsilon: float, sensitivity: float) -> None:
    if not (epsilon > 0 and math.isfinite(epsilon) and sensitivity > 0):
        raise ValueError("epsilon and sensitivity must be > 0")


def matching_weight(weights: np.ndarray, assignment: tuple[int, ...]) -> float:
    w = _weights(weights)
    return float(sum(w[b, v] for b, v in enumerate(assignment)))


def optimal_matching(weights: np.ndarray) -> tuple[int, ...]:
    """An exact max-weight matching of every bag (scipy's assignment solver)."""
    w = _weights(weights)
    rows, cols = linear_sum_assignment(w, maximize=True)
    out = np.empty(w.shape[0], dtype=np.int64)
    out[rows] = cols
    return tuple(int(v) for v in out)


def laplace_matching(
    weights: np.ndarray,
    *,
    epsilon: float,
    sensitivity: float = 1.0,
    noise: NoiseSource | None = None,
) -> MatchingRelease:
    """Thm 6: Laplace noise of scale Δ/ε on every edge, then an exact assignment. ε-DP: one
    click's edges move by ≤ Δ in ℓ1, the ℓ1 sensitivity declared to the sampler with ε."""
    w = _weights(weights)
    _check(epsilon, sensitivity)
    noisy = resolve(noise).add_laplace(
        w.ravel(), sensitivity / epsilon, l1_sensitivity=sensitivity, epsilon=epsilon
    )
    noisy = noisy.reshape(w.shape)
    rows, cols = linear_sum_assignment(noisy, maximize=True)
    out = np.empty(w.shape[0], dtype=np.int64)
    out[rows] = cols
    return MatchingRelease(tuple(int(v) for v in out), epsilon, pure_dp_rho_tanh(epsilon))


def all_matchings(bags: int, clicks: int) -> list[tuple[int, ...]]:
    """Every injective bag → click map (n!/(n−m)! of them)."""
    count = math.perm(clicks, bags)
    if count > _MAX_ENUMERATED:
        raise ValueError(f"{count} matchings: too many to enumerate")
    return list(itertools.permutations(range(clicks), bags))


def exponential_matching(
    weights: np.ndarray,
    *,
    epsilon: float,
    sensitivity: float = 1.0,
    noise: NoiseSource | None = None,
) -> MatchingRelease:
    """Thm 7: the exponential mechanism over all matchings, score W(M) (Δ-sensitive). Exact,
    exponential time: for small graphs and for checking the greedy one."""
    w = _weights(weights)
    _check(epsilon, sensitivity)
    matchings = all_matchings(*w.shape)
    scores = np.array([sum(w[b, v] for b, v in enumerate(m)) for m in matchings])
    index = exponential_mechanism(scores, epsilon=epsilon, sensitivity=sensitivity, noise=noise)
    return MatchingRelease(matchings[index], epsilon, exponential_mechanism_rho(epsilon))


def greedy_exponential_matching(
    weights: np.ndarray,
    *,
    epsilon: float,
    sensitivity: float = 1.0,
    noise: NoiseSource | None = None,
) -> MatchingRelease:
    """Bags in index order; each picks a free click by the exponential mechanism with
    P(v) ∝ exp(ε·W(b, v)/(2Δ)). ε-DP in total (module doc), polynomial time."""
    w = _weights(weights)
    _check(epsilon, sensitivity)
    free = list(range(w.shape[1]))
    out = []
    for bag in range(w.shape[0]):
        index = exponential_mechanism(
            w[bag, free], epsilon=epsilon, sensitivity=sensitivity, noise=noise
        )
        out.append(free.pop(index))
    return MatchingRelease(tuple(out), epsilon, pure_dp_rho_tanh(epsilon))


def private_matching_value(
    weights: np.ndarray,
    *,
    epsilon: float,
    sensitivity: float = 1.0,
    noise: NoiseSource | None = None,
) -> tuple[float, Fraction]:
    """The value of a max-weight matching + Lap(Δ/ε): ε-DP (OPT moves by ≤ Δ, the ℓ1
    sensitivity declared to the sampler), O(1/ε) error."""
    w = _weights(weights)
    _check(epsilon, sensitivity)
    best = matching_weight(w, optimal_matching(w))
    drawn = resolve(noise).add_laplace(
        np.array([best]), sensitivity / epsilon, l1_sensitivity=sensitivity, epsilon=epsilon
    )
    return float(drawn[0]), pure_dp_rho_tanh(epsilon)

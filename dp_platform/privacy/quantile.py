"""PrivateQuantile: the daily contribution bound of the first l days (docs/algorithm.md#bounds).

Privacy unit: one user (all of their conversions of the day). Adjacency: add/remove or replace
one user. Input: the day's histogram of per-user counts (users active that day only), capped at
Λ. Output: a point r ∈ [0, Λ].

Mechanism. Sort the capped counts, add c_0 = 0 and c_{K+1} = Λ; interval j = [c_j, c_{j+1}]
has utility u(j) = −|j − pK| and is drawn with probability ∝ (c_{j+1} − c_j)·exp(ε·u(j)/2);
the output is uniform inside it. Counts are integers, so the same distribution is obtained by
drawing a *unit* interval [v, v+1] (v = 0..Λ−1) with utility −|F(v) − pK|, where F(v) is the
number of users whose capped count is ≤ v — O(Λ) from a histogram, whatever the number of users.

Sensitivity. For a fixed point x, adding a user moves F(x) by 0 or 1 and pK by p ∈ (0, 1);
removing is symmetric; replacing moves F(x) by at most 1 and leaves K. So |Δu| ≤ 1 under both
adjacencies, and the mechanism is ε-DP, i.e. min(ε²/8, ε·tanh(ε/2))-zCDP
(:func:`dp_platform.privacy.accounting.exponential_mechanism_rho`).

Sampling goes through :mod:`dp_platform.privacy.noise` (OpenDP's exact Gumbel report-noisy-max
in production).
"""

from __future__ import annotations

import numpy as np

from dp_platform.privacy.noise import NoiseSource, resolve

__all__ = ["cap_histogram", "private_quantile", "unit_utilities"]

UTILITY_SENSITIVITY = 1.0


def cap_histogram(histogram: np.ndarray, cap: int) -> np.ndarray:
    """Histogram of counts capped at Λ: h[c] for c = 0..Λ, the users above Λ moved to h[Λ]."""
    counts = np.asarray(histogram, dtype=np.int64)
    if counts.ndim != 1:
        raise ValueError("histogram must be a 1-d array of user counts per contribution count")
    if np.any(counts < 0):
        raise ValueError("histogram entries must be >= 0")
    if cap < 1:
        raise ValueError("cap must be >= 1")
    capped = np.zeros(cap + 1, dtype=np.int64)
    head = counts[: cap + 1]
    capped[: head.size] = head
    capped[cap] += int(counts[cap + 1 :].sum())
    capped[0] = 0  # users with no conversion that day are not active: they are not counted
    return capped


def unit_utilities(histogram: np.ndarray, p: float, cap: int) -> np.ndarray:
    """u(v) = −|F(v) − pK| for the unit intervals [v, v+1], v = 0..Λ−1."""
    if not 0 < p < 1:
        raise ValueError("p must be in (0, 1)")
    capped = cap_histogram(histogram, cap)
    active = int(capped.sum())
    at_or_below = np.cumsum(capped)[:cap]  # F(v) for v = 0..Λ−1
    return -np.abs(at_or_below.astype(np.float64) - p * active)


def private_quantile(
    histogram: np.ndarray,
    *,
    p: float,
    cap: int,
    epsilon: float,
    noise: NoiseSource | None = None,
) -> float:
    """A private p-quantile of the day's per-user counts, in [0, Λ]; ε-DP (see module doc).

    The draw declares utility sensitivity 1 and ε to the sampler, which refuses it if OpenDP's
    map of the Gumbel report-noisy-max says more; the uniform point inside the chosen unit
    interval reads no data and costs nothing.
    """
    if not epsilon > 0:
        raise ValueError("epsilon must be > 0")
    source = resolve(noise)
    utilities = unit_utilities(histogram, p, cap)
    # P(v) ∝ exp(ε·u(v) / (2Δu)): report-noisy-max with Gumbel noise of scale 2Δu/ε.
    index = source.exponential_index(
        utilities,
        2.0 * UTILITY_SENSITIVITY / epsilon,
        sensitivity=UTILITY_SENSITIVITY,
        epsilon=epsilon,
    )
    return float(index) + source.uniform(0.0, 1.0)

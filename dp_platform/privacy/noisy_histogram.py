"""Gaussian noisy histograms of per-user statistics: AdsBPC+'s cheap view of the data.

Privacy unit: one user. Adjacency: add/remove one user (only). Each user falls in exactly one
bin (their count of the day, or their profile bin), and users with nothing to count are in no
bin, so adding or removing a user changes one bin by 1: L2 sensitivity 1. Adding N(0, σ²) to
every bin is therefore 1/(2σ²)-zCDP (Bun & Steinke 2016). Under ``replace`` a user may move
between two bins (L2 sensitivity √2, cost 1/σ²); AdsBPC+ refuses replace, so this module does
not offer it. Histograms of different days are separate mechanisms; their costs add.

Which bins exist (their number and edges) must be public: they come from the config, never from
the data. Noise only through :mod:`dp_platform.privacy.noise`.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from dp_platform.privacy.accounting import gaussian_sigma
from dp_platform.privacy.noise import NoiseSource, resolve
from dp_platform.privacy.noise_check import Amount

__all__ = ["SENSITIVITY", "histogram_sigma", "noisy_histogram", "tail_counts"]

SENSITIVITY = 1.0  # add/remove one user: one bin moves by one


def histogram_sigma(rho: Fraction) -> float:
    """Smallest float σ with 1/(2σ²) ≤ ρ exactly."""
    return gaussian_sigma(SENSITIVITY, rho)


def noisy_histogram(
    counts: np.ndarray, sigma: float, *, rho: Amount, noise: NoiseSource | None = None
) -> np.ndarray:
    """``counts + N(0, σ²)`` per bin (float vector; may be negative: do not clamp before use).

    ``rho`` is the caller's allotment for this histogram; the sampler refuses the draw if
    OpenDP's map at ℓ2 sensitivity 1 (add/remove one user, module doc) says more than it.
    """
    bins = np.asarray(counts, dtype=np.float64)
    if bins.ndim != 1 or bins.size == 0 or np.any(bins < 0):
        raise ValueError("counts must be a non-empty 1-d vector of user counts >= 0")
    if not sigma > 0:
        raise ValueError("sigma must be > 0")
    return resolve(noise).add_gaussian(bins, sigma, l2_sensitivity=SENSITIVITY, rho=rho)


def tail_counts(histogram: np.ndarray) -> np.ndarray:
    """N(>j) = Σ_{b > j} h[b]: users strictly above bin j (post-processing, free)."""
    h = np.asarray(histogram, dtype=np.float64)
    return np.concatenate([np.cumsum(h[::-1])[::-1][1:], [0.0]])

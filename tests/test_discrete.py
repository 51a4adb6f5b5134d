"""Discrete Laplace / discrete Gaussian / Exp(1): the laws the samplers draw and their privacy.

The secure (OpenDP) samplers are checked against the exact laws too, on small samples.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from dp_platform.privacy.discrete import (
    SecureIntegerNoise,
    SeededIntegerNoise,
    discrete_laplace_variance,
    exponentials,
)

P_THRESHOLD = 1e-3


def dlap_pmf(z: np.ndarray, scale: float) -> np.ndarray:
    p = math.exp(-1 / scale)
    return (1 - p) / (1 + p) * p ** np.abs(z)


def dgauss_pmf(z: np.ndarray, sigma: float) -> np.ndarray:
    support = np.arange(-60 * math.ceil(sigma), 60 * math.ceil(sigma) + 1)
    norm = np.exp(-(support**2) / (2 * sigma**2)).sum()
    return np.exp(-(z**2) / (2 * sigma**2)) / norm


def _chisq(draws: np.ndarray, pmf, lo: int, hi: int) -> float:  # type: ignore[no-untyped-def]
    z = np.arange(lo, hi + 1)
    clipped = np.clip(draws, lo - 1, hi + 1)
    observed = np.array([np.sum(clipped <= lo), *[np.sum(clipped == v) for v in z[1:-1]]])
    observed = np.append(observed, np.sum(clipped >= hi))
    probs = pmf(z)
    probs[0] = pmf(np.arange(lo - 200, lo + 1)).sum()
    probs[-1] = pmf(np.arange(hi, hi + 201)).sum()
    return float(stats.chisquare(observed, probs / probs.sum() * draws.size).pvalue)


@pytest.mark.parametrize("source", [SeededIntegerNoise(1), SecureIntegerNoise()])
def test_discrete_laplace_law(source: object) -> None:
    scale = 2.5
    draws = source.add_discrete_laplace(np.zeros(20_000, dtype=np.int64), scale)  # type: ignore[attr-defined]
    assert draws.dtype == np.int64
    assert _chisq(draws, lambda z: dlap_pmf(z, scale), -8, 8) > P_THRESHOLD
    assert draws.var() == pytest.approx(discrete_laplace_variance(scale), rel=0.05)


@pytest.mark.parametrize("source", [SeededIntegerNoise(2), SecureIntegerNoise()])
def test_discrete_gaussian_law(source: object) -> None:
    sigma = 1.7
    draws = source.add_discrete_gaussian(np.zeros(20_000, dtype=np.int64), sigma)  # type: ignore[attr-defined]
    assert _chisq(draws, lambda z: dgauss_pmf(z, sigma), -4, 4) > P_THRESHOLD


def test_discrete_laplace_privacy_ratio_is_exactly_e_to_epsilon() -> None:
    """Scale Δ/ε: shifting the count by Δ changes any output's probability by ≤ e^ε, with
    equality far from the two centres — a scale of Δ/(2ε) would give e^{2ε}."""
    eps, delta = 0.7, 3
    z = np.arange(-80, 81)
    for scale, limit in ((delta / eps, eps), (delta / (2 * eps), 2 * eps)):
        ratio = np.log(dlap_pmf(z, scale) / dlap_pmf(z - delta, scale))
        assert np.max(np.abs(ratio)) == pytest.approx(limit, rel=1e-9)


def test_exponentials_are_exp1_and_positive() -> None:
    for source in (SeededIntegerNoise(3), SecureIntegerNoise()):
        draws = exponentials(20_000, source)
        assert np.all(draws > 0)
        assert stats.kstest(draws, "expon").pvalue > P_THRESHOLD


def test_integer_noise_refuses_fractions() -> None:
    with pytest.raises(ValueError):
        SeededIntegerNoise(4).add_discrete_laplace(np.array([0.5]), 1.0)

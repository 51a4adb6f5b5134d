"""Discrete Laplace / discrete Gaussian / Exp(1): the laws the samplers draw and their privacy.

The secure (OpenDP) samplers are checked against the exact laws too. Those draws are unseeded:
each check accepts while the Kolmogorov distance on the integers (or the reals, for Exp(1)) is
within the DKW radius — a false failure has probability ≤ 1e-8 — and asserts that the same
draws reject the law at a 30 % wrong scale, which a correct sampler fails to do with a
probability bounded from the laws below 1e-12 (``tests/sampler_laws.py``).
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
from dp_platform.privacy.noise import IntegerNoiseSource
from tests.sampler_laws import (
    dkw_radius,
    integer_ks_distance,
    ks_distance,
    law_distance,
    power_failure_bound,
)

DRAWS = 40_000
POWER = 1e-12
INTEGERS = np.arange(-400, 401)


def dlap_pmf(z: np.ndarray, scale: float) -> np.ndarray:
    p = math.exp(-1 / scale)
    return (1 - p) / (1 + p) * p ** np.abs(z)


def dgauss_pmf(z: np.ndarray, sigma: float) -> np.ndarray:
    support = np.arange(-60 * math.ceil(sigma), 60 * math.ceil(sigma) + 1)
    norm = np.exp(-(support**2) / (2 * sigma**2)).sum()
    return np.exp(-(z**2) / (2 * sigma**2)) / norm


def _cdf(pmf):  # type: ignore[no-untyped-def]
    """F(z) on the integers from a pmf whose mass lies inside INTEGERS."""
    cumulative = np.cumsum(pmf(INTEGERS))
    return lambda z: cumulative[np.clip(np.asarray(z) - INTEGERS[0], 0, INTEGERS.size - 1)]


def _accepts_and_rejects(draws: np.ndarray, right, wrongs) -> None:  # type: ignore[no-untyped-def]
    radius = dkw_radius(draws.size)
    assert integer_ks_distance(draws, right) <= radius
    for wrong in wrongs:
        assert power_failure_bound(draws.size, law_distance(right, wrong, INTEGERS)) < POWER
        assert integer_ks_distance(draws, wrong) > radius


@pytest.mark.parametrize("source", [SeededIntegerNoise(1), SecureIntegerNoise()])
def test_discrete_laplace_law(source: IntegerNoiseSource) -> None:
    scale = 2.5
    draws = source.add_discrete_laplace(
        np.zeros(DRAWS, dtype=np.int64), scale, l1_sensitivity=1, epsilon=1 / scale
    )
    assert draws.dtype == np.int64
    _accepts_and_rejects(
        draws,
        _cdf(lambda z: dlap_pmf(z, scale)),
        [_cdf(lambda z: dlap_pmf(z, scale * 1.3)), _cdf(lambda z: dlap_pmf(z, scale / 1.3))],
    )


def test_discrete_laplace_variance_formula() -> None:
    """Var(DLap(b)) = 2p/(1−p)², p = e^{−1/b}: against the pmf summed directly."""
    for scale in (0.3, 2.5, 40.0):
        z = np.arange(-4000, 4001)
        direct = float(np.sum(z.astype(np.float64) ** 2 * dlap_pmf(z, scale)))
        assert discrete_laplace_variance(scale) == pytest.approx(direct, rel=1e-9)


@pytest.mark.parametrize("source", [SeededIntegerNoise(2), SecureIntegerNoise()])
def test_discrete_gaussian_law(source: IntegerNoiseSource) -> None:
    sigma = 1.7
    draws = source.add_discrete_gaussian(
        np.zeros(DRAWS, dtype=np.int64), sigma, l2_sensitivity=1, rho=1 / (2 * sigma**2)
    )
    _accepts_and_rejects(
        draws,
        _cdf(lambda z: dgauss_pmf(z, sigma)),
        [_cdf(lambda z: dgauss_pmf(z, sigma * 1.3)), _cdf(lambda z: dgauss_pmf(z, sigma / 1.3))],
    )


def test_discrete_laplace_privacy_ratio_is_exactly_e_to_epsilon() -> None:
    """Scale Δ/ε: shifting the count by Δ changes any output's probability by ≤ e^ε, with
    equality far from the two centres — a scale of Δ/(2ε) would give e^{2ε}."""
    eps, delta = 0.7, 3
    z = np.arange(-80, 81)
    for scale, limit in ((delta / eps, eps), (delta / (2 * eps), 2 * eps)):
        ratio = np.log(dlap_pmf(z, scale) / dlap_pmf(z - delta, scale))
        assert np.max(np.abs(ratio)) == pytest.approx(limit, rel=1e-9)


RACE = {"gumbel_scale": 2.0, "sensitivity": 1.0, "epsilon": 1.0}  # any valid race


@pytest.mark.parametrize("source", [SeededIntegerNoise(3), SecureIntegerNoise()])
def test_exponentials_are_exp1_and_positive(source: IntegerNoiseSource) -> None:
    draws = exponentials(20_000, source, **RACE)
    assert np.all(draws > 0)
    radius = dkw_radius(draws.size)
    right = stats.expon.cdf
    assert ks_distance(draws, right) <= radius
    grid = np.linspace(0.0, 60.0, 120_001)
    for wrong_scale in (1.3, 1 / 1.3):
        wrong = stats.expon(scale=wrong_scale).cdf
        assert power_failure_bound(draws.size, law_distance(right, wrong, grid)) < POWER
        assert ks_distance(draws, wrong) > radius


def test_integer_noise_refuses_fractions() -> None:
    with pytest.raises(ValueError):
        SeededIntegerNoise(4).add_discrete_laplace(
            np.array([0.5]), 1.0, l1_sensitivity=1, epsilon=1
        )

"""How far draws are from a law, and how far a correct sampler's draws can be (tests only).

Statistical tests on the *unseeded* secure samplers cannot be made deterministic, so each one
bounds its chance of failing at random. The Dvoretzky–Kiefer–Wolfowitz inequality with
Massart's constant holds for every law (continuous, on a grid, or on the integers) and every n:

    P(sup_x |F_n(x) − F(x)| > t) ≤ 2·exp(−2·n·t²),

so a test that accepts while the Kolmogorov distance D_n is ≤ :func:`dkw_radius` fails a
correct sampler with probability ≤ :data:`FALSE_FAILURE`. Its power: draws from F are at
distance ≥ D(F, G) − D_n from a wrong law G (triangle inequality), so they are rejected
against G unless D_n ≥ D(F, G) − radius, which has probability ≤
:func:`power_failure_bound`. Each test asserts that bound too, from the two laws themselves.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

FALSE_FAILURE = 1e-8  # per check; the suite has fewer than ten: < 1e-7 per run in total

# Every statistical check on an unseeded secure sampler, with its computed false-failure bound
# (found by recording, test by test, which tests reach SecureNoise / SecureIntegerNoise draws):
#
#   check (draws n)                                        radius t   P(false failure)
#   test_noise: Gaussian σ = 2 (40 000)                    0.01546    ≤ 1e-8 (DKW)
#   test_noise: Laplace b = 3 (40 000)                     0.01546    ≤ 1e-8
#   test_noise: exponential index, slow (10 000)           0.03091    ≤ 1e-8
#   test_discrete: discrete Laplace b = 2.5 (40 000)       0.01546    ≤ 1e-8
#   test_discrete: discrete Gaussian σ = 1.7 (40 000)      0.01546    ≤ 1e-8
#   test_discrete: Exp(1) of the race (20 000)             0.02186    ≤ 1e-8
#   each "rejects the 30 %-off law" check (two per test)   —          ≤ 1e-12, asserted in
#       the test from the two laws (power_failure_bound); computed: Laplace 1.7e-37, discrete
#       Laplace 1.9e-38, discrete Gaussian 4.0e-74, Gaussian 2.3e-79, Exp(1) 1.5e-96
#   test_private_attribution: re-attributing differs from last touch (300 conversions, 4
#       candidates each, ε = 1e-3): each agrees w.p. ≤ 0.259          ≤ 0.259^300 < 1e-170
#   test_cli_plan: simulated one-shot total > 20 std (total ≈ 899, 20 std ≈ 54; two
#       Laplace b = 1.92 draws below −845)                               ≤ 2·e^(−422/1.92) < 1e-95
#   test_cells: simulated sliced campaign's last answer > half its truth (2995; Gaussian
#       noise sd ≤ 115 below −1500, ≥ 13 sd)                              < 1e-38
#
# Union bound per run: 6·1e-8 + 12·1e-12 + 1e-170 + 1e-95 + 1e-38 < 6.1e-8 < 1e-6. The secure
# float samplers are OpenDP's, drawing on a 2^k grid with 2^k ≤ 2^-46·Δ/√n
# (dp_platform/privacy/noise.py): the grid law is within ~1e-17 of the continuous one in
# Kolmogorov distance, far inside every radius. A new statistical check on a secure sampler
# must use dkw_radius (or a bound as strict) and be added to this table.

Cdf = Callable[[np.ndarray], np.ndarray]


def dkw_radius(n: int, alpha: float = FALSE_FAILURE) -> float:
    """The t with 2·exp(−2nt²) = α: a correct sampler's D_n exceeds it with probability ≤ α."""
    return math.sqrt(math.log(2.0 / alpha) / (2.0 * n))


def power_failure_bound(n: int, law_distance: float) -> float:
    """P(draws of the right law are *not* rejected against a law this far away) ≤ this."""
    margin = law_distance - dkw_radius(n)
    if margin <= 0:
        return 1.0
    return 2.0 * math.exp(-2.0 * n * margin * margin)


def ks_distance(draws: np.ndarray, cdf: Cdf) -> float:
    """sup_x |F_n(x) − F(x)| for real draws (ties allowed: the extreme ranks are compared)."""
    x = np.sort(np.asarray(draws, dtype=np.float64))
    n = x.size
    values = cdf(x)
    above = np.arange(1, n + 1) / n - values
    below = values - np.arange(0, n) / n
    return float(max(above.max(), below.max()))


def integer_ks_distance(draws: np.ndarray, cdf: Cdf) -> float:
    """sup_z |F_n(z) − F(z)| for integer draws (F evaluated on the integers)."""
    z = np.arange(int(np.min(draws)) - 1, int(np.max(draws)) + 1)
    empirical = np.searchsorted(np.sort(draws), z, side="right") / np.size(draws)
    return float(np.max(np.abs(empirical - cdf(z))))


def law_distance(first: Cdf, second: Cdf, points: np.ndarray) -> float:
    """sup |F − G| over ``points`` (a fine grid, or the integers of both supports)."""
    return float(np.max(np.abs(first(points) - second(points))))

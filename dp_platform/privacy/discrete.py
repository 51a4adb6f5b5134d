"""Integer noise (discrete Laplace, discrete Gaussian) and secure Exp(1) variates, via OpenDP 0.16.

Integer counts released with integer noise stay integers, and no floating-point rounding can
leak the true value: the discrete Laplace mechanism is ε-DP for an integer-valued query with
ℓ1 sensitivity Δ at scale Δ/ε (MSE 2p/(1−p)², p = e^{−1/scale}); the discrete Gaussian of
Canonne, Kamath & Steinke ("The discrete Gaussian for differential privacy") is
Δ₂²/(2σ²)-zCDP, as the continuous one. OpenDP samples both exactly from the operating system's
secure generator: ``make_laplace`` on an integer vector domain *is* the discrete Laplace
("geometric") mechanism, ``make_gaussian`` on integers the discrete Gaussian. Every draw
declares its sensitivity and allotment and is checked against OpenDP's map of that measurement
before anything is drawn (:mod:`dp_platform.privacy.noise`).

:func:`exponentials` draws i.i.d. Exp(1) variables as |Lap(1)| (OpenDP's exact Laplace on a
2⁻¹⁰⁰ grid); :func:`dp_platform.privacy.exponential.grouped_exponential` races them, and the
caller declares the race's scale, sensitivity and ε for the same check.

The samplers themselves live in :mod:`dp_platform.privacy.noise`, the only module that draws
noise; this module re-exports them and adds the mechanism's error formula. Tests inject
:class:`SeededIntegerNoise`; production resolves ``None`` to the secure source.
"""

from __future__ import annotations

import math

from dp_platform.privacy.noise import (
    IntegerNoiseSource,
    SecureIntegerNoise,
    SeededIntegerNoise,
    exponentials,
    resolve_integer,
)

__all__ = [
    "IntegerNoiseSource",
    "SecureIntegerNoise",
    "SeededIntegerNoise",
    "discrete_laplace_variance",
    "exponentials",
    "resolve_integer",
]


def discrete_laplace_variance(scale: float) -> float:
    """Var(DLap(b)) = 2p/(1−p)², p = e^{−1/b}; equals the MSE of the mechanism."""
    if scale <= 0:
        raise ValueError("scale must be > 0")
    p = math.exp(-1.0 / scale)
    return 2.0 * p / (1.0 - p) ** 2

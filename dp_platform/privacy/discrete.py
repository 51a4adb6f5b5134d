"""Integer noise (discrete Laplace, discrete Gaussian) and secure Exp(1) variates, via OpenDP 0.16.

Integer counts released with integer noise stay integers, and no floating-point rounding can
leak the true value (seed 003: the discrete Laplace mechanism is ε-DP for integer-valued g with
sensitivity Δ at scale Δ/ε; MSE 2p/(1−p)², p = e^{−1/scale}). OpenDP samples both exactly from
the operating system's secure generator: ``make_laplace`` on an integer vector domain *is* the
discrete Laplace ("geometric") mechanism, ``make_gaussian`` on integers the discrete Gaussian of
Canonne–Kamath–Steinke (ρ = Δ₂²/(2σ²) zCDP, as for the continuous one).

:func:`exponentials` draws i.i.d. Exp(1) variables as |Lap(1)| (OpenDP's exact Laplace on a
2⁻⁴⁰ grid); :func:`dp_platform.privacy.exponential.grouped_exponential` races them.

Tests inject :class:`SeededIntegerNoise`; production resolves ``None`` to the secure source, as
:mod:`dp_platform.privacy.noise` does for real-valued noise.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Protocol, runtime_checkable

import numpy as np

__all__ = [
    "IntegerNoiseSource",
    "SecureIntegerNoise",
    "SeededIntegerNoise",
    "discrete_laplace_variance",
    "exponentials",
    "resolve_integer",
]

_GRID_K = -40  # Exp(1) draws on a 2^-40 grid: ties have probability ~2^-40 per pair


@runtime_checkable
class IntegerNoiseSource(Protocol):
    """What a mechanism may ask of a source of integer noise."""

    def add_discrete_laplace(self, values: np.ndarray, scale: float) -> np.ndarray:
        """``values + DLap(scale)`` element-wise; P(z) ∝ exp(−|z|/scale), z ∈ ℤ."""
        ...

    def add_discrete_gaussian(self, values: np.ndarray, scale: float) -> np.ndarray:
        """``values + N_ℤ(0, scale²)`` element-wise; P(z) ∝ exp(−z²/(2·scale²))."""
        ...

    def exponentials(self, size: int) -> np.ndarray:
        """``size`` i.i.d. Exp(1) draws (float64, all > 0)."""
        ...


def _integers(values: np.ndarray | list[int]) -> np.ndarray:
    vector = np.atleast_1d(np.asarray(values))
    if vector.dtype.kind not in "iu" and (
        not np.all(np.isfinite(vector)) or np.any(vector != np.round(vector))
    ):
        raise ValueError("discrete noise needs integer values")
    return vector.astype(np.int64)


def _scale(scale: float) -> float:
    scale = float(scale)
    if not (scale >= 0 and math.isfinite(scale)):
        raise ValueError(f"noise scale must be finite and >= 0, got {scale!r}")
    return scale


class SecureIntegerNoise:
    """OpenDP's exact integer samplers over the OS's secure RNG. Cannot be seeded, by design."""

    def __init__(self) -> None:
        import opendp.prelude as dp

        dp.enable_features("contrib")
        self._dp = dp

    @lru_cache(maxsize=64)  # noqa: B019 - one instance per process; scales repeat
    def _measurement(self, kind: str, scale: float):  # type: ignore[no-untyped-def]
        dp = self._dp
        domain = dp.vector_domain(dp.atom_domain(T="i64"))
        if kind == "laplace":
            return dp.m.make_laplace(domain, dp.l1_distance(T="i64"), scale=scale)
        if kind == "gaussian":
            return dp.m.make_gaussian(domain, dp.l2_distance(T="i64"), scale=scale)
        raise ValueError(kind)

    def add_discrete_laplace(self, values: np.ndarray, scale: float) -> np.ndarray:
        vector, scale = _integers(values), _scale(scale)
        if scale == 0:
            return vector.copy()
        return np.asarray(self._measurement("laplace", scale)(vector.tolist()), dtype=np.int64)

    def add_discrete_gaussian(self, values: np.ndarray, scale: float) -> np.ndarray:
        vector, scale = _integers(values), _scale(scale)
        if scale == 0:
            return vector.copy()
        return np.asarray(self._measurement("gaussian", scale)(vector.tolist()), dtype=np.int64)

    def exponentials(self, size: int) -> np.ndarray:
        if size <= 0:
            return np.zeros(0, dtype=np.float64)
        dp = self._dp
        domain = dp.vector_domain(dp.atom_domain(T=float, nan=False), size=int(size))
        laplace = dp.m.make_laplace(domain, dp.l1_distance(T=float), scale=1.0, k=_GRID_K)
        draws = np.abs(np.asarray(laplace([0.0] * int(size)), dtype=np.float64))
        # |Lap(1)| = 0 happens with probability ~2^-40 on the grid; the race needs E > 0.
        return np.where(draws > 0, draws, 2.0**_GRID_K)


class SeededIntegerNoise:
    """Reproducible integer noise for tests only (numpy PCG64). Never used in production."""

    def __init__(self, seed: int) -> None:
        self._rng = np.random.default_rng(seed)

    def _dlap(self, scale: float, size: int) -> np.ndarray:
        # difference of two i.i.d. geometrics with success 1 − e^{−1/scale} is DLap(scale)
        q = -math.expm1(-1.0 / scale)
        return self._rng.geometric(q, size) - self._rng.geometric(q, size)

    def add_discrete_laplace(self, values: np.ndarray, scale: float) -> np.ndarray:
        vector, scale = _integers(values), _scale(scale)
        return vector + self._dlap(scale, vector.size) if scale else vector.copy()

    def add_discrete_gaussian(self, values: np.ndarray, scale: float) -> np.ndarray:
        vector, scale = _integers(values), _scale(scale)
        if scale == 0:
            return vector.copy()
        # Canonne–Kamath–Steinke rejection sampler: DLap(t), t = ⌊σ⌋ + 1, accepted with
        # probability exp(−(|y| − σ²/t)²/(2σ²)).
        t = math.floor(scale) + 1
        out = np.empty(vector.size, dtype=np.int64)
        filled = 0
        while filled < vector.size:
            y = self._dlap(t, 2 * (vector.size - filled) + 16)
            accept = self._rng.random(y.size) < np.exp(
                -((np.abs(y) - scale**2 / t) ** 2) / (2 * scale**2)
            )
            take = y[accept][: vector.size - filled]
            out[filled : filled + take.size] = take
            filled += take.size
        return vector + out

    def exponentials(self, size: int) -> np.ndarray:
        draws = self._rng.exponential(1.0, int(max(size, 0)))
        return np.where(draws > 0, draws, 2.0**_GRID_K)


_SECURE: SecureIntegerNoise | None = None


def resolve_integer(noise: IntegerNoiseSource | None) -> IntegerNoiseSource:
    """The caller's source (tests) or the process-wide secure one (production)."""
    global _SECURE
    if noise is not None:
        return noise
    if _SECURE is None:
        _SECURE = SecureIntegerNoise()
    return _SECURE


def exponentials(size: int, noise: IntegerNoiseSource | None = None) -> np.ndarray:
    """``size`` i.i.d. Exp(1) draws from the secure source (or the test's)."""
    return resolve_integer(noise).exponentials(size)


def discrete_laplace_variance(scale: float) -> float:
    """Var(DLap(b)) = 2p/(1−p)², p = e^{−1/b} (seed 003); equals the MSE of the mechanism."""
    if scale <= 0:
        raise ValueError("scale must be > 0")
    p = math.exp(-1.0 / scale)
    return 2.0 * p / (1.0 - p) ** 2

"""The only place where noise is drawn.

Production code uses :class:`SecureNoise`, backed by OpenDP 0.16's samplers: they draw from the
operating system's cryptographically secure generator and sample *exactly* (Gaussian and Laplace
via discrete samplers with correct rounding of ``value + noise`` to float; the exponential
mechanism as report-noisy-max with exact Gumbel noise), so they are safe against the
floating-point attacks that break textbook ``numpy.random`` samplers (adsbpc.md §6.3).

Integer noise (discrete Laplace, discrete Gaussian — exact on integers, so integer counts stay
integers) and secure Exp(1) variates are drawn here too, by :class:`SecureIntegerNoise`.

Tests inject :class:`SeededNoise` through an explicit ``noise=`` parameter. Production code never
constructs it: every public function takes ``noise: NoiseSource | None = None`` and resolves
``None`` with :func:`resolve`, which always returns the secure source.
"""

from __future__ import annotations

import math
import secrets
from functools import lru_cache
from typing import Protocol, runtime_checkable

import numpy as np

__all__ = [
    "IntegerNoiseSource",
    "NoiseSource",
    "SecureIntegerNoise",
    "SecureNoise",
    "SeededIntegerNoise",
    "SeededNoise",
    "exponentials",
    "resolve",
    "resolve_integer",
]


@runtime_checkable
class NoiseSource(Protocol):
    """What a mechanism may ask of a source of randomness."""

    def add_gaussian(self, values: np.ndarray, scale: float) -> np.ndarray:
        """``values + N(0, scale²)`` element-wise (float64 vector in, new vector out)."""
        ...

    def add_laplace(self, values: np.ndarray, scale: float) -> np.ndarray:
        """``values + Lap(scale)`` element-wise."""
        ...

    def exponential_index(self, scores: np.ndarray, scale: float) -> int:
        """Index i drawn with probability ∝ exp(scores[i] / scale) (argmax of scores + Gumbel)."""
        ...

    def uniform(self, low: float, high: float) -> float:
        """A uniform draw from [low, high)."""
        ...


def _as_vector(values: np.ndarray | list[float] | float) -> np.ndarray:
    vector = np.atleast_1d(np.asarray(values, dtype=np.float64))
    if not np.all(np.isfinite(vector)):
        raise ValueError("noise can only be added to finite values")
    return vector


def _check_scale(scale: float) -> float:
    scale = float(scale)
    if not (scale >= 0 and np.isfinite(scale)):
        raise ValueError(f"noise scale must be finite and >= 0, got {scale!r}")
    return scale


class SecureNoise:
    """OpenDP-backed exact samplers over the OS's secure RNG. Cannot be seeded, by design."""

    def __init__(self) -> None:
        import opendp.prelude as dp

        dp.enable_features("contrib")
        self._dp = dp

    @lru_cache(maxsize=256)  # noqa: B019 - one SecureNoise per process; scales repeat daily
    def _measurement(self, kind: str, scale: float):  # type: ignore[no-untyped-def]
        dp = self._dp
        domain = dp.vector_domain(dp.atom_domain(T=float, nan=False))
        if kind == "gaussian":
            return dp.m.make_gaussian(domain, dp.l2_distance(T=float), scale=scale)
        if kind == "laplace":
            return dp.m.make_laplace(domain, dp.l1_distance(T=float), scale=scale)
        if kind == "gumbel_max":
            return dp.m.make_noisy_max(
                domain, dp.linf_distance(T=float), dp.zero_concentrated_divergence(), scale=scale
            )
        raise ValueError(kind)

    def add_gaussian(self, values: np.ndarray, scale: float) -> np.ndarray:
        vector, scale = _as_vector(values), _check_scale(scale)
        if scale == 0:
            return vector.copy()
        return np.asarray(self._measurement("gaussian", scale)(vector.tolist()), dtype=np.float64)

    def add_laplace(self, values: np.ndarray, scale: float) -> np.ndarray:
        vector, scale = _as_vector(values), _check_scale(scale)
        if scale == 0:
            return vector.copy()
        return np.asarray(self._measurement("laplace", scale)(vector.tolist()), dtype=np.float64)

    def exponential_index(self, scores: np.ndarray, scale: float) -> int:
        vector, scale = _as_vector(scores), _check_scale(scale)
        if scale == 0:
            return int(np.argmax(vector))
        return int(self._measurement("gumbel_max", scale)(vector.tolist()))

    def uniform(self, low: float, high: float) -> float:
        # 53 random bits give every double in [0, 1) on the 2^-53 grid; the point inside a chosen
        # interval is independent of the data, so this needs no exact sampler, only a secure one.
        fraction = secrets.randbits(53) / float(1 << 53)
        return float(low + (high - low) * fraction)


class SeededNoise:
    """Reproducible noise for tests only (numpy PCG64). Never used by production code paths."""

    def __init__(self, seed: int) -> None:
        self._rng = np.random.default_rng(seed)

    def add_gaussian(self, values: np.ndarray, scale: float) -> np.ndarray:
        vector, scale = _as_vector(values), _check_scale(scale)
        return vector + self._rng.normal(0.0, scale, size=vector.shape) if scale else vector.copy()

    def add_laplace(self, values: np.ndarray, scale: float) -> np.ndarray:
        vector, scale = _as_vector(values), _check_scale(scale)
        return vector + self._rng.laplace(0.0, scale, size=vector.shape) if scale else vector.copy()

    def exponential_index(self, scores: np.ndarray, scale: float) -> int:
        vector, scale = _as_vector(scores), _check_scale(scale)
        if scale == 0:
            return int(np.argmax(vector))
        return int(np.argmax(vector + self._rng.gumbel(0.0, scale, size=vector.shape)))

    def uniform(self, low: float, high: float) -> float:
        return float(self._rng.uniform(low, high))


_SECURE: SecureNoise | None = None


def resolve(noise: NoiseSource | None) -> NoiseSource:
    """The source to use: the caller's (tests) or the process-wide secure one (production)."""
    global _SECURE
    if noise is not None:
        return noise
    if _SECURE is None:
        _SECURE = SecureNoise()
    return _SECURE


# -- integer noise and Exp(1) variates (seed 003) ------------------------------------------

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


_SECURE_INTEGER: SecureIntegerNoise | None = None


def resolve_integer(noise: IntegerNoiseSource | None) -> IntegerNoiseSource:
    """The caller's source (tests) or the process-wide secure one (production)."""
    global _SECURE_INTEGER
    if noise is not None:
        return noise
    if _SECURE_INTEGER is None:
        _SECURE_INTEGER = SecureIntegerNoise()
    return _SECURE_INTEGER


def exponentials(size: int, noise: IntegerNoiseSource | None = None) -> np.ndarray:
    """``size`` i.i.d. Exp(1) draws from the secure source (or the test's)."""
    return resolve_integer(noise).exponentials(size)

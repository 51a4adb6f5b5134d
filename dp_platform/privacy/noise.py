"""The only place where noise is drawn.

Production code uses :class:`SecureNoise`, backed by OpenDP 0.16's samplers: they draw from the
operating system's cryptographically secure generator and sample *exactly* (Gaussian and Laplace
via discrete samplers with correct rounding of ``value + noise`` to float; the exponential
mechanism as report-noisy-max with exact Gumbel noise), so they are safe against the
floating-point attacks that break textbook ``numpy.random`` samplers (adsbpc.md §6.3).

Tests inject :class:`SeededNoise` through an explicit ``noise=`` parameter. Production code never
constructs it: every public function takes ``noise: NoiseSource | None = None`` and resolves
``None`` with :func:`resolve`, which always returns the secure source.
"""

from __future__ import annotations

import secrets
from functools import lru_cache
from typing import Protocol, runtime_checkable

import numpy as np

__all__ = ["NoiseSource", "SecureNoise", "SeededNoise", "resolve"]


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

"""The shape every data-independent baseline shares: a noisy linear measurement, then decoding.

IPA, BIN, UMM and MMBPC all release ``y = S x + N(0, σ² I)`` for each publisher's day vector x
and answer the workload with ``D y`` (docs/baselines.md#matrix-mechanism: S is the strategy
B, D the reconstruction L). Keeping that in one class means the privacy cost (σ against the
sensitivity of S), the analytic variance (σ² ‖row of D‖²) and the streaming release are
written once.

Streaming: every row of S is *measured* on its last nonzero day, and every row of D reads only
measurements made on or before its query's end day. ``release`` checks neither at run time;
:meth:`LinearPlan.check_causal` does, and the plan builders call it, so a plan that would read a
future day cannot be built.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from dp_platform.privacy.noise import NoiseSource, resolve

__all__ = ["LinearPlan", "cached_plan", "gaussian_sigma", "gaussian_zcdp"]

_CAUSAL_TOLERANCE = 1e-12


def gaussian_sigma(sensitivity: float, rho: float) -> float:
    """σ of the Gaussian mechanism that is ρ-zCDP at ℓ2 sensitivity Δ: σ² = Δ²/(2ρ)
    (docs/baselines.md#zcdp)."""
    if not rho > 0:
        raise ValueError(f"rho must be > 0, got {rho!r}")
    if sensitivity < 0:
        raise ValueError(f"sensitivity must be >= 0, got {sensitivity!r}")
    return float(sensitivity / np.sqrt(2.0 * rho))


def gaussian_zcdp(sensitivity: float, sigma: float) -> float:
    """ρ = Δ²/(2σ²) actually spent; 0 when Δ = 0 (nothing to hide), ∞ when σ = 0 < Δ."""
    if sensitivity == 0:
        return 0.0
    if sigma == 0:
        return float("inf")
    return float(sensitivity**2 / (2.0 * sigma**2))


def _last_nonzero(matrix: np.ndarray) -> np.ndarray:
    """Index of the last nonzero entry of every row (-1 for an all-zero row)."""
    nonzero = np.abs(matrix) > _CAUSAL_TOLERANCE
    width = matrix.shape[1]
    last = width - 1 - np.argmax(nonzero[:, ::-1], axis=1)
    return np.where(nonzero.any(axis=1), last, -1)


@dataclass(frozen=True, eq=False)
class LinearPlan:
    """A calibrated Gaussian linear mechanism for one workload (data-independent, cacheable).

    Attributes:
        name: label of the baseline (for reports).
        strategy: S, (k × n); measurement row j is released on day ``measured_on[j]``.
        decoder: D, (m × k); query q is answered on day ``query_ends[q]``.
        sigma: noise standard deviation on every measurement and every publisher.
        sensitivity: user-level ℓ2 sensitivity of S over the whole P × n release.
        rho: the zCDP budget this plan charges.
        query_ends: 0-based release day of every query.
    """

    name: str
    strategy: np.ndarray
    decoder: np.ndarray
    sigma: float
    sensitivity: float
    rho: float
    query_ends: np.ndarray

    def __post_init__(self) -> None:
        # Private read-only copies: a cached plan must not change under its users' feet.
        for field, dtype in (
            ("strategy", np.float64),
            ("decoder", np.float64),
            ("query_ends", np.int64),
        ):
            array = np.array(getattr(self, field), dtype=dtype)
            array.setflags(write=False)
            object.__setattr__(self, field, array)
        self.check_causal()

    @property
    def n(self) -> int:
        return int(self.strategy.shape[1])

    @property
    def measured_on(self) -> np.ndarray:
        """Day each measurement (row of S) is released: the last day it reads."""
        return _last_nonzero(self.strategy)

    def check_causal(self) -> None:
        """Raise unless every answer reads only measurements released by its own end day."""
        measured = self.measured_on
        reads = np.abs(self.decoder) > _CAUSAL_TOLERANCE
        latest = np.where(reads, measured[None, :], -1).max(axis=1, initial=-1)
        late = latest > self.query_ends
        if np.any(late):
            raise ValueError(f"{self.name}: queries {np.flatnonzero(late)} read future days")

    def zcdp_cost(self) -> float:
        """ρ actually spent by the Gaussian measurement, from σ and the sensitivity."""
        return gaussian_zcdp(self.sensitivity, self.sigma)

    def query_variances(self) -> np.ndarray:
        """Analytic variance of every answer: σ² ‖row_q(D)‖²
        (docs/baselines.md#analytic-variance)."""
        return self.sigma**2 * np.sum(self.decoder**2, axis=1)

    def measure(self, x: np.ndarray, noise: NoiseSource | None = None) -> np.ndarray:
        """Noisy measurements ``S x + N(0, σ²)`` for every publisher: (P × n) → (P × k).

        Noise is added to the true measurement (not drawn on zeros and added later) so that a
        secure source's rounding guarantees apply to the released value itself. Privacy unit
        one user, add/remove: the plan's user-level ℓ2 sensitivity and ρ = Δ²/(2σ²) are
        declared to the sampler, which refuses the draw if OpenDP's map of it says more.
        """
        x = np.atleast_2d(np.asarray(x, dtype=np.float64))
        if x.shape[1] != self.n:
            raise ValueError(f"{self.name}: data has {x.shape[1]} days, plan has {self.n}")
        exact = x @ self.strategy.T
        if exact.size == 0:
            return exact
        noisy = resolve(noise).add_gaussian(
            exact.ravel(), self.sigma, l2_sensitivity=self.sensitivity, rho=self.rho
        )
        return noisy.reshape(exact.shape)

    def decode(self, measurements: np.ndarray) -> np.ndarray:
        """Answers from noisy measurements (post-processing): (P × k) → (P × m)."""
        return measurements @ self.decoder.T

    def release(self, x: np.ndarray, noise: NoiseSource | None = None) -> np.ndarray:
        """Answers to every query for every publisher; x must already be contribution-bounded.

        Vectorised over the whole (P × n) matrix; the answer for a query ending on day t is a
        function of x[:, :t+1] and of the noise only (the noise is drawn in a fixed order that
        does not depend on the data), so it is what a day-by-day run would have released.
        """
        return self.decode(self.measure(x, noise))


@lru_cache(maxsize=256)
def cached_plan(mechanism: Any, workload: Any) -> Any:
    """``mechanism.plan(workload)``, memoised.

    Safe because a plan depends only on the (frozen, hashable) mechanism parameters and the
    workload, never on data, and its arrays are read-only. Repeats of an experiment share it.
    """
    return mechanism.plan(workload)

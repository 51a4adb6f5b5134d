"""Event-level strategies B for the matrix mechanisms UMM and MMBPC
(docs/baselines.md#strategies).

Two lower-triangular factorizations of the prefix workload:

- square-root (default, [29] Henzinger et al.): the Toeplitz B with B·B = P_n, coefficients of
  (1 − z)^{−1/2}; near-optimal and closed form.
- optimal for a weighted total squared error (Denisov et al. 2022 fixed point): the Gram matrix
  X minimising tr(M X⁻¹) subject to diag(X) = 1, factored by reverse Cholesky so that B and
  L = Q B⁻¹ stay lower-triangular (streaming).

Both are pure functions of (n, weights) and cached: they are data-independent.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from scipy.linalg import toeplitz

__all__ = [
    "FixedPoint",
    "denisov_fixed_point",
    "optimal_strategy",
    "reverse_cholesky",
    "sqrt_coefficients",
    "sqrt_strategy",
]

_TOLERANCE = 1e-12
_MAX_ITERATIONS = 20_000


def sqrt_coefficients(n: int) -> np.ndarray:
    """c_0 = 1, c_k = c_{k−1}(2k − 1)/(2k): Taylor coefficients of (1 − z)^{−1/2}."""
    k = np.arange(1, n)
    return np.concatenate(([1.0], np.cumprod((2 * k - 1) / (2 * k))))


def sqrt_strategy(n: int) -> np.ndarray:
    """Lower-triangular Toeplitz B with B·B = P_n; its largest column norm² is s_n = Σ c_k²."""
    c = sqrt_coefficients(n)
    return np.tril(toeplitz(c))


def _psd_sqrt(matrix: np.ndarray) -> np.ndarray:
    """Symmetric square root, negative eigenvalues (round-off) clipped to 0
    (docs/baselines.md#strategies)."""
    values, vectors = np.linalg.eigh((matrix + matrix.T) / 2.0)
    return (vectors * np.sqrt(np.clip(values, 0.0, None))) @ vectors.T


class FixedPoint:
    """Result of the Denisov fixed point: Gram matrix X (diag 1), v, and iteration count."""

    def __init__(self, gram: np.ndarray, v: np.ndarray, iterations: int) -> None:
        self.gram = gram
        self.v = v
        self.iterations = iterations
        gram.setflags(write=False)
        v.setflags(write=False)

    @property
    def loss(self) -> float:
        """tr(M X⁻¹) at the optimum, which equals Σ v (a cheap check)."""
        return float(self.v.sum())


def denisov_fixed_point(m: np.ndarray, tol: float = _TOLERANCE) -> FixedPoint:
    """min tr(M X⁻¹) s.t. diag(X) = 1 by v ← diag((D_v^{1/2} M D_v^{1/2})^{1/2}).

    Converged when max|Δv| ≤ tol·max v; then X = D_v^{−1/2}(D_v^{1/2} M D_v^{1/2})^{1/2}D_v^{−1/2}.
    """
    v = np.diag(_psd_sqrt(m)).copy()
    iterations, converged = 0, False
    while not converged:
        if iterations == _MAX_ITERATIONS:
            raise RuntimeError(f"fixed point did not converge in {_MAX_ITERATIONS} iterations")
        root_v = np.sqrt(v)
        new_v = np.diag(_psd_sqrt(root_v[:, None] * m * root_v[None, :])).copy()
        converged = np.max(np.abs(new_v - v)) <= tol * np.max(new_v)
        v, iterations = new_v, iterations + 1
    root_v = np.sqrt(v)
    middle = _psd_sqrt(root_v[:, None] * m * root_v[None, :])
    gram = middle / root_v[:, None] / root_v[None, :]
    return FixedPoint((gram + gram.T) / 2.0, v, iterations)


def reverse_cholesky(gram: np.ndarray) -> np.ndarray:
    """Lower-triangular B with BᵀB = X: flip, Cholesky, transpose, flip back
    (docs/baselines.md#strategies)."""
    flipped = gram[::-1, ::-1]
    lower = np.linalg.cholesky(flipped)
    return np.ascontiguousarray(lower.T[::-1, ::-1])


@lru_cache(maxsize=32)
def _optimal_cached(workload_bytes: bytes, shape: tuple[int, int]) -> FixedPoint:
    weighted = np.frombuffer(workload_bytes, dtype=np.float64).reshape(shape)
    return denisov_fixed_point(weighted.T @ weighted)


def optimal_strategy(weighted_workload: np.ndarray) -> tuple[np.ndarray, FixedPoint]:
    """B (lower-triangular, unit columns) optimal for the total error of ``weighted_workload``.

    ``weighted_workload`` is diag(√w) Q; M = Q_wᵀ Q_w. Returns B and the fixed-point result.
    """
    weighted = np.ascontiguousarray(weighted_workload, dtype=np.float64)
    result = _optimal_cached(weighted.tobytes(), weighted.shape)
    return reverse_cholesky(np.array(result.gram)), result

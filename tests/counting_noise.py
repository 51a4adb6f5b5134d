"""Seeded noise sources that count their raw draws: a refused draw must leave the count at 0
(the sampler's OpenDP check runs before any raw draw)."""

from __future__ import annotations

import numpy as np

from dp_platform.privacy.noise import SeededIntegerNoise, SeededNoise
from dp_platform.privacy.noise_check import Draw


class CountingNoise(SeededNoise):
    """Seeded noise that counts its raw draws (the check runs before any of them)."""

    def __init__(self, seed: int) -> None:
        super().__init__(seed)
        self.raw = 0

    def _gaussian(self, vector: np.ndarray, draw: Draw) -> np.ndarray:
        self.raw += 1
        return super()._gaussian(vector, draw)

    def _laplace(self, vector: np.ndarray, draw: Draw) -> np.ndarray:
        self.raw += 1
        return super()._laplace(vector, draw)

    def _gumbel_max(self, vector: np.ndarray, draw: Draw) -> int:
        self.raw += 1
        return super()._gumbel_max(vector, draw)

    def _exponential_max(self, vector: np.ndarray, draw: Draw) -> int:
        self.raw += 1
        return super()._exponential_max(vector, draw)

    def _uniform(self, low: float, high: float) -> float:
        self.raw += 1
        return super()._uniform(low, high)


class CountingIntegerNoise(SeededIntegerNoise):
    """Seeded integer noise that counts its raw draws."""

    def __init__(self, seed: int) -> None:
        super().__init__(seed)
        self.raw = 0

    def _discrete_laplace(self, vector: np.ndarray, draw: Draw) -> np.ndarray:
        self.raw += 1
        return super()._discrete_laplace(vector, draw)

    def _discrete_gaussian(self, vector: np.ndarray, draw: Draw) -> np.ndarray:
        self.raw += 1
        return super()._discrete_gaussian(vector, draw)

    def _exponentials(self, size: int) -> np.ndarray:
        self.raw += 1
        return super()._exponentials(size)

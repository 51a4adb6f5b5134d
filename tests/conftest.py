"""Shared fixtures. Tests inject seeded noise explicitly; production code never does."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from dp_platform.privacy.noise import SeededNoise


@pytest.fixture
def seeded() -> Callable[[int], SeededNoise]:
    """A factory of reproducible noise sources (tests only)."""
    return SeededNoise


class ScriptedNoise:
    """Noise whose Laplace draws are given by the test, to check branching logic exactly."""

    def __init__(self, laplace: list[float]) -> None:
        self.laplace = list(laplace)
        self.laplace_scales: list[float] = []

    def add_gaussian(self, values: np.ndarray, scale: float) -> np.ndarray:
        return np.asarray(values, dtype=np.float64).copy()

    def add_laplace(self, values: np.ndarray, scale: float) -> np.ndarray:
        vector = np.atleast_1d(np.asarray(values, dtype=np.float64))
        self.laplace_scales.append(scale)
        drawn = [self.laplace.pop(0) for _ in range(vector.size)]
        return vector + np.asarray(drawn)

    def exponential_index(self, scores: np.ndarray, scale: float) -> int:
        return int(np.argmax(scores))

    def uniform(self, low: float, high: float) -> float:
        return (low + high) / 2.0


@pytest.fixture
def scripted() -> type[ScriptedNoise]:
    return ScriptedNoise


@pytest.fixture(scope="session")
def spark():
    """One Spark session for the whole test run (tests/spark_fixtures.py)."""
    from tests.spark_fixtures import start_test_session

    session = start_test_session()
    yield session
    session.stop()

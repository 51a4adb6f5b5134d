"""Shared fixtures. Tests inject seeded noise explicitly; production code never does."""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from dp_platform.privacy.noise import NoiseSource, SeededNoise
from dp_platform.privacy.noise_check import Draw


@pytest.fixture
def seeded() -> Callable[[int], SeededNoise]:
    """A factory of reproducible noise sources (tests only)."""
    return SeededNoise


class ScriptedNoise(NoiseSource):
    """Noise whose Laplace draws are given by the test, to check branching logic exactly.

    Only the raw draws are scripted: every call still passes the sampler's OpenDP check.
    """

    def __init__(self, laplace: list[float]) -> None:
        self.laplace = list(laplace)
        self.laplace_scales: list[float] = []

    def _gaussian(self, vector: np.ndarray, draw: Draw) -> np.ndarray:
        return vector.copy()

    def _laplace(self, vector: np.ndarray, draw: Draw) -> np.ndarray:
        self.laplace_scales.append(draw.scale)
        drawn = [self.laplace.pop(0) for _ in range(vector.size)]
        return vector + np.asarray(drawn)

    def _gumbel_max(self, vector: np.ndarray, draw: Draw) -> int:
        return int(np.argmax(vector))

    def _exponential_max(self, vector: np.ndarray, draw: Draw) -> int:
        return int(np.argmax(vector))

    def _uniform(self, low: float, high: float) -> float:
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


@pytest.fixture(scope="session")
def postgres_server():
    """A throwaway PostgreSQL server for the session (one per xdist worker), then removed."""
    from tests.postgres_server import throwaway_postgres

    with throwaway_postgres() as server:
        yield server


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.system)])
def new_ledger_location(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[[], str]:
    """A factory of fresh, empty ledger locations on the parametrised backend: a SQLite file
    under the test's directory, or a new database on the session's PostgreSQL server."""
    if request.param == "sqlite":
        return lambda: str(tmp_path / f"ledger_{uuid.uuid4().hex[:8]}" / "ledger.sqlite")
    server = request.getfixturevalue("postgres_server")
    prefix = re.sub(r"\W", "_", request.node.originalname.lower())[:40]
    return lambda: server.create_database(f"{prefix}_{uuid.uuid4().hex[:8]}")


@pytest.fixture
def ledger_location(new_ledger_location: Callable[[], str]) -> str:
    """One fresh ledger location on each backend (SQLite, PostgreSQL)."""
    return new_ledger_location()

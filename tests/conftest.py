"""Shared fixtures. Tests inject seeded noise explicitly; production code never does."""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from functools import cache
from pathlib import Path

import numpy as np
import pytest

from dp_platform.privacy.noise import NoiseSource, SeededNoise
from dp_platform.privacy.noise_check import Draw

pytest_plugins = ("tests.time_budget",)  # every run lists its slowest files and their ceiling

# A test module is a *system* test when it drives what an operator runs — the Dagster layer,
# a subprocess (the CLI, a killed run), Spark or a browser — and a *unit* test otherwise. The
# marker follows from what the module imports, so a new test file is classified without a list.
_SYSTEM = re.compile(
    r"^(from assets\b|import assets\b|import dagster\b|from dagster\b|import subprocess\b"
    r"|from tests\.spark_fixtures\b|from tests\.platform_fixtures\b)",
    re.MULTILINE,
)


_HERE = Path(__file__).resolve().parent


@cache
def _is_system(path: Path) -> bool:
    return "browser" in path.parts or bool(_SYSTEM.search(path.read_text()))


def _uses_spark(item: pytest.Item) -> bool:
    """A JVM test: it asks for the ``spark`` session, or is the Spark case of an engine
    parameter (whose fixtures start the session on demand)."""
    callspec = getattr(item, "callspec", None)
    params = callspec.params.values() if callspec is not None else ()
    engines = {value for value in params if isinstance(value, str)}
    return "spark" in getattr(item, "fixturenames", ()) or "spark" in engines


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        spark = _uses_spark(item)
        if not Path(item.fspath).resolve().is_relative_to(_HERE):  # research/tests: its own
            continue
        system = (
            item.get_closest_marker("system") is not None or _is_system(Path(item.fspath)) or spark
        )
        item.add_marker(pytest.mark.system if system else pytest.mark.unit)


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

"""Every test directory's rules (tests/, research/tests/): markers, the time budget, worker groups.

A test module is a *system* test when it drives what an operator runs — the Dagster layer, a
subprocess (the CLI, a killed run), Spark or a browser — and a *unit* test otherwise
(``make test-fast`` runs ``-m "unit and not slow"``). The marker follows from what the module
imports, so a new test file is classified without a list.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import pytest

# every run lists its slowest files and their ceiling; a file (every Spark file: one group) runs
# whole on one xdist worker
pytest_plugins = ("tests.time_budget", "tests.worker_groups")

_SYSTEM = re.compile(
    r"^(from assets\b|import assets\b|import dagster\b|from dagster\b|import subprocess\b"
    r"|from tests\.spark_fixtures\b|from tests\.platform_fixtures\b)",
    re.MULTILINE,
)


@cache
def _is_system(path: Path) -> bool:
    return "browser" in path.parts or bool(_SYSTEM.search(path.read_text()))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    from tests.worker_groups import uses_spark  # a plugin (above): imported once registered

    for item in items:
        system = (
            item.get_closest_marker("system") is not None
            or _is_system(Path(item.fspath))
            or uses_spark(item)
        )
        item.add_marker(pytest.mark.system if system else pytest.mark.unit)

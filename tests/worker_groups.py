"""Which tests share a pytest-xdist worker (``--dist loadgroup``, as ``make test`` runs).

Every test file is one group, so its module fixtures (a prepared home, both engines'
warehouses) are built once and its tests may build on the ones before them, as under
``--dist loadfile``. Every file with a Spark test (:func:`uses_spark`) joins one group,
so one worker starts the run's only Spark JVM (20-35 s and ~1 GB each) instead of every worker
starting its own. docs/testing.md says why pytest is pinned below 9.2 for this.

A plugin module (loaded by the root conftest.py) so a test can run it on a suite of its own
(``pytest -p tests.worker_groups``).
"""

from __future__ import annotations

import pytest

SPARK_GROUP = "spark"
SPARK_FIXTURES = frozenset({"spark", "spark_connect"})  # the run's JVM, its Connect server


def file_of(item: pytest.Item) -> str:
    return item.nodeid.split("::", 1)[0]


def uses_spark(item: pytest.Item) -> bool:
    """A JVM test: it asks for the ``spark`` session or the Connect server, or is the Spark
    case of an engine parameter (whose fixtures start the session on demand, out of the
    fixture list's sight)."""
    callspec = getattr(item, "callspec", None)
    params = callspec.params.values() if callspec is not None else ()
    return bool(SPARK_FIXTURES & set(getattr(item, "fixturenames", ()))) or "spark" in {
        value for value in params if isinstance(value, str)
    }


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook, which reads the groups
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    spark_files = {file_of(i) for i in items if uses_spark(i)}
    for item in items:
        file = file_of(item)
        item.add_marker(pytest.mark.xdist_group(SPARK_GROUP if file in spark_files else file))

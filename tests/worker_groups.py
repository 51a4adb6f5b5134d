"""Which tests share a pytest-xdist worker (``--dist loadgroup``, as ``make test`` runs).

Every test file is one group, so its module fixtures (a prepared home, both engines'
warehouses) are built once and its tests may build on the ones before them, as under
``--dist loadfile``. Every file with a Spark test (:func:`uses_spark`) joins one of two
Spark groups, so the run starts two Spark JVMs (20-35 s, a heap of up to 4 GB each), one per group,
instead of one per file: the files comparing the engines' rows on the same data
(:data:`PARITY_FILES`) and the others (the platform through Dagster, crashes, the audit,
Connect). On Delta Lake tables one group held about an hour of one worker; two let both
workers run Spark beside the other files (docs/testing.md). docs/testing.md says why pytest is
pinned below 9.2 for this.

A plugin module (loaded by the root conftest.py) so a test can run it on a suite of its own
(``pytest -p tests.worker_groups``).
"""

from __future__ import annotations

import pytest

SPARK_GROUP = "spark"
PARITY_GROUP = "spark-parity"
PARITY_FILES = frozenset(
    {
        "test_spark_cells.py",
        "test_spark_impression_cells.py",
        "test_spark_cells_platform.py",
        "test_spark_parity.py",
        "test_spark_ingest_checks.py",
        "test_cross_user_ids.py",
    }
)
"""The files of the second Spark group, by name: both engines on the same rows (1 715 of the
Spark files' 4 060 worker-seconds in a run of their own on two workers; docs/testing.md)."""
SPARK_FIXTURES = frozenset({"spark", "spark_connect"})  # a group's JVM, the Connect server


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
        item.add_marker(pytest.mark.xdist_group(group_of(file) if file in spark_files else file))


def group_of(spark_file: str) -> str:
    """The Spark group of a file with a Spark test."""
    return PARITY_GROUP if spark_file.rsplit("/", 1)[-1] in PARITY_FILES else SPARK_GROUP

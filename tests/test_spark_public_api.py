"""The Spark engine uses Spark's public DataFrame/SQL/Catalog API only: no Py4J gateway
(``_jvm``, ``_jsc``) and no ``sparkContext``, neither of which a Spark Connect session
(``SparkSession.builder.remote("sc://...")``) has.

session.py's ``_local_session`` alone may reach the SparkContext: it starts this process's own
JVM, which only a catalogue without ``remote`` asks for. Nor does the engine keep a record beside
Delta's commits: no SQLite file, no directory rename, no file lock but the home's (until reads
pin snapshots: docs/scale.md §5).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

SPARK_ENGINE = Path(__file__).resolve().parents[1] / "dp_platform" / "warehouse" / "spark"
LOCAL_ONLY = "_local_session"  # session.py's classic session (its JVM, its SparkContext)
PRIVATE_API = re.compile(r"_jvm|_jsc|sparkContext")


def test_the_spark_engine_reaches_no_jvm_and_no_spark_context() -> None:
    checked = sorted(SPARK_ENGINE.glob("*.py"))
    assert {p.name for p in checked} >= {"ingest_checks.py", "session.py", "store.py"}
    found = [
        f"{path.name}:{number}: {line.strip()}"
        for path in checked
        for number, line in enumerate(path.read_text().splitlines(), start=1)
        if PRIVATE_API.search(line) and number not in _local_lines(path)
    ]
    assert found == []
    assert _local_lines(SPARK_ENGINE / "session.py")  # the exemption still names a function


def _local_lines(path: Path) -> set[int]:
    """The line numbers of ``_local_session``'s definition in ``path`` (none elsewhere)."""
    return {
        number
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.FunctionDef) and node.name == LOCAL_ONLY
        for number in range(node.lineno, (node.end_lineno or node.lineno) + 1)
    }


def test_the_spark_engine_keeps_no_record_beside_delta_commits() -> None:
    forbidden = re.compile(r"sqlite|\.rename\(|\bos\.replace\(|file_lock|flock")
    found = {
        path.name: set(forbidden.findall(path.read_text()))
        for path in sorted(SPARK_ENGINE.glob("*.py"))
        if forbidden.search(path.read_text())
    }
    assert found == {}  # no SQLite file, no rename, no lock: Delta's commits only

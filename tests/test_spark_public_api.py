"""The Spark engine uses Spark's public DataFrame/SQL/Catalog API only: no Py4J gateway
(``_jvm``, ``_jsc``) and no ``sparkContext``, neither of which a Spark Connect session
(``SparkSession.builder.remote("sc://...")``) has.

Not yet held to it: session.py (its ``check_private`` reads the context's configuration;
reworked separately). Nor does the engine keep a record beside Delta's commits: no SQLite file,
no directory rename, no file lock but the home's (until reads pin snapshots: docs/scale.md §5).
"""

from __future__ import annotations

import re
from pathlib import Path

SPARK_ENGINE = Path(__file__).resolve().parents[1] / "dp_platform" / "warehouse" / "spark"
NOT_YET = {"session.py"}
PRIVATE_API = re.compile(r"_jvm|_jsc|sparkContext")


def test_the_spark_engine_reaches_no_jvm_and_no_spark_context() -> None:
    checked = sorted(p for p in SPARK_ENGINE.glob("*.py") if p.name not in NOT_YET)
    assert {p.name for p in checked} >= {"ingest_checks.py", "ingest_types.py", "store.py"}
    found = [
        f"{path.name}:{number}: {line.strip()}"
        for path in checked
        for number, line in enumerate(path.read_text().splitlines(), start=1)
        if PRIVATE_API.search(line)
    ]
    assert found == []


def test_the_spark_engine_keeps_no_record_beside_delta_commits() -> None:
    forbidden = re.compile(r"sqlite|\.rename\(|\bos\.replace\(|file_lock|flock")
    found = {
        path.name: set(forbidden.findall(path.read_text()))
        for path in sorted(SPARK_ENGINE.glob("*.py"))
        if forbidden.search(path.read_text())
    }
    assert found == {"store.py": {"file_lock"}}  # the home's lock, until reads pin snapshots

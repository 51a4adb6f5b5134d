"""``make test``'s worker groups hold: the Spark files of each Spark group on one xdist worker,
every other file whole on one worker (tests/worker_groups.py under ``--dist loadgroup``).

Run on a suite of its own in a subprocess, as ``make test`` runs the real one. It fails when
pytest-xdist ignores the groups, as it does under pytest 9.2 (pytest-xdist issue #1386: the
tests then go to the workers one by one) — the reason pytest is pinned below 9.2.
"""

from __future__ import annotations

import subprocess
import sys
from collections import defaultdict
from pathlib import Path

from tests.worker_groups import PARITY_FILES

REPO = Path(__file__).resolve().parents[1]

CONFTEST = """
import os
import pytest


@pytest.fixture(scope="session")
def spark():
    return "a stand-in for the session's Spark JVM"


@pytest.fixture(autouse=True)
def _record(request):
    with open(os.environ["WORKER_LOG"], "a") as log:
        log.write(f"{os.environ['PYTEST_XDIST_WORKER']} {request.node.nodeid}\\n")
"""

SPARK_FILE = """
import pytest


@pytest.mark.parametrize("n", range(6))
def test_on_spark(spark, n):
    pass


@pytest.mark.parametrize("n", range(6))
def test_beside_spark(n):
    pass
"""

ENGINE_FILE = """
import pytest


@pytest.mark.parametrize("engine", ["duckdb", "spark"])
def test_on_either_engine(engine):
    pass  # its Spark case would start the session on demand (request.getfixturevalue)
"""

PLAIN_FILE = """
import pytest


@pytest.mark.parametrize("n", range(6))
def test_plain(n):
    pass
"""


def test_each_spark_group_shares_one_worker_and_other_files_stay_whole(tmp_path: Path) -> None:
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "conftest.py").write_text(CONFTEST)
    for n in range(3):
        (suite / f"test_spark_{n}.py").write_text(SPARK_FILE)
        (suite / f"test_plain_{n}.py").write_text(PLAIN_FILE)
    (suite / "test_spark_engines.py").write_text(ENGINE_FILE)
    for name in sorted(PARITY_FILES)[:2]:  # the parity group: its files by name
        (suite / name).write_text(SPARK_FILE)
    log = tmp_path / "workers.log"
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    command += ["-p", "tests.worker_groups", "-n", "2", "--dist", "loadgroup", str(suite)]
    result = subprocess.run(
        command,
        cwd=suite,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO), "WORKER_LOG": str(log)},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    workers: defaultdict[str, set[str]] = defaultdict(set)
    tests = 0
    for line in log.read_text().splitlines():
        worker, nodeid = line.split(" ", 1)
        file = nodeid.split("::", 1)[0]
        parity = file in PARITY_FILES
        workers["parity" if parity else "spark" if "spark" in file else file].add(worker)
        tests += 1
    assert tests == 3 * 12 + 3 * 6 + 2 + 2 * 12
    assert set(workers) == {"spark", "parity", *(f"test_plain_{n}.py" for n in range(3))}
    assert all(len(used) == 1 for used in workers.values()), dict(workers)


def test_the_parity_files_start_a_second_spark_group() -> None:
    from tests.worker_groups import PARITY_GROUP, SPARK_GROUP, group_of

    assert PARITY_GROUP != SPARK_GROUP
    assert {group_of(f"tests/{name}") for name in PARITY_FILES} == {PARITY_GROUP}
    others = ("tests/test_spark_audit.py", "tests/hostile/test_ingest_hostile.py")
    assert {group_of(name) for name in others} == {SPARK_GROUP}
    assert all((REPO / "tests" / name).is_file() for name in PARITY_FILES)  # no stale name

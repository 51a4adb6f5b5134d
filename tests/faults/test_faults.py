"""The fault-injection harness in CI, on the home's SQLite ledger: the constructed schedules
(one per fail point, the kill placed by construction, and one timed kill mid-run), zero
violations, a kill at each (tests/faults/ci.py).

Each schedule kills processes at fail points or at a time, retries, and checks every
invariant of tests/faults/invariants.py (test_invariants.py shows each check fails on a
corrupted home). The PostgreSQL ledger's run is test_faults_postgres.py: a file of its own, so
the two runs go to the two test workers of ``make test``.
"""

from __future__ import annotations

import shutil

import pytest

from tests.faults.ci import assert_schedules_keep_every_invariant
from tests.faults.harness import scratch_dir

pytestmark = [pytest.mark.system, pytest.mark.slow]


def test_seeded_schedules_keep_every_invariant_on_the_sqlite_ledger() -> None:
    workdir = scratch_dir()  # in memory: see scratch_dir
    try:
        assert_schedules_keep_every_invariant(None, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)

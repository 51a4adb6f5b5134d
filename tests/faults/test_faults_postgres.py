"""The fault-injection harness in CI on a PostgreSQL ledger: the catalogue's
``ledger: {url: …}`` names a throwaway server (tests/postgres_server.py), with a fresh database
per schedule; the constructed schedules (one per fail point, one timed kill), zero violations,
a kill at each (tests/faults/ci.py)."""

from __future__ import annotations

import shutil

import pytest

from tests.faults.ci import assert_schedules_keep_every_invariant
from tests.faults.harness import scratch_dir
from tests.postgres_server import postgres_binaries, throwaway_postgres

pytestmark = [pytest.mark.system, pytest.mark.slow]


@pytest.mark.skipif(postgres_binaries() is None, reason="no PostgreSQL server binaries")
def test_seeded_schedules_keep_every_invariant_on_a_postgres_ledger() -> None:
    workdir = scratch_dir()
    try:
        with throwaway_postgres() as server:
            assert_schedules_keep_every_invariant(server.url("postgres"), workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)

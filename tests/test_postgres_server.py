"""The throwaway PostgreSQL server the ledger and fault-harness tests run on."""

from __future__ import annotations

import psycopg

from tests.postgres_server import throwaway_postgres


def test_a_throwaway_server_starts_accepts_sql_and_is_removed() -> None:
    with throwaway_postgres() as server:
        url = server.create_database("smoke")
        with psycopg.connect(url, autocommit=True) as db:
            db.execute("CREATE TABLE t (x NUMERIC NOT NULL)")
            db.execute("INSERT INTO t VALUES (1.5)")
            assert db.execute("SELECT sum(x) FROM t").fetchone()[0] == 1.5
        data = server.data
        assert data.exists()
    assert not data.exists()

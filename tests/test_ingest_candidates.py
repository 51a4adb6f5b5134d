"""Duplicates and ties are searched through hash candidates (ingest_duplicate_candidates*.sql,
ingest_ties.sql); the exact rule decides. Here every row is made a candidate, as if every hash
collided: the outcome must be exactly the one without collisions."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

import dp_platform.warehouse.runner as runner
from dp_platform.warehouse import Warehouse
from dp_platform.warehouse.runner import SqlRunner
from tests.conftest_data import CONV_HEADER, IMP_HEADER, write_csv

NOW = datetime(2026, 4, 1, tzinfo=UTC)
AT = "2026-03-01T10:00:00Z"

IMPRESSIONS = [
    ["a", "u1", "p1", "acme", AT, "view"],
    ["b", "u1", "p2", "acme", AT, "view"],  # tie with a (same user, advertiser, instant)
    ["c", "u2", "p1", "acme", AT, "view"],  # same instant, another user: no tie
    ["a", "u1", "p1", "acme", "2026-03-01T11:00:00Z", "view"],  # duplicate_in_load (u1's a)
    ["d", "u1", "p1", "acme", "2026-03-01T12:00:00Z", "view"],
    ["a", "u3", "p1", "acme", "2026-03-01T11:00:00Z", "view"],  # u3's a: another event
]
CONVERSIONS = [
    ["x", "u1", "acme", "2026-03-02T10:00:00Z", "1"],
    ["y", "u1", "acme", "2026-03-02T10:00:00Z", "1"],
    ["x", "u1", "acme", "2026-03-02T11:00:00Z", "2"],  # duplicate_in_load (u1's x)
    ["x", "u2", "acme", "2026-03-02T11:00:00Z", "2"],  # u2's x: another event
]


def _everything_collides(monkeypatch: pytest.MonkeyPatch) -> None:
    """After the duplicate candidate search, make every row a candidate; in the tie search,
    make every instant of the span a candidate (no neighbour filter)."""
    real_run, real_sql = SqlRunner.run, runner.load_sql

    def run(self: SqlRunner, name: str, **params: object) -> list[tuple]:
        result = real_run(self, name, **params)
        if name == "ingest_duplicate_candidates":
            self.con.execute(
                "INSERT INTO duplicate_candidates SELECT source_row FROM events "
                "WHERE load_id = $load_id",
                {"load_id": params["load_id"]},
            )
        return result

    def load_sql(name: str) -> str:
        text = real_sql(name)
        if name == "ingest_ties":
            assert "WHERE h = previous;" in text
            text = text.replace("WHERE h = previous;", ";", 1)
        return text

    monkeypatch.setattr(SqlRunner, "run", run)
    monkeypatch.setattr(runner, "load_sql", load_sql)


def _load(tmp_path: Path, *, collide: bool, monkeypatch: pytest.MonkeyPatch) -> dict:
    if collide:
        _everything_collides(monkeypatch)
    imps = write_csv(tmp_path / "i.csv", IMP_HEADER, IMPRESSIONS)
    convs = write_csv(tmp_path / "c.csv", CONV_HEADER, CONVERSIONS)
    with Warehouse(tmp_path / f"w{collide}.duckdb") as wh:
        report = wh.ingest(imps, convs, now=NOW).to_json()
        keys = wh.con.execute(
            "SELECT impression_id, ord_key % 1024 FROM impressions ORDER BY 1"
        ).fetchall()
        quarantine = wh.con.execute(
            "SELECT kind, source_row, reason FROM quarantine ORDER BY 1, 2"
        ).fetchall()
    return {"report": report, "ties": keys, "quarantine": quarantine}


def test_hash_candidates_never_decide(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    plain = _load(tmp_path, collide=False, monkeypatch=monkeypatch)
    assert plain["quarantine"] == [
        ("conversions", 3, "duplicate_in_load"),
        ("impressions", 4, "duplicate_in_load"),
    ]
    assert plain["ties"] == [("a", 0), ("a", 0), ("b", 1), ("c", 0), ("d", 0)]
    assert _load(tmp_path, collide=True, monkeypatch=monkeypatch) == plain

"""The Spark warehouse's catalog: a small SQLite file that is the commit record of every write.

Parquet has no transactions, so a write is made visible by a row here, committed after its
files are in place (the same role as DuckDB's transaction):

* ``ingests``/``loads``: an ingest allocates its load ids (``started``), writes rows tagged with
  them, stages the impression days it rewrites and records the moves (``staged``), moves them
  in, and commits. On open, a ``started`` ingest is rolled back (its load_id partitions
  dropped) and a ``staged`` one rolled forward (its moves redone): all or nothing, as in DuckDB.
* ``partitions``: which (asset, campaign, day) partitions exist, with an increasing version and
  the input version they were built from. A rewrite forgets the days first, so a crash leaves
  them "not materialised", never half written and trusted.
* ``plus_spend_days``: AdsBPC+ filter days applied, with their public (r, σ, cap). The per-user
  spends are Parquet (beside the private data); a day's spends count once this row is
  committed, and a day without its row is recomputed over the same partition — so a crash
  between the two stores neither charges a user twice nor loses a charge.
* ``meta``: the warehouse's identity (a random UUID), to which the ledger binds a campaign
  whose per-user state (the AdsBPC+ spends) lives here.
* ``touch_batches``: private last touch's draws. Each run that draws writes its choices to a
  Parquet partition of its own batch (``started`` here first); the choices count once the
  batch is ``committed``, and a batch that never committed is dropped unread. A conversion is
  drawn only while it has no committed choice, so every run after the commit uses that one
  choice and a crash never leaves two choices in use for one conversion.

Holds ids, counts of loaded rows and public parameters — no user data.
"""

from __future__ import annotations

import json
import sqlite3
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path

from dp_platform.sqlite_files import open_shared

__all__ = ["Catalog", "PendingIngest"]

# The loads an ingest committed (a started or staged one is not data yet: recovery decides).
_COMMITTED_LOADS = "loads JOIN ingests USING (ingest_id) WHERE status = 'committed'"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS ingests (
    ingest_id INTEGER PRIMARY KEY AUTOINCREMENT,
    status TEXT NOT NULL,            -- started | staged | committed | aborted
    moves_json TEXT,                 -- [[staged directory, table directory], ...]
    staging TEXT,
    created_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS loads (
    load_id INTEGER PRIMARY KEY AUTOINCREMENT,
    ingest_id INTEGER NOT NULL REFERENCES ingests(ingest_id),
    kind TEXT NOT NULL,
    source_file TEXT NOT NULL,
    sha256 TEXT NOT NULL,
    rows_in INTEGER,
    accepted INTEGER,
    quarantined INTEGER,
    loaded_at TEXT
);
-- The dimension columns each load was ingested with (DuckDB's load_dimensions): read only for
-- committed loads, like the loads themselves.
CREATE TABLE IF NOT EXISTS load_dimensions (
    load_id INTEGER NOT NULL REFERENCES loads(load_id),
    dimension TEXT NOT NULL,
    PRIMARY KEY (load_id, dimension)
);
CREATE TABLE IF NOT EXISTS partitions (
    asset TEXT NOT NULL,
    campaign TEXT NOT NULL,
    day TEXT NOT NULL,
    version INTEGER NOT NULL,
    input_version INTEGER,           -- the last load it was built from
    rows INTEGER NOT NULL,
    materialized_at TEXT NOT NULL,
    PRIMARY KEY (asset, campaign, day)
);
CREATE TABLE IF NOT EXISTS versions (
    version INTEGER PRIMARY KEY AUTOINCREMENT,
    created_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS touch_batches (
    batch INTEGER PRIMARY KEY AUTOINCREMENT,
    campaign TEXT NOT NULL,
    status TEXT NOT NULL,            -- started | committed | aborted
    created_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS plus_spend_days (
    campaign TEXT NOT NULL,
    day TEXT NOT NULL,
    bound REAL NOT NULL,
    sigma REAL NOT NULL,
    cap REAL NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (campaign, day)
);
"""


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


@dataclass(frozen=True)
class PendingIngest:
    """An ingest that did not commit: its loads, status, staging directory and moves."""

    ingest_id: int
    status: str
    load_ids: list[int]
    staging: str | None
    moves: list[tuple[str, str]]


class Catalog:
    """One SQLite file; each method is one transaction (``BEGIN IMMEDIATE``)."""

    def __init__(self, path: Path) -> None:
        self._db = open_shared(path)
        self._db.executescript(_SCHEMA)

    def close(self) -> None:
        self._db.close()

    def identity(self) -> str:
        """The warehouse's identity: a random UUID created on first use and kept here, beside
        the commit record of the AdsBPC+ spends (a copied or moved home keeps it). Read
        without a write lock once it exists: it is asked before every bound, clip and draw."""
        query = "SELECT value FROM meta WHERE key = 'warehouse_id'"
        row = self._db.execute(query).fetchone()
        if row is not None:
            return str(row[0])
        with self.transaction() as db:
            db.execute(
                "INSERT OR IGNORE INTO meta VALUES ('warehouse_id', ?)", (str(uuid.uuid4()),)
            )
        row = self._db.execute(query).fetchone()
        return str(row[0])

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield self._db
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    # -- loads ---------------------------------------------------------------------------

    def loaded(self, kind: str, sha256: str) -> bool:
        """A committed load of this kind had this content."""
        row = self._db.execute(
            f"SELECT count(*) FROM {_COMMITTED_LOADS} AND kind = ? AND sha256 = ?",
            (kind, sha256),
        ).fetchone()
        return bool(row[0])

    def begin_ingest(self, sources: list[tuple[str, str, str]], staging: str) -> list[int]:
        """Allocate one load id per (kind, file, sha256), in order; status ``started``."""
        with self.transaction() as db:
            cursor = db.execute(
                "INSERT INTO ingests (status, staging, created_at) VALUES ('started', ?, ?)",
                (staging, _now()),
            )
            ingest = cursor.lastrowid
            ids = []
            for kind, source_file, sha in sources:
                cursor = db.execute(
                    "INSERT INTO loads (ingest_id, kind, source_file, sha256) VALUES (?, ?, ?, ?)",
                    (ingest, kind, source_file, sha),
                )
                ids.append(int(cursor.lastrowid))
        return ids

    def record_dimensions(self, load_id: int, dimensions: list[str]) -> None:
        """The dimension columns a started load is ingested with (counted once it commits)."""
        with self.transaction() as db:
            db.executemany(
                "INSERT OR IGNORE INTO load_dimensions VALUES (?, ?)",
                [(load_id, name) for name in dimensions],
            )

    def record_dimensions_once(self, rows: Callable[[], list[tuple[int, str]]]) -> None:
        """Catalogs made before load_dimensions was kept: ``rows()`` (each committed load's
        dimensions, read from its dimension rows) recorded once (meta load_dimensions_recorded)."""
        flag = "SELECT 1 FROM meta WHERE key = 'load_dimensions_recorded'"
        if self._db.execute(flag).fetchone() is not None:
            return
        found = rows()
        with self.transaction() as db:
            db.executemany("INSERT OR IGNORE INTO load_dimensions VALUES (?, ?)", found)
            db.execute("INSERT OR IGNORE INTO meta VALUES ('load_dimensions_recorded', '1')")

    def loads_with_dimension(self, dimension: str) -> set[int]:
        """Committed loads ingested with ``dimension``'s column."""
        rows = self._db.execute(
            f"SELECT load_id FROM {_COMMITTED_LOADS} "
            "AND load_id IN (SELECT load_id FROM load_dimensions WHERE dimension = ?)",
            (dimension,),
        ).fetchall()
        return {int(row[0]) for row in rows}

    def stage_ingest(
        self, load_ids: list[int], reports: list[tuple[int, int, int]], moves: list[tuple[str, str]]
    ) -> None:
        """Record the loads' counts and the directory moves still to do: ``staged``."""
        with self.transaction() as db:
            for load_id, (rows, accepted, quarantined) in zip(load_ids, reports, strict=True):
                db.execute(
                    "UPDATE loads SET rows_in = ?, accepted = ?, quarantined = ?, loaded_at = ? "
                    "WHERE load_id = ?",
                    (rows, accepted, quarantined, _now(), load_id),
                )
            db.execute(
                "UPDATE ingests SET status = 'staged', moves_json = ? WHERE ingest_id = "
                "(SELECT ingest_id FROM loads WHERE load_id = ?)",
                (json.dumps(moves), load_ids[0]),
            )

    def finish_ingest(self, ingest_id: int, status: str) -> None:
        with self.transaction() as db:
            db.execute("UPDATE ingests SET status = ? WHERE ingest_id = ?", (status, ingest_id))

    def ingest_of(self, load_id: int) -> int:
        return int(
            self._db.execute(
                "SELECT ingest_id FROM loads WHERE load_id = ?", (load_id,)
            ).fetchone()[0]
        )

    def pending_ingests(self) -> list[PendingIngest]:
        rows = self._db.execute(
            "SELECT ingest_id, status, staging, moves_json FROM ingests "
            "WHERE status IN ('started', 'staged') ORDER BY ingest_id"
        ).fetchall()
        pending = []
        for ingest_id, status, staging, moves in rows:
            loads = self._db.execute(
                "SELECT load_id FROM loads WHERE ingest_id = ? ORDER BY load_id", (ingest_id,)
            ).fetchall()
            pending.append(
                PendingIngest(
                    ingest_id=int(ingest_id),
                    status=status,
                    load_ids=[int(r[0]) for r in loads],
                    staging=staging,
                    moves=[tuple(m) for m in json.loads(moves or "[]")],
                )
            )
        return pending

    def committed_loads(self) -> list[tuple]:
        return self._db.execute(
            "SELECT load_id, kind, source_file, sha256, rows_in, accepted, quarantined, loaded_at "
            f"FROM {_COMMITTED_LOADS} ORDER BY load_id"
        ).fetchall()

    # -- partitions ----------------------------------------------------------------------

    def forget(self, asset: str, campaign: str, days: list[date]) -> None:
        """Mark days as not materialised (before their files are rewritten)."""
        with self.transaction() as db:
            db.executemany(
                "DELETE FROM partitions WHERE asset = ? AND campaign = ? AND day = ?",
                [(asset, campaign, d.isoformat()) for d in days],
            )

    def record(
        self,
        asset: str,
        campaign: str,
        rows: dict[date, int],
        inputs: str | None,
    ) -> None:
        """Mark the days (keys of ``rows``, empty ones included) as materialised, each with a
        new version and the loads it was built from (store_core.require_current): the loads
        committed now when it reads them itself (``inputs`` None), else those its ``inputs``
        partition was built from."""
        with self.transaction() as db:
            loaded = db.execute(
                f"SELECT coalesce(max(load_id), 0) FROM {_COMMITTED_LOADS}"
            ).fetchone()[0]
            for day, count in sorted(rows.items()):
                version = db.execute(
                    "INSERT INTO versions (created_at) VALUES (?)", (_now(),)
                ).lastrowid
                source = int(loaded)
                if inputs is not None:
                    found = db.execute(
                        "SELECT input_version FROM partitions WHERE asset = ? AND campaign = ? "
                        "AND day = ?",
                        (inputs, campaign, day.isoformat()),
                    ).fetchone()
                    source = None if found is None or found[0] is None else int(found[0])
                db.execute(
                    "INSERT OR REPLACE INTO partitions VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (asset, campaign, day.isoformat(), version, source, int(count), _now()),
                )

    def version(self, asset: str, campaign: str, day: date) -> tuple[int, int | None] | None:
        row = self._db.execute(
            "SELECT version, input_version FROM partitions WHERE asset = ? AND campaign = ? "
            "AND day = ?",
            (asset, campaign, day.isoformat()),
        ).fetchone()
        return None if row is None else (int(row[0]), None if row[1] is None else int(row[1]))

    def materialised_days(self, asset: str, campaign: str, first: date, last: date) -> int:
        row = self._db.execute(
            "SELECT count(*) FROM partitions WHERE asset = ? AND campaign = ? "
            "AND day BETWEEN ? AND ?",
            (asset, campaign, first.isoformat(), last.isoformat()),
        ).fetchone()
        return int(row[0])

    # -- AdsBPC+ filter days -----------------------------------------------------------------

    def spend_day(self, campaign: str, day: date) -> tuple[float, float, float] | None:
        row = self._db.execute(
            "SELECT bound, sigma, cap FROM plus_spend_days WHERE campaign = ? AND day = ?",
            (campaign, day.isoformat()),
        ).fetchone()
        return None if row is None else (float(row[0]), float(row[1]), float(row[2]))

    def commit_spend_day(
        self, campaign: str, day: date, bound: float, sigma: float, cap: float
    ) -> None:
        with self.transaction() as db:
            db.execute(
                "INSERT INTO plus_spend_days VALUES (?, ?, ?, ?, ?, ?)",
                (campaign, day.isoformat(), bound, sigma, cap, _now()),
            )

    def spend_days(self, campaign: str) -> int:
        row = self._db.execute(
            "SELECT count(*) FROM plus_spend_days WHERE campaign = ?", (campaign,)
        ).fetchone()
        return int(row[0])

    def spend_day_list(self, campaign: str) -> list[date]:
        rows = self._db.execute(
            "SELECT day FROM plus_spend_days WHERE campaign = ? ORDER BY day", (campaign,)
        ).fetchall()
        return [date.fromisoformat(r[0]) for r in rows]

    # -- private last touch: batches of drawn choices -------------------------------------------

    def begin_touch_batch(self, campaign: str) -> int:
        """A new batch of a campaign's touch choices, ``started`` (not read until committed)."""
        with self.transaction() as db:
            cursor = db.execute(
                "INSERT INTO touch_batches (campaign, status, created_at) VALUES (?, 'started', ?)",
                (campaign, _now()),
            )
        return int(cursor.lastrowid)

    def finish_touch_batch(self, batch: int, status: str) -> None:
        """``committed``: its choices are used from now on; ``aborted``: dropped unread."""
        with self.transaction() as db:
            db.execute("UPDATE touch_batches SET status = ? WHERE batch = ?", (status, batch))

    def touch_batches(self, status: str, campaign: str | None = None) -> list[tuple[str, int]]:
        """(campaign, batch) of the batches in ``status`` (of one campaign or all)."""
        rows = self._db.execute(
            "SELECT campaign, batch FROM touch_batches WHERE status = ? "
            "AND (? IS NULL OR campaign = ?) ORDER BY batch",
            (status, campaign, campaign),
        ).fetchall()
        return [(str(name), int(batch)) for name, batch in rows]

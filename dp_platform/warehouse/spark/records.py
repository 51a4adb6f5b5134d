"""The Spark warehouse's commit record, kept in Delta tables beside the data (schema.sql:
``loads``, ``load_ids``, ``partitions``, ``plus_spend_days``, ``meta``).

Delta commits one table at a time, atomically. A logical write that spans tables (an ingest,
a rematerialised day and its record, an AdsBPC+ filter day) is made visible by a row here,
committed after its data:

* a load is data once its ``loads`` row commits, with each event table's Delta version after
  the ingest (:meth:`WarehouseRecords.event_versions`); until then its rows are in no view of
  the loaded tables (visibility.py), and an ingest that never commits them leaves rows no one
  reads — nothing is undone. Load ids are reserved in ``load_ids`` by a statement that reads
  that table, so two ingests never share one (:meth:`WarehouseRecords.reserve_loads`), and
  the ``loads`` commit checks that no other ingest committed since this one began
  (:meth:`WarehouseRecords.commit_loads`): of two ingests at once, one commits;
* a derived (asset, campaign, day) partition exists while its ``partitions`` row does: a
  rewrite deletes the row first, replaces the data in one commit and records the days, with
  the table version that wrote them, after it — a crash leaves "not materialised", never a
  mix of two versions;
* an AdsBPC+ day's spends, values, remainder and vector are appended tagged with their run
  and count once ``plus_spend_days`` records the day with that run (a conditional insert: of
  two runs of one day, one run's rows count); a day without it is computed again, so a crash
  or a second run neither charges a user twice nor loses a charge.

Holds ids, counts of loaded rows and public parameters — no user data.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import UTC, date, datetime
from typing import TYPE_CHECKING, NamedTuple

from dp_platform.warehouse.spark.commits import lost_to_another_run
from dp_platform.warehouse.spark.visibility import EVENT_TABLES, LOADED_TABLES, stored

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from dp_platform.warehouse.spark.runner import SparkSqlRunner

__all__ = ["EVENT_TABLES", "LoadRecord", "SpendDay", "WarehouseRecords", "table_version"]


class SpendDay(NamedTuple):
    """A committed AdsBPC+ filter day: its public (r, σ, cap) and the run whose rows count
    (None on a day an earlier release committed: its rows carry no run)."""

    bound: float
    sigma: float
    cap: float
    run: str | None

    @property
    def parameters(self) -> tuple[float, float, float]:
        return (self.bound, self.sigma, self.cap)


LoadRecord = tuple[int, str, str, str, int, int, int, list[str]]
"""(load_id, kind, source_file, sha256, rows_in, accepted, quarantined, dimensions)."""

_LOADS_SCHEMA = (
    "load_id BIGINT, kind STRING, source_file STRING, sha256 STRING, rows_in BIGINT, "
    "accepted BIGINT, quarantined BIGINT, loaded_at STRING, dimensions ARRAY<STRING>, "
    "versions MAP<STRING, BIGINT>"
)
_PARTITIONS_SCHEMA = (
    "asset STRING, campaign STRING, day DATE, version BIGINT, input_version BIGINT, "
    "rows BIGINT, materialized_at STRING"
)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def table_version(spark: SparkSession, table: str) -> int:
    """The table's current Delta version (its latest commit); a loaded table by its view's
    name (visibility.stored)."""
    history = spark.sql(f"DESCRIBE HISTORY {stored(table)} LIMIT 1").collect()
    return int(history[0]["version"])


class WarehouseRecords:
    """Reads and commits of the record tables in the warehouse's current database."""

    def __init__(self, spark: SparkSession, sql: SparkSqlRunner) -> None:
        self.spark = spark
        self.sql = sql

    def _append(self, table: str, rows: list[tuple], schema: str) -> None:
        """One commit appending ``rows`` (values travel as data, never as SQL text)."""
        self.sql.write(self.spark.createDataFrame(rows, schema=schema), table)

    def identity(self) -> str:
        """The warehouse's identity: a random UUID created on first use and kept in ``meta``
        (a copied or moved root keeps it)."""
        query = "SELECT min(value) FROM meta WHERE key = 'warehouse_id'"
        found = self.sql.query(query)[0][0]
        if found is None:
            self._append("meta", [("warehouse_id", str(uuid.uuid4()))], "key STRING, value STRING")
            found = self.sql.query(query)[0][0]  # two first opens at once: both read the least
        return str(found)

    # -- loads ---------------------------------------------------------------------------

    def loaded(self, kind: str, sha256: str) -> bool:
        """A committed load of this kind had this content."""
        rows = self.sql.query(
            "SELECT count(*) FROM loads WHERE kind = :kind AND sha256 = :sha", kind=kind, sha=sha256
        )
        return bool(rows[0][0])

    def last_load(self) -> int:
        """The last committed load id (0 for none): what an ingest's ``loads`` commit expects
        to be still the last (:meth:`commit_loads`)."""
        return int(self.sql.query("SELECT coalesce(max(load_id), 0) FROM loads")[0][0])

    def committed_loads(self) -> list[tuple]:
        return self.sql.query(
            "SELECT load_id, kind, source_file, sha256, rows_in, accepted, quarantined, "
            "loaded_at FROM loads ORDER BY load_id"
        )

    def loads_with_dimension(self, dimension: str) -> set[int]:
        """Committed loads ingested with ``dimension``'s column."""
        rows = self.sql.query(
            "SELECT load_id FROM loads WHERE array_contains(dimensions, :d)", d=dimension
        )
        return {int(row[0]) for row in rows}

    def event_versions(self, load_id: int | None = None) -> dict[str, int]:
        """Each event table's version as load ``load_id``'s ingest left it — by default the
        last committed one (an empty warehouse, or a load id of none: the versions its tables
        were created at, all 0)."""
        if load_id is None:
            rows = self.sql.query("SELECT versions FROM loads ORDER BY load_id DESC LIMIT 1")
        else:
            rows = self.sql.query("SELECT versions FROM loads WHERE load_id = :id", id=load_id)
        recorded = dict(rows[0][0]) if rows else {}
        return {table: int(recorded.get(table, 0)) for table in EVENT_TABLES}

    def reserve_loads(self, count: int, last: int) -> list[int]:
        """``count`` new load ids, one commit before any event table's: after every id ever
        reserved and after ``last`` (the last committed). The statement reads ``load_ids``
        itself, so an ingest reserving at the same moment makes one of the two fail
        (``ConcurrentAppendException``) rather than both take one id."""
        floor = last
        if self.sql.query("SELECT count(*) FROM load_ids")[0][0] == 0:
            floor = max(floor, self._ids_written())
        token = uuid.uuid4().hex
        self.sql.query(
            "INSERT INTO load_ids SELECT t.top + s.k, :ingest, :now FROM "
            "(SELECT greatest(coalesce(max(load_id), 0), :floor) AS top FROM load_ids) AS t "
            "LATERAL VIEW explode(sequence(1, :count)) s AS k",
            ingest=token,
            now=_now(),
            floor=floor,
            count=count,
        )
        rows = self.sql.query(
            "SELECT load_id FROM load_ids WHERE ingest = :ingest ORDER BY load_id", ingest=token
        )
        return [int(row[0]) for row in rows]

    def _ids_written(self) -> int:
        """The largest load id any loaded table holds, committed or not: a root whose ids were
        never reserved here (an earlier release counted them from ``loads``) may hold rows of a
        load that never committed, and no new load may take its id."""
        query = " UNION ALL ".join(
            f"SELECT max(load_id) AS top FROM {stored(table)}" for table in LOADED_TABLES
        )
        return int(self.sql.query(f"SELECT coalesce(max(top), 0) FROM ({query})")[0][0])

    def commit_loads(self, loads: Sequence[LoadRecord], last: int) -> bool:
        """The ingest's last commit: its loads, with the event tables' versions now — if the
        last committed load is still ``last`` (the one before this ingest began). The
        statement reads ``loads`` itself, so a load committed since is seen, and one committed
        while it runs fails it (``ConcurrentAppendException``); False when another ingest
        committed first (nothing committed here: this ingest's rows stay unread)."""
        versions = {table: table_version(self.spark, table) for table in EVENT_TABLES}
        now = _now()
        rows = [(*load[:7], now, list(load[7]), versions) for load in loads]
        self.spark.createDataFrame(rows, schema=_LOADS_SCHEMA).createOrReplaceTempView(
            "committing_loads"
        )
        self.sql.query(
            "INSERT INTO loads SELECT n.* FROM committing_loads AS n "
            "CROSS JOIN (SELECT coalesce(max(load_id), 0) AS last FROM loads) AS c "
            "WHERE c.last = :last",
            last=last,
        )
        self.spark.catalog.dropTempView("committing_loads")
        first = min(load[0] for load in loads)
        found = self.sql.query("SELECT count(*) FROM loads WHERE load_id = :id", id=first)
        return bool(found[0][0])

    # -- partitions ----------------------------------------------------------------------

    def forget(self, asset: str, campaign: str, days: list[date]) -> None:
        """Mark days as not materialised (before their rows are rewritten)."""
        if days:
            with lost_to_another_run(f"{asset} of campaign {campaign}"):
                self.sql.query(
                    "DELETE FROM partitions WHERE asset = :asset AND campaign = :campaign "
                    "AND array_contains(:days, day)",
                    asset=asset,
                    campaign=campaign,
                    days=sorted(days),
                )

    def record(
        self,
        asset: str,
        campaign: str,
        rows: dict[date, int],
        built_from: int | dict[date, int | None],
    ) -> None:
        """Mark the days (keys of ``rows``, empty ones included) as materialised by the
        asset table's current version — one row per day, a day recorded before updated in
        place (a ``MERGE`` that reads the campaign's records: two runs recording at the same
        moment conflict, one line, never two rows) — each with the load it was built from
        (store_core.require_current): ``built_from`` the last load its views showed when it
        reads the events itself (visibility.last_shown), else per day the load its input's
        record named when it read that input."""
        version = table_version(self.spark, asset)
        now = _now()
        recorded = [
            (
                asset,
                campaign,
                day,
                version,
                built_from if isinstance(built_from, int) else built_from.get(day),
                int(count),
                now,
            )
            for day, count in sorted(rows.items())
        ]
        self.spark.createDataFrame(recorded, schema=_PARTITIONS_SCHEMA).createOrReplaceTempView(
            "recording"
        )
        with lost_to_another_run(f"{asset} of campaign {campaign}"):
            self.sql.query(
                "MERGE INTO partitions AS t USING recording AS s "
                "ON t.campaign = :campaign AND t.asset = :asset "
                "AND t.campaign = s.campaign AND t.asset = s.asset AND t.day = s.day "
                "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *",
                campaign=campaign,
                asset=asset,
            )
        self.spark.catalog.dropTempView("recording")

    def version(self, asset: str, campaign: str, day: date) -> tuple[int, int | None] | None:
        rows = self.sql.query(
            "SELECT version, input_version FROM partitions WHERE asset = :asset "
            "AND campaign = :campaign AND day = :day",
            asset=asset,
            campaign=campaign,
            day=day,
        )
        if not rows:
            return None
        version, source = rows[0]
        return int(version), None if source is None else int(source)

    def materialised_days(self, asset: str, campaign: str, first: date, last: date) -> int:
        rows = self.sql.query(
            "SELECT count(DISTINCT day) FROM partitions WHERE asset = :asset "
            "AND campaign = :campaign AND day BETWEEN :first AND :last",
            asset=asset,
            campaign=campaign,
            first=first,
            last=last,
        )
        return int(rows[0][0])

    # -- AdsBPC+ filter days -----------------------------------------------------------------

    def spend_day(self, campaign: str, day: date) -> SpendDay | None:
        """The day's committed filter: its (r, σ, cap) and the run whose rows count."""
        rows = self.sql.query(
            "SELECT bound, sigma, cap, run FROM plus_spend_days WHERE campaign = :c AND day = :d",
            c=campaign,
            d=day,
        )
        if not rows:
            return None
        bound, sigma, cap, run = rows[0]
        return SpendDay(float(bound), float(sigma), float(cap), run)

    def commit_spend_day(
        self, campaign: str, day: date, bound: float, sigma: float, cap: float, run: str
    ) -> None:
        """Make run ``run``'s spends, values, remainder and vector of the day count — unless
        another run's already do. The insert reads the campaign's filter days itself: a day
        committed since this run read them is not committed again, and one committed while
        this statement runs fails it (Delta's conflict, one line); either way the day counts
        once, and the caller reads which run won (:meth:`spend_day`)."""
        with lost_to_another_run(f"campaign {campaign}, {day}"):
            self.sql.query(
                "INSERT INTO plus_spend_days "
                "SELECT :c, :d, :bound, :sigma, :cap, :now, :run FROM (SELECT 1) AS one "
                "WHERE NOT EXISTS (SELECT 1 FROM plus_spend_days AS s "
                "WHERE s.campaign = :c AND s.day = :d)",
                c=campaign,
                d=day,
                bound=bound,
                sigma=sigma,
                cap=cap,
                now=_now(),
                run=run,
            )

    def spend_day_list(self, campaign: str) -> list[date]:
        rows = self.sql.query(
            "SELECT day FROM plus_spend_days WHERE campaign = :c ORDER BY day", c=campaign
        )
        return [row[0] for row in rows]

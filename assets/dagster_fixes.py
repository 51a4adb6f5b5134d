"""Corrections to Dagster 1.13 (pinned ``<1.14`` in pyproject.toml).

:func:`apply` (the UI's partition listing) runs only in the processes of `dp-platform ui`;
:func:`apply_pool_wait` (waiting for the writer pool slot) in every process that builds the
platform's definitions, so in every process that can execute its steps;
:func:`apply_revision_cache` (opening an instance) wherever the platform opens a home's instance,
and :func:`apply_event_log_engines` (storing events) with :func:`apply_pool_wait`.

**The UI's partition listing.**

``TimeWindowPartitionsDefinition.get_paginated_partition_keys`` lists the newest partitions first
from *now*, ignoring the definition's end date. A campaign's partitions end on its last day, so
for any campaign that is over, the asset page's Plots (Partitions) view asks for the latest 50
partition keys, gets 50 days after the campaign, finds no materialisation in them and shows
nothing. The correction lists from ``min(now, end)``; keys inside the definition are unchanged.

``dp-platform ui`` puts ``assets/uiprocess/`` on ``PYTHONPATH``, whose ``sitecustomize`` calls
:func:`apply` in the webserver, the daemon and the code server. ``tests/test_ui_metadata.py``
checks both the bug (so this is removed when Dagster fixes it) and the correction.

**Waiting for the writer pool slot.** A step in a pool (``dp_platform_writer``, limit 1) that
finds the slot taken waits in the in-process executor's loop (``dp-platform run``, every
``execute_in_process``). Two things make that wait expensive in Dagster 1.13:

- ``InstanceConcurrencyContext.interval_to_next_pending_claim_check`` returns
  ``min([0, *(ready_at - now)])``, which is never positive, so ``sleep_til_ready`` never
  sleeps: the waiting process spins a whole core until its next claim check. On a 2-core
  machine, two runs waiting next to the one holding the slot took most of its CPU (measured
  with a profiler: the waiters' main threads were in ``get_next_step``, never in ``sleep``).
- The next claim check comes after ``1.1**n`` seconds (the n-th check; at most 15 s), so a run
  that waited through a few of another run's steps noticed a freed slot seconds late, while the
  slot, already assigned to it, stayed idle. Steps here take well under a second.

The correction sleeps until the next check and checks every :data:`POOL_POLL_SECONDS`.
``tests/test_dagster_fixes.py`` checks both bugs (so this is removed when Dagster fixes them)
and the correction.

**A free slot nobody is assigned** (:func:`apply_pool_assignment`, with :func:`apply_pool_wait`).
Dagster assigns a pool's free slot to the head of its queue only when a step joins the queue or
an assigned step leaves it. When a process is SIGKILLed at the wrong moment the slot can end up
free with every queued step unassigned, and every waiting run then waits for ever: the fault
harness found it (SQLite seed 874: four live runs, one free slot, 13 minutes; one
``assign_pending_steps`` call let them all finish). The correction: a claim that finds its step
unassigned while the pool has a slot no step is assigned assigns the queue's head, as joining
the queue would have. ``tests/test_dagster_fixes.py`` builds that state and checks both.

**Opening an instance.** Each SQLite storage of an instance (runs, event log, schedules) checks
its schema revision against the head of Dagster's migration scripts when it opens, and
``check_alembic_revision`` builds a new ``ScriptDirectory`` each time, so it reads and executes
every migration script again: about 0.6 s of CPU per instance opened (a profiler's figure),
paid by every ``dp-platform run`` and every process the fault harness starts. The scripts are
those of the installed Dagster and cannot change while a process runs, so the correction keeps
one ``ScriptDirectory`` per script location, in that one function's module only.

**Storing events.** ``SqliteEventLogStorage._connect`` builds a new SQLAlchemy engine for every
connection (one or more per event, several hundred per `dp-platform run`) and disposes of it
after. SQLAlchemy caches compiled statements per engine, so every statement of every event was
compiled again: building engines and compiling took about a third of a run's CPU. The
correction keeps one engine per shard (the same ``NullPool`` settings, so connections still
open and close per use, as before) for the last :data:`ENGINES_KEPT` shards a storage touched.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = [
    "POOL_POLL_SECONDS",
    "apply",
    "apply_event_log_engines",
    "apply_pool_assignment",
    "apply_pool_wait",
    "apply_revision_cache",
]

# How often a step waiting for a pool slot asks the instance again (one small query).
POOL_POLL_SECONDS = 0.2
ENGINES_KEPT = 16  # per event-log storage: the index shard and the runs a process works on


def apply() -> None:
    """Patch the listing once (idempotent)."""
    from dagster._core.definitions.partitions.context import PartitionLoadingContext
    from dagster._core.definitions.partitions.definition.time_window import (
        TimeWindowPartitionsDefinition,
    )
    from dagster._core.definitions.temporal_context import TemporalContext

    listing = TimeWindowPartitionsDefinition.get_paginated_partition_keys
    if getattr(listing, "_dp_platform_fixed", False):
        return

    def get_paginated_partition_keys(self, context, limit, ascending, cursor=None):  # type: ignore[no-untyped-def]
        end = self.end
        temporal = context.temporal_context
        if end is not None and temporal.effective_dt > end:
            context = PartitionLoadingContext(
                temporal_context=TemporalContext(
                    effective_dt=end, last_event_id=temporal.last_event_id
                ),
                dynamic_partitions_store=context.dynamic_partitions_store,
            )
        return listing(self, context, limit, ascending, cursor)

    get_paginated_partition_keys._dp_platform_fixed = True  # type: ignore[attr-defined]
    TimeWindowPartitionsDefinition.get_paginated_partition_keys = get_paginated_partition_keys  # type: ignore[method-assign]


def apply_pool_wait() -> None:
    """Sleep (not spin) between claim checks, and check every :data:`POOL_POLL_SECONDS`
    (idempotent)."""
    from dagster._core.execution.plan import instance_concurrency_context as concurrency

    context = concurrency.InstanceConcurrencyContext
    if getattr(context.interval_to_next_pending_claim_check, "_dp_platform_fixed", False):
        return

    def interval_to_next_pending_claim_check(self) -> float:  # type: ignore[no-untyped-def]
        if not self._pending_claims:
            return 0.0
        now = time.time()
        return max(0.0, min((at - now for at in self._pending_timeouts.values()), default=0.0))

    def calculate_timeout_interval(sleep_interval: float | None, pending_claim_count: int) -> float:
        return POOL_POLL_SECONDS if sleep_interval is None else sleep_interval

    interval_to_next_pending_claim_check._dp_platform_fixed = True  # type: ignore[attr-defined]
    interval_to_next_pending_claim_check._dagster_original = (  # type: ignore[attr-defined]
        context.interval_to_next_pending_claim_check,
        concurrency._calculate_timeout_interval,
    )
    context.interval_to_next_pending_claim_check = interval_to_next_pending_claim_check  # type: ignore[method-assign]
    concurrency._calculate_timeout_interval = calculate_timeout_interval


def apply_pool_assignment() -> None:
    """Assign a free, unassigned pool slot to the queue's head on a blocked claim (idempotent)."""
    from dagster._core.storage.event_log.sql_event_log import SqlEventLogStorage

    claim = SqlEventLogStorage.claim_concurrency_slot
    if getattr(claim, "_dp_platform_fixed", False):
        return

    def claim_concurrency_slot(self, concurrency_key, run_id, step_key, priority=None):  # type: ignore[no-untyped-def]
        status = claim(self, concurrency_key, run_id, step_key, priority)
        if status.is_claimed or status.is_assigned:
            return status
        if not self.has_unassigned_slots(concurrency_key):
            return status
        self.assign_pending_steps([concurrency_key])
        return claim(self, concurrency_key, run_id, step_key, priority)

    claim_concurrency_slot._dp_platform_fixed = True  # type: ignore[attr-defined]
    claim_concurrency_slot._dagster_original = claim  # type: ignore[attr-defined]
    SqlEventLogStorage.claim_concurrency_slot = claim_concurrency_slot  # type: ignore[method-assign]


class _OneScriptDirectoryPerLocation:
    """Stands in for alembic's ``ScriptDirectory`` inside ``dagster._core.storage.sql``, whose
    only use of it is ``check_alembic_revision`` (under that module's lock)."""

    _dp_platform_fixed = True

    def __init__(self, scripts: type) -> None:
        self._scripts = scripts
        self._by_location: dict[str | None, object] = {}

    def from_config(self, config):  # type: ignore[no-untyped-def]
        location = config.get_main_option("script_location")
        if location not in self._by_location:
            self._by_location[location] = self._scripts.from_config(config)
        return self._by_location[location]


def apply_revision_cache() -> None:
    """Read Dagster's migration scripts once per process, not once per storage opened
    (idempotent)."""
    from dagster._core.storage import sql

    if getattr(sql.ScriptDirectory, "_dp_platform_fixed", False):
        return
    sql.ScriptDirectory = _OneScriptDirectoryPerLocation(sql.ScriptDirectory)


def apply_event_log_engines() -> None:
    """One SQLAlchemy engine per event-log shard, not one per connection (idempotent)."""
    from dagster._core.storage.event_log.sqlite import sqlite_event_log as module

    storage = module.SqliteEventLogStorage
    if getattr(storage._connect, "_dp_platform_fixed", False):
        return

    @contextmanager
    def _connect(self, shard: str) -> Iterator:  # type: ignore[no-untyped-def]
        with self._db_lock:
            engines = self.__dict__.setdefault("_dp_platform_engines", OrderedDict())
            engine = engines.pop(shard, None)
            if engine is None:
                engine = module.create_engine(
                    self.conn_string_for_shard(shard),
                    poolclass=module.NullPool,
                    connect_args={"timeout": module.SQLITE_BUSY_TIMEOUT_SECONDS},
                )
            engines[shard] = engine  # the most recent last
            while len(engines) > ENGINES_KEPT:
                engines.popitem(last=False)[1].dispose()
            if shard not in self._initialized_dbs:
                self._initdb(engine)
                self._initialized_dbs.add(shard)
            with engine.connect() as conn, conn.begin():
                yield conn

    _connect._dp_platform_fixed = True  # type: ignore[attr-defined]
    _connect._dagster_original = storage._connect  # type: ignore[attr-defined]
    storage._connect = _connect  # type: ignore[method-assign]

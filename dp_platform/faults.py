"""Named fail points for the fault-injection harness (``tests/faults``; docs/faults.md).

``fault_point(name)`` marks a place where a crash would be hardest on the platform's promises —
after a draw and before the ledger stores it, after the AdsBPC+ filter wrote every user's spend
and before the ledger commits the day's release, after a warehouse partition write. It does
nothing unless the environment variable :data:`FAULT_VARIABLE` names the point; then the process
SIGKILLs itself there: no ``finally``, no ``atexit``, no rollback — exactly what a power cut or
the OOM killer does. ``name@n`` kills at the n-th time the point is passed (default the first).

Production never sets the variable: the check is one dictionary lookup, and nothing is read or
written when it is unset. The harness sets it in the processes it launches. A run executes in a
worker process of Dagster's code server, not in the process the harness started, so the kill is
not seen as that process's exit status: if :data:`FAULT_RECORD_VARIABLE` names a file, the point
appends ``<point> <pid>`` to it before the kill (how the harness counts fail-point kills).
"""

from __future__ import annotations

import os
import signal

__all__ = [
    "FAULT_POINTS",
    "FAULT_RECORD_VARIABLE",
    "FAULT_VARIABLE",
    "SPARK_FAULT_POINTS",
    "fault_point",
]

FAULT_VARIABLE = "DP_PLATFORM_FAULT"
FAULT_RECORD_VARIABLE = "DP_PLATFORM_FAULT_RECORD"

FAULT_POINTS = (
    "bound.drawn",  # a contribution bound drawn (noise used), before the ledger stores it
    "release.drawn",  # a day's noisy release drawn, before the ledger stores and charges it
    "campaign_release.drawn",  # a campaign-level release (one-shot, reach) drawn, before commit
    "clip.written",  # the day's clip (AdsBPC+: every user's spend) committed, before the release
    "warehouse.partition_written",  # attribution or contributions of a day range committed
)
"""The platform's points, each killed by the fault harness's constructed schedules (tests/faults,
on the default engine)."""

SPARK_FAULT_POINTS = (
    # The Spark engine: after each Delta commit, by kind (warehouse/spark/commits.py); killed by
    # tests/test_spark_kill_points.py in launched Spark processes
    "spark.schema.created",  # a table of schema.sql created (a first open)
    "spark.meta.written",  # the warehouse's identity committed (its first use)
    "spark.ingest.started",  # an ingest's load ids reserved, before its event tables
    "spark.ingest.appended",  # an ingest's event-table commit, before its loads row
    "spark.ingest.loaded",  # an ingest's loads row committed: the ingest is data
    "spark.partition.forgotten",  # a derived range's partitions record deleted, rows still there
    "spark.partition.deleted",  # rows deleted without a rewrite (an empty clip)
    "spark.partition.written",  # a derived range's rows replaced (one commit), not recorded
    "spark.partition.recorded",  # a derived range's partitions record merged
    "spark.touch.drawn",  # private last touch: a batch of draws committed
    "spark.plus.spends_written",  # AdsBPC+: a run's spends, values, remainder or vector of a day
    "spark.plus.day_committed",  # AdsBPC+: the day's plus_spend_days row committed
)

_passes: dict[str, int] = {}


def fault_point(name: str) -> None:
    """SIGKILL this process here if ``DP_PLATFORM_FAULT`` names ``name`` (``name`` or
    ``name@n``, the n-th pass); otherwise nothing."""
    wanted = os.environ.get(FAULT_VARIABLE)
    if not wanted:
        return
    point, _, nth = wanted.partition("@")
    if point != name:
        return
    _passes[name] = _passes.get(name, 0) + 1
    if _passes[name] >= int(nth or 1):
        record = os.environ.get(FAULT_RECORD_VARIABLE)
        if record:
            fd = os.open(record, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            os.write(fd, f"{wanted} {os.getpid()}\n".encode())
            os.close(fd)
        os.kill(os.getpid(), signal.SIGKILL)

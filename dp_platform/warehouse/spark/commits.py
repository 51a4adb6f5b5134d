"""The fail point after each Delta commit of the Spark engine (``spark.*`` in
dp_platform/faults.py).

Every commit passes through :class:`~.runner.SparkSqlRunner` (a statement that is neither a
query nor a view, or its ``write``); :func:`commit_point` names the kind of commit from its verb
and table, and the runner passes that point right after the commit returns, so a kill there
leaves exactly the commits before it (killing before commit k is killing after commit k − 1).
What each kill must leave: docs/faults.md.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager

from dp_platform.warehouse.spark.visibility import EVENT_TABLES, logical_name
from dp_platform.warehouse.store_core import WarehouseError

__all__ = ["commit_point", "is_conflict", "lost_to_another_run", "written_table"]

_DERIVED = (
    "attributed_conversions",
    "user_day_contributions",
    "clipped_daily_vectors",
)
_PLUS = ("plus_user_spend", "plus_user_values", "plus_remainders", "plus_day_vectors")


_WRITE = re.compile(
    r"^\s*(INSERT\s+INTO|DELETE\s+FROM|MERGE\s+INTO|ALTER\s+TABLE|CREATE\s+TABLE\s+IF\s+NOT\s+EXISTS)"
    r"\s+(\w+)",
    re.IGNORECASE,
)


def written_table(statement: str) -> tuple[str, str]:
    """(verb, table) of a writing statement: ``insert``, ``delete``, ``merge``, ``alter`` or
    ``create``, and the table by the name reads use (visibility.logical_name); a statement of
    another form is refused (a new kind of commit must be named here before it runs)."""
    found = _WRITE.match(statement)
    if found is None:
        raise ValueError(f"not a known kind of Spark commit: {statement.split(None, 2)[:2]}")
    return found.group(1).split()[0].lower(), logical_name(found.group(2).lower())


def commit_point(verb: str, table: str) -> str:
    """The fail point after a commit of ``verb`` (``insert`` for any append or partition
    overwrite) on ``table``."""
    if verb in ("create", "alter"):
        return "spark.schema.created"
    if table in EVENT_TABLES and verb == "insert":
        return "spark.ingest.appended"
    named = {
        ("insert", "loads"): "spark.ingest.loaded",
        ("insert", "meta"): "spark.meta.written",
        ("insert", "load_ids"): "spark.ingest.started",
        ("delete", "partitions"): "spark.partition.forgotten",
        ("merge", "partitions"): "spark.partition.recorded",
        ("insert", "private_touch_choices"): "spark.touch.drawn",
        ("insert", "plus_spend_days"): "spark.plus.day_committed",
    }
    if (verb, table) in named:
        return named[verb, table]
    if verb == "delete" and table in (*_DERIVED, *_PLUS):
        return "spark.partition.deleted"
    if verb == "insert" and table in _DERIVED:
        return "spark.partition.written"
    if verb == "insert" and table in _PLUS:
        return "spark.plus.spends_written"
    raise ValueError(f"no fail point names a {verb} of {table}")


_CONFLICT = re.compile(
    r"\bio\.delta\.exceptions\.(Concurrent\w*|MetadataChanged|ProtocolChanged)Exception\b"
    r"|\bDELTA_(CONCURRENT_\w+|METADATA_CHANGED|PROTOCOL_CHANGED)\b"
)


def is_conflict(error: BaseException) -> bool:
    """Delta refused a commit because another writer committed to what it read since
    (``io.delta.exceptions.Concurrent…Exception``, error conditions ``DELTA_CONCURRENT_*``),
    or changed the table's metadata or protocol meanwhile (two first opens creating one
    table, ``ProtocolChangedException``; an ``ALTER TABLE`` beside another).
    Through Py4J the exception is a ``Py4JJavaError`` whose text names the Java class (its
    text is read here, never shown: it may name a partition's values)."""
    return _CONFLICT.search(str(error)) is not None


@contextmanager
def lost_to_another_run(what: str) -> Iterator[None]:
    """A commit Delta refused beside another run's becomes one line (``what``: the campaign
    and day): nothing of this statement was committed, and the run can be run again."""
    try:
        yield
    except Exception as error:
        if not is_conflict(error):
            raise
        raise WarehouseError(
            f"{what}: another run wrote the same tables at the same moment; nothing of this "
            "step was kept; run it again"
        ) from None

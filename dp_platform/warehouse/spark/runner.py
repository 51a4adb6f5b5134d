"""Runs the Spark SQL files of this package on one SparkSession (the twin of ../runner.py).

A file holds statements ending with ``;`` at the end of a line; parameters are Spark's named
parameter markers (``:day``), bound by Spark (never pasted into the text). Two statement forms
are the runner's, because Spark binds no parameters inside a view's definition:

* ``CREATE OR REPLACE TEMP VIEW name AS query`` — the query bound to this call's parameters,
  registered as a temporary view;
* ``CACHE TABLE name AS query`` — the same, evaluated once and checkpointed (later statements
  read the stored result, not a re-evaluation); freed by :meth:`SparkSqlRunner.release`.

``{{name}}`` in a file is replaced by a fixed setting of the warehouse (the tables' root in
schema.sql), never by a user value.

Over Spark Connect the parameters are written into the statement as typed literals
(:func:`inline_parameters`): Connect's server (4.2) binds a query's markers in the parser, and
Delta 4.4's parser drops them (the same Delta issue 7640 that PRIVATE_CONF's
``parameterSubstitution.constantsOnly`` works around for a classic session, which Connect's
parser path does not read); tests/test_spark_connect.py fails once that is fixed. The values are
the platform's own (names, days, load ids, caps, σ), never an event's field.

Every write of the engine passes here — a statement that is neither a query nor a view, or
:meth:`SparkSqlRunner.write` — so each Delta commit has one place (the crash tests cut the
process after each one: tests/test_spark_recovery.py), and each is followed by the fail point
of its kind (commits.py; tests/test_spark_kill_points.py SIGKILLs a real process at each).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from datetime import date, datetime
from functools import cache
from importlib import resources
from numbers import Integral, Real
from typing import TYPE_CHECKING

import pandas as pd

from dp_platform.faults import fault_point
from dp_platform.warehouse.runner import statements
from dp_platform.warehouse.spark.commits import commit_point, written_table

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["SparkSqlRunner", "inline_parameters", "load_spark_sql", "schema_tables", "sql_literal"]

_QUOTED = re.compile(r"'(?:[^']|'')*'")
_COMMENT = re.compile(r"--[^\n]*")
_PARAM = re.compile(r"(?<![:\w]):([A-Za-z_][A-Za-z0-9_]*)")
_VIEW = re.compile(
    r"^\s*(CREATE\s+OR\s+REPLACE\s+TEMP\s+VIEW|CACHE\s+TABLE)\s+(\w+)\s+AS\s+(.*)$",
    re.IGNORECASE | re.DOTALL,
)
_QUERY = re.compile(r"^\s*(SELECT|WITH)\b", re.IGNORECASE)
# a string literal, a quoted identifier or a comment (kept as they are), or a parameter marker
_LEXEME = re.compile(
    r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|`[^`]*`|--[^\n]*|(?<![:\w]):([A-Za-z_]\w*)",
    re.DOTALL,
)
ParamValue = object


def sql_literal(value: ParamValue) -> str:
    """``value`` as the Spark SQL literal of the type Spark would bind it as (``lit``'s)."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, Integral):  # NumPy's too
        return f"({int(value)})"
    if isinstance(value, Real):
        number = float(value)
        return f"({number!r}D)" if math.isfinite(number) else f"CAST('{number}' AS DOUBLE)"
    if isinstance(value, datetime):
        return f"TIMESTAMP'{value.isoformat(sep=' ')}'"
    if isinstance(value, date):
        return f"DATE'{value.isoformat()}'"
    if isinstance(value, str):
        return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
    if isinstance(value, list | tuple):
        return f"array({', '.join(sql_literal(item) for item in value)})"
    raise TypeError(f"no Spark SQL literal for a {type(value).__name__} parameter")


def inline_parameters(statement: str, params: Mapping[str, ParamValue]) -> str:
    """``statement`` with each named marker replaced by its value's literal (module doc)."""

    def swap(match: re.Match[str]) -> str:
        name = match.group(1)
        return match.group(0) if name is None else sql_literal(params[name])

    return _LEXEME.sub(swap, statement)


@cache
def load_spark_sql(name: str) -> str:
    """The text of ``dp_platform/warehouse/spark/<name>.sql``."""
    return resources.files("dp_platform.warehouse.spark").joinpath(f"{name}.sql").read_text()


def schema_tables() -> frozenset[str]:
    """The tables schema.sql creates."""
    return frozenset(re.findall(r"CREATE TABLE IF NOT EXISTS (\w+)", load_spark_sql("schema")))


def parameter_names(statement: str) -> set[str]:
    """Named parameter markers of a statement (outside string literals and comments)."""
    return set(_PARAM.findall(_QUOTED.sub("''", _COMMENT.sub("", statement))))


class SparkSqlRunner:
    """Named Spark SQL files on one session; ``substitutions`` fill ``{{name}}``."""

    def __init__(self, spark: SparkSession, substitutions: Mapping[str, str]) -> None:
        self.spark = spark
        self.substitutions = dict(substitutions)
        self._cached: dict[str, DataFrame] = {}
        self._inline = type(spark).__module__.startswith("pyspark.sql.connect")

    def _text(self, name: str) -> str:
        text = load_spark_sql(name)
        for key, value in self.substitutions.items():
            text = text.replace("{{" + key + "}}", value)
        return text

    def _bind(self, statement: str, params: Mapping[str, ParamValue]) -> dict[str, ParamValue]:
        names = parameter_names(statement)
        missing = names - set(params)
        if missing:
            raise KeyError(f"SQL parameter(s) not given: {', '.join(sorted(missing))}")
        return {name: params[name] for name in names}

    def execute(self, statement: str, params: Mapping[str, ParamValue]) -> DataFrame | None:
        """One statement: a view or cache statement registers its query; a query returns its
        (lazy) DataFrame; anything else (DDL, INSERT) runs now and returns None."""
        statement = _COMMENT.sub("", statement).strip()
        view = _VIEW.match(statement)
        if view is not None:
            kind, name, query = view.groups()
            frame = self._sql(query, params)
            if kind.upper().startswith("CACHE"):
                self._drop_cached(name)
                frame = frame.localCheckpoint(eager=True)
                self._cached[name] = frame
            frame.createOrReplaceTempView(name)
            return None
        if _QUERY.match(statement):
            return self._sql(statement, params)
        point = commit_point(*written_table(statement))
        self._sql(statement, params)
        fault_point(point)
        return None

    def _sql(self, statement: str, params: Mapping[str, ParamValue]) -> DataFrame:
        bound = self._bind(statement, params)
        if self._inline and bound:
            return self.spark.sql(inline_parameters(statement, bound))
        return self.spark.sql(statement, args=bound or None)

    def write(self, frame: DataFrame, table: str) -> None:
        """One commit appending ``frame``'s rows to ``table`` (a record table: the loaded
        tables are written by SQL, by their stored names)."""
        point = commit_point("insert", table)
        frame.writeTo(table).append()
        fault_point(point)

    def run(self, name: str, **params: ParamValue) -> list[tuple]:
        """Execute every statement of ``<name>.sql``; return the last query's rows."""
        result: list[tuple] = []
        for statement in statements(self._text(name)):
            frame = self.execute(statement, params)
            result = [tuple(row) for row in frame.collect()] if frame is not None else []
        return result

    def frame(self, name: str, **params: ParamValue) -> pd.DataFrame:
        """Execute ``<name>.sql``; its last statement (a query) as a pandas DataFrame."""
        parts = statements(self._text(name))
        for statement in parts[:-1]:
            self.execute(statement, params)
        frame = self.execute(parts[-1], params)
        if frame is None:
            raise ValueError(f"{name}.sql does not end with a query")
        return frame.toPandas()

    def query(self, sql: str, **params: ParamValue) -> list[tuple]:
        """One inline statement (small bookkeeping queries only)."""
        frame = self.execute(sql, params)
        return [tuple(row) for row in frame.collect()] if frame is not None else []

    def _drop_cached(self, name: str) -> None:
        frame = self._cached.pop(name, None)
        if frame is not None:
            self.spark.catalog.dropTempView(name)
            frame.unpersist()

    def release(self) -> None:
        """Free every checkpointed view (they can be a file's or a day's size)."""
        for name in list(self._cached):
            self._drop_cached(name)

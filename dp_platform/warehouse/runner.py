"""A small runner for the warehouse's SQL files.

Every heavy step is a ``*.sql`` file next to this module. A file holds one or more statements,
each ending with ``;`` at the end of a line; parameters are DuckDB named parameters
(``$day``). The runner binds to each statement only the parameters it uses, so one call can feed
a whole file. Keeping the SQL in files (not Python strings) lets it be read, reviewed and run on
another engine (docs/data.md#3-warehouse-tables) without reading Python.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from functools import cache
from importlib import resources
from typing import Any

import duckdb
import pandas as pd

__all__ = ["SqlRunner", "load_sql", "statements"]

_PARAM = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")
_COMMENT = re.compile(r"--[^\n]*")
_END = re.compile(r";[ \t]*(?:--[^\n]*)?$", re.MULTILINE)


@cache
def load_sql(name: str) -> str:
    """The text of ``dp_platform/warehouse/<name>.sql``."""
    return resources.files("dp_platform.warehouse").joinpath(f"{name}.sql").read_text()


def statements(text: str) -> list[str]:
    """Split a file into statements at every ``;`` that ends a line (comments-only parts drop)."""
    parts = []
    start = 0
    for match in _END.finditer(text):
        parts.append(text[start : match.start()])
        start = match.end()
    parts.append(text[start:])
    out = []
    for part in parts:
        code = "\n".join(
            line for line in part.splitlines() if line.strip() and not line.strip().startswith("--")
        )
        if code.strip():
            out.append(part.strip())
    return out


class SqlRunner:
    """Runs named SQL files on one DuckDB connection."""

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        self.con = con
        self.timings: list[tuple[str, float]] | None = None  # set to [] to profile

    def _timed(self, label: str, statement: str, params: Mapping[str, Any]) -> list[tuple]:
        start = time.perf_counter()
        cursor = self._execute(statement, params)
        rows = cursor.fetchall() if cursor.description else []
        if self.timings is not None:
            self.timings.append((label, time.perf_counter() - start))
        return rows

    def _execute(self, statement: str, params: Mapping[str, Any]) -> duckdb.DuckDBPyConnection:
        names = set(_PARAM.findall(_COMMENT.sub("", statement)))
        used = {name: params[name] for name in names if name in params}
        missing = names - set(used)
        if missing:
            raise KeyError(f"SQL parameter(s) not given: {', '.join(sorted(missing))}")
        return self.con.execute(statement, used) if used else self.con.execute(statement)

    def run(self, name: str, **params: Any) -> list[tuple]:
        """Execute every statement of ``<name>.sql``; return the last statement's rows."""
        result: list[tuple] = []
        for index, statement in enumerate(statements(load_sql(name)), start=1):
            result = self._timed(f"{name}#{index}", statement, params)
        return result

    def frame(self, name: str, **params: Any) -> pd.DataFrame:
        """Execute ``<name>.sql`` and return its last statement's result as a DataFrame
        (columnar: no Python object per row, for results of 10⁴–10⁵ rows)."""
        parts = statements(load_sql(name))
        for index, statement in enumerate(parts[:-1], start=1):
            self._timed(f"{name}#{index}", statement, params)
        start = time.perf_counter()
        frame = self._execute(parts[-1], params).df()
        if self.timings is not None:
            self.timings.append((f"{name}#{len(parts)}", time.perf_counter() - start))
        return frame

    def query(self, sql: str, **params: Any) -> list[tuple]:
        """Execute one inline statement (small bookkeeping queries only)."""
        return self._timed(sql.split()[0].lower(), sql, params)

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """All or nothing: commit on success, roll back on any error."""
        self.con.execute("BEGIN TRANSACTION")
        try:
            yield
        except BaseException:
            self.con.execute("ROLLBACK")
            raise
        self.con.execute("COMMIT")

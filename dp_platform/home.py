"""The platform's home directory: where the embedded defaults keep their files.

    <home>/warehouse.duckdb   DuckDB warehouse (events, attribution, contributions, clipping)
    <home>/ledger.sqlite      privacy ledger, write-once releases, secret bound state
    <home>/ledger.json        which ledger the home uses (its SQLite file or a PostgreSQL URL)
    <home>/journal/           append-only list of published draws (dp_platform/journal.py)
    <home>/dagster/           DAGSTER_HOME (Dagster's own SQLite storage)
    <home>/plots/             PNG charts written by `dp-platform demo`

DuckDB lets one process at a time open a file for writing, so every use of the warehouse goes
through :func:`warehouse_lock`: a blocking ``flock`` that makes a second process wait its turn
instead of failing. The ledger is never opened while waiting for this lock's holder, so the two
locks cannot deadlock (the warehouse lock is always taken first, the ledger's inside it).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from dp_platform.errors import StorageError
from dp_platform.file_lock import exclusive

__all__ = ["Home"]


@dataclass(frozen=True)
class Home:
    root: Path

    @classmethod
    def at(cls, path: str | Path) -> Home:
        """The home at ``path``, created if missing (the commands that write). An OSError of
        the creation propagates as it is (callers word it; the CLI shows it as one line)."""
        root = _resolved(path)
        if root.exists() and not root.is_dir():
            raise StorageError(f"{root}: --home exists and is not a directory")
        root.mkdir(parents=True, exist_ok=True)
        return cls(root)

    @classmethod
    def existing(cls, path: str | Path) -> Home:
        """The home at ``path``, which must exist: read-only commands create nothing, so they
        work on a read-only home and do not leave an empty home behind after a typo."""
        root = _resolved(path)
        if not root.is_dir():
            state = "is not a directory" if root.exists() else "does not exist"
            raise StorageError(f"{root}: --home {state}")
        return cls(root)

    @property
    def warehouse(self) -> Path:
        return self.root / "warehouse.duckdb"

    @property
    def ledger(self) -> Path:
        return self.root / "ledger.sqlite"

    @property
    def dagster(self) -> Path:
        path = self.root / "dagster"
        path.mkdir(exist_ok=True)
        return path

    @property
    def plots(self) -> Path:
        path = self.root / "plots"
        path.mkdir(exist_ok=True)
        return path

    @contextmanager
    def warehouse_lock(self) -> Iterator[None]:
        """Exclusive, blocking, released on exit or when the process dies (kernel flock); a
        process that waits for it logs the holder's pid."""
        with exclusive(self.root / ".warehouse.lock", name="warehouse"):
            yield


def _resolved(path: str | Path) -> Path:
    try:
        return Path(path).expanduser().resolve()
    except (OSError, RuntimeError) as error:  # a symlink loop
        raise StorageError(f"{path}: --home cannot be resolved ({error})") from None

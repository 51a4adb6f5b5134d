"""The catalogue of storage faults that can be simulated without root: one case per class,
each naming the command to run, how the home is damaged and what the one stderr line says.

``runner``: ``in_process`` (``dp_platform.cli.main``), ``read_only`` (a child without the
capabilities that let root write anywhere, over a home made read-only with chmod), or
``file_size_limit`` (a child whose writes past a size fail, standing in for a full disk).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

Runner = Literal["in_process", "read_only", "file_size_limit"]


@dataclass(frozen=True)
class StorageCase:
    name: str
    command: list[str]  # after the command name: "{home}" and "{config}" are filled in
    damage: Callable[[Path], Path]  # given a fresh directory, the --home path to use
    exit_code: int
    message: str  # fragments ("*") of the one stderr line; "" for a success
    runner: Runner = "in_process"
    file_size_limit: int = 0
    registered: int = 0  # campaigns registered when the fault struck (disk full after that)


def _home_is_file(directory: Path) -> Path:
    path = directory / "home"
    path.write_text("not a home")
    return path


def _missing(directory: Path) -> Path:
    return directory / "no-such-home"


def _symlink_loop(directory: Path) -> Path:
    os.symlink(directory / "b", directory / "a")
    os.symlink(directory / "a", directory / "b")
    return directory / "a"


def _under_a_file(directory: Path) -> Path:
    return _home_is_file(directory) / "home"


def _prepared(directory: Path) -> Path:
    """The prepared home (already run); the test copies it to ``directory``."""
    return directory / "home"


def _fresh(directory: Path) -> Path:
    return directory / "fresh"


BUDGET, RELEASES = ["budget", "--home", "{home}"], ["releases", "--home", "{home}"]
RUN = ["run", "--home", "{home}", "--config", "{config}"]
CANCEL = ["campaign", "cancel", "spring", "--home", "{home}"]

CASES = [
    StorageCase("budget_home_is_file", BUDGET, _home_is_file, 2, "--home is not a directory"),
    StorageCase(
        "releases_home_is_file",
        [*RELEASES, "--campaign", "spring"],
        _home_is_file,
        2,
        "--home is not a directory",
    ),
    StorageCase("cancel_home_is_file", CANCEL, _home_is_file, 2, "--home is not a directory"),
    StorageCase("run_home_is_file", RUN, _home_is_file, 2, "--home exists and is not a directory"),
    StorageCase("run_home_under_a_file", RUN, _under_a_file, 2, "home: Not a directory"),
    StorageCase("budget_home_missing", BUDGET, _missing, 2, "no-such-home: --home does not exist"),
    StorageCase(
        "releases_home_missing",
        [*RELEASES, "--campaign", "spring"],
        _missing,
        2,
        "no-such-home: --home does not exist",
    ),
    StorageCase(
        "budget_home_symlink_loop",
        BUDGET,
        _symlink_loop,
        2,
        "--home cannot be resolved*Symlink loop",
    ),
    StorageCase("budget_no_ledger_yet", BUDGET, lambda d: d, 2, "ledger.sqlite: no ledger here"),
    StorageCase("budget_read_only_home", BUDGET, _prepared, 0, "", runner="read_only"),
    StorageCase(
        "releases_read_only_home",
        [*RELEASES, "--campaign", "spring"],
        _prepared,
        0,
        "",
        runner="read_only",
    ),
    StorageCase(
        "set_cap_read_only_home",
        [*BUDGET, "--set-cap", "acme-users", "3"],
        _prepared,
        2,
        "ledger.sqlite: cannot open the ledger*readonly database",
        runner="read_only",
    ),
    StorageCase(
        "run_disk_full_at_registration",
        RUN,
        _fresh,
        2,
        "ledger.sqlite: cannot write the ledger (disk I/O error)",
        runner="file_size_limit",
        file_size_limit=80_000,  # the ledger's schema (one migration transaction) fits, the
        # registration that follows does not
    ),
    StorageCase(
        "run_disk_full_after_registration",  # Dagster's own storage is the first to hit it
        RUN,
        _fresh,
        2,
        "disk I/O error",
        runner="file_size_limit",
        file_size_limit=180_000,
        registered=1,
    ),
]

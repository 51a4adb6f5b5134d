"""Hostile input to `dp-platform ingest`, one case per class (catalogue: ingest_cases.py, the
table of classes and outcomes: docs/data.md §2b).

Each case runs the real command line as an operator would — in process through
``dp_platform.cli.main`` (stdout and stderr captured at the file descriptors, so DuckDB's own
output would show too), or as a child process where the class needs one (a file the process
may not read, a file-size limit standing in for a full disk). Every case asserts the exit
code; a refusal is exactly one stderr line, no traceback, no raw id or value, and leaves the
warehouse as it was; a load has an empty stderr and conserved counts per file (rows read =
accepted + quarantined) with the expected reason counts. Cases share one warehouse (their ids
never collide), except those that need a home of their own.
"""

from __future__ import annotations

import ctypes
import json
import re
import resource
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pytest

from dp_platform.cli import main
from tests.hostile.ingest_cases import CASES, NOW, SECRET, Case, Expect, Workspace
from tests.platform_fixtures import warehouse_block

DOCS = Path(__file__).resolve().parents[2] / "docs" / "data.md"
CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, PR_CAPBSET_DROP = 1, 2, 24


@dataclass
class Outcome:
    code: int
    out: str
    err: str


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("hostile")


def _argv(expect: Expect, home: Path) -> list[str]:
    argv = ["ingest", "--home", str(home), "--impressions", str(expect.impressions)]
    argv += ["--conversions", str(expect.conversions), "--json"]
    if "--now" not in expect.extra:
        argv += ["--now", NOW]
    return argv + expect.extra


def _without_read_override() -> None:
    """In the child: root without the capabilities that let it read any file, so mode 000
    refuses it as it would refuse any other user."""
    libc = ctypes.CDLL(None, use_errno=True)
    for capability in (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH):
        if libc.prctl(PR_CAPBSET_DROP, capability, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


def _file_size_limit(limit: int):
    """In the child: writes beyond `limit` bytes of any file fail with EFBIG (as a full disk
    fails with ENOSPC); SIGXFSZ is ignored so the write returns the error instead of killing."""

    def apply() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return apply


def _child(argv: list[str], preexec) -> Outcome:
    done = subprocess.run(
        [sys.executable, "-m", "dp_platform.cli", *argv],
        capture_output=True,
        text=True,
        preexec_fn=preexec,
        timeout=120,
        check=False,
    )
    return Outcome(done.returncode, done.stdout, done.stderr)


def _run(expect: Expect, home: Path, capfd: pytest.CaptureFixture[str]) -> Outcome:
    argv = _argv(expect, home)
    if expect.runner == "no_read_permission":
        return _child(argv, _without_read_override)
    if expect.runner == "file_size_limit":
        return _child(argv, _file_size_limit(expect.file_size_limit))
    capfd.readouterr()
    code = main(argv)
    captured = capfd.readouterr()
    return Outcome(code, captured.out, captured.err)


def _tables(home: Path) -> dict[str, int]:
    """Row counts of the warehouse's tables (all 0 if there is no warehouse yet)."""
    tables = ("loads", "impressions", "conversions", "quarantine", "users")
    database = home / "warehouse.duckdb"
    if not database.is_file():
        return dict.fromkeys(tables, 0)
    try:
        con = duckdb.connect(str(database), read_only=True)
    except duckdb.Error:
        return {"unreadable": 1}
    try:
        return {t: con.execute(f"SELECT count(*) FROM {t}").fetchall()[0][0] for t in tables}
    finally:
        con.close()


def _prepare_own_home(expect: Expect, workspace: Workspace, base: Path) -> Path:
    """A home of its own for a case that may damage one: one small load done beforehand, so
    the case's failure happens while loading into an existing warehouse."""
    home = base / f"{workspace.tag}-home"
    first = Workspace(workspace.root / "first", f"{workspace.tag}-first")
    assert main(_argv(first.loaded(), home)) == 0
    return home


def _check_refusal(outcome: Outcome, expect: Expect) -> None:
    lines = outcome.err.splitlines()
    assert len(lines) == 1 and outcome.err.endswith("\n"), outcome.err
    line = lines[0]
    assert line.startswith("dp-platform ingest: "), line
    for part in expect.message.split("*"):
        assert part in line, (part, line)
    assert outcome.out == ""


def _check_load(outcome: Outcome, expect: Expect) -> None:
    assert outcome.err == ""
    report = json.loads(outcome.out)
    for kind in ("impressions", "conversions"):
        part = report[kind]
        assert part["already_loaded"] == (kind in expect.already_loaded), kind
        assert part["rows"] == expect.rows[kind], (kind, part)
        assert part["accepted"] + part["quarantined"] == part["rows"], (kind, part)
        assert part["reasons"] == expect.reasons[kind], (kind, part)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_hostile_ingest(case: Case, base: Path, capfd: pytest.CaptureFixture[str]) -> None:
    workspace = Workspace(base / case.name, case.name)
    shared = base / "shared-home"
    expect = case.build(workspace)
    home = expect.home or shared
    if expect.runner == "file_size_limit":
        home = _prepare_own_home(expect, workspace, base)
    before = _tables(home)

    outcome = _run(expect, home, capfd)

    assert outcome.code == expect.exit_code, outcome
    assert "Traceback" not in outcome.err
    assert SECRET not in outcome.err and SECRET not in outcome.out
    if expect.exit_code == 2:
        _check_refusal(outcome, expect)
        assert _tables(home) == before  # all or nothing
    else:
        _check_load(outcome, expect)
        after = _tables(home)
        added = after["loads"] - before.get("loads", 0)
        assert added == 2 - len(expect.already_loaded)
        quarantined = after["quarantine"] - before.get("quarantine", 0)
        assert quarantined == sum(sum(r.values()) for r in expect.reasons.values())
    if expect.runner == "file_size_limit":  # the warehouse still takes the same load
        assert main(_argv(expect, home)) == 0
        assert _tables(home)["loads"] == before["loads"] + 2


SPARK_CASES = (
    "missing_impressions_file",
    "garbage_parquet",
    "truncated_gzip",
    "missing_column_csv",
    "unterminated_quote",
    "now_year_3000",
    "too_many_fields",
    "future_conversion",
    "nan_value",
    "parquet_other_column_types",
    "duplicate_id_of_loaded_data",
    "id_of_another_users_loaded_event",
    "same_file_loaded_twice",
    "more_than_1024_at_one_instant",
    "impression_dimension_value_not_listed",
    "dimension_value_not_listed_with_catch_all",
)
"""A representative subset on Spark, in the tests' one session: refusals by the file checks,
by the CSV reader and by the command line (cheap: nothing reaches Spark), and one load per
family of quarantine reasons (a load is ~20 Spark jobs, so one case per family, not all).
The cases that need a child process (a JVM each) or a DuckDB file are DuckDB's only: the Spark
ingest runs the same file checks first, and its write failures are tested in
tests/test_spark_recovery.py."""


def _delta_rows(table: Path) -> int:
    """Rows in a Delta table's current snapshot, replayed from its JSON commit files (each
    added file's numRecords, less the files removed since): no Spark job."""
    files: dict[str, int] = {}
    for commit in sorted((table / "_delta_log").glob("*.json")):
        for line in commit.read_text().splitlines():
            action = json.loads(line)
            if "add" in action:
                files[action["add"]["path"]] = json.loads(action["add"]["stats"])["numRecords"]
            elif "remove" in action:
                files.pop(action["remove"]["path"], None)
    return sum(files.values())


def _spark_tables(home: Path) -> dict[str, int]:
    """Row counts of a Spark home's tables and its committed loads, read from their Delta
    logs; all 0 if there is no warehouse yet."""
    root = home / "spark" / "tables"
    tables = ("loads", "impressions", "conversions", "quarantine", "users")
    return {t: _delta_rows(root / t) if (root / t).is_dir() else 0 for t in tables}


@pytest.fixture(scope="module")
def spark_catalogue(base: Path, spark: object) -> Path:
    """A catalogue whose warehouse: block chooses Spark (the tests' session settings)."""
    import yaml

    from tests.platform_fixtures import catalogue

    path = base / "spark-catalogue.yaml"
    path.write_text(yaml.safe_dump(catalogue(engine="spark")))
    return path


ON_SPARK = [c for c in CASES if c.name in SPARK_CASES]
assert len(ON_SPARK) == len(SPARK_CASES), "a name in SPARK_CASES is not in the catalogue"


@pytest.mark.parametrize("case", ON_SPARK, ids=[c.name for c in ON_SPARK])
def test_hostile_ingest_on_spark(
    case: Case, base: Path, spark_catalogue: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """The same command line with ``--config`` naming a Spark catalogue: the same exit code,
    the same one-line refusal, the same counts per reason, all or nothing."""
    shared = base / "spark" / "shared-home"
    workspace = Workspace(
        base / "spark" / case.name,
        case.name,
        shared_home=shared,
        engine_args=("--config", str(spark_catalogue)),
        warehouse=warehouse_block("spark"),
    )
    expect = case.build(workspace)
    if "--config" not in expect.extra:  # a case's own catalogue is written for Spark already
        expect.extra += ["--config", str(spark_catalogue)]
    home = expect.home or shared
    before = _spark_tables(home)

    outcome = _run(expect, home, capfd)

    assert outcome.code == expect.exit_code, outcome
    assert "Traceback" not in outcome.err
    assert SECRET not in outcome.err and SECRET not in outcome.out
    if expect.exit_code == 2:
        _check_refusal(outcome, expect)
        assert _spark_tables(home) == before  # all or nothing
    else:
        _check_load(outcome, expect)
        after = _spark_tables(home)
        assert after["loads"] - before["loads"] == 2 - len(expect.already_loaded)
        quarantined = after["quarantine"] - before["quarantine"]
        assert quarantined == sum(sum(r.values()) for r in expect.reasons.values())
        accepted = sum(expect.rows.values()) - quarantined
        added = sum(after[t] - before[t] for t in ("impressions", "conversions"))
        assert added == accepted  # rows in = accepted + quarantined, in the tables too


def test_catalogue_has_at_least_60_classes_with_unique_names() -> None:
    names = [c.name for c in CASES]
    assert len(names) >= 60 and len(set(names)) == len(names)


def test_docs_table_lists_every_class_and_its_outcome() -> None:
    """docs/data.md §2b is the operator's copy of this catalogue; they may not drift apart."""
    text = DOCS.read_text(encoding="utf-8")
    section = text.split("<!-- hostile-ingest-table -->")[1].split("\n## ")[0]
    rows = re.findall(r"^\| `([A-Za-z0-9_]+)` \| (.+?) \|$", section, flags=re.MULTILINE)
    assert rows == [(c.name, c.outcome.replace("|", "\\|")) for c in CASES]

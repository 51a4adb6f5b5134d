"""The ledger's storage: migrations from empty, exact (non-float) columns, old SQLite ledgers
upgraded in place, backups that restore, and which ledger a home uses."""

from __future__ import annotations

import json
import sqlite3
import uuid
from pathlib import Path

import psycopg
import pytest

from dp_platform.config_loader import parse_catalogue
from dp_platform.errors import ConfigError, LedgerError, StorageError
from dp_platform.ledger import Ledger
from dp_platform.ledger_backends import LEDGER_RECORD, home_ledger
from dp_platform.ledger_backends.base import migrations
from dp_platform.mechanisms.adsbpc import make_plan
from dp_platform.privacy.noise import SeededNoise
from dp_platform.settings import LedgerConfig
from tests.postgres_server import postgres_binaries
from tests.test_ledger import ACCOUNT, campaign, register, run_day

# The schema today's SQLite ledgers carry (PRAGMA user_version = 2), as the code before
# versioned migrations created it: an old ledger is made from this text, not from ours.
_USER_VERSION_2_SCHEMA = """
CREATE TABLE IF NOT EXISTS accounts (name TEXT PRIMARY KEY, rho_cap TEXT NOT NULL,
    created_at TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS campaigns (name TEXT PRIMARY KEY,
    account TEXT NOT NULL REFERENCES accounts(name), planned TEXT NOT NULL,
    days INTEGER NOT NULL, declared_json TEXT NOT NULL, config_json TEXT NOT NULL,
    plan_json TEXT NOT NULL, registered_at TEXT NOT NULL, ended_at TEXT);
CREATE TABLE IF NOT EXISTS campaign_history (campaign TEXT NOT NULL REFERENCES campaigns(name),
    at TEXT NOT NULL, action TEXT NOT NULL, planned_before TEXT, planned_after TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS bound_choices (campaign TEXT NOT NULL REFERENCES campaigns(name),
    day INTEGER NOT NULL, choice_json TEXT NOT NULL, secret_state_json TEXT NOT NULL,
    created_at TEXT NOT NULL, PRIMARY KEY (campaign, day));
CREATE TABLE IF NOT EXISTS releases (campaign TEXT NOT NULL REFERENCES campaigns(name),
    day INTEGER NOT NULL, release_json TEXT NOT NULL, created_at TEXT NOT NULL,
    PRIMARY KEY (campaign, day));
CREATE TABLE IF NOT EXISTS campaign_releases (campaign TEXT NOT NULL REFERENCES campaigns(name),
    kind TEXT NOT NULL, release_json TEXT NOT NULL, created_at TEXT NOT NULL,
    PRIMARY KEY (campaign, kind));
CREATE TABLE IF NOT EXISTS charges (campaign TEXT NOT NULL REFERENCES campaigns(name),
    day INTEGER NOT NULL, part TEXT NOT NULL, rho TEXT NOT NULL, created_at TEXT NOT NULL,
    PRIMARY KEY (campaign, day, part));
"""
LEDGER_TABLES = {
    "accounts",
    "campaigns",
    "campaign_history",
    "bound_choices",
    "releases",
    "campaign_releases",
    "charges",
    "campaign_warehouses",
    "schema_version",
}


def columns(location: str) -> dict[str, dict[str, str]]:
    """Table → column → declared type (lower case), read from the database's own catalogue."""
    if location.startswith("postgresql://"):
        with psycopg.connect(location) as db:
            rows = db.execute(
                "SELECT table_name, column_name, data_type FROM information_schema.columns "
                "WHERE table_schema = 'public'"
            ).fetchall()
    else:
        db = sqlite3.connect(location)
        tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        rows = [
            (table, column[1], column[2])
            for table in tables
            for column in db.execute(f"PRAGMA table_info({table})")
        ]
        db.close()
    found: dict[str, dict[str, str]] = {}
    for table, column, kind in rows:
        found.setdefault(table, {})[column] = kind.lower()
    return found


def schema_versions(location: str) -> list[tuple[int, str]]:
    query = "SELECT version, name FROM schema_version ORDER BY version"
    if location.startswith("postgresql://"):
        with psycopg.connect(location) as db:
            return [tuple(r) for r in db.execute(query).fetchall()]
    db = sqlite3.connect(location)
    try:
        return [tuple(r) for r in db.execute(query).fetchall()]
    finally:
        db.close()


def test_migrations_apply_from_an_empty_database(ledger_location: str) -> None:
    with Ledger(ledger_location):
        pass
    assert schema_versions(ledger_location) == [(m.version, m.name) for m in migrations()]
    assert set(columns(ledger_location)) == LEDGER_TABLES
    with Ledger(ledger_location):  # opening again applies nothing twice
        pass
    assert len(schema_versions(ledger_location)) == len(migrations())


def test_no_column_holds_a_floating_point_number(ledger_location: str) -> None:
    """Budget amounts are exact fractions as text: a float column would round sums."""
    with Ledger(ledger_location):
        pass
    kinds = {kind for table in columns(ledger_location).values() for kind in table.values()}
    assert kinds <= {"text", "integer"}, kinds


@pytest.mark.system
def test_both_backends_have_the_same_tables_and_columns(tmp_path: Path, postgres_server) -> None:
    sqlite_path = str(tmp_path / "ledger.sqlite")
    postgres_url = postgres_server.create_database("same_schema")
    for location in (sqlite_path, postgres_url):
        Ledger(location).close()
    assert columns(sqlite_path) == columns(postgres_url)


def test_the_views_open_read_only_and_write_nothing(ledger_location: str) -> None:
    with pytest.raises(StorageError, match="no ledger here"):
        Ledger(ledger_location, read_only=True)  # nothing created by looking
    with Ledger(ledger_location) as ledger:
        register(ledger, campaign())
    with Ledger(ledger_location, read_only=True) as ledger:
        assert ledger.campaigns() == ["spring"]
        with pytest.raises(StorageError, match="cannot write the ledger"):
            ledger.set_cap("users", 3.0)
    with Ledger(ledger_location, read_only=True) as ledger:
        assert ledger.budget_report()["accounts"]["users"]["rho_cap"] == ACCOUNT.rho_cap


def _user_version_2_ledger(path: Path) -> None:
    """A ledger as the code before versioned migrations left it: one campaign, one charge."""
    db = sqlite3.connect(path)
    db.executescript(_USER_VERSION_2_SCHEMA)
    db.execute("INSERT INTO accounts VALUES ('users', '2', '2026-01-01T00:00:00+00:00')")
    db.execute(
        "INSERT INTO campaigns VALUES ('old', 'users', '1/2', 3, '{}', "
        "'{\"publishers\": [\"a\"]}', '{}', '2026-01-01T00:00:00+00:00', NULL)"
    )
    db.execute(
        "INSERT INTO campaign_history VALUES ('old', '2026-01-01T00:00:00+00:00', 'registered', "
        "NULL, '1/2')"
    )
    db.execute("INSERT INTO charges VALUES ('old', 1, 'gaussian', '1/8', '2026-01-02')")
    db.execute("PRAGMA user_version = 2")
    db.commit()
    db.close()


def test_a_ledger_from_before_migrations_is_read_and_upgraded_in_place(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite"
    _user_version_2_ledger(path)
    with Ledger(path, read_only=True) as ledger:  # the views read it as it is
        assert ledger.campaign_budget("old").spent.value == 1 / 8
    assert not any(
        row[0] == "schema_version"
        for row in sqlite3.connect(path).execute("SELECT name FROM sqlite_master")
    )
    with Ledger(path) as ledger:  # a writer adopts it as version 1 and applies the rest
        budget = ledger.campaign_budget("old")
        assert (budget.planned.value, budget.spent.value) == (1 / 2, 1 / 8)
        assert ledger.campaign_history("old")[0]["action"] == "registered"
    assert schema_versions(str(path)) == [(m.version, m.name) for m in migrations()]


def test_a_ledger_older_than_registered_configurations_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite"
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE campaigns (name TEXT PRIMARY KEY, planned TEXT)")
    db.close()
    with pytest.raises(LedgerError, match="earlier version of dp-platform"):
        Ledger(path)


def test_a_ledger_from_a_newer_version_is_refused(ledger_location: str) -> None:
    Ledger(ledger_location).close()
    statement = "INSERT INTO schema_version VALUES (99, 'future', 'later')"
    if ledger_location.startswith("postgresql://"):
        with psycopg.connect(ledger_location) as db:
            db.execute(statement)
    else:
        with sqlite3.connect(ledger_location) as db:
            db.execute(statement)
    with pytest.raises(LedgerError, match="schema version 99 is newer"):
        Ledger(ledger_location)


def _pg_restore() -> str:
    """pg_restore on PATH, else beside the server binaries the tests start."""
    import shutil

    found = shutil.which("pg_restore")
    return found or str(postgres_binaries() / "pg_restore")


def _restore(backup: Path, location: str, postgres_server) -> str:
    """Where the backup can be opened: the SQLite copy itself, or a database pg_restore filled."""
    if not location.startswith("postgresql://"):
        return str(backup)
    import subprocess

    url = postgres_server.create_database(f"restored_{uuid.uuid4().hex[:8]}")
    subprocess.run(
        [_pg_restore(), "--no-owner", f"--dbname={url}", str(backup)],
        check=True,
        capture_output=True,
    )
    return url


def test_a_backup_restores_the_whole_ledger(
    ledger_location: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    plan = make_plan(campaign(days=5))
    with Ledger(ledger_location) as ledger:
        register(ledger, campaign(days=5))
        noise = SeededNoise(5)
        for day in (1, 2):
            run_day(ledger, plan, day, noise)
        backup = tmp_path / "ledger.backup"
        ledger.backup(backup)
        report, releases = ledger.budget_report(), ledger.releases("spring")
        run_day(ledger, plan, 3, noise)  # written after the backup: not in it
    on_postgres = ledger_location.startswith("postgresql://")
    server = request.getfixturevalue("postgres_server") if on_postgres else None
    with Ledger(_restore(backup, ledger_location, server), read_only=True) as restored:
        assert restored.budget_report() == report
        assert restored.releases("spring") == releases
        assert [r.day for r in restored.releases("spring")] == [1, 2]


# -- which ledger a home uses ---------------------------------------------------------------

URL = "postgresql://dp@db.example:5432/ledger"


def test_a_fresh_home_records_the_catalogues_ledger_and_keeps_it(tmp_path: Path) -> None:
    assert home_ledger(tmp_path, LedgerConfig(url=URL), read_only=True) == URL
    assert not (tmp_path / LEDGER_RECORD).exists()  # a read-only use writes nothing
    assert home_ledger(tmp_path, LedgerConfig(url=URL)) == URL
    assert json.loads((tmp_path / LEDGER_RECORD).read_text()) == {"url": URL}
    assert home_ledger(tmp_path) == URL  # the views open what the home records
    with pytest.raises(LedgerError, match=r"this home.s ledger is postgresql://dp@db\.example"):
        home_ledger(tmp_path, LedgerConfig(url=URL.replace("ledger", "other")))
    with pytest.raises(LedgerError, match="catalogue names the SQLite file"):
        home_ledger(tmp_path, LedgerConfig())


def test_a_home_with_a_sqlite_ledger_refuses_a_postgres_catalogue(tmp_path: Path) -> None:
    """A home made before ledger.json (only ledger.sqlite) is a SQLite home: switching would
    start a fresh budget in a new database."""
    Ledger(tmp_path / "ledger.sqlite").close()
    assert home_ledger(tmp_path) == tmp_path / "ledger.sqlite"
    assert home_ledger(tmp_path, LedgerConfig()) == tmp_path / "ledger.sqlite"
    with pytest.raises(LedgerError, match="this home's ledger is the SQLite file"):
        home_ledger(tmp_path, LedgerConfig(url=URL))


def test_a_fresh_home_with_the_default_catalogue_records_sqlite(tmp_path: Path) -> None:
    assert home_ledger(tmp_path, LedgerConfig()) == tmp_path / "ledger.sqlite"
    assert json.loads((tmp_path / LEDGER_RECORD).read_text()) == {"url": None}
    with pytest.raises(LedgerError, match="catalogue names postgresql://"):
        home_ledger(tmp_path, LedgerConfig(url=URL))


def test_a_damaged_record_is_named(tmp_path: Path) -> None:
    (tmp_path / LEDGER_RECORD).write_text('{"url": 3}')
    with pytest.raises(LedgerError, match=r"ledger.json: not a ledger record"):
        home_ledger(tmp_path)


# -- the catalogue's ledger: block -----------------------------------------------------------


def _catalogue(ledger: dict) -> dict:
    return {
        "accounts": [{"name": "users", "rho_cap": ACCOUNT.rho_cap}],
        "campaigns": [campaign().model_dump(mode="json", exclude_defaults=True)],
        "ledger": ledger,
    }


def test_the_catalogue_accepts_a_postgres_url_and_defaults_to_sqlite() -> None:
    assert parse_catalogue(_catalogue({"url": URL})).ledger.url == URL
    document = _catalogue({})
    assert parse_catalogue(document).ledger.url is None
    del document["ledger"]
    assert parse_catalogue(document).ledger == LedgerConfig()


@pytest.mark.parametrize(
    ("url", "rule"),
    [
        ("mysql://dp@db/ledger", r"ledger.url: must be a postgresql:// URL"),
        ("/var/ledger.sqlite", r"ledger.url: must be a postgresql:// URL"),
        ("postgresql://dp:s3cret@db/ledger", r"ledger.url: a password in the URL is refused"),
        ("postgresql://dp@db/ledger?password=s3cret", r"ledger.url: a password in the URL"),
        ("postgresql://dp@db:5432/", r"ledger.url: must name a database"),
    ],
)
def test_the_catalogue_refuses_a_bad_ledger_url_by_field_and_rule(url: str, rule: str) -> None:
    with pytest.raises(ConfigError, match=rule) as raised:
        parse_catalogue(_catalogue({"url": url}))
    assert "s3cret" not in str(raised.value)  # the refused secret is never echoed

"""On a PostgreSQL ledger too: restoring an old backup (pg_dump → pg_restore) refuses every run,
names the missing days and draws nothing; the journal check does not depend on the backend."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from dp_platform.cli import main
from dp_platform.errors import PublishedReleaseMissing
from dp_platform.journal import ReleaseJournal
from dp_platform.ledger import Ledger
from dp_platform.privacy.noise import SeededNoise
from dp_platform.settings import LedgerConfig
from tests.test_journal import PLAN, journaled_days
from tests.test_ledger import campaign, register, run_day
from tests.test_ledger_backends import _pg_restore

pytestmark = pytest.mark.system


def _run_days(home: Path, days: range, calls: list | None = None) -> None:
    with Ledger.at_home(home) as ledger, ReleaseJournal.at_home(home).guarding(ledger):
        register(ledger, campaign())
        for day in days:
            run_day(ledger, PLAN, day, SeededNoise(day), calls)


def test_restoring_an_old_pg_dump_refuses_names_the_days_and_draws_nothing(
    postgres_server, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = postgres_server.create_database("journal_restore")
    home = tmp_path / "home"
    home.mkdir()
    Ledger.at_home(home, declared=LedgerConfig(url=url)).close()  # the home records its ledger
    _run_days(home, range(1, 4))
    backup = tmp_path / "day3.dump"
    assert main(["ledger", "backup", "--home", str(home), "--to", str(backup)]) == 0
    _run_days(home, range(4, 6))
    subprocess.run(
        [_pg_restore(), "--clean", "--if-exists", "--no-owner", f"--dbname={url}", str(backup)],
        check=True,
        capture_output=True,
    )
    calls: list = []
    with pytest.raises(PublishedReleaseMissing, match="campaign 'spring': missing days 4, 5"):
        _run_days(home, range(4, 6), calls)
    assert calls == []
    with Ledger.at_home(home, read_only=True) as ledger:
        assert [r.day for r in ledger.releases("spring")] == [1, 2, 3]
    assert journaled_days(ReleaseJournal.at_home(home)) == [1, 2, 3, 4, 5]
    # the restore command points a PostgreSQL home to pg_restore instead of writing a file
    capsys.readouterr()
    assert main(["ledger", "restore", "--home", str(home), "--from", str(backup)]) == 2
    assert "pg_restore" in capsys.readouterr().err

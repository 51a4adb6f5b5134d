"""The release journal and ledger backups: a stale restore refuses, names days, draws nothing."""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import sqlite3
from pathlib import Path

import pytest

from dp_platform.cli import main
from dp_platform.errors import PublishedReleaseMissing
from dp_platform.journal import JournalEntry, ReleaseJournal
from dp_platform.ledger import Ledger, LedgerError
from dp_platform.ledger_backup import backup_sqlite_ledger, restore_sqlite_ledger
from dp_platform.mechanisms.adsbpc import make_plan
from dp_platform.privacy.noise import SeededNoise
from tests.test_ledger import campaign, register, run_day

PLAN = make_plan(campaign())


def journaled_days(journal: ReleaseJournal, record: str = "release") -> list[int]:
    return sorted(e.day for e in journal.entries() if e.record == record and e.day is not None)


def run_days(home: Path, days: range, calls: list | None = None) -> None:
    """Days through the guarded ledger, as every Dagster asset opens it (assets/resources.py)."""
    journal = ReleaseJournal.at_home(home)
    with Ledger.at_home(home) as ledger, journal.guarding(ledger):
        register(ledger, campaign())
        for day in days:
            run_day(ledger, PLAN, day, SeededNoise(day), calls)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    root = tmp_path / "home"
    root.mkdir()
    return root


def test_every_drawn_record_is_journaled_once_with_the_hash_of_what_the_ledger_stored(
    home: Path,
) -> None:
    run_days(home, range(1, 4))
    run_days(home, range(1, 4))  # a re-run draws nothing and journals nothing new
    journal = ReleaseJournal.at_home(home)
    assert journaled_days(journal) == [1, 2, 3]
    assert journaled_days(journal, "bound") == [1, 2, 3]
    with Ledger.at_home(home) as ledger:
        stored = {
            (p.record, p.day): hashlib.sha256(p.stored_json.encode()).hexdigest()
            for p in ledger.published_records()
        }
        values = [v for r in ledger.releases("spring") for v in r.values]
    assert {(e.record, e.day): e.sha256 for e in journal.entries()} == stored
    text = journal.path.read_text()
    assert len(text.splitlines()) == 6
    assert not any(repr(v) in text or f"{v:.6g}" in text for v in values)  # hashes, not values


def test_restoring_an_old_backup_refuses_names_the_days_and_draws_nothing(
    home: Path, tmp_path: Path
) -> None:
    run_days(home, range(1, 4))
    backup = backup_sqlite_ledger(home / "ledger.sqlite", tmp_path / "day3.sqlite")
    run_days(home, range(4, 6))
    with Ledger.at_home(home) as ledger:
        published = ledger.releases("spring")
    restore_sqlite_ledger(backup, home / "ledger.sqlite")

    calls: list = []
    with pytest.raises(PublishedReleaseMissing) as refused:
        run_days(home, range(4, 6), calls)
    message = str(refused.value)
    assert "campaign 'spring': missing days 4, 5" in message
    assert str(ReleaseJournal.at_home(home).path) in message and "\n" not in message
    assert not any(f"{v:.4g}" in message for r in published for v in r.values)
    assert calls == []  # nothing drawn
    with Ledger.at_home(home) as ledger:
        assert [r.day for r in ledger.releases("spring")] == [1, 2, 3]
        assert sorted(ledger.campaign_budget("spring").per_day) == [1, 2, 3]
    assert journaled_days(ReleaseJournal.at_home(home)) == [1, 2, 3, 4, 5]  # never rewritten

    # a ledger from another home (campaign "other") is refused without joining this journal
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    with Ledger.at_home(elsewhere) as ledger:
        register(ledger, campaign("other"))
        run_day(ledger, make_plan(campaign("other")), 1, SeededNoise(1))
    restore_sqlite_ledger(elsewhere / "ledger.sqlite", home / "ledger.sqlite")
    with pytest.raises(PublishedReleaseMissing, match="missing days 1-5"):
        run_days(home, range(1, 2))
    assert {e.campaign for e in ReleaseJournal.at_home(home).entries()} == {"spring"}

    # the newest backup holds every published day: runs carry on, drawing only new days
    restore_sqlite_ledger(home / sorted_kept(home)[0], home / "ledger.sqlite")  # the oldest
    run_days(home, range(1, 7), calls)
    assert calls == [("bound", 6), ("release", 6)]
    with Ledger.at_home(home) as ledger:
        assert ledger.releases("spring")[:5] == published


def sorted_kept(home: Path) -> list[str]:
    """The ledgers a restore kept aside, newest last."""
    return sorted(p.name for p in home.glob("ledger-before-restore-*.sqlite"))


def test_a_changed_release_or_a_missing_campaign_level_release_refuses(home: Path) -> None:
    run_days(home, range(1, 3))
    with Ledger.at_home(home) as ledger:
        ledger.release_once("spring", "final_total", PLAN.day_charge(3)["gaussian"], lambda: {})
    run_days(home, range(1, 1))  # journals the campaign-level release
    with sqlite3.connect(home / "ledger.sqlite") as db:
        row = db.execute("SELECT release_json FROM releases WHERE day = 2").fetchone()
        changed = json.loads(row[0])
        changed["values"] = [v + 1.0 for v in changed["values"]]
        db.execute("UPDATE releases SET release_json = ? WHERE day = 2", (json.dumps(changed),))
        db.execute("DELETE FROM campaign_releases")
    with pytest.raises(PublishedReleaseMissing) as refused, Ledger.at_home(home) as ledger:
        ReleaseJournal.at_home(home).reconcile(ledger)
    assert "missing the campaign-level final_total release; changed day 2" in str(refused.value)


def test_a_crash_after_the_commit_leaves_the_journal_behind_and_the_next_open_catches_up(
    home: Path,
) -> None:
    with Ledger.at_home(home) as ledger:  # not guarded: as if killed before journaling
        register(ledger, campaign())
        run_day(ledger, PLAN, 1, SeededNoise(1))
    journal = ReleaseJournal.at_home(home)
    assert journal.entries() == []
    with Ledger.at_home(home) as ledger:
        appended = journal.reconcile(ledger)
    assert [(e.record, e.day) for e in appended] == [("bound", 1), ("release", 1)]


def test_a_torn_last_line_is_skipped_and_a_corrupt_line_refuses(home: Path) -> None:
    run_days(home, range(1, 2))
    journal = ReleaseJournal.at_home(home)
    with journal.path.open("a") as file:
        file.write('{"campaign": "spring", "record": "rel')  # the append was cut short
    assert len(journal.entries()) == 2
    run_days(home, range(1, 3))  # cuts the torn entry off, then appends
    assert journaled_days(journal) == [1, 2]
    assert len(journal.path.read_text().splitlines()) == 4
    lines = journal.path.read_text().splitlines()
    lines[1] = "not json"
    journal.path.write_text("\n".join(lines) + "\n")
    with pytest.raises(LedgerError, match="line 2 is not a release-journal entry"):
        journal.entries()


def test_a_long_outage_is_named_as_ranges_of_days(home: Path, tmp_path: Path) -> None:
    run_days(home, range(1, 2))
    backup = backup_sqlite_ledger(home / "ledger.sqlite", tmp_path / "day1.sqlite")
    run_days(home, range(2, 11))
    restore_sqlite_ledger(backup, home / "ledger.sqlite")
    with pytest.raises(PublishedReleaseMissing, match="missing days 2-10;"):
        run_days(home, range(2, 3))


def test_journal_lines_round_trip() -> None:
    daily = JournalEntry("c1", "release", 4, None, "ab" * 32)
    level = JournalEntry("c1", "campaign_release", None, "final_total", "cd" * 32)
    for entry in (daily, level):
        assert JournalEntry.from_line(entry.to_line()) == entry
    with pytest.raises(ValueError):
        JournalEntry.from_line('{"campaign": "c1", "record": "release", "sha256": "x"}')


def _write_days(path: str) -> None:
    home = Path(path)
    run_days(home, range(1, 11))


def _consistent(path: Path) -> list[int]:
    """Release days of a backup, after checking it is one instant of the ledger: integrity,
    every release has its bound, every charged day has a bound."""
    with Ledger(path, read_only=True) as ledger:
        released = [r.day for r in ledger.releases("spring")]
        bounds = [p.day for p in ledger.published_records() if p.record == "bound"]
        charged = sorted(ledger.campaign_budget("spring").per_day)
    assert released == list(range(1, len(released) + 1))
    assert set(released) <= set(bounds) and set(charged) == set(bounds)
    return released


@pytest.mark.system  # a second process (spawned: ~2 s)
def test_a_backup_taken_while_another_process_writes_is_consistent(
    home: Path, tmp_path: Path
) -> None:
    with Ledger.at_home(home) as ledger:
        register(ledger, campaign())
    writer = multiprocessing.get_context("spawn").Process(target=_write_days, args=(str(home),))
    writer.start()
    seen = []
    for number in range(40):
        backup = backup_sqlite_ledger(home / "ledger.sqlite", tmp_path / f"b{number}.sqlite")
        seen.append(_consistent(backup))
        if not writer.is_alive():
            break
    writer.join(120)
    assert writer.exitcode == 0
    seen.append(_consistent(backup_sqlite_ledger(home / "ledger.sqlite", tmp_path / "last.sqlite")))
    assert seen[-1] == list(range(1, 11))
    assert not list(tmp_path.glob(".*partial*"))


def test_backup_never_overwrites_and_restore_refuses_a_file_that_is_not_a_ledger(
    home: Path, tmp_path: Path
) -> None:
    run_days(home, range(1, 2))
    taken = backup_sqlite_ledger(home / "ledger.sqlite", tmp_path / "b.sqlite")
    with pytest.raises(LedgerError, match="never overwrites"):
        backup_sqlite_ledger(home / "ledger.sqlite", taken)
    other = tmp_path / "other.sqlite"
    with sqlite3.connect(other) as db:
        db.execute("CREATE TABLE t (x)")
    with pytest.raises(LedgerError, match="not a dp-platform ledger backup"):
        restore_sqlite_ledger(other, home / "ledger.sqlite")
    with Ledger.at_home(home) as ledger:
        assert [r.day for r in ledger.releases("spring")] == [1]


def test_the_ledger_commands_back_up_restore_warn_and_a_stale_ledger_refuses_campaign_end(
    home: Path, tmp_path: Path, capsys
) -> None:
    run_days(home, range(1, 3))
    backup = tmp_path / "day2.sqlite"
    assert main(["ledger", "backup", "--home", str(home), "--to", str(backup)]) == 0
    assert f"backed up to {backup}" in capsys.readouterr().out
    run_days(home, range(3, 4))
    assert main(["ledger", "restore", "--home", str(home), "--from", str(backup)]) == 0
    out, err = capsys.readouterr()
    assert "restored from" in out and "kept as" in out
    assert "runs will refuse" in err and "missing day 3" in err
    assert main(["campaign", "end", "spring", "--home", str(home)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("dp-platform campaign: the ledger does not hold what was published")
    assert "missing day 3" in err and err.count("\n") == 1
    assert main(["ledger", "backup", "--home", str(home), "--to", str(backup)]) == 2
    assert "never overwrites" in capsys.readouterr().err

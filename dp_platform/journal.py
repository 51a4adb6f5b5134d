"""The release journal: an append-only record, outside the ledger, of every published draw.

Why: the ledger makes each draw happen once — as long as the ledger still holds it. Restore a
ledger backup older than the latest release and the days after the backup look undrawn; the next
run would draw them again with fresh noise, and two releases of one day let anyone average the
noise away (docs/privacy.md). So every write-once record the ledger commits (a day's bound
choice, a day's release, a campaign-level release) is also appended here, one JSON line each:

    {"campaign": "c1", "record": "release", "day": 4, "sha256": "…", "journaled_at": "…"}

and before a ledger is used (:meth:`ReleaseJournal.guarding`), every journaled record must be in
it with the same hash; otherwise :class:`PublishedReleaseMissing` refuses before anything is
drawn. The hash is of the stored record (DP outputs only, never the chain's secret state), so a
journal line reveals nothing that was not published.

The file is opened with ``O_APPEND`` and fsynced; lines are only ever added. A crash between the
ledger's commit and the append leaves the journal *behind* the ledger, never ahead: the next
:meth:`~ReleaseJournal.reconcile` appends what the ledger has and the journal lacks, which is
safe (it only adds records that exist). The other direction — the ledger behind the journal —
is exactly what a stale restore looks like, and it is refused.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from dp_platform.errors import LedgerError, PublishedReleaseMissing, StorageError
from dp_platform.file_lock import exclusive
from dp_platform.ledger import Ledger
from dp_platform.ledger_records import PublishedRecord

__all__ = ["JournalEntry", "ReleaseJournal", "record_hash"]

# The ledger's write-once records (dp_platform/ledger.py, Ledger.published_records).
_KINDS = ("bound", "release", "campaign_release")


def record_hash(stored_json: str) -> str:
    """SHA-256 of a record's JSON text exactly as the ledger stored it (written once by
    ``json.dumps`` and never rewritten; a backend must keep the text verbatim). Hashing the text,
    not a re-serialised form, keeps the check at a few microseconds a record."""
    return hashlib.sha256(stored_json.encode()).hexdigest()


@dataclass(frozen=True)
class JournalEntry:
    """One published record: which campaign, which record (``day`` for daily ones, ``name``
    for campaign-level ones) and the hash of what the ledger stored."""

    campaign: str
    record: str
    day: int | None
    name: str | None
    sha256: str

    @property
    def key(self) -> tuple[str, str, int | None, str | None]:
        return (self.campaign, self.record, self.day, self.name)

    @classmethod
    def of(cls, published: PublishedRecord) -> JournalEntry:
        return cls(
            published.campaign,
            published.record,
            published.day,
            published.name,
            record_hash(published.stored_json),
        )

    def to_line(self) -> str:
        document: dict[str, object] = {"campaign": self.campaign, "record": self.record}
        document.update({"day": self.day} if self.name is None else {"kind": self.name})
        document["sha256"] = self.sha256
        document["journaled_at"] = datetime.now(UTC).isoformat(timespec="seconds")
        return json.dumps(document) + "\n"

    @classmethod
    def from_line(cls, line: str) -> JournalEntry:
        return cls.from_document(json.loads(line))

    @classmethod
    def from_document(cls, document: dict[str, object]) -> JournalEntry:
        """An entry from a parsed line; ValueError if the line is not one."""
        campaign, record = document.get("campaign"), document.get("record")
        digest, day, name = document.get("sha256"), document.get("day"), document.get("kind")
        if not (isinstance(campaign, str) and isinstance(record, str) and record in _KINDS):
            raise ValueError("not a journal entry")
        if not isinstance(digest, str):
            raise ValueError("not a journal entry")
        if isinstance(day, int) and name is None:
            return cls(campaign, record, day, None, digest)
        if day is None and isinstance(name, str):
            return cls(campaign, record, None, name, digest)
        raise ValueError("not a journal entry")


class ReleaseJournal:
    """``<home>/journal/releases.jsonl`` (one file per home; never rewritten, never restored
    from a backup: it is what a restored ledger is checked against)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    @classmethod
    def at_home(cls, home: str | Path) -> ReleaseJournal:
        return cls(Path(home) / "journal" / "releases.jsonl")

    # -- reading ----------------------------------------------------------------------------

    def entries(self) -> list[JournalEntry]:
        """Every entry, oldest first. A torn last line (a crash mid-append; the ledger had
        committed, so reconciling re-appends it) is skipped; any other bad line is refused."""
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return []
        except OSError as error:
            raise StorageError(f"{self.path}: cannot read the release journal ({error})") from None
        *body, last = text.split("\n")  # last: "" after a final newline, else unterminated
        try:  # one parse for the whole file; line by line only to name a bad line
            documents = json.loads("[" + ",".join(line for line in body if line) + "]")
            entries = [JournalEntry.from_document(d) for d in documents]
        except (ValueError, TypeError, AttributeError):
            entries = [self._line(number, line) for number, line in enumerate(body, 1) if line]
        if last:  # complete but its newline lost, or cut short by a crash: never a record
            with suppress(ValueError, TypeError, AttributeError):
                entries.append(JournalEntry.from_line(last))
        return entries

    def _line(self, number: int, line: str) -> JournalEntry:
        try:
            return JournalEntry.from_line(line)
        except (ValueError, TypeError, AttributeError):
            raise LedgerError(
                f"{self.path}: line {number} is not a release-journal entry; the journal "
                "is append-only and must not be edited (restore it from its own copy)"
            ) from None

    # -- writing ----------------------------------------------------------------------------

    @contextmanager
    def _locked(self) -> Iterator[None]:
        """One reconciler at a time per home (two runs must not both append the same day)."""
        with ExitStack() as held:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                held.enter_context(exclusive(self.path.parent / ".lock"))
            except OSError as error:
                raise StorageError(
                    f"{self.path.parent}: cannot open the release journal ({error})"
                ) from None
            yield

    def _append(self, entries: list[JournalEntry]) -> None:
        """Append in one write, then fsync (and fsync the directory when the file is new)."""
        created = not self.path.exists()
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                text = _after_tail(fd) + "".join(e.to_line() for e in entries)
                os.write(fd, text.encode("utf-8"))
                os.fsync(fd)
            finally:
                os.close(fd)
            if created:
                directory = os.open(self.path.parent, os.O_RDONLY)
                try:
                    os.fsync(directory)
                finally:
                    os.close(directory)
        except OSError as error:
            raise StorageError(
                f"{self.path}: cannot append to the release journal ({error.strerror or error})"
            ) from None

    def reconcile(self, ledger: Ledger) -> list[JournalEntry]:
        """Append the ledger's records that the journal lacks (a crash after a commit), then
        refuse if the journal holds a record the ledger lacks or stores differently. Returns the
        entries appended. Draws nothing and reveals no value."""
        return self._reconcile(ledger)[0]

    def _reconcile(self, ledger: Ledger) -> tuple[list[JournalEntry], set[tuple]]:
        published = {e.key: e for e in map(JournalEntry.of, ledger.published_records())}
        with self._locked():
            journaled = self.entries()
            # refuse before appending: a ledger from another home or an old backup must not
            # add its records to this journal (restoring the right ledger would then fail)
            self._refuse_if_missing(journaled, published)
            known = {e.key for e in journaled}
            new = [e for key, e in published.items() if key not in known]
            if new:
                self._append(new)
        return new, set(published)

    def check(self, ledger: Ledger) -> None:
        """Refuse (PublishedReleaseMissing) unless the ledger holds every journaled record with
        the same hash; appends nothing (a restore checks a file before any run trusts it)."""
        published = {e.key: e for e in map(JournalEntry.of, ledger.published_records())}
        self._refuse_if_missing(self.entries(), published)

    def record(self, ledger: Ledger, *, known: set[tuple] | None = None) -> list[JournalEntry]:
        """Append what the ledger has and the journal lacks (after a step that may have drawn);
        never refuses, so it is safe on the way out of a failing step. ``known``: keys already
        journaled (from :meth:`reconcile`): only records outside it are hashed."""
        records = ledger.published_records()
        fresh = [p for p in records if known is None or _key(p) not in known]
        if not fresh:
            return []
        with self._locked():
            journaled = {e.key for e in self.entries()}
            new = [e for e in map(JournalEntry.of, fresh) if e.key not in journaled]
            if new:
                self._append(new)
        return new

    @contextmanager
    def guarding(self, ledger: Ledger) -> Iterator[Ledger]:
        """Use ``ledger`` only if it holds every journaled record (refused otherwise, before
        anything is drawn); journal what was drawn on the way out, whatever happened."""
        _, known = self._reconcile(ledger)
        try:
            yield ledger
        finally:
            self.record(ledger, known=known)

    # -- the check --------------------------------------------------------------------------

    def _refuse_if_missing(
        self, journaled: list[JournalEntry], in_ledger: dict[tuple, JournalEntry]
    ) -> None:
        missing: dict[str, list[JournalEntry]] = {}
        changed: dict[str, list[JournalEntry]] = {}
        for entry in journaled:  # a key journaled twice with two hashes: one of them differs
            stored = in_ledger.get(entry.key)
            if stored is None:
                missing.setdefault(entry.campaign, []).append(entry)
            elif stored.sha256 != entry.sha256:
                changed.setdefault(entry.campaign, []).append(entry)
        if not missing and not changed:
            return
        parts = []
        for campaign in sorted(set(missing) | set(changed)):
            said = []
            if campaign in missing:
                said.append(f"missing {_records_text(missing[campaign])}")
            if campaign in changed:
                said.append(f"changed {_records_text(changed[campaign])}")
            parts.append(f"campaign '{campaign}': {'; '.join(said)}")
        raise PublishedReleaseMissing(
            f"the ledger does not hold what was published ({' | '.join(parts)}; journal "
            f"{self.path}); nothing was drawn. Restore the newest ledger backup that holds these "
            "records (`dp-platform ledger restore`): re-drawing a published day would break its "
            "privacy guarantee (docs/operators.md, 'Backups and the release journal')"
        )


def _key(published: PublishedRecord) -> tuple[str, str, int | None, str | None]:
    return (published.campaign, published.record, published.day, published.name)


def _after_tail(fd: int) -> str:
    """What must precede a new line: nothing after a complete line; a newline after a complete
    entry whose newline was lost. A torn entry (a crash mid-append) is cut off first: it was
    never a record (its ledger row is re-appended from the ledger by the caller)."""
    size = os.fstat(fd).st_size
    if size == 0 or os.pread(fd, 1, size - 1) == b"\n":
        return ""
    text = os.pread(fd, size, 0)
    start = text.rfind(b"\n") + 1
    try:
        JournalEntry.from_line(text[start:].decode("utf-8"))
        return "\n"
    except (ValueError, TypeError):
        os.ftruncate(fd, start)
        return ""


def _records_text(entries: list[JournalEntry]) -> str:
    """The days (bound or release) and campaign-level releases named, e.g. 'days 4, 5 and the
    campaign-level reach release' — names and day numbers only, never a value."""
    days = sorted({e.day for e in entries if e.day is not None})
    levels = sorted({e.name for e in entries if e.name is not None})
    texts = []
    if days:
        texts.append(f"{'day' if len(days) == 1 else 'days'} {_ranges(days)}")
    texts += [f"the campaign-level {name} release" for name in levels]
    return " and ".join(texts)


def _ranges(days: list[int]) -> str:
    """[1, 2, 3, 5, 7, 8] → '1-3, 5, 7, 8': a long outage stays one short line."""
    runs: list[list[int]] = []
    for day in days:
        if runs and day == runs[-1][-1] + 1:
            runs[-1].append(day)
        else:
            runs.append([day])
    return ", ".join(f"{r[0]}-{r[-1]}" if len(r) > 2 else ", ".join(map(str, r)) for r in runs)

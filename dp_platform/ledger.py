"""The privacy ledger: budget accounts, reservations, per-day charges, write-once releases, and
the secret state of the bound chain. One write transaction per release, on SQLite (the default,
``<home>/ledger.sqlite``) or PostgreSQL (dp_platform/ledger_backends/: how each locks).

Why a ledger and not Dagster's own storage: re-runs are normal (retries, backfills, resumed runs,
two processes racing), and a release re-drawn with fresh noise would let anyone average the noise
away. So correctness lives here, in one transaction per day and phase:

    lock → return the stored result if present → check the budget → draw → store and charge → commit

The draw happens inside the lock, so two processes can never both draw for the same day, and a
process killed before the commit leaves nothing behind: the draw was never stored, never shown,
and the day is drawn afresh (for the first and only time that counts) on the next run.

Amounts of ρ are stored as exact fractions ("p/q" text), so sums never drift. The bound chain's
state (bound list, SVT noisy thresholds) is secret: it is stored here and never returned to a UI.
The SQL below is written once, with ``?`` placeholders, in the subset both databases share; the
schema is the migration files of dp_platform/ledger_backends/migrations/.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from dp_platform.config import AccountConfig
from dp_platform.errors import (
    BudgetExceeded,
    CampaignEnded,
    LedgerError,
    MissingPreviousDay,
    PlanMismatch,
    StorageError,
)
from dp_platform.faults import fault_point
from dp_platform.ledger_backends import home_ledger, open_backend
from dp_platform.ledger_backends.base import LedgerBackend, Session, storage_error
from dp_platform.ledger_budget import (
    account_cap,
    book_charges,
    campaign_row,
    campaign_spent,
    check_budget,
    reserved_rho,
)
from dp_platform.ledger_records import CampaignBudget, CampaignRecord, PublishedRecord, utc_now
from dp_platform.mechanisms.base import Chain, ChoiceT, Measurement, StateT
from dp_platform.privacy.accounting import Rho
from dp_platform.records import from_record, to_record
from dp_platform.settings import LedgerConfig

__all__ = [
    "BudgetExceeded",
    "CampaignEnded",
    "CampaignRecord",
    "Ledger",
    "LedgerError",
    "MissingPreviousDay",
    "PlanMismatch",
    "PublishedRecord",
    "StorageError",
]


def _text(value: object) -> str:
    """A dataclass as the JSON text the ledger stores (dp_platform/records.py, lossless)."""
    return json.dumps(to_record(value))


class Ledger:
    """One ledger database; every method is safe to call from several processes at once."""

    def __init__(
        self, where: str | Path, *, timeout: float = 300.0, read_only: bool = False
    ) -> None:
        """``where``: a SQLite file's path or a ``postgresql://`` URL. ``read_only``: for the
        views ``budget`` and ``releases``: nothing is created, written or migrated, so they
        work on a read-only home (and on a read-only database role)."""
        self.path = where
        self._backend: LedgerBackend = open_backend(where, timeout=timeout, read_only=read_only)
        self._db: Session = self._backend.session

    @contextmanager
    def _storage(self, doing: str) -> Iterator[None]:
        """The backend's storage faults (disk full, read-only, vanished file, server gone) as
        one StorageError naming the ledger; rule errors (LedgerError) pass through unchanged."""
        try:
            yield
        except LedgerError:
            raise
        except self._backend.storage_errors as error:
            raise storage_error(self._backend.where, doing, error) from None

    @classmethod
    def at_home(
        cls, home: str | Path, *, read_only: bool = False, declared: LedgerConfig | None = None
    ) -> Ledger:
        """The ledger a platform home uses (dp_platform/ledger_backends: ``home_ledger``).
        ``declared``: the catalogue's ``ledger:`` block, from commands that run a catalogue."""
        return cls(home_ledger(home, declared, read_only=read_only), read_only=read_only)

    def backup(self, destination: str | Path) -> None:
        """A consistent copy of the whole ledger at ``destination`` while others may write:
        SQLite's backup API (a SQLite file), or ``pg_dump --format=custom`` (for pg_restore)."""
        with self._storage("back up"):
            self._backend.backup(Path(destination))

    def close(self) -> None:
        self._backend.close()

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def _transaction(self) -> Iterator[Session]:
        """The backend's write transaction (SQLite: BEGIN IMMEDIATE; PostgreSQL: the account
        row locked FOR UPDATE by :meth:`_lock`), so check-then-write cannot race. A storage
        fault (disk full, …) rolls back and is raised as one StorageError."""
        with self._storage("write"), self._backend.transaction() as db:
            yield db

    def _lock(
        self, db: Session, *, account: str | None = None, campaign: str | None = None
    ) -> None:
        """Hold the budget account (by name, or the campaign's) until commit: every write
        transaction that reads a budget does this first."""
        self._backend.lock_account(db, account=account, campaign=campaign)

    # -- accounts and campaigns -------------------------------------------------------------

    def ensure_account(self, account: AccountConfig) -> None:
        """Create the account, or check the catalogue's cap is the ledger's."""
        cap = Rho.of(account.rho_cap)
        with self._transaction() as db:
            row = db.execute(
                "SELECT rho_cap FROM accounts WHERE name = ?", (account.name,)
            ).fetchone()
            if row is None:
                db.execute(  # ON CONFLICT: another process may create it at the same moment
                    "INSERT INTO accounts VALUES (?, ?, ?) ON CONFLICT (name) DO NOTHING",
                    (account.name, cap.to_json(), utc_now()),
                )
                row = db.execute(
                    "SELECT rho_cap FROM accounts WHERE name = ?", (account.name,)
                ).fetchone()
            if Rho.from_json(row[0]) != cap:
                stored = float(Rho.from_json(row[0]))
                raise LedgerError(
                    f"account {account.name}: the ledger's cap is ρ = {stored:g} "
                    f"but the catalogue says {account.rho_cap:g}; a cap is changed only with "
                    "`dp-platform budget --set-cap` by the privacy officer"
                )

    def set_cap(self, account: str, rho_cap: float) -> None:
        """Change an account's cap; refused if it would fall below what is already reserved."""
        cap = Rho.of(rho_cap)
        with self._transaction() as db:
            self._lock(db, account=account)
            if db.execute("SELECT 1 FROM accounts WHERE name = ?", (account,)).fetchone() is None:
                raise LedgerError(f"account {account} is not in the ledger")
            reserved = reserved_rho(db, account)
            if cap < reserved:
                raise BudgetExceeded(
                    f"account {account}: cannot lower the cap to ρ = {float(cap):g}, "
                    f"campaigns already reserve ρ = {float(reserved):g}"
                )
            db.execute("UPDATE accounts SET rho_cap = ? WHERE name = ?", (cap.to_json(), account))

    def register(self, record: CampaignRecord, account: AccountConfig) -> bool:
        """Reserve the campaign's whole plan against its account's cap. True if newly registered
        (False: it already was — the caller compares what was registered).

        Refused (BudgetExceeded, with the figures) if the cap would be exceeded.
        """
        if record.account != account.name:
            raise LedgerError(f"campaign {record.name} belongs to account {record.account}")
        self.ensure_account(account)
        with self._transaction() as db:
            self._lock(db, account=account.name)
            if db.execute("SELECT 1 FROM campaigns WHERE name = ?", (record.name,)).fetchone():
                return False
            cap = account_cap(db, account.name)
            reserved = reserved_rho(db, account.name)
            if reserved + record.planned > cap:
                raise BudgetExceeded(
                    f"campaign {record.name} needs ρ = {float(record.planned):g} but account "
                    f"{account.name} has {float(cap - reserved):g} left of its cap "
                    f"{float(cap):g} (ρ = {float(reserved):g} already reserved)"
                )
            now = utc_now()
            db.execute(
                "INSERT INTO campaigns VALUES (?, ?, ?, ?, ?, ?, ?, ?, NULL)",
                (
                    record.name,
                    account.name,
                    record.planned.to_json(),
                    record.days,
                    json.dumps(record.declared),
                    json.dumps(record.config),
                    json.dumps(record.plan),
                    now,
                ),
            )
            db.execute(
                "INSERT INTO campaign_history VALUES (?, ?, 'registered', NULL, ?)",
                (record.name, now, record.planned.to_json()),
            )
            return True

    def campaign_record(self, campaign: str) -> CampaignRecord | None:
        """The campaign as registered, or None if it never was."""
        row = self._db.execute(
            "SELECT name, account, days, planned, declared_json, config_json, plan_json, "
            "ended_at FROM campaigns WHERE name = ?",
            (campaign,),
        ).fetchone()
        if row is None:
            return None
        return CampaignRecord(
            name=row[0],
            account=row[1],
            days=int(row[2]),
            planned=Rho.from_json(row[3]),
            declared=json.loads(row[4]),
            config=json.loads(row[5]),
            plan=json.loads(row[6]),
            ended_at=row[7],
        )

    def end_campaign(self, campaign: str, *, cancel: bool = False) -> tuple[Rho, Rho]:
        """End a campaign: it releases nothing more, and its reservation shrinks to what it has
        spent, so the rest returns to the account. Returns (planned before, planned after).

        ``cancel``: only for a campaign that has spent nothing (refused, naming the charged days,
        otherwise); its whole reservation returns. Both are kept in the campaign's history.
        Sound because every charge is at least the privacy loss its step may have caused: an
        ended campaign can never lose more than it was charged.
        """
        with self._transaction() as db:
            self._lock(db, campaign=campaign)
            _, planned, _ = campaign_row(db, campaign)
            ended = db.execute("SELECT ended_at FROM campaigns WHERE name = ?", (campaign,))
            when = ended.fetchone()[0]
            if when is not None:
                raise CampaignEnded(f"campaign {campaign} was already ended at {when}")
            spent = campaign_spent(db, campaign)
            if cancel and spent > Rho.zero():
                days = [
                    r[0]
                    for r in db.execute(
                        "SELECT DISTINCT day FROM charges WHERE campaign = ? ORDER BY day",
                        (campaign,),
                    )
                ]
                shown = ", ".join("campaign-level" if d == 0 else str(d) for d in days)
                raise LedgerError(
                    f"campaign {campaign} cannot be cancelled: it has spent ρ = "
                    f"{float(spent):.6g} on day(s) {shown}; end it instead (`dp-platform campaign "
                    f"end {campaign}`), which returns only the unspent part"
                )
            now = utc_now()
            db.execute(
                "UPDATE campaigns SET planned = ?, ended_at = ? WHERE name = ?",
                (spent.to_json(), now, campaign),
            )
            db.execute(
                "INSERT INTO campaign_history VALUES (?, ?, ?, ?, ?)",
                (
                    campaign,
                    now,
                    "cancelled" if cancel else "ended",
                    planned.to_json(),
                    spent.to_json(),
                ),
            )
            return planned, spent

    def campaign_history(self, campaign: str) -> list[dict]:
        """Registration, end and cancellation of a campaign, oldest first (the officer's audit)."""
        # registration, then at most one end or cancellation: ordered without SQLite's rowid
        rows = self._db.execute(
            "SELECT at, action, planned_before, planned_after FROM campaign_history "
            "WHERE campaign = ? ORDER BY CASE action WHEN 'registered' THEN 0 ELSE 1 END, at",
            (campaign,),
        )
        return [
            {
                "at": at,
                "action": action,
                "planned_before": None if before is None else float(Rho.from_json(before)),
                "planned_after": float(Rho.from_json(after)),
            }
            for at, action, before, after in rows
        ]

    # -- the two write-once chains ----------------------------------------------------------

    def bound_for_day(
        self,
        campaign: str,
        day: int,
        expected_charges: dict[str, Rho],
        choose: Callable[[StateT], tuple[ChoiceT, StateT]],
        chain: Chain[ChoiceT, StateT],
    ) -> tuple[ChoiceT, bool]:
        """Day ``day``'s bound: the stored one, or ``choose(state of day − 1)`` stored once.

        Returns (choice, drawn_now). Fails without drawing if day − 1 has no stored state.
        ``chain`` names the mechanism's choice and state types, stored as records.
        """
        with self._transaction() as db:
            self._lock(db, campaign=campaign)
            row = db.execute(
                "SELECT choice_json FROM bound_choices WHERE campaign = ? AND day = ?",
                (campaign, day),
            ).fetchone()
            if row is not None:
                return from_record(chain.choice, json.loads(row[0])), False
            previous = self._bound_state(db, campaign, day - 1, chain)
            check_budget(db, campaign, day, expected_charges)
            choice, state = choose(previous)
            fault_point("bound.drawn")
            if choice.day != day or state.day != day:
                raise LedgerError(f"bound chain out of step: computed day {choice.day}, need {day}")
            if choice.charges != expected_charges:
                raise LedgerError(f"campaign {campaign}, day {day}: unexpected charges")
            db.execute(
                "INSERT INTO bound_choices VALUES (?, ?, ?, ?, ?)",
                (campaign, day, _text(choice), _text(state), utc_now()),
            )
            book_charges(db, campaign, day, choice.charges)
            return choice, True

    def _bound_state(
        self, db: Session, campaign: str, day: int, chain: Chain[ChoiceT, StateT]
    ) -> StateT:
        if day == 0:
            return chain.state()
        row = db.execute(
            "SELECT secret_state_json FROM bound_choices WHERE campaign = ? AND day = ?",
            (campaign, day),
        ).fetchone()
        if row is None:
            raise MissingPreviousDay(
                f"campaign {campaign}: day {day} has no contribution bound, so day {day + 1} "
                f"cannot choose one; materialise day {day} first (backfills run days in order)"
            )
        return from_record(chain.state, json.loads(row[0]))

    def release_for_day(
        self,
        campaign: str,
        day: int,
        expected_charges: dict[str, Rho],
        draw: Callable[[ChoiceT], Measurement],
        publishers: list[str],
        chain: Chain[ChoiceT, StateT],
    ) -> tuple[Measurement, bool]:
        """Day ``day``'s release: the stored one, or ``draw(bound of the day)`` stored once.

        Needs the day's bound and the previous day's release; returns (release, drawn_now).
        ``publishers`` must be the keys frozen at registration: every day releases the same k.
        """
        with self._transaction() as db:
            self._lock(db, campaign=campaign)
            stored = self._release(db, campaign, day)
            if stored is not None:
                return stored, False
            self._check_publishers(db, campaign, publishers)
            if day > 1 and self._release(db, campaign, day - 1) is None:
                raise MissingPreviousDay(
                    f"campaign {campaign}: day {day - 1} has no release; materialise it before "
                    f"day {day} (backfills run days in order)"
                )
            row = db.execute(
                "SELECT choice_json FROM bound_choices WHERE campaign = ? AND day = ?",
                (campaign, day),
            ).fetchone()
            if row is None:
                raise MissingPreviousDay(
                    f"campaign {campaign}: day {day} has no contribution bound yet"
                )
            check_budget(db, campaign, day, expected_charges)
            measurement = draw(from_record(chain.choice, json.loads(row[0])))
            fault_point("release.drawn")
            if measurement.day != day or measurement.charges != expected_charges:
                raise LedgerError(f"campaign {campaign}, day {day}: release out of step")
            db.execute(
                "INSERT INTO releases VALUES (?, ?, ?, ?)",
                (campaign, day, _text(measurement), utc_now()),
            )
            book_charges(db, campaign, day, measurement.charges)
            return measurement, True

    @staticmethod
    def _check_publishers(db: Session, campaign: str, publishers: list[str]) -> None:
        """The release is over the publisher keys frozen at registration, in their order."""
        row = db.execute("SELECT config_json FROM campaigns WHERE name = ?", (campaign,)).fetchone()
        if row is None:
            raise LedgerError(f"campaign {campaign} is not registered in the ledger")
        frozen = json.loads(row[0])["publishers"]
        if frozen != list(publishers):
            raise LedgerError(
                f"campaign {campaign}: a release must be over the {len(frozen)} publisher keys "
                "frozen at registration; nothing was drawn"
            )

    def bind_warehouse(self, campaign: str, warehouse: str) -> str:
        """Bind the campaign to the warehouse ``warehouse`` (its identity) unless it is bound
        already; returns the warehouse it is bound to. Write-once: the first binder wins."""
        row = self._db.execute(
            "SELECT warehouse FROM campaign_warehouses WHERE campaign = ?", (campaign,)
        ).fetchone()
        if row is not None:  # fast path: a binding never changes once stored
            return str(row[0])
        with self._transaction() as db:
            self._lock(db, campaign=campaign)
            campaign_row(db, campaign)  # refuses an unregistered campaign
            db.execute(
                "INSERT INTO campaign_warehouses VALUES (?, ?, ?) ON CONFLICT (campaign) "
                "DO NOTHING",
                (campaign, warehouse, utc_now()),
            )
            row = db.execute(
                "SELECT warehouse FROM campaign_warehouses WHERE campaign = ?", (campaign,)
            ).fetchone()
        return str(row[0])

    def campaign_info(self, campaign: str) -> dict:
        """The registered plan record and publisher keys of a campaign (for read-only views)."""
        record = self.campaign_record(campaign)
        if record is None:
            raise LedgerError(f"campaign {campaign} is not registered in the ledger")
        return {
            "account": record.account,
            "plan": record.plan,
            "publishers": list(record.config["publishers"]),
            "ended_at": record.ended_at,
        }

    @staticmethod
    def _release(db: Session, campaign: str, day: int) -> Measurement | None:
        row = db.execute(
            "SELECT release_json FROM releases WHERE campaign = ? AND day = ?", (campaign, day)
        ).fetchone()
        return None if row is None else from_record(Measurement, json.loads(row[0]))

    # -- campaign-level releases (one per kind: "one_shot", "reach") ----------------------

    def release_once(
        self, campaign: str, kind: str, charge: Rho, draw: Callable[[], dict]
    ) -> tuple[dict, bool]:
        """A campaign-level release: the stored one, or ``draw()`` stored once and charged.

        Same transaction as the daily chains (lock → stored? → budget → draw → store, charge);
        the charge is booked on day 0 under the part ``kind``.
        """
        with self._transaction() as db:
            self._lock(db, campaign=campaign)
            row = db.execute(
                "SELECT release_json FROM campaign_releases WHERE campaign = ? AND kind = ?",
                (campaign, kind),
            ).fetchone()
            if row is not None:
                return json.loads(row[0]), False
            charges = {kind: charge}
            check_budget(db, campaign, 0, charges)
            payload = draw()
            fault_point("campaign_release.drawn")
            db.execute(
                "INSERT INTO campaign_releases VALUES (?, ?, ?, ?)",
                (campaign, kind, json.dumps(payload), utc_now()),
            )
            book_charges(db, campaign, 0, charges)
            return payload, True

    def campaign_releases(self, campaign: str) -> dict[str, dict]:
        rows = self._db.execute(
            "SELECT kind, release_json FROM campaign_releases WHERE campaign = ? ORDER BY kind",
            (campaign,),
        ).fetchall()
        return {kind: json.loads(text) for kind, text in rows}

    # -- reading ------------------------------------------------------------------------------

    def bound_choice(
        self, campaign: str, day: int, chain: Chain[ChoiceT, StateT]
    ) -> ChoiceT | None:
        row = self._db.execute(
            "SELECT choice_json FROM bound_choices WHERE campaign = ? AND day = ?", (campaign, day)
        ).fetchone()
        return None if row is None else from_record(chain.choice, json.loads(row[0]))

    def bound_state(self, campaign: str, day: int, chain: Chain[ChoiceT, StateT]) -> StateT:
        """The bound chain's secret state after ``day`` (checks only: never shown or logged)."""
        return self._bound_state(self._db, campaign, day, chain)

    def releases(self, campaign: str, through: int | None = None) -> list[Measurement]:
        """Stored releases of a campaign in day order (DP values only)."""
        rows = self._db.execute(
            "SELECT release_json FROM releases WHERE campaign = ? AND day <= ? ORDER BY day",
            (campaign, through if through is not None else 1 << 30),
        ).fetchall()
        return [from_record(Measurement, json.loads(r[0])) for r in rows]

    def published_records(self) -> list[PublishedRecord]:
        """Every write-once record of every campaign, for the release journal
        (dp_platform/journal.py). One read transaction, so the three tables agree."""
        with self._storage("read"), self._backend.snapshot() as db:
            bounds = db.execute("SELECT campaign, day, choice_json FROM bound_choices")
            records = [PublishedRecord(c, "bound", d, None, j) for c, d, j in bounds]
            daily = db.execute("SELECT campaign, day, release_json FROM releases")
            records += [PublishedRecord(c, "release", d, None, j) for c, d, j in daily]
            level = db.execute("SELECT campaign, kind, release_json FROM campaign_releases")
            records += [PublishedRecord(c, "campaign_release", None, k, j) for c, k, j in level]
        return records

    def campaigns(self) -> list[str]:
        return [r[0] for r in self._db.execute("SELECT name FROM campaigns ORDER BY name")]

    def campaign_budget(self, campaign: str) -> CampaignBudget:
        account, planned, _ = campaign_row(self._db, campaign)
        per_day: dict[int, dict[str, Rho]] = {}
        rows = self._db.execute(
            "SELECT day, part, rho FROM charges WHERE campaign = ? ORDER BY day, part", (campaign,)
        )
        for day, part, rho in rows:
            per_day.setdefault(int(day), {})[part] = Rho.from_json(rho)
        spent = sum((r for parts in per_day.values() for r in parts.values()), Rho.zero())
        return CampaignBudget(campaign, account, planned, spent, per_day)

    def budget_report(self) -> dict:
        """Accounts (cap, reserved, spent) and campaigns (planned, spent, remaining, per day)."""
        budgets = [self.campaign_budget(name) for name in self.campaigns()]
        accounts = {}
        for name, cap_text in self._db.execute("SELECT name, rho_cap FROM accounts ORDER BY name"):
            cap = Rho.from_json(cap_text)
            reserved = reserved_rho(self._db, name)
            spent = sum((b.spent for b in budgets if b.account == name), Rho.zero())
            accounts[name] = {
                "rho_cap": float(cap),
                "reserved": float(reserved),
                "unreserved": float(cap - reserved),
                "spent": float(spent),
            }
        campaigns = {}
        for budget in budgets:
            history = self.campaign_history(budget.name)
            status = {"ended": "ended", "cancelled": "cancelled"}.get(history[-1]["action"])
            campaigns[budget.name] = {
                **budget.to_json(),
                "status": status or "registered",
                "history": history,
            }
        return {"accounts": accounts, "campaigns": campaigns}

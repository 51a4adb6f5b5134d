"""The budget rule in SQL, on one ledger transaction: what is reserved, spent and capped, the
check made before a draw and the booking of its charges.

Every function takes the caller's session; :class:`~dp_platform.ledger.Ledger` calls them inside
its locked write transaction (lock → stored? → check_budget → draw → store, book_charges), so
a check and the charge it allows cannot race.
"""

from __future__ import annotations

from dp_platform.errors import BudgetExceeded, CampaignEnded, LedgerError
from dp_platform.ledger_backends.base import Session
from dp_platform.ledger_records import utc_now
from dp_platform.privacy.accounting import Rho

__all__ = [
    "account_cap",
    "book_charges",
    "campaign_row",
    "campaign_spent",
    "check_budget",
    "reserved_rho",
]


def reserved_rho(db: Session, account: str) -> Rho:
    """What the account's registered campaigns reserve: the sum of their whole plans."""
    rows = db.execute("SELECT planned FROM campaigns WHERE account = ?", (account,)).fetchall()
    return sum((Rho.from_json(r[0]) for r in rows), Rho.zero())


def account_cap(db: Session, account: str) -> Rho:
    """The account's cap as the ledger stores it (the catalogue's is checked against it)."""
    row = db.execute("SELECT rho_cap FROM accounts WHERE name = ?", (account,)).fetchone()
    return Rho.from_json(row[0])


def campaign_row(db: Session, campaign: str) -> tuple[str, Rho, int]:
    """(account, planned ρ, days) of a registered campaign; refuses an unregistered one."""
    row = db.execute(
        "SELECT account, planned, days FROM campaigns WHERE name = ?", (campaign,)
    ).fetchone()
    if row is None:
        raise LedgerError(f"campaign {campaign} is not registered in the ledger")
    return row[0], Rho.from_json(row[1]), int(row[2])


def campaign_spent(db: Session, campaign: str) -> Rho:
    """Everything charged to the campaign so far, exact."""
    rows = db.execute("SELECT rho FROM charges WHERE campaign = ?", (campaign,)).fetchall()
    return sum((Rho.from_json(r[0]) for r in rows), Rho.zero())


def check_budget(db: Session, campaign: str, day: int, charges: dict[str, Rho]) -> None:
    """Refuse, before anything is drawn, a charge past the campaign's plan or its account's cap,
    or for an ended campaign or a day outside it (the caller holds the account's lock)."""
    account, planned, days = campaign_row(db, campaign)
    ended = db.execute("SELECT ended_at FROM campaigns WHERE name = ?", (campaign,)).fetchone()
    if ended[0] is not None:
        raise CampaignEnded(
            f"campaign {campaign} was ended at {ended[0]}; it releases nothing more "
            "(nothing was drawn or charged)"
        )
    if not 0 <= day <= days:  # day 0: campaign-level releases (one-shot, reach)
        raise LedgerError(f"campaign {campaign} has days 1..{days}; day {day} is outside")
    cost = sum(charges.values(), Rho.zero())
    spent = campaign_spent(db, campaign)
    if spent + cost > planned:
        raise BudgetExceeded(
            f"campaign {campaign}, day {day}: charging ρ = {float(cost):.6g} would exceed its "
            f"plan (spent {float(spent):.6g} of {float(planned):.6g}); nothing was released"
        )
    cap = account_cap(db, account)
    rows = db.execute(
        "SELECT c.rho FROM charges c JOIN campaigns k ON c.campaign = k.name WHERE k.account = ?",
        (account,),
    ).fetchall()
    account_spent = sum((Rho.from_json(r[0]) for r in rows), Rho.zero())
    if account_spent + cost > cap:
        raise BudgetExceeded(
            f"account {account}: charging ρ = {float(cost):.6g} for campaign {campaign}, day "
            f"{day} would exceed its cap {float(cap):g}; nothing was released"
        )


def book_charges(db: Session, campaign: str, day: int, charges: dict[str, Rho]) -> None:
    """Book the day's charges, part by part, in the transaction that stores its release."""
    db.executemany(
        "INSERT INTO charges VALUES (?, ?, ?, ?, ?)",
        [(campaign, day, part, rho.to_json(), utc_now()) for part, rho in charges.items()],
    )

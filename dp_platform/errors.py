"""The errors an operator can fix, in one light module (the CLI imports it before anything else).

Each is shown as one line on stderr with exit code 2 (``dp_platform/cli.py``); the message names
the field, file or campaign and the rule that was broken — never a data value.
"""

from __future__ import annotations

__all__ = [
    "BudgetExceeded",
    "CampaignEnded",
    "ConfigError",
    "LedgerError",
    "MissingPreviousDay",
    "PlanMismatch",
    "PublishedReleaseMissing",
    "RunFailed",
    "StorageError",
    "WarehouseMismatch",
]


class ConfigError(ValueError):
    """A configuration value broke a rule; the message names the field and the rule."""


class LedgerError(RuntimeError):
    """A ledger rule was broken; the message says which and what to do."""


class BudgetExceeded(LedgerError):
    """Spending (or reserving) this would exceed a campaign's plan or an account's cap."""


class MissingPreviousDay(LedgerError):
    """Day d needs day d−1's stored state, and it is not there."""


class PlanMismatch(LedgerError):
    """The campaign was registered with a different configuration than the catalogue now gives."""


class StorageError(LedgerError):
    """The home's files cannot be read or written (disk full, read-only, vanished); the message
    names the path and the cause. A LedgerError, so a failed run step reports it as one line."""


class CampaignEnded(LedgerError):
    """The campaign was ended (or cancelled): it releases nothing more."""


class PublishedReleaseMissing(LedgerError):
    """The release journal holds a published record the ledger lacks or stores differently (a
    ledger restored from an old backup): nothing may be drawn until a newer backup is restored.
    The message names campaigns and days, never a value (dp_platform/journal.py)."""


class RunFailed(RuntimeError):
    """A Dagster run did not succeed for a reason that is not a library rule (its worker process
    was killed, a step crashed); the message says which run and why, on one line."""


class WarehouseMismatch(LedgerError):
    """A campaign whose per-user privacy state lives in one warehouse was asked to register or
    draw from another (a second home on the same ledger): nothing was drawn or charged."""

"""What the ledger stores and returns, as values: a registered campaign, a write-once record,
a campaign's budget. Kept apart from :mod:`dp_platform.ledger` (the transactions) so readers of
records (the release journal, registration) need no ledger connection to name them.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from dp_platform.privacy.accounting import Rho

__all__ = ["CampaignBudget", "CampaignRecord", "PublishedRecord", "utc_now"]


@dataclass(frozen=True)
class CampaignRecord:
    """A registered campaign as the ledger keeps it (JSON parts are opaque to the ledger).

    ``declared``: the catalogue entry as written (to refuse edits); ``config``: the campaign as
    it runs, publisher keys frozen; ``plan``: the lossless plan every step reads back.
    """

    name: str
    account: str
    days: int
    planned: Rho
    declared: dict
    config: dict
    plan: dict
    ended_at: str | None = None


@dataclass(frozen=True)
class PublishedRecord:
    """A write-once record as stored: a day's bound choice or release (``day``) or a
    campaign-level release (``name``). DP outputs only — never the chain's secret state."""

    campaign: str
    record: str  # "bound", "release" or "campaign_release"
    day: int | None
    name: str | None
    stored_json: str


@dataclass(frozen=True)
class CampaignBudget:
    """A campaign's planned, spent and remaining ρ with its per-day charges (exact)."""

    name: str
    account: str
    planned: Rho
    spent: Rho
    per_day: dict[int, dict[str, Rho]]

    @property
    def remaining(self) -> Rho:
        return self.planned - self.spent

    def to_json(self) -> dict:
        return {
            "account": self.account,
            "planned": float(self.planned),
            "spent": float(self.spent),
            "remaining": float(self.remaining),
            "per_day": {
                str(day): {part: float(rho) for part, rho in parts.items()}
                for day, parts in sorted(self.per_day.items())
            },
        }


def utc_now() -> str:
    """The UTC time the ledger stamps on what it writes, to the second."""
    return datetime.now(UTC).isoformat(timespec="seconds")

"""A campaign's whole privacy plan: its daily mechanism and its campaign-level releases.

What the ledger reserves against the account's cap is the sum: the daily stream (none when a
campaign-level release replaces it, as the one-shot mode does) and every campaign-level release
(e.g. reach & frequency). Every part is data-independent, so the plan can be shown and audited
before anything is spent. Mechanisms are found through the registry (dp_platform/mechanisms/).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from dp_platform import mechanisms
from dp_platform.config import CampaignConfig, Catalogue
from dp_platform.mechanisms.base import StreamPlan
from dp_platform.privacy.accounting import Rho
from dp_platform.records import JsonValue, from_record, to_record

__all__ = ["CampaignPlan", "campaign_plan", "campaign_plans"]


@dataclass(frozen=True)
class CampaignPlan:
    campaign: str
    days: int
    mechanism: str | None  # the daily mechanism's name; None when there is no daily stream
    stream: StreamPlan | None
    releases: dict[str, object] = field(default_factory=dict)
    """Campaign-level release name → its plan (what ``CampaignMechanism.make_plan`` gave)."""

    @property
    def total(self) -> Rho:
        """Everything the campaign can ever charge (what the ledger reserves)."""
        total = Rho.zero() if self.stream is None else self.stream.total
        for name, plan in self.releases.items():
            total = total + mechanisms.campaign_level(name).charge(plan)
        return total

    def to_record(self) -> dict[str, JsonValue]:
        """Everything the plan fixes, losslessly: what the ledger stores at registration and
        every later step reads back (:meth:`from_record`) instead of re-planning from YAML."""
        stream = None
        if self.stream is not None:
            stream = {"mechanism": self.mechanism, "plan": to_record(self.stream)}
        return {
            "campaign": self.campaign,
            "days": self.days,
            "stream": stream,
            "releases": {name: to_record(plan) for name, plan in self.releases.items()},
        }

    @classmethod
    def from_record(cls, data: dict) -> CampaignPlan:
        stream = name = None
        if data["stream"] is not None:
            name = data["stream"]["mechanism"]
            stream = from_record(mechanisms.stream(name).plan_type, data["stream"]["plan"])
        releases = {
            release: from_record(mechanisms.campaign_level(release).plan_type, plan)
            for release, plan in data["releases"].items()
        }
        return cls(data["campaign"], int(data["days"]), name, stream, releases)

    def summary(self) -> dict[str, JsonValue]:
        """The public plan (``dp-platform plan --json``)."""
        document: dict[str, JsonValue] = {}
        if self.stream is not None and self.mechanism is not None:
            document.update(mechanisms.stream(self.mechanism).summary(self.stream))
        document["total_rho"] = float(self.total)
        for name, plan in self.releases.items():
            document[name] = mechanisms.campaign_level(name).summary(plan)
        return document

    def describe(self) -> list[str]:
        """The public plan as text (``dp-platform plan``)."""
        if self.stream is not None and self.mechanism is not None:
            lines = mechanisms.stream(self.mechanism).describe(self.stream)
        else:
            lines = [f"campaign {self.campaign}: {self.days} days, no daily releases"]
        for name, plan in self.releases.items():
            lines.extend(mechanisms.campaign_level(name).describe(plan))
        lines.append(f"  total ρ reserved on the account: {float(self.total):.6g}")
        return lines


def campaign_plan(campaign: CampaignConfig, base_dir: str | Path | None = None) -> CampaignPlan:
    kind = campaign.mechanism.kind
    streaming = kind in mechanisms.STREAM
    stream = mechanisms.stream(kind).make_plan(campaign, base_dir) if streaming else None
    releases = {}
    for name in mechanisms.CAMPAIGN_LEVEL:
        plan = mechanisms.campaign_level(name).make_plan(campaign)
        if plan is not None:
            releases[name] = plan
    return CampaignPlan(campaign.name, campaign.days, kind if streaming else None, stream, releases)


def campaign_plans(
    catalogue: Catalogue, base_dir: str | Path | None = None
) -> dict[str, CampaignPlan]:
    return {c.name: campaign_plan(c, base_dir) for c in catalogue.campaigns}

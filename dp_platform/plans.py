"""A campaign's whole privacy plan: its daily mechanism and its campaign-level releases.

What the ledger reserves against the account's cap is the sum: the daily stream (AdsBPC or
AdsBPC+, none for ``mode: one_shot``), the one-shot release (``mode: one_shot``) and reach &
frequency (a ``reach:`` block). Every part is data-independent, so the plan can be shown and
audited before anything is spent.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from dp_platform.config import CampaignConfig, Catalogue
from dp_platform.mechanisms import adsbpc, adsbpc_plus, oneshot, reach
from dp_platform.privacy.accounting import Rho
from dp_platform.records import JsonValue, from_record, to_record

__all__ = ["STREAM_MECHANISMS", "CampaignPlan", "StreamPlan", "campaign_plan", "campaign_plans"]

StreamPlan = adsbpc.AdsbpcPlan | adsbpc_plus.PlusPlan
"""The plan of a campaign's daily mechanism."""

STREAM_MECHANISMS: dict[str, tuple[type, Callable[..., StreamPlan]]] = {
    "adsbpc": (adsbpc.AdsbpcPlan, adsbpc.make_plan),
    "adsbpc_plus": (adsbpc_plus.PlusPlan, adsbpc_plus.make_plan),
}
"""``mechanism:`` name → (its plan type, its planner)."""


@dataclass(frozen=True)
class CampaignPlan:
    campaign: str
    days: int
    stream: StreamPlan | None  # None in one-shot mode
    one_shot: oneshot.OneShotPlan | None
    reach: reach.ReachPlan | None

    @property
    def total(self) -> Rho:
        """Everything the campaign can ever charge (what the ledger reserves)."""
        total = Rho.zero()
        if self.stream is not None:
            total = total + self.stream.budget.total
        if self.one_shot is not None:
            total = total + Rho(self.one_shot.rho)
        if self.reach is not None:
            total = total + Rho(self.reach.rho)
        return total

    def ledger_json(self) -> dict:
        """The public plan as stored with the campaign (incl. the workload matrix)."""
        stream = None
        if self.stream is not None:
            stream = {**self.stream.to_json(), "queries": self.stream.queries.tolist()}
            stream["allotments"] = [str(a) for a in getattr(self.stream, "allotments", ())]
        return {
            "total": self.total.to_json(),
            "stream": stream,
            "one_shot": None if self.one_shot is None else self.one_shot.to_json(),
            "reach": None if self.reach is None else self.reach.to_json(),
        }

    def to_record(self) -> dict[str, JsonValue]:
        """Everything the plan fixes, losslessly: what the ledger stores at registration and
        every later step reads back (:meth:`from_record`) instead of re-planning from YAML."""
        stream = None
        if self.stream is not None:
            name = next(
                n for n, (kind, _) in STREAM_MECHANISMS.items() if isinstance(self.stream, kind)
            )
            stream = {"mechanism": name, "plan": to_record(self.stream)}
        return {
            "campaign": self.campaign,
            "days": self.days,
            "stream": stream,
            "one_shot": to_record(self.one_shot),
            "reach": to_record(self.reach),
        }

    @classmethod
    def from_record(cls, data: dict) -> CampaignPlan:
        stream = None
        if data["stream"] is not None:
            kind, _ = STREAM_MECHANISMS[data["stream"]["mechanism"]]
            stream = from_record(kind, data["stream"]["plan"])
        return cls(
            campaign=data["campaign"],
            days=int(data["days"]),
            stream=stream,
            one_shot=None
            if data["one_shot"] is None
            else from_record(oneshot.OneShotPlan, data["one_shot"]),
            reach=None if data["reach"] is None else from_record(reach.ReachPlan, data["reach"]),
        )


def _stream_plan(campaign: CampaignConfig, base_dir: str | Path | None) -> StreamPlan | None:
    if campaign.mode == "one_shot":
        return None
    _, planner = STREAM_MECHANISMS[campaign.mechanism]
    return planner(campaign, base_dir)


def campaign_plan(campaign: CampaignConfig, base_dir: str | Path | None = None) -> CampaignPlan:
    return CampaignPlan(
        campaign=campaign.name,
        days=campaign.days,
        stream=_stream_plan(campaign, base_dir),
        one_shot=oneshot.plan_from_config(campaign) if campaign.mode == "one_shot" else None,
        reach=reach.plan_from_config(campaign) if campaign.reach is not None else None,
    )


def campaign_plans(
    catalogue: Catalogue, base_dir: str | Path | None = None
) -> dict[str, CampaignPlan]:
    return {c.name: campaign_plan(c, base_dir) for c in catalogue.campaigns}

"""A campaign's whole privacy plan: its daily mechanism and its campaign-level releases.

What the ledger reserves against the account's cap is the sum: the daily stream (AdsBPC or
AdsBPC+, none for ``mode: one_shot``), the one-shot release (``mode: one_shot``) and reach &
frequency (a ``reach:`` block). Every part is data-independent, so the plan can be shown and
audited before anything is spent.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dp_platform import adsbpc, oneshot, reach
from dp_platform.config import CampaignConfig, Catalogue
from dp_platform.privacy.accounting import Rho

__all__ = ["CampaignPlan", "campaign_plan", "campaign_plans"]


@dataclass(frozen=True)
class CampaignPlan:
    campaign: str
    days: int
    stream: Any | None  # adsbpc.AdsbpcPlan or adsbpc_plus.PlusPlan; None in one-shot mode
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


def _stream_plan(campaign: CampaignConfig, base_dir: str | Path | None) -> Any | None:
    if campaign.mode == "one_shot":
        return None
    if campaign.mechanism == "adsbpc_plus":
        from dp_platform import adsbpc_plus

        return adsbpc_plus.make_plan(campaign, base_dir)
    return adsbpc.make_plan(campaign, base_dir)


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

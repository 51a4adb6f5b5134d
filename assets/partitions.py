"""Daily partitions of a campaign: one partition per campaign day, keys are UTC dates."""

from __future__ import annotations

from datetime import date, timedelta

import dagster as dg

from dp_platform.config import CampaignConfig

DATE_FORMAT = "%Y-%m-%d"


def daily_job_name(campaign: str) -> str:
    """``Spring_daily`` for campaign ``spring``. Capitalised on purpose: Dagster's UI launches a
    selection of assets under the first job (in sorted order) that holds them all, and
    ``__ASSET_JOB`` sorts before any lower-case name — so a campaign's runs launched from the UI
    carry its own job's name, and a range runs as one job backfill of exactly those days."""
    return f"{campaign[:1].upper()}{campaign[1:]}_daily"


def final_job_name(campaign: str) -> str:
    """The job of a campaign's campaign-level releases (one-shot, reach), e.g. ``Spring_final``."""
    return f"{campaign[:1].upper()}{campaign[1:]}_final"


def campaign_partitions(campaign: CampaignConfig) -> dg.DailyPartitionsDefinition:
    """Days ``start .. end`` of the campaign (the end date of Dagster's definition is exclusive)."""
    return dg.DailyPartitionsDefinition(
        start_date=campaign.start.strftime(DATE_FORMAT),
        end_date=(campaign.end + timedelta(days=1)).strftime(DATE_FORMAT),
        timezone="UTC",
    )


def previous_day() -> dg.TimeWindowPartitionMapping:
    """Day d depends on day d−1 of the same asset: backfills then run days in order."""
    return dg.TimeWindowPartitionMapping(start_offset=-1, end_offset=-1)


def keys_to_dates(keys: list[str]) -> list[date]:
    """Partition keys of a run, as dates in day order (a backfill range arrives as many keys)."""
    return sorted(date.fromisoformat(key) for key in keys)

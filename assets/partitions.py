"""Daily partitions of a campaign: one partition per campaign day, keys are UTC dates."""

from __future__ import annotations

from datetime import date, timedelta

import dagster as dg

from dp_platform.config import CampaignConfig

DATE_FORMAT = "%Y-%m-%d"


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


def lookback(days: int) -> dg.TimeWindowPartitionMapping:
    """Day d reads days d−W..d upstream (impressions inside the attribution window)."""
    return dg.TimeWindowPartitionMapping(
        start_offset=-days, end_offset=0, allow_nonexistent_upstream_partitions=True
    )


def keys_to_dates(keys: list[str]) -> list[date]:
    """Partition keys of a run, as dates in day order (a backfill range arrives as many keys)."""
    return sorted(date.fromisoformat(key) for key in keys)

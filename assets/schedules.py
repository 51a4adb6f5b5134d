"""Schedules that tick only inside their campaign, each targeting the campaign's own job.

A cron schedule has no year, so each campaign gets one cron line per calendar month it touches,
matching exactly the days of that month on which a run is due (the 02:00 UTC run of day d+1
materialises day d; the final run is due the day after the last day). A campaign that is over
when the code location loads is STOPPED by default: it never ticks again.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from typing import TYPE_CHECKING

import dagster as dg

from dp_platform.config import CampaignConfig

__all__ = ["cron_days", "daily_schedule", "final_schedule"]

if TYPE_CHECKING:  # what dg.define_asset_job returns
    pass


def cron_days(first: date, last: date, *, hour: int) -> list[str]:
    """Cron lines firing at ``hour``:00 UTC on every date first..last and no other day of
    those months (one line per month, several months → several lines)."""
    lines = []
    day = first
    while day <= last:
        month_end = (day.replace(day=28) + timedelta(days=4)).replace(day=1) - timedelta(days=1)
        end = min(last, month_end)
        days = f"{day.day}" if end.day == day.day else f"{day.day}-{end.day}"
        lines.append(f"0 {hour} {days} {day.month} *")
        day = end + timedelta(days=1)
    return lines


def _status(last_tick: date) -> dg.DefaultScheduleStatus:
    over = datetime.now(UTC).date() > last_tick
    return dg.DefaultScheduleStatus.STOPPED if over else dg.DefaultScheduleStatus.RUNNING


def daily_schedule(
    campaign: CampaignConfig, job: dg.UnresolvedAssetJobDefinition
) -> dg.ScheduleDefinition:
    """02:00 UTC on days start+1 .. end+1: materialise the previous day."""
    first, last = campaign.start + timedelta(days=1), campaign.end + timedelta(days=1)

    @dg.schedule(
        name=f"{campaign.name}_daily_0200_utc",
        cron_schedule=cron_days(first, last, hour=2),
        execution_timezone="UTC",
        job=job,
        default_status=_status(last),
        description=f"02:00 UTC: materialise the previous day of campaign {campaign.name} "
        f"({campaign.start} .. {campaign.end}); ticks only on {first} .. {last}.",
    )
    def daily(context: dg.ScheduleEvaluationContext):
        yesterday = context.scheduled_execution_time.date() - timedelta(days=1)
        if not campaign.start <= yesterday <= campaign.end:  # the same dates of another year
            return dg.SkipReason(f"{yesterday} is not a day of campaign {campaign.name}")
        key = yesterday.isoformat()
        return dg.RunRequest(run_key=f"{campaign.name}-{key}", partition_key=key)

    return daily


def final_schedule(
    campaign: CampaignConfig, job: dg.UnresolvedAssetJobDefinition
) -> dg.ScheduleDefinition:
    """03:00 UTC the day after the last day: the campaign-level releases, once."""
    after = campaign.end + timedelta(days=1)

    @dg.schedule(
        name=f"{campaign.name}_final_0300_utc",
        cron_schedule=cron_days(after, after, hour=3),
        execution_timezone="UTC",
        job=job,
        default_status=_status(after),
        description=f"{after} 03:00 UTC: the campaign-level releases of {campaign.name}.",
    )
    def final(context: dg.ScheduleEvaluationContext):
        if context.scheduled_execution_time.date() <= campaign.end:
            return dg.SkipReason(f"campaign {campaign.name} runs until {campaign.end}")
        return dg.RunRequest(run_key=f"{campaign.name}-final")  # once: run keys dedupe

    return final

"""Schema checks: the Pandera models of ``dp_platform.schemas`` on each new partition.

A check reads only the partitions of the run (never the whole table) and reports how many rows
broke which rule — never the offending values, which are private data.
"""

from __future__ import annotations

from datetime import date

import dagster as dg
import pandera.errors

from dp_platform.config import CampaignConfig
from dp_platform.schemas import SCHEMAS

SCHEMA_CHECK = "schema"


def schema_check_specs(asset_key: dg.AssetKey) -> list[dg.AssetCheckSpec]:
    """A blocking check: downstream assets do not run on a partition that broke its schema."""
    return [
        dg.AssetCheckSpec(
            SCHEMA_CHECK,
            asset=asset_key,
            blocking=True,
            description="The partition's rows satisfy the table's Pandera model.",
        )
    ]


def schema_check_result(
    warehouse, table: str, campaign: CampaignConfig, days: list[date]
) -> dg.AssetCheckResult:
    """Validate the run's partitions of ``table`` with its Pandera model (lazy: all errors),
    day by day; failures are counted per rule, never shown by value."""
    model = SCHEMAS[table]
    failures: dict[str, int] = {}
    for day in days:  # one day's rows at a time: memory stays a day's size at any scale
        frame = warehouse.day_frame(table, campaign, [day])
        try:
            model.validate(frame, lazy=True)
        except pandera.errors.SchemaErrors as errors:
            cases = errors.failure_cases
            by_check = cases.groupby(["column", "check"], dropna=False).size()
            for (column, check), count in by_check.items():
                rule = f"{column}: {check}"
                failures[rule] = failures.get(rule, 0) + int(count)
    if failures:
        return dg.AssetCheckResult(
            check_name=SCHEMA_CHECK,
            passed=False,
            severity=dg.AssetCheckSeverity.ERROR,
            metadata={
                "model": model.__name__,
                "failures_by_rule": dg.MetadataValue.json(failures),
            },
        )
    return dg.AssetCheckResult(
        check_name=SCHEMA_CHECK, passed=True, metadata={"model": model.__name__}
    )

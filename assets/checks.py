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
    """Validate the run's partitions of ``table`` with its Pandera model (lazy: all errors)."""
    model = SCHEMAS[table]
    frame = warehouse.day_frame(table, campaign, days)
    try:
        model.validate(frame, lazy=True)
    except pandera.errors.SchemaErrors as errors:
        cases = errors.failure_cases
        by_check = cases.groupby(["column", "check"], dropna=False).size()
        summary = {f"{col}: {chk}": int(n) for (col, chk), n in by_check.items()}
        return dg.AssetCheckResult(
            check_name=SCHEMA_CHECK,
            passed=False,
            severity=dg.AssetCheckSeverity.ERROR,
            metadata={"model": model.__name__, "failures_by_rule": dg.MetadataValue.json(summary)},
        )
    return dg.AssetCheckResult(
        check_name=SCHEMA_CHECK, passed=True, metadata={"model": model.__name__}
    )

"""The audit on the Spark engine: the same canaries and guesses, through Spark's warehouse.

Every kind of release, on campaigns of two days with few runs (a Spark query costs what a whole
DuckDB day does): every step holds. AdsBPC+ runs with the square-root strategy only, whose
correlated row the filter's SQL takes; the diagonal strategy is its identity case, which
tests/test_spark_cells.py compares with DuckDB on Spark and tests/test_audit.py audits. Its
power on the faults is shown on DuckDB (tests/test_audit_faults.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from dp_platform.audit.options import AuditOptions
from dp_platform.audit.runner import audit_campaign
from dp_platform.config_loader import load_catalogue
from tests.audit_faults import seeded_samplers

CATALOGUE = Path(__file__).parent / "audit_catalogue.yaml"


@pytest.mark.system
@pytest.mark.parametrize(
    ("campaign", "steps"),
    [
        ("adsbpc_spark", ["daily releases (adsbpc)"]),
        ("plus_sqrt_spark", ["daily releases (adsbpc_plus)"]),
        ("once_and_reach_spark", ["one_shot", "reach"]),
    ],
)
def test_the_audit_runs_on_spark_and_holds(spark: object, campaign: str, steps: list[str]) -> None:
    """The same audit on the Spark engine (the test run's session; short campaigns, few runs:
    a JVM query costs what a DuckDB run does)."""
    from dp_platform.settings import WarehouseConfig
    from tests.spark_fixtures import TEST_SETTINGS

    results = audit_campaign(
        load_catalogue(CATALOGUE),
        campaign,
        AuditOptions(runs=4, canaries=4, users=100),
        warehouse=WarehouseConfig(engine="spark", spark=TEST_SETTINGS),
        base_dir=CATALOGUE.parent,
        samplers=seeded_samplers(31),
        inclusion_seed=9,
    )
    assert [r.step for r in results] == steps
    for result in results:
        assert result.engine == "spark"
        assert result.holds, result
        assert result.counts.included + result.counts.excluded == 2 * result.canaries_per_run

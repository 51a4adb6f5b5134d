"""Sliced campaigns on Spark as an operator runs them: `ingest --config`, a Dagster run, `releases
--json` — byte for byte what DuckDB publishes from the same events and the same seeded noise.

Two homes, one per engine, the same catalogue but for its ``warehouse:`` block, every campaign
with measures [count, value]: AdsBPC and AdsBPC+ (diagonal strategy) broken down by region ×
device (conversion columns); AdsBPC (uniform multi-touch) and AdsBPC+ with the square-root
strategy (u-shaped) broken down by the credited impression's creative × a conversion column
(private last touch with impression cells, whose draws a Dagster run takes from the secure
sampler, is compared with seeded draws in tests/test_spark_impression_cells.py); and a one-shot
release (Laplace, ℓ1 cells) by creative × region. Each home ingests the same event files through the
CLI (the catalogue's dimension lists of both files checked on ingest) and runs every campaign
through Dagster with one seeded noise source; the `releases --json` documents (cells, their σ
and intervals, per-publisher counts, derived totals, cumulative series, the one-shot's cells)
must be the same text. The Spark session must
have kept nothing of the run where its UI or a listener would show it.
"""

from __future__ import annotations

import json
from datetime import date

import dagster as dg
import numpy as np
import pytest
import yaml

from assets.runner import run_campaigns
from dp_platform.home import Home
from dp_platform.ledger import Ledger
from dp_platform.privacy.noise import SeededNoise
from tests.cells_data import (
    ADVERTISER,
    CREATIVES,
    DEVICES,
    PUBLISHERS,
    REGIONS,
    START,
    VALUE_CAP,
    generate,
    write,
)
from tests.platform_fixtures import command_output, warehouse_block

DAYS = 4  # AdsBPC: 2 quantile days then the SVT; AdsBPC+: 2 profile days, then the profile
TODAY = date(2026, 11, 22)
ADSBPC = {"kind": "adsbpc", "bounds": {"quantile_days": 2, "cap": 6}}
PLUS = {"kind": "adsbpc_plus", "cap": 5, "profile_days": 2}
CAMPAIGNS = {  # name: (mechanism, attribution rule, breakdown)
    "sliced": (ADSBPC, "lta", ["region", "device"]),
    "sliced_plus": ({**PLUS, "strategy": "diagonal"}, "lta", ["region", "device"]),
    "touched": (ADSBPC, "uni", ["creative", "region"]),
    "touched_plus": ({**PLUS, "strategy": "sqrt"}, "u_shaped", ["creative", "device"]),
    "once": ({"kind": "one_shot", "bound": 2}, "uni", ["creative", "region"]),
}
SIZES = {"region": len(REGIONS), "device": len(DEVICES), "creative": len(CREATIVES)}


def _catalogue(engine: str) -> dict:
    return {
        "accounts": [{"name": "acct", "rho_cap": 50}],
        "dimensions": {
            "region": {"source": "conversions", "values": REGIONS, "catch_all": None},
            "device": {"source": "conversions", "values": DEVICES, "catch_all": None},
            "creative": {"source": "impressions", "values": CREATIVES, "catch_all": None},
        },
        "campaigns": [
            {
                "name": name,
                "advertiser": ADVERTISER,
                "account": "acct",
                "start": START.isoformat(),
                "days": DAYS,
                "publishers": PUBLISHERS,
                "attribution": {"rule": rule, "lookback_days": 30},
                "privacy": {"rho": 1.0 if name == "once" else 4.0},
                "mechanism": mechanism,
                "breakdown": breakdown,
                "measures": ["count", "value"],
                "value_cap": VALUE_CAP,
            }
            for name, (mechanism, rule, breakdown) in CAMPAIGNS.items()
        ],
        "warehouse": warehouse_block(engine),
    }


@pytest.fixture(scope="module")
def homes(spark, tmp_path_factory):
    """Per engine: its home after `ingest --config` and one Dagster run, and the ingest JSON."""
    root = tmp_path_factory.mktemp("spark_sliced")
    events = generate(users=120, days=DAYS, seed=21)
    imp, conv = write(events, root / "input")
    out = {}
    for engine in ("duckdb", "spark"):
        home = Home.at(root / engine)
        config = root / f"{engine}.yaml"
        config.write_text(yaml.safe_dump(_catalogue(engine)))
        argv = ["ingest", "--home", str(home.root), "--config", str(config)]
        argv += ["--impressions", str(imp), "--conversions", str(conv)]
        ingested = command_output(*argv, "--now", "2026-11-01T00:00:00Z", "--json")
        runs = run_campaigns(
            config,
            home.root,
            noise=SeededNoise(7),
            instance=dg.DagsterInstance.ephemeral(),
            today=TODAY,
        )
        assert [len(r.days) for r in runs][:-1] == [DAYS] * (len(CAMPAIGNS) - 1)
        out[engine] = (home, json.loads(ingested))
    return out


def test_cli_ingest_reports_the_same_dimension_checks_on_both_engines(homes):
    (_, duck), (_, spark) = homes["duckdb"], homes["spark"]
    assert duck == spark
    for kind in ("impressions", "conversions"):
        assert spark[kind]["accepted"] == spark[kind]["rows"] > 0  # every value listed


@pytest.mark.parametrize("campaign", list(CAMPAIGNS))
def test_sliced_releases_are_byte_identical_on_spark_and_duckdb(homes, campaign):
    documents = {
        engine: command_output(
            "releases", "--home", str(home.root), "--campaign", campaign, "--json"
        )
        for engine, (home, _) in homes.items()
    }
    assert documents["spark"] == documents["duckdb"]
    document = json.loads(documents["spark"])
    _, _, breakdown = CAMPAIGNS[campaign]
    size = len(PUBLISHERS) * int(np.prod([SIZES[d] for d in breakdown])) * 2
    if campaign == "once":
        assert document["days"] == []
        cells = document["one_shot"]["cells"]
        assert len(cells) == size and {c["measure"] for c in cells} == {"count", "value"}
        assert sum(c["value"] != 0 for c in cells) > 0
        return
    assert len(document["days"]) == DAYS
    cells = document["days"][-1]["cells"]
    assert len(cells) == size
    assert {c["measure"] for c in cells} == {"count", "value"}
    assert document["days"][-1]["totals"] and document["cumulative"]
    # the stored releases too: the same bound and σ, noisy entries equal up to Spark's
    # summation order (published cells are on the 2^-10 grid, hence the identical text)
    stored = {}
    for engine, (home, _) in homes.items():
        with Ledger.at_home(home.root, read_only=True) as ledger:
            stored[engine] = ledger.releases(campaign)
    for left, right in zip(stored["duckdb"], stored["spark"], strict=True):
        assert (left.bound, left.sigma, left.charges) == (right.bound, right.sigma, right.charges)
        np.testing.assert_allclose(left.values, right.values, rtol=0, atol=1e-9)


def test_the_spark_run_left_no_job_or_event_log_to_show(spark, homes):
    """The UI is off, no event log was written, and the driver's status store (what a UI or a
    history server would read) keeps no job and at most one SQL execution — the last, which
    Spark's clean-up cannot drop while it runs; it stays in the driver's memory, served by
    nothing (session.py)."""
    tracker = spark.sparkContext.statusTracker()
    assert tracker.getJobIdsForGroup() == []
    assert spark.sparkContext._jsc.sc().statusStore().jobsList(None).size() == 0
    assert spark._jsparkSession.sharedState().statusStore().executionsList().size() <= 1
    assert spark.sparkContext.getLocalProperty("spark.job.description") is None
    assert spark.sparkContext.uiWebUrl is None
    home, _ = homes["spark"]
    assert not list(home.root.rglob("*eventlog*")) and not list(home.root.rglob("*events_*"))

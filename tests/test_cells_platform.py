"""A campaign with a breakdown and the value measure, end to end through Dagster: `ingest
--config`, `run`, `releases --json` cells — and the black-box test of what it publishes.

Black box: the released cells of every day are z-scored against an independent NumPy
attribution + clipping of the same events (tests/cells_data.py) at the day's released bound,
with the released σ of each cell. Seeded noise, so the run is reproducible; with N ≈ 290
z-scores, the tolerances |mean| < 4/√N and |var − 1| < 4·√(2/N) are four standard errors —
wide enough for any seed, narrow enough that a σ off by 25 % or a bias of a quarter σ fails.
"""

from __future__ import annotations

import json
from datetime import date

import dagster as dg
import numpy as np
import pytest
import yaml

from assets.runner import run_campaigns
from dp_platform.cli import main
from dp_platform.display import round_to_noise, significant
from dp_platform.home import Home
from dp_platform.ledger import Ledger
from dp_platform.privacy.noise import SeededNoise
from dp_platform.publication import published_days
from tests.cells_data import (
    ADVERTISER,
    DEVICES,
    PUBLISHERS,
    REGIONS,
    START,
    VALUE_CAP,
    generate,
    reference_cells,
    write,
)

DAYS = 8
TODAY = date(2026, 11, 22)


def _catalogue(mechanism: dict) -> dict:
    return {
        "accounts": [{"name": "acct", "rho_cap": 50}],
        "dimensions": {
            "region": {"source": "conversions", "values": REGIONS},
            "device": {"source": "conversions", "values": DEVICES},
        },
        "campaigns": [
            {
                "name": "sliced",
                "advertiser": ADVERTISER,
                "account": "acct",
                "start": START.isoformat(),
                "days": DAYS,
                "publishers": PUBLISHERS,
                "attribution": {"rule": "lta", "lookback_days": 30},
                "privacy": {"rho": 4.0},
                "mechanism": mechanism,
                "breakdown": ["region", "device"],
                "measures": ["count", "value"],
                "value_cap": VALUE_CAP,
            }
        ],
    }


@pytest.fixture(scope="module")
def released(tmp_path_factory):
    root = tmp_path_factory.mktemp("cells")
    events = generate(users=150, days=DAYS, seed=21)
    imp, conv = write(events, root / "input")
    home = Home.at(root / "home")
    config = root / "campaigns.yaml"
    config.write_text(
        yaml.safe_dump(_catalogue({"kind": "adsbpc", "bounds": {"quantile_days": 3, "cap": 6}}))
    )
    now = "2026-11-01T00:00:00Z"
    assert (
        main(
            [
                "ingest",
                "--home",
                str(home.root),
                "--config",
                str(config),
                "--impressions",
                str(imp),
                "--conversions",
                str(conv),
                "--now",
                now,
            ]
        )
        == 0
    )
    instance = dg.DagsterInstance.ephemeral()
    runs = run_campaigns(config, home.root, noise=SeededNoise(7), instance=instance, today=TODAY)
    assert [len(r.days) for r in runs] == [DAYS]
    return events, home, instance


def test_releases_json_carries_every_cell_of_every_day(released, capsys) -> None:
    _, home, _ = released
    capsys.readouterr()
    assert main(["releases", "--home", str(home.root), "--campaign", "sliced", "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert len(document["days"]) == DAYS
    for day in document["days"]:
        cells = day["cells"]
        assert len(cells) == len(PUBLISHERS) * len(REGIONS) * len(DEVICES) * 2
        assert set(cells[0]) == {
            "publisher",
            "region",
            "device",
            "measure",
            "value",
            "sigma",
            "ci_low",
            "ci_high",
        }
        assert {c["measure"] for c in cells} == {"count", "value"}
        assert set(day["values"]) == set(PUBLISHERS)  # per publisher: counts over the cells


def test_released_cells_are_centred_on_an_independent_attribution_and_clipping(
    released,
) -> None:
    events, home, _ = released
    with Ledger.at_home(home.root, read_only=True) as ledger:
        days = published_days(ledger, "sliced")
    z = []
    for published in days:
        day = date.fromordinal(START.toordinal() + published.day - 1)
        expected = reference_cells(
            events,
            day,
            published.bound,
            dimensions=["region", "device"],
            measures=["count", "value"],
        )
        values = np.array([c["value"] for c in published.cells])
        sigmas = np.array([c["sigma"] for c in published.cells])
        z.extend((values - expected) / sigmas)
    z = np.asarray(z)
    n = z.size
    assert abs(z.mean()) < 4 / np.sqrt(n)
    assert abs(z.var() - 1) < 4 * np.sqrt(2 / n)


def test_dagster_metadata_shows_per_cell_sigma_and_top_slices_of_noisy_cells(released) -> None:
    _, home, instance = released
    event = instance.get_latest_materialization_event(
        dg.AssetKey(["sliced", "noisy_daily_release"])
    )
    metadata = event.asset_materialization.metadata
    with Ledger.at_home(home.root, read_only=True) as ledger:
        last = published_days(ledger, "sliced")[-1]
    by_measure = {c["measure"]: c["sigma"] for c in last.cells}
    assert metadata["cells"].value == len(last.cells)
    assert metadata["sigma_per_count_cell"].value == significant(by_measure["count"])
    assert metadata["sigma_per_value_cell"].value == significant(by_measure["value"])
    table = metadata["top_value_slices"].value.splitlines()
    assert table[0] == "| publisher | region | device | noisy value | 95 % interval |"
    top = max((c for c in last.cells if c["measure"] == "value"), key=lambda c: c["value"])
    shown = round_to_noise(top["value"], top["sigma"])
    assert table[2].startswith(f"| {top['publisher']} | {top['region']} | {top['device']} | ")
    assert f"| {shown:g} |" in table[2]


def test_releases_table_shows_the_last_days_largest_cells(released, capsys) -> None:
    _, home, _ = released
    capsys.readouterr()
    assert main(["releases", "--home", str(home.root), "--campaign", "sliced", "--cells", "3"]) == 0
    out = capsys.readouterr().out
    assert f"day {DAYS} cells (publisher / dimension values; value ± 95 % interval):" in out
    assert "  count: top 3 of 18 cells" in out and "  value: top 3 of 18 cells" in out

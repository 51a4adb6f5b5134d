"""Helpers for the Dagster-layer tests: a small ingested campaign in a temporary home."""

from __future__ import annotations

import contextlib
import io
import shutil
from datetime import date
from pathlib import Path

import numpy as np
import yaml

from dp_platform.events import EventFiles, generate_campaign, write_events
from dp_platform.home import Home
from dp_platform.privacy.noise import NoiseSource, SeededNoise
from dp_platform.privacy.noise_check import Draw
from dp_platform.settings import WarehouseConfig
from dp_platform.warehouse.base import open_warehouse

START = date(2026, 3, 1)
DAYS = 31

# A streaming campaign's daily assets, in lineage order (the names the UI and checks show).
DAILY_ASSETS = (
    "raw_impressions",
    "raw_conversions",
    "attributed_conversions",
    "user_day_contributions",
    "contribution_bound",
    "clipped_daily_vector",
    "noisy_daily_release",
    "cumulative_query_answers",
)


class RoutedNoise(NoiseSource):
    """Seeded noise with one stream for bound selection and one for releases (tests only).

    A single-run backfill chooses every day's bound before it releases any day, while
    ``adsbpc.step`` alternates; giving each phase its own stream makes both orders draw the
    same numbers, so the two paths can be compared exactly. Routing happens at the raw draws,
    after the sampler's OpenDP check.
    """

    def __init__(self, bound_seed: int, release_seed: int) -> None:
        self.bound = SeededNoise(bound_seed)
        self.release = SeededNoise(release_seed)

    def _gaussian(self, vector: np.ndarray, draw: Draw) -> np.ndarray:
        return self.release._gaussian(vector, draw)

    def _laplace(self, vector: np.ndarray, draw: Draw) -> np.ndarray:
        return self.bound._laplace(vector, draw)

    def _gumbel_max(self, vector: np.ndarray, draw: Draw) -> int:
        return self.bound._gumbel_max(vector, draw)

    def _exponential_max(self, vector: np.ndarray, draw: Draw) -> int:
        return self.bound._exponential_max(vector, draw)

    def _uniform(self, low: float, high: float) -> float:
        return self.bound._uniform(low, high)


def warehouse_block(engine: str) -> dict:
    """The catalogue's warehouse: block of an engine (Spark with the tests' small settings)."""
    if engine == "duckdb":
        return {"engine": "duckdb"}
    from tests.spark_fixtures import RUN_SETTINGS

    return {"engine": "spark", "spark": RUN_SETTINGS.model_dump(exclude_none=True)}


def catalogue(
    rho_cap: float = 2.0,
    campaigns: list[dict] | None = None,
    *,
    days: int = DAYS,
    engine: str = "duckdb",
    quantile_days: int | None = None,
) -> dict:
    """One account and ``campaigns``, by default ``spring`` (AdsBPC, named: the default under
    add/remove is AdsBPC+; ``quantile_days`` its l when not the default 7: a short campaign keeps
    both bound phases with l = 2)."""
    base = {
        "name": "spring",
        "advertiser": "acme",
        "account": "acme-users",
        "start": START.isoformat(),
        "days": days,
        "publishers": "all",
        "attribution": {"rule": "lta", "lookback_days": 30},
        "privacy": {"rho": 1.0},
        "mechanism": {"kind": "adsbpc"},
    }
    if quantile_days is not None:
        base["mechanism"] = {"kind": "adsbpc", "bounds": {"quantile_days": quantile_days}}
    return {
        "accounts": [{"name": "acme-users", "rho_cap": rho_cap}],
        "campaigns": campaigns or [base],
        "warehouse": warehouse_block(engine),
    }


def campaign_events(folder: Path, *, seed: int, users: int, days: int) -> EventFiles:
    """The generated campaign :func:`make_home` ingests, written to ``folder`` (four
    publishers, 15 impressions and 2 conversions per user on average)."""
    events = generate_campaign(
        seed=seed,
        users=users,
        publishers=4,
        impressions=users * 15,
        conversions=users * 2,
        days=days,
        start=START,
    )
    return write_events(events, folder)


def make_home(
    root: Path,
    *,
    seed: int = 3,
    users: int = 1500,
    config: dict | None = None,
    days: int = DAYS,
    engine: str = "duckdb",
) -> Home:
    """A home with a generated campaign ingested (into the engine's warehouse) and a catalogue
    written to campaigns.yaml. Spark: call with the ``spark`` fixture active."""
    home = Home.at(root)
    files = campaign_events(home.root / "input", seed=seed, users=users, days=days)
    document = config or catalogue(days=days, engine=engine)
    settings = WarehouseConfig.model_validate(document.get("warehouse", {}))
    with open_warehouse(settings, home) as warehouse:
        warehouse.ingest(files.impressions, files.conversions)
    (home.root / "campaigns.yaml").write_text(yaml.safe_dump(document))
    return home


def copy_home(source: Home, target: Path) -> Home:
    """A copy of a prepared home (same data), for running a second path independently."""
    shutil.copytree(source.root, target)
    return Home.at(target)


class PlusRoutedNoise(RoutedNoise):
    """RoutedNoise for AdsBPC+, whose bound phase also draws Gaussians (its noisy histograms):
    Gaussian draws of ``publishers`` values are releases, one value is the release's remainder
    X̃_t (a stream of its own, seeded from the release's), any other length belongs to the bound
    phase (tests only; the histograms have Λ bins, a different length from the release)."""

    def __init__(self, bound_seed: int, release_seed: int, publishers: int) -> None:
        super().__init__(bound_seed, release_seed)
        assert publishers > 1, "one value is the remainder's draw"
        self.publishers = publishers
        self.remainder = SeededNoise(release_seed + 1000)

    def _gaussian(self, vector: np.ndarray, draw: Draw) -> np.ndarray:
        if vector.size == self.publishers:
            return self.release._gaussian(vector, draw)
        if vector.size == 1:
            return self.remainder._gaussian(vector, draw)
        return self.bound._gaussian(vector, draw)


def command_output(*argv: str) -> str:
    """What ``dp-platform ARGV`` prints, run in this process; it must exit 0. For commands that
    launch no run, beside the ones a test starts as processes (each command is also tested as a
    process of its own)."""
    from dp_platform.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(list(argv)) == 0
    return out.getvalue()

"""Reach and k+-frequency (Ghazi & Manurangsi): sensitivity by brute force, exact cost,
SQL = reference, and the error the plan states."""

from __future__ import annotations

import math
from datetime import datetime, timedelta

import numpy as np
import pytest

from dp_platform.config_loader import parse_campaign
from dp_platform.mechanisms.reach import (
    declare,
    plan_from_config,
    plan_reach,
    release_reach,
    warehouse_histogram,
)
from dp_platform.privacy.discrete import SeededIntegerNoise
from dp_platform.warehouse.store import Warehouse
from tests.conftest_data import FAR_FUTURE, Conv, Imp, write_events
from tests.oracles import frequency_histogram


@pytest.mark.parametrize("adjacency", ["add_remove", "replace"])
def test_histogram_sensitivity_is_what_the_plan_charges(adjacency: str) -> None:
    """Remove (or replace) each user of random impression counts: the histogram moves by at
    most the plan's ℓ2 sensitivity, and reaches it. The cumulative n_{≥k} vector would move by
    √K — noising it with the same σ would understate the cost K-fold."""
    rng = np.random.default_rng(1)
    k = 6
    counts = rng.geometric(0.3, 300)
    base = frequency_histogram(counts, k)
    worst = worst_cumulative = 0.0
    for i in range(counts.size):
        other = np.delete(counts, i)
        if adjacency == "replace":
            other = np.append(other, rng.integers(0, 12))
        moved = frequency_histogram(other, k)
        worst = max(worst, float(np.linalg.norm(base - moved)))
        cumulative = np.cumsum(base[::-1])[::-1] - np.cumsum(moved[::-1])[::-1]
        worst_cumulative = max(worst_cumulative, float(np.linalg.norm(cumulative)))
    plan = plan_reach(0.1, k, adjacency)  # type: ignore[arg-type]
    assert worst == pytest.approx(plan.l2_sensitivity)
    assert worst_cumulative >= math.sqrt(k) - 1e-9  # the cumulative vector moves by √K
    assert plan.rho == pytest.approx(plan.l2_sensitivity**2 / (2 * plan.sigma**2), rel=1e-12)
    assert plan.rho <= 0.1


def test_release_error_matches_the_stated_std() -> None:
    plan = plan_reach(0.05, 5)
    truth = np.array([50, 30, 20, 10, 5])
    source = SeededIntegerNoise(2)
    declared = declare(5, "add_remove", 0.05)
    reaches = np.array(
        [release_reach(truth, plan, allotment=declared, noise=source).reach for _ in range(3000)]
    )
    stated = plan.to_json()["reach_std"]
    assert reaches.std() == pytest.approx(stated, rel=0.1)  # σ_ℤ ≈ σ for σ ≫ 1
    assert reaches.mean() == pytest.approx(truth.sum(), abs=4 * stated / math.sqrt(3000))
    release = release_reach(truth, plan, allotment=declared, noise=source)
    document = release.to_json()
    assert document["at_least"][0] == document["reach"] == sum(document["histogram"])
    assert all(0 <= f <= 1 for f in document["frequency_at_least"])


def test_warehouse_histogram_matches_reference(tmp_path) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(3)
    t0 = datetime(2026, 3, 1)
    imps, per_user = [], []
    for u in range(40):
        n = int(rng.integers(0, 9))
        per_user.append(n)
        for j in range(n):
            day = timedelta(days=int(rng.integers(0, 3)), minutes=j)
            imps.append(Imp(f"i{u}_{j}", f"u{u}", f"p{j % 3}", "acme", t0 + day))
    imps.append(Imp("late", "u0", "p0", "acme", t0 + timedelta(days=5)))  # after the campaign
    imps.append(Imp("other", "u1", "p0", "zeta", t0))  # another advertiser
    convs = [Conv("c0", "u0", "acme", t0 + timedelta(hours=1))]
    camp = parse_campaign(
        {
            "name": "r",
            "advertiser": "acme",
            "account": "a",
            "start": "2026-03-01",
            "days": 3,
            "reach": {"rho": 0.2, "max_frequency": 4},
            "bounds": {"quantile_days": 1},
        }
    )
    with Warehouse(tmp_path / "w.duckdb") as wh:
        wh.ingest(*write_events(tmp_path, imps, convs), now=FAR_FUTURE)
        got = warehouse_histogram(wh, camp, 4)
    assert got.tolist() == frequency_histogram(np.array(per_user), 4).tolist()
    assert plan_from_config(camp).max_frequency == 4


def test_the_ui_shows_reachs_rho_to_four_significant_digits() -> None:
    """ρ is public but its float tail is noise to the eye; the ledger keeps it exact."""
    from dp_platform.mechanisms import campaign_level

    shown = campaign_level("reach").shown(
        {"reach": 412, "rho_charged": 0.2312843375544556, "at_least": [412, 133]}
    )
    assert shown["rho_charged"] == 0.2313
    assert shown["noisy_reach"] == 412

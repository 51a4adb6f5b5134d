"""The demo's work: simulate → ingest → run through Dagster → compare with the truth → plot."""

from __future__ import annotations

import json
import math
from datetime import date
from pathlib import Path

import numpy as np
import yaml

from assets.runner import run_campaigns
from dp_platform.config import ConfigError, load_catalogue
from dp_platform.daily import campaign_days
from dp_platform.events import generate_campaign, write_events
from dp_platform.home import Home
from dp_platform.ledger import Ledger
from dp_platform.mechanisms import DEFAULT_STREAM
from dp_platform.registration import load_registration
from dp_platform.reporting import cumulative_chart
from dp_platform.warehouse import Warehouse

DEMO_MARKER = "demo.json"
DEMO_SEED = 20_261_122
DEMO_START = date(2026, 3, 1)


def catalogue_for(days: int) -> dict:
    """Two campaigns of one advertiser sharing one account (the cap holds across both)."""
    common = {
        "advertiser": "acme",
        "account": "acme-users",
        "start": DEMO_START.isoformat(),
        "days": days,
        "publishers": "all",
        "attribution": {"rule": "lta", "lookback_days": 30},
        "mechanism": {"kind": DEFAULT_STREAM, "bounds": {"quantile_days": min(7, days - 1)}},
    }
    return {
        "accounts": [{"name": "acme-users", "rho_cap": 2.0}],
        "campaigns": [
            {
                **common,
                "name": "demo_cumulative",
                "privacy": {"rho": 1.0},
                "workload": {"kind": "prefix"},
                "objective": {"kind": "wsum", "last_weight": 7},
            },
            {
                **common,
                "name": "demo_weekly",
                "privacy": {"rho": 0.5},
                "workload": {"kind": "sliding", "window": min(7, days)},
                "objective": {"kind": "maxvar"},
            },
        ],
    }


def _claim_home(home: Home, options: dict) -> None:
    """The demo prints the *truth* of its data next to the releases, so it must only ever run
    on data it generated: a home with a warehouse or ledger and no demo marker is refused, and
    so is a demo home made with other options (its truth would not match the events)."""
    marker = home.root / DEMO_MARKER
    if marker.exists():
        made = json.loads(marker.read_text())
        if made != options:
            shown = ", ".join(f"--{k} {v}" for k, v in made.items() if k != "seed")
            raise ConfigError(
                f"{home.root} is a demo home made with {shown}; rerun with those options or "
                "use a new --home"
            )
        return
    if home.warehouse.exists() or home.ledger.exists():
        raise ConfigError(
            f"{home.root} holds data the demo did not generate; the demo prints the true "
            "values of its own simulated data, so it runs only in an empty directory or a home "
            "it made (use a new --home)"
        )
    marker.write_text(json.dumps(options))


def _simulate_and_ingest(home: Home, *, days: int, users: int, publishers: int) -> str:
    events = generate_campaign(
        seed=DEMO_SEED,
        users=users,
        publishers=publishers,
        impressions=users * 20,
        conversions=users * 2,
        days=days,
        start=DEMO_START,
    )
    files = write_events(events, home.root / "input")
    with home.warehouse_lock(), Warehouse(home.warehouse) as warehouse:
        report = warehouse.ingest(files.impressions, files.conversions).to_json()
    parts = []
    for kind in ("impressions", "conversions"):
        part = report[kind]
        if part.get("already_loaded"):
            parts.append(f"{kind} already loaded")
        else:
            parts.append(f"{kind} {part['accepted']} accepted, {part['quarantined']} quarantined")
    return "; ".join(parts)


def _truth(home: Home, campaign, released_days: int) -> np.ndarray:
    """Unclipped per-publisher attributed sums per day (day × publisher): simulation only.
    ``campaign`` is the registered campaign (publisher keys frozen)."""
    days = campaign_days(campaign)[:released_days]
    publishers = list(campaign.publishers)
    with home.warehouse_lock(), Warehouse(home.warehouse, read_only=True) as warehouse:
        frame = warehouse.day_frame("attributed", campaign, days)
    sums = frame.groupby(["day", "publisher_id"])["weight"].sum()
    table = sums.unstack(fill_value=0.0).reindex(index=days, columns=publishers, fill_value=0.0)
    return table.to_numpy(dtype=np.float64)


def run_demo(home_dir: Path, *, days: int, users: int, publishers: int) -> dict:
    """Run the demo and return its report (releases next to the truth, errors, budget, plots)."""
    home = Home.at(home_dir)
    _claim_home(home, {"seed": DEMO_SEED, "days": days, "users": users, "publishers": publishers})
    ingest = _simulate_and_ingest(home, days=days, users=users, publishers=publishers)
    config = home.root / "campaigns.yaml"
    config.write_text(yaml.safe_dump(catalogue_for(days), sort_keys=False))
    runs = {r.campaign: r for r in run_campaigns(config, home.root)}
    catalogue = load_catalogue(config)
    report: dict = {"home": str(home.root), "ingest": ingest, "campaigns": {}}
    with Ledger.at_home(home.root) as ledger:
        for entry in catalogue.campaigns:
            registration = load_registration(ledger, entry.name)
            campaign, plan = registration.config, registration.plan.stream
            releases = ledger.releases(campaign.name)
            truth = _truth(home, campaign, len(releases))
            noisy = np.array([r.values for r in releases])
            ends = plan.query_ends
            rows, errors, variances, points = [], [], [], []
            for release in releases:
                day = release.day
                ending = [j for j in range(plan.queries.shape[0]) if ends[j] == day]
                noisy_answer = true_answer = None
                if ending:
                    weights = plan.queries[ending[-1], :day]
                    noisy_answer = float(weights @ noisy[:day].sum(axis=1))
                    true_answer = float(weights @ truth[:day].sum(axis=1))
                    errors.append(noisy_answer - true_answer)
                    sigmas = np.array([r.sigma for r in releases[:day]])
                    variances.append(noisy.shape[1] * float((weights**2) @ sigmas**2))
                    points.append((day, noisy_answer, true_answer, math.sqrt(variances[-1])))
                rows.append(
                    {
                        "day": day,
                        "bound": release.bound,
                        "sigma": release.sigma,
                        "noisy_total": float(noisy[day - 1].sum()),
                        "true_total": float(truth[day - 1].sum()),
                        "noisy_answer": noisy_answer,
                        "true_answer": true_answer,
                    }
                )
            plot = home.plots / f"{campaign.name}.png"
            if points:
                plot.write_bytes(
                    cumulative_chart(
                        [p[0] for p in points],
                        [p[1] for p in points],
                        truth=[p[2] for p in points],
                        band=[p[3] for p in points],
                        title=f"{campaign.name}: released answers vs truth (simulated data)",
                    )
                )
            report["campaigns"][campaign.name] = {
                "workload": campaign.workload.kind,
                "ran": [d.isoformat() for d in runs[campaign.name].days],
                "days": rows,
                "answer_rmse": float(np.sqrt(np.mean(np.square(errors)))) if errors else 0.0,
                "expected_std": float(np.sqrt(np.mean(variances))) if variances else 0.0,
                "plot": str(plot),
            }
        report["budget"] = ledger.budget_report()
    return report

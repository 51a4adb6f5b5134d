"""The demo's work: simulate → ingest → run through Dagster → compare with the truth → plot."""

from __future__ import annotations

import json
import math
from dataclasses import asdict
from datetime import date
from pathlib import Path

import numpy as np
import yaml

from assets.runner import run_campaigns
from dp_platform.cells import CellLayout, publisher_counts
from dp_platform.config_loader import load_catalogue
from dp_platform.consistency import ALL
from dp_platform.daily import campaign_days
from dp_platform.errors import ConfigError
from dp_platform.events import generate_campaign, write_events
from dp_platform.events.campaign import CREATIVES, DEVICES, REGIONS
from dp_platform.home import Home
from dp_platform.ledger import Ledger
from dp_platform.mechanisms import default_stream
from dp_platform.noise_fit import noise_fit
from dp_platform.publication import noise_std, release_strategy
from dp_platform.registration import load_registration
from dp_platform.release_view import release_document
from dp_platform.reporting import cumulative_chart, slice_chart
from dp_platform.warehouse import Warehouse

DEMO_MARKER = "demo.json"
DEMO_SEED = 20_261_122
DEMO_START = date(2026, 3, 1)
DEMO_VALUE_CAP = 200.0
DEMO_LAYOUT = 5  # the demo's catalogue and events: a home made by an older demo is refused
# (5: the sliced campaign weighs its marginals per measure; 4: the campaigns run AdsBPC+, the
# default under add/remove; 3 ran AdsBPC)
TOP_SLICES = 6
DEMO_MARGINALS = {
    "publisher": {"count": 60, "value": 1},
    "publisher,creative,region": {"count": 12, "value": 6},
}


def catalogue_for(days: int) -> dict:
    """Three campaigns of one advertiser sharing one account (the cap holds across them): two
    count-only, and one broken down by the credited ad's creative (an impression column) ×
    region (a conversion column) with the conversions' value."""
    common = {
        "advertiser": "acme",
        "account": "acme-users",
        "start": DEMO_START.isoformat(),
        "days": days,
        "publishers": "all",
        "attribution": {"rule": "lta", "lookback_days": 30},
        # the default daily mechanism under add/remove (AdsBPC+), its profile read from the
        # first min(4, n − 1) days (4 is its default) so that a short demo (--days 2 .. 4) plans
        "mechanism": {"kind": default_stream("add_remove"), "profile_days": min(4, days - 1)},
    }
    return {
        "accounts": [{"name": "acme-users", "rho_cap": 2.0}],
        # the simulated events carry only listed values: no catch-all cell (an empty one would
        # add noise to every total); a real catalogue keeps the default (docs/operators.md)
        "dimensions": {
            "region": {"source": "conversions", "values": list(REGIONS), "catch_all": None},
            "device": {"source": "conversions", "values": list(DEVICES), "catch_all": None},
            "creative": {"source": "impressions", "values": list(CREATIVES), "catch_all": None},
        },
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
            {
                **common,
                "name": "demo_slices",
                "privacy": {"rho": 0.5},
                "workload": {"kind": "prefix"},
                "objective": {"kind": "wsum", "last_weight": 7},
                "breakdown": ["creative", "region"],
                "measures": ["count", "value"],
                "value_cap": DEMO_VALUE_CAP,
                # what this report reads: each publisher's conversions (its accuracy line) and
                # the full cells, weighed to hold a publisher's count within 1.3× a count-only
                # campaign's and a cell within 1.3× of cells measured one by one
                # (docs/slices.md#the-demos-workload-per-measure-weights)
                "mechanism": {**common["mechanism"], "marginals": DEMO_MARGINALS},
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
        made_layout = made.pop("layout", None)
        wanted = {k: v for k, v in options.items() if k != "layout"}
        if made != wanted:
            shown = ", ".join(f"--{k} {v}" for k, v in made.items() if k != "seed")
            raise ConfigError(
                f"{home.root} is a demo home made with {shown}; rerun with those options or "
                "use a new --home"
            )
        if made_layout != options["layout"]:
            raise ConfigError(
                f"{home.root} was made by an older demo (other campaigns or mechanisms); use a "
                "new --home"
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
        dimensions=True,  # region and device columns, from their own seeded stream
        impression_dimensions={"creative": CREATIVES},  # each impression's ad, likewise
    )
    files = write_events(events, home.root / "input")
    dimensions = {"region": list(REGIONS), "device": list(DEVICES)}
    with home.warehouse_lock(), Warehouse(home.warehouse) as warehouse:
        loaded = warehouse.ingest(
            files.impressions,
            files.conversions,
            dimensions=dimensions,
            impression_dimensions={"creative": list(CREATIVES)},
        )
        report = loaded.to_json()
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


def _slice_plot(home: Home, ledger: Ledger, name: str, layout: CellLayout) -> Path:
    """The top slices (over all publishers, every dimension kept) by campaign-to-date noisy
    count, one line each over the days with its 95 % band: the ``cumulative`` series of
    ``releases --json`` — running sums of the released cells, unbiased, not the labelled
    ``projected`` numbers (DP values only; no truth on this chart)."""
    series = [
        row
        for row in release_document(ledger, name)["cumulative"]
        if row["publisher"] == ALL
        and row["measure"] == "count"
        and all(row[d] != ALL for d in layout.dimension_names)
    ]
    plot = home.plots / f"{name}_slices.png"
    plot.write_bytes(
        slice_chart(
            series,
            title=f"{name}: top {TOP_SLICES} slices, conversions to date (released running sums)",
            label_keys=layout.dimension_names,
            top=TOP_SLICES,
        )
    )
    return plot


def _fit(
    errors: list[float],
    weights: list[np.ndarray],
    strategy: np.ndarray | None,
    releases: list,
    scale: float,
) -> dict | None:
    """Each answer's error against its own stated std, with the correlation the answers'
    noise has (dp_platform/noise_fit.py): cov(a, b) = (var(a + b) − var(a − b)) / 4, each
    variance the releases' own (publication.noise_std) times ``scale`` (the squared σ factor of
    the total over publishers, from the layout's strategy)."""
    if not errors:
        return None
    days = max(len(w) for w in weights)
    padded = [np.pad(np.asarray(w, dtype=np.float64), (0, days - len(w))) for w in weights]

    def variance(w: np.ndarray) -> float:
        return scale * noise_std(strategy, releases[:days], w) ** 2

    cov = np.array([[(variance(a + b) - variance(a - b)) / 4.0 for b in padded] for a in padded])
    stds = np.sqrt(np.diag(cov))
    fit = noise_fit(np.array(errors), stds, cov / np.outer(stds, stds))
    return {**asdict(fit), "within_noise": fit.within_noise, "sentence": fit.sentence()}


def run_demo(home_dir: Path, *, days: int, users: int, publishers: int) -> dict:
    """Run the demo and return its report (releases next to the truth, errors, budget, plots)."""
    home = Home.at(home_dir)
    options = {"seed": DEMO_SEED, "days": days, "users": users, "publishers": publishers}
    _claim_home(home, {**options, "layout": DEMO_LAYOUT})
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
            strategy = release_strategy(
                ledger.campaign_info(campaign.name)["plan"]["stream"]["plan"]
            )
            truth = _truth(home, campaign, len(releases))
            layout = registration.layout
            # per publisher, counts: a sliced campaign's count cells summed over the breakdown
            noisy = np.array([publisher_counts(layout, r.values) for r in releases])
            unit = layout.strategy.entry_std((), "count")  # the total over publishers
            ends = plan.query_ends
            rows, errors, variances, points, answer_weights = [], [], [], [], []
            for release in releases:
                day = release.day
                ending = [j for j in range(plan.queries.shape[0]) if ends[j] == day]
                noisy_answer = true_answer = None
                if ending:
                    weights = plan.queries[ending[-1], :day]
                    noisy_answer = float(weights @ noisy[:day].sum(axis=1))
                    true_answer = float(weights @ truth[:day].sum(axis=1))
                    errors.append(noisy_answer - true_answer)
                    answer_weights.append(weights)
                    std = unit * noise_std(strategy, releases[:day], weights)
                    variances.append(std**2)
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
                "noise_fit": _fit(errors, answer_weights, strategy, releases, unit**2),
                "plot": str(plot),
            }
            if not layout.plain and releases:
                report["campaigns"][campaign.name]["slice_plot"] = str(
                    _slice_plot(home, ledger, campaign.name, layout)
                )
        report["budget"] = ledger.budget_report()
    return report

"""Campaigns with a breakdown and the value measure, end to end through Dagster: `ingest
--config`, `run`, `releases --json` cells — and the black-box test of what they publish.

Three campaigns share one ingest and one run: ``sliced`` (AdsBPC, last touch, region × device:
conversion columns), ``touched`` (AdsBPC, uniform multi-touch, creative × device: creative is
an impressions column, so one conversion's credit lands in several creatives' cells) and
``once`` (the one-shot Laplace release of creative × region cells).

Black box: the released cells of every day are z-scored against an independent NumPy
attribution + clipping of the same events (tests/cells_data.py) at the day's released bound,
with the released σ of each cell. Seeded noise, so the run is reproducible; with N ≈ 290
z-scores, the tolerances |mean| < 4/√N and |var − 1| < 4·√(2/N) are four standard errors —
wide enough for any seed, narrow enough that a σ off by 25 % or a bias of a quarter σ fails.
"""

from __future__ import annotations

import json
from datetime import date
from statistics import NormalDist

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
    CREATIVES,
    DEVICES,
    PUBLISHERS,
    REGIONS,
    START,
    VALUE_CAP,
    generate,
    reference_cells,
    write,
)
from tests.platform_fixtures import command_output

DAYS = 8
TODAY = date(2026, 11, 22)


BREAKDOWNS = {"sliced": ["region", "device"], "touched": ["creative", "device"]}
RULES = {"sliced": "lta", "touched": "uni"}


def _campaign(name: str, mechanism: dict, rule: str, breakdown: list[str], rho: float) -> dict:
    return {
        "name": name,
        "advertiser": ADVERTISER,
        "account": "acct",
        "start": START.isoformat(),
        "days": DAYS,
        "publishers": PUBLISHERS,
        "attribution": {"rule": rule, "lookback_days": 30},
        "privacy": {"rho": rho},
        "mechanism": mechanism,
        "breakdown": breakdown,
        "measures": ["count", "value"],
        "value_cap": VALUE_CAP,
    }


def _catalogue(mechanism: dict) -> dict:
    return {
        "accounts": [{"name": "acct", "rho_cap": 50}],
        "dimensions": {
            "region": {"source": "conversions", "values": REGIONS, "catch_all": None},
            "device": {"source": "conversions", "values": DEVICES, "catch_all": None},
            "creative": {"source": "impressions", "values": CREATIVES, "catch_all": None},
        },
        "campaigns": [
            *(
                _campaign(name, mechanism, RULES[name], BREAKDOWNS[name], 4.0)
                for name in ("sliced", "touched")
            ),
            _campaign("once", ONE_SHOT, "uni", ["creative", "region"], 1.0),
        ],
    }


ONE_SHOT = {"kind": "one_shot", "bound": 2}


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
    assert [len(r.days) for r in runs][:2] == [DAYS, DAYS]
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


@pytest.mark.parametrize("name", list(BREAKDOWNS))
def test_released_cells_are_centred_on_an_independent_attribution_and_clipping(
    released, name
) -> None:
    """``touched`` splits each conversion's credit over its impressions' creatives (uni):
    the reference credits each impression's publisher and creative by the same rule."""
    events, home, _ = released
    with Ledger.at_home(home.root, read_only=True) as ledger:
        days = published_days(ledger, name)
    z = []
    for published in days:
        day = date.fromordinal(START.toordinal() + published.day - 1)
        expected = reference_cells(
            events,
            day,
            published.bound,
            dimensions=BREAKDOWNS[name],
            measures=["count", "value"],
            rule=RULES[name],
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
    # one line per marginal the advertiser reads, with its weight and its own σ
    marginals = metadata["marginals_sigma"].value.splitlines()
    assert marginals[0] == "| marginal | weight | σ of a count number | σ of a value number |"
    assert [line.split(" | ")[0] for line in marginals[2:]] == [
        "| publisher",
        "| publisher × region",
        "| publisher × device",
        "| publisher × region × device",
    ]
    _, publisher_factor, _ = _residual_factors()
    assert marginals[2].startswith(
        f"| publisher | 4 | {significant(last.sigma * publisher_factor):g} |"
    )


def test_releases_table_shows_the_last_days_largest_cells(released, capsys) -> None:
    _, home, _ = released
    capsys.readouterr()
    assert main(["releases", "--home", str(home.root), "--campaign", "sliced", "--cells", "3"]) == 0
    out = capsys.readouterr().out
    assert f"day {DAYS} cells (publisher / dimension values; value ± 95 % interval):" in out
    assert "  count: top 3 of 18 cells" in out and "  value: top 3 of 18 cells" in out


# -- totals, cumulative answers and intervals in `releases --json` (issue 15) ---------------------

Z = NormalDist().inv_cdf(0.975)
STATISTICS = {"value", "sigma", "se", "ci_low", "ci_high"}
AXES = ("publisher", "region", "device", "measure")
LISTS = {"publisher": PUBLISHERS, "region": REGIONS, "device": DEVICES, "creative": CREATIVES}


@pytest.fixture(scope="module")
def document(released) -> dict:
    _, home, _ = released
    return _releases_json(home)


def _releases_json(home: Home, campaign: str = "sliced") -> dict:
    argv = ["releases", "--home", str(home.root), "--campaign", campaign, "--json"]
    return json.loads(command_output(*argv))


def _label(row: dict, axes: tuple[str, ...] = AXES) -> tuple[str, ...]:
    return tuple(str(row[a]) for a in axes)


@pytest.mark.parametrize("name", list(BREAKDOWNS))
def test_every_derived_total_is_exactly_the_sum_of_its_slices_on_every_day(released, name) -> None:
    axes = ("publisher", *BREAKDOWNS[name], "measure")
    first, second = (LISTS[d] for d in BREAKDOWNS[name])
    document = _releases_json(released[1], name)
    # one total for every label tuple with at least one "all": every subset of the axes summed
    per_measure = (len(PUBLISHERS) + 1) * (len(first) + 1) * (len(second) + 1)
    cells_per_measure = len(PUBLISHERS) * len(first) * len(second)
    for day in document["days"]:
        numbers = {_label(c, axes): c["value"] for c in day["cells"]}
        assert len(day["totals"]) == 2 * (per_measure - cells_per_measure)
        for total in day["totals"]:
            assert set(total) == set(axes) | {"value", "se", "ci_low", "ci_high"}
            numbers[_label(total, axes)] = total["value"]
        checked = 0
        for total in day["totals"]:
            label = _label(total, axes)
            summed = [a for a in axes[:-1] if total[a] == "all"]
            assert summed, label
            for axis in summed:  # split along each summed axis: the slices one level down
                position = axes.index(axis)
                slices = [
                    numbers[(*label[:position], value, *label[position + 1 :])]
                    for value in LISTS[axis]
                ]
                assert total["value"] == sum(slices), (day["day"], label, axis)  # exact
                checked += 1
            cells = [
                c["value"]
                for c in day["cells"]
                if all(total[a] in ("all", c[a]) for a in axes[:-1])
                and c["measure"] == total["measure"]
            ]
            assert total["value"] == sum(cells)
        assert checked > len(day["totals"])
        # a publisher's count (what the answers sum) is its count total over the breakdown
        for publisher, value in day["values"].items():
            assert value == numbers[(publisher, "all", "all", "count")]


def _residual_factors() -> tuple[float, float, float]:
    """σ per unit of the release's σ of a count cell, a publisher's count and the total over
    publishers, for "sliced" (AdsBPC, add/remove: the default residual workload over
    publisher × region × device) — from privacy/marginals.py directly, not through the cells'
    strategy the platform reads them from."""
    from dp_platform.privacy.marginals import ResidualStrategy

    weights = {
        (measure, frozenset(kept)): weight
        for measure in (0, 1)
        for kept, weight in [({0}, 4.0), ({0, 1}, 2.0), ({0, 2}, 2.0), ({0, 1, 2}, 1.0)]
    }
    sizes = (len(PUBLISHERS), len(REGIONS), len(DEVICES))
    strategy = ResidualStrategy.planned(sizes, 2, weights)
    cell, publisher, total = (
        np.sqrt(strategy.marginal_variance(0, frozenset(kept))) for kept in ({0, 1, 2}, {0}, set())
    )
    return cell, publisher, total


def test_every_released_number_has_its_95_interval(document) -> None:
    """Every number's interval is value ± 1.96·se, and the σ's are the residual strategy's:
    a publisher's count and the total over publishers have their marginal's own σ, not √k
    times a cell's (the cells' noises are correlated)."""
    cell_factor, publisher_factor, total_factor = _residual_factors()
    for day in document["days"]:
        rows = [*day["cells"], *day["totals"], *day["cumulative"]]
        for row in rows:
            se = row["sigma"] if "sigma" in row else row["se"]
            assert se > 0
            assert row["ci_low"] <= row["value"] <= row["ci_high"]
            assert row["ci_high"] - row["value"] == pytest.approx(Z * se, rel=1e-6)
            assert row["value"] - row["ci_low"] == pytest.approx(Z * se, rel=1e-6)
        count_sigma = next(c["sigma"] for c in day["cells"] if c["measure"] == "count")
        assert count_sigma == pytest.approx(day["sigma"] * cell_factor, rel=1e-9)
        value_se = day["sigma"] * publisher_factor
        for publisher, value in day["values"].items():
            interval = day["values_ci"][publisher]
            assert interval["ci_low"] == pytest.approx(value - Z * value_se, rel=1e-6)
            assert interval["ci_high"] == pytest.approx(value + Z * value_se, rel=1e-6)
        total = sum(day["values"].values())
        half = Z * day["sigma"] * total_factor
        assert day["total_ci"]["ci_low"] == pytest.approx(total - half, rel=1e-6)
        totals = {_label(t): t for t in day["totals"]}
        assert totals[("all", "all", "all", "count")]["se"] == pytest.approx(
            day["sigma"] * total_factor, rel=1e-9
        )
        for query, answers in day["answers"].items():
            intervals = day["answers_ci"][query]
            halves = []
            for publisher, answer in answers.items():
                low, high = intervals[publisher]["ci_low"], intervals[publisher]["ci_high"]
                assert low < answer < high
                assert answer - low == pytest.approx(high - answer)
                halves.append(high - answer)
            whole = intervals["total"]
            assert whole["ci_low"] < sum(answers.values()) < whole["ci_high"]
            # correlated publishers: the total's half-width is its marginal's, not √P times one's
            assert whole["ci_high"] - sum(answers.values()) == pytest.approx(
                halves[0] * total_factor / publisher_factor
            )


def test_cumulative_numbers_are_the_running_sums_and_the_projection_is_labelled(document) -> None:
    """Issue 28: a campaign-to-date ``value`` is the running sum of the released numbers
    (unbiased, exact se) — it was the per-row isotonic projection, biased upward when summed;
    that projection is kept only as the separate ``projected`` field, labelled in the document."""
    from scipy.optimize import isotonic_regression

    running: dict[tuple[str, ...], list[tuple[float, float]]] = {}
    dipped = moved = 0
    for d, day in enumerate(document["days"], start=1):
        for row in day["cells"]:
            running.setdefault(_label(row), []).append((row["value"], row["sigma"]))
        for row in day["totals"]:
            running.setdefault(_label(row), []).append((row["value"], row["se"]))
        assert len(day["cumulative"]) == len(running)
        for row in day["cumulative"]:
            daily = running[_label(row)]
            assert len(daily) == d
            sums = np.cumsum([v for v, _ in daily])
            ses = np.sqrt(np.cumsum([s**2 for _, s in daily]))
            dipped += bool(np.any(np.diff(sums) < 0) or sums.min() < 0)
            assert row["value"] == sums[-1]  # gridded: the running sum is exact
            assert row["se"] == pytest.approx(ses[-1], rel=1e-9)
            fitted = isotonic_regression(sums, weights=1 / ses**2, increasing=True).x
            assert row["projected"] == pytest.approx(max(fitted[-1], 0.0), rel=1e-9, abs=1e-9)
            moved += row["projected"] != row["value"]
    assert dipped > 0 and moved > 0  # the two numbers differ in this run
    assert "biased upward when summed" in document["cumulative_fields"]["projected"]
    assert "unbiased" in document["cumulative_fields"]["value"]
    by_day = [{_label(r): r for r in day["cumulative"]} for day in document["days"]]
    assert len(document["cumulative"]) == len(by_day[-1])
    for series in document["cumulative"]:  # the plots' lines: each day's number, never revised
        label = _label(series)
        assert series["days"] == list(range(1, DAYS + 1))
        assert series["value"] == [rows[label]["value"] for rows in by_day]
        assert np.allclose(
            np.asarray(series["ci_high"]) - series["value"], Z * np.asarray(series["se"])
        )
        projected = np.asarray(series["projected"])
        assert np.all(projected >= 0) and np.all(np.diff(projected) >= 0)
        assert projected[-1] == by_day[-1][label]["projected"]


def test_every_campaign_to_date_total_is_exactly_the_sum_of_its_cells(document) -> None:
    """On every day, every total to date in `releases --json` equals the sum of the cells to
    date it covers, exactly (issue 28: the projected numbers shown before did not add up)."""
    for day in document["days"]:
        cells = [r for r in day["cumulative"] if "all" not in _label(r)]
        totals = [r for r in day["cumulative"] if "all" in _label(r)]
        assert len(cells) == len(day["cells"]) and totals
        for total in totals:
            covered = [
                c["value"]
                for c in cells
                if all(total[a] in ("all", c[a]) for a in AXES[:-1])
                and c["measure"] == total["measure"]
            ]
            assert total["value"] == sum(covered), (day["day"], _label(total))


def test_releases_table_shows_intervals_and_the_dimension_totals(released, document, capsys):
    _, home, _ = released
    capsys.readouterr()
    assert main(["releases", "--home", str(home.root), "--campaign", "sliced"]) == 0
    out = capsys.readouterr().out
    last = document["days"][-1]
    grand = next(
        t
        for t in last["totals"]
        if t["measure"] == "count" and all(t[a] == "all" for a in AXES[:-1])
    )
    shown = round_to_noise(grand["value"], grand["se"])
    assert f"day {DAYS} totals over all publishers (exact sums of its cells):" in out
    assert f"    count  all{' ' * 38}{shown:g} ± " in out
    for region in REGIONS:
        assert f"region={region}" in out
    assert " ± " in out.splitlines()[2]  # day 1's total and answers carry their half-width
    # campaign to date: the running sums (issue 28), the same numbers as --json's `value`
    heading = f"totals over all publishers to date, through day {DAYS} (running sums of the"
    to_date = out[out.index(heading) :]
    for row in last["cumulative"]:
        if row["publisher"] == "all" and sum(row[d] != "all" for d in ("region", "device")) <= 1:
            label = next((f"{d}={row[d]}" for d in ("region", "device") if row[d] != "all"), "all")
            shown = round_to_noise(row["value"], row["se"]) + 0.0
            assert f"    {row['measure']:<6} {label:<40} {shown:g} ± " in to_date, label


def test_slice_chart_draws_the_top_slices_of_the_cumulative_series(document) -> None:
    """Ranked and drawn by the running sums (``value``), not by the biased projection."""
    from dp_platform.reporting import slice_chart, top_slices

    slices = [
        s
        for s in document["cumulative"]
        if (s["publisher"], s["measure"]) == ("all", "count")
        and "all" not in (s["region"], s["device"])
    ]
    assert len(slices) == len(REGIONS) * len(DEVICES)
    chosen = top_slices(slices, 3)
    last = sorted((s["value"][-1] for s in slices), reverse=True)
    assert [s["value"][-1] for s in chosen] == last[:3]
    png = slice_chart(slices, title="t", label_keys=("region", "device"), top=3)
    assert png.startswith(b"\x89PNG")


# -- the one-shot release of cells (Laplace, ℓ1) ---------------------------------------------------


def test_one_shot_publishes_cells_whose_publisher_totals_are_exact_sums(released) -> None:
    """`releases --json` carries the one-shot's cells (creative × region × measure per
    publisher) with the Laplace law's σ and interval; each publisher's value is the exact sum
    of its count cells and the total the sum of those."""
    document = _releases_json(released[1], "once")
    assert document["days"] == []
    release = document["one_shot"]
    cells = release["cells"]
    assert len(cells) == len(PUBLISHERS) * len(CREATIVES) * len(REGIONS) * 2
    assert set(cells[0]) == {
        "publisher",
        "creative",
        "region",
        "measure",
        "value",
        "sigma",
        "ci_low",
        "ci_high",
    }
    b = release["scale"]  # Laplace scale of a released entry: its cells are × 1/s = 2
    for cell in cells:
        unit = 2.0 if cell["measure"] == "count" else 2.0 * VALUE_CAP
        assert cell["sigma"] == pytest.approx(np.sqrt(2) * b * unit)
        assert cell["ci_high"] - cell["value"] == pytest.approx(b * np.log(20) * unit)
    for publisher, value in release["values"].items():
        mine = [
            c["value"] for c in cells if c["publisher"] == publisher and c["measure"] == "count"
        ]
        assert value == sum(mine)
    assert release["total"] == sum(release["values"].values())


def test_one_shot_cells_reach_the_dagster_metadata(released) -> None:
    _, _, instance = released
    event = instance.get_latest_materialization_event(dg.AssetKey(["once", "one_shot_release"]))
    metadata = event.asset_materialization.metadata
    assert metadata["cells"].value == len(PUBLISHERS) * len(CREATIVES) * len(REGIONS) * 2
    table = metadata["top_value_slices"].value.splitlines()
    assert table[0] == "| publisher | creative | region | noisy value | 95 % interval |"

"""The Dagster UI as a data engineer meets it: `dp-platform ui` over a small demo home, driven by
Playwright in Debian's Chromium (installed by `make browser`; never `playwright install`).

Set ``DP_PLATFORM_SCREENSHOTS=docs/figures`` to write the screenshots docs/operators.md shows
(`make ui-screenshots`).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from playwright.sync_api import expect

from dp_platform.display import round_to_noise, significant
from tests.platform_fixtures import DAILY_ASSETS as ASSET_NAMES
from tests.process_runs import process_state

pytestmark = pytest.mark.browser

CLI = [sys.executable, "-m", "dp_platform.cli"]
CAMPAIGN = "demo_cumulative"
DAY, DATE = 3, "2026-03-03"
REPUBLISH = ("2026-03-01", "2026-03-05")  # 5 days, as the CLI's timed run below
# Where the test writes the 5-day timings of the UI backfill and of the command line (JSON). Only
# then does it time the command line too (a second home, an ingest and a run: ~18 s of CPU that
# no assertion reads); the UI's own figures are printed on every run.
TIMINGS = os.environ.get("DP_PLATFORM_UI_TIMINGS")
CHROMIUM_FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",  # the machine's closed network refuses these calls
    "--disable-component-update",
    "--disable-sync",
]
SCREENSHOTS = os.environ.get("DP_PLATFORM_SCREENSHOTS")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _graphql(base: str, query: str) -> dict:
    request = urllib.request.Request(
        f"{base}/graphql",
        data=json.dumps({"query": query}).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.load(response)["data"]


def _cli_json(*args: str) -> dict:
    done = subprocess.run([*CLI, *args, "--json"], capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


@pytest.fixture(scope="module")
def home(tmp_path_factory) -> Path:
    """A small demo home: two campaigns, 6 days, through Dagster (what `make demo` does)."""
    root = tmp_path_factory.mktemp("browser") / "home"
    args = ["demo", "--home", str(root), "--days", "6", "--users", "1500", "--publishers", "4"]
    subprocess.run([*CLI, *args], capture_output=True, text=True, check=True)
    return root


@pytest.fixture(scope="module")
def cli_seconds(home, tmp_path_factory) -> float:
    """Wall time of `dp-platform run` materialising the same 5 days of the same campaign from
    the command line, on a second home holding the same events (fresh ledger: it draws them)."""
    other = tmp_path_factory.mktemp("cli") / "home"
    other.mkdir()
    config = other / "campaigns.yaml"
    shutil.copy(home / "campaigns.yaml", config)
    ingest = ["ingest", "--home", str(other), "--config", str(config)]
    ingest += ["--impressions", str(home / "input" / "impressions.parquet")]
    ingest += ["--conversions", str(home / "input" / "conversions.parquet")]
    subprocess.run([*CLI, *ingest], capture_output=True, text=True, check=True)
    run = ["run", "--home", str(other), "--config", str(config), "--campaign", CAMPAIGN]
    started = time.monotonic()
    subprocess.run([*CLI, *run, "--through", REPUBLISH[1]], capture_output=True, check=True)
    return time.monotonic() - started


def _dg_dev_group(ui_pid: int) -> list[int]:
    """The processes `dp-platform ui` started: `dg dev` leads its own group (webserver, daemon,
    code server)."""
    (dg_dev,) = subprocess.run(
        ["ps", "-o", "pid=", "--ppid", str(ui_pid)], capture_output=True, text=True
    ).stdout.split()
    group = subprocess.run(["ps", "-o", "pid=", "-g", dg_dev], capture_output=True, text=True)
    return [int(pid) for pid in group.stdout.split()]


@pytest.fixture(scope="module")
def ui(home):
    """`dp-platform ui` on a free port, until the code location is loaded. Its teardown is what
    `make ui`'s Ctrl-C must do: SIGTERM, and within 5 s the command and every process of `dg
    dev`'s group are gone; the log has neither Dagster's warning that `dagster dev` is
    superseded nor one that dagster.yaml was not read."""
    port = _free_port()
    log = home / "ui.log"
    with log.open("w") as output:
        process = subprocess.Popen(
            [*CLI, "ui", "--home", str(home), "--port", str(port)],
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 240
    while True:
        try:
            entries = _graphql(
                base, "{ workspaceOrError { ... on Workspace { locationEntries { loadStatus } } } }"
            )["workspaceOrError"]["locationEntries"]
            if entries and all(e["loadStatus"] == "LOADED" for e in entries):
                break
        except OSError:
            pass
        assert process.poll() is None, log.read_text()[-3000:]
        assert time.monotonic() < deadline, "the UI did not come up in 240 s"
        time.sleep(2)
    yield base
    group = _dg_dev_group(process.pid)
    started = time.monotonic()
    process.send_signal(signal.SIGTERM)
    process.wait(timeout=30)
    stopped_in = time.monotonic() - started
    assert stopped_in <= 5, f"`dp-platform ui` took {stopped_in:.1f} s to stop"
    assert len(group) >= 3, group
    for member in group:
        assert process_state(member) in (None, "Z"), member  # a zombie waits for init to reap it
    text = log.read_text()
    assert "dg dev" not in text and "superseded" not in text.lower(), text[-3000:]
    assert "will not be used to configure Dagster" not in text  # no dagster.yaml warning


@pytest.fixture(scope="module")
def page(ui):
    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.fail("Chromium is missing: `make browser` installs Debian's chromium")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_FLAGS)
        page = browser.new_page(viewport={"width": 1500, "height": 1000})
        page.set_default_timeout(60_000)
        yield page
        browser.close()


def _open(page, url: str) -> None:
    page.goto(url)
    welcome = page.get_by_role("button", name="Skip")
    try:  # Dagster's one-time community prompt covers the page on a fresh browser profile
        welcome.wait_for(timeout=8_000)
        welcome.click()
    except Exception:
        pass


def _shot(page, name: str) -> None:
    if SCREENSHOTS:
        Path(SCREENSHOTS).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(SCREENSHOTS) / name))


def _metadata_table(page) -> dict[str, str]:
    """Label → shown value of every two-cell metadata row on the page."""
    rows = page.eval_on_selector_all(
        "tr",
        "rows => rows.map(r => Array.from(r.querySelectorAll('td')).map(c => c.innerText.trim()))",
    )
    return {cells[0]: cells[1] for cells in rows if len(cells) >= 2}


def test_a_release_partition_shows_that_days_published_values(ui, page, home) -> None:
    published = _cli_json("releases", "--home", str(home), "--campaign", CAMPAIGN)
    day = next(d for d in published["days"] if d["day"] == DAY)
    _open(page, f"{ui}/assets/{CAMPAIGN}/noisy_daily_release?view=partitions&partition={DATE}")
    page.get_by_text("noisy_values", exact=True).wait_for()
    values = day["values"]
    total_std = day["sigma"] * len(values) ** 0.5
    shown = _metadata_table(page)
    assert float(shown["bound_r"]) == significant(day["bound"])
    assert float(shown["sigma"]) == significant(day["sigma"])
    assert float(shown["rho_charged_today"]) == significant(day["rho_charged"])
    assert float(shown["noisy_total"]) == round_to_noise(sum(values.values()), total_std)
    assert shown["date"] == DATE and shown["day"] == str(DAY)
    table = shown["noisy_values"]
    for publisher, value in values.items():
        assert f"{publisher}\t{round_to_noise(value, day['sigma']):g}" in table, table
    _shot(page, "ui-release-partition.png")


def test_the_partition_plots_and_the_answers_chart_are_drawn(ui, page) -> None:
    _open(page, f"{ui}/assets/{CAMPAIGN}/noisy_daily_release")
    page.get_by_role("button", name="Plots").click()
    page.get_by_text("noisy_total", exact=True).first.wait_for()
    assert page.get_by_text("Include numeric metadata entries").count() == 0
    page.wait_for_timeout(2_000)
    _shot(page, "ui-partition-plots.png")
    _open(page, f"{ui}/assets/{CAMPAIGN}/cumulative_query_answers")
    chart = page.locator("img[src^='data:image/svg+xml']")
    chart.first.wait_for()
    assert chart.first.is_visible()
    assert page.get_by_text("[Show Markdown]").count() == 0
    chart.first.scroll_into_view_if_needed()  # the picture shows the chart, not the page's top
    _shot(page, "ui-answers-chart.png")


def test_the_vertical_lineage_shows_full_asset_names_at_its_default_zoom(ui, page) -> None:
    """What docs/operators.md advises against cut names: Dagster 1.13 opens a lineage graph
    zoomed to its width and, below 60 % zoom, draws each node as a small box whose name it cuts
    to 18 characters (hard-coded, no setting); a campaign's seven ranks side by side need a
    window about 1900 px wide to stay above it. The graph's own vertical orientation (⌥E, kept
    by the browser) is narrow enough to open at full zoom: every name drawn is whole."""
    context = page.context.browser.new_context(viewport={"width": 1500, "height": 1000})
    context.add_init_script("localStorage.setItem('asset-graph-direction', '\"vertical\"')")
    vertical = context.new_page()
    vertical.set_default_timeout(60_000)
    try:
        _open(vertical, f"{ui}/locations/assets.location/asset-groups/{CAMPAIGN}/lineage")
        names = vertical.locator("[class*='assetName']")
        names.first.wait_for()
        vertical.wait_for_timeout(2_000)
        shown = [n.strip() for n in names.all_inner_texts()]
        assert len(shown) >= 4, shown  # the middle of the chain fills the window
        assert all(name in ASSET_NAMES for name in shown), shown  # none cut ("attri…_conversions")
        assert vertical.locator("[class*='minimalName']").count() == 0  # full nodes, not boxes
        _shot(vertical, "ui-lineage-vertical.png")
    finally:
        context.close()


def test_a_cli_run_is_listed_on_its_jobs_runs_page(ui, page) -> None:
    """`dp-platform demo` ran every campaign from the command line: each run was launched
    against the code location, so the job's own Runs page lists it."""
    runs = _graphql(
        ui,
        '{ runsOrError(filter: {pipelineName: "Demo_cumulative_daily"}) { ... on Runs { results '
        "{ runId status } } } }",
    )["runsOrError"]["results"]
    assert [r["status"] for r in runs] == ["SUCCESS"]
    _open(page, f"{ui}/locations/assets.location/jobs/Demo_cumulative_daily/runs")
    page.get_by_text(runs[0]["runId"][:8]).first.wait_for()
    assert page.get_by_text("No runs found").count() == 0
    _shot(page, "ui-job-runs.png")


def test_a_five_day_republish_from_the_ui_touches_those_days_and_spends_nothing(
    ui, page, home, request
) -> None:
    ledger = home / "ledger.sqlite"
    with sqlite3.connect(ledger) as db:
        before = db.execute("SELECT * FROM releases ORDER BY campaign, day").fetchall()
    budget_before = _cli_json("budget", "--home", str(home))
    _open(page, f"{ui}/locations/assets.location/asset-groups/{CAMPAIGN}")
    page.get_by_role("button", name="Materialize all…").click()
    box = page.get_by_placeholder("ex: 2026-03-01", exact=False)
    box.fill(f"[{REPUBLISH[0]}...{REPUBLISH[1]}]")
    box.press("Enter")
    page.get_by_text("Preview", exact=True).click()
    page.get_by_text("Backfill preview").wait_for()
    # every one of the campaign's 8 assets: exactly the 3 days asked for, nothing later
    expect(page.get_by_text(f"{REPUBLISH[0]}...{REPUBLISH[1]}", exact=True)).to_have_count(8)
    assert page.get_by_text("...2026-03-06", exact=False).count() == 0
    _shot(page, "ui-republish-preview.png")
    page.get_by_role("button", name="OK").click()
    page.get_by_role("button", name="Launch backfill").click()
    launched_at = time.monotonic()

    deadline = time.monotonic() + 600
    while True:
        runs = _graphql(
            ui,
            "{ runsOrError(limit: 20) { ... on Runs { results { runId status pipelineName "
            "tags { key value } } } } }",
        )["runsOrError"]["results"]
        launched = [r for r in runs if any(t["key"] == "dagster/backfill" for t in r["tags"])]
        if launched and all(r["status"] in {"SUCCESS", "FAILURE", "CANCELED"} for r in launched):
            break
        assert time.monotonic() < deadline, "the re-publish did not finish in 600 s"
        time.sleep(0.5)
    ui_seconds = time.monotonic() - launched_at
    assert [r["status"] for r in launched] == ["SUCCESS"]  # one run for the whole range
    run = launched[0]
    assert run["pipelineName"] == "Demo_cumulative_daily"  # the campaign's job, not __ASSET_JOB
    tags = {t["key"]: t["value"] for t in run["tags"]}
    span = tags["dagster/asset_partition_range_start"], tags["dagster/asset_partition_range_end"]
    assert span == REPUBLISH
    events = _graphql(
        ui,
        f'{{ runOrError(runId: "{run["runId"]}") {{ ... on Run {{ assetMaterializations {{ '
        "assetKey { path } partition } } } }",
    )["runOrError"]["assetMaterializations"]
    by_asset: dict[str, list[str]] = {}
    for event in events:
        by_asset.setdefault(event["assetKey"]["path"][-1], []).append(event["partition"])
    wanted = [f"2026-03-0{d}" for d in range(1, 6)]
    for asset in ("noisy_daily_release", "cumulative_query_answers"):
        assert sorted(by_asset[asset]) == wanted, by_asset
    assert all(sorted(partitions) == wanted for partitions in by_asset.values()), by_asset
    with sqlite3.connect(ledger) as db:
        assert db.execute("SELECT * FROM releases ORDER BY campaign, day").fetchall() == before
    assert _cli_json("budget", "--home", str(home)) == budget_before  # nothing spent
    cli_seconds = request.getfixturevalue("cli_seconds") if TIMINGS else None
    _record_timings(ui, run["runId"], ui_seconds, cli_seconds)


def _record_timings(ui: str, run_id: str, ui_seconds: float, cli_seconds: float | None) -> None:
    """The closing note's figures (a record, not a timed assertion): the UI backfill from its
    click to the run's end, split into the wait for the daemon's backfill loop (fixed 30 s
    period in Dagster) and the run itself; with ``DP_PLATFORM_UI_TIMINGS`` set, next to the command
    line's whole `dp-platform run` of the same 5 days."""
    run = _graphql(
        ui,
        f'{{ runOrError(runId: "{run_id}") {{ ... on Run {{ creationTime endTime }} }} }}',
    )["runOrError"]
    figures = {
        "ui_backfill_s": round(ui_seconds, 1),
        "ui_run_created_to_end_s": round(run["endTime"] - run["creationTime"], 1),
        "ui_wait_for_backfill_loop_s": round(
            ui_seconds - (run["endTime"] - run["creationTime"]), 1
        ),
    }
    if cli_seconds is not None:
        figures["cli_run_s"] = round(cli_seconds, 1)
        figures["ratio_ui_to_cli"] = round(ui_seconds / cli_seconds, 2)
    print(json.dumps(figures))
    if TIMINGS:
        Path(TIMINGS).write_text(json.dumps(figures, indent=2) + "\n")

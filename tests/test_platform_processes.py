"""`dp-platform run` as real processes: racing runs, a SIGKILL mid-run, and what the UI sees."""

from __future__ import annotations

import csv
import json
import os
import re
import subprocess
import time
from datetime import datetime, timedelta

import pytest
import yaml
from dagster._serdes import serialize_value

from assets.metadata import LINEAGE_KEYS
from assets.runner import instance_for
from dp_platform.ledger import Ledger
from dp_platform.warehouse import Warehouse
from tests.platform_fixtures import START, catalogue, copy_home, make_home
from tests.process_runs import (
    CLI,
    DAYS,
    assert_complete_and_charged_once,
    ledger_counts,
    start_run,
)


@pytest.fixture(scope="module")
def prepared(tmp_path_factory):
    return make_home(tmp_path_factory.mktemp("prepared") / "home", seed=5, users=1200, days=DAYS)


@pytest.fixture(scope="module")
def raced(prepared, tmp_path_factory):
    """A home after two `dp-platform run`s started together: (home, each run's exit code and
    stderr). The command-line test reads the home they finished."""
    home = copy_home(prepared, tmp_path_factory.mktemp("raced") / "home")
    runs = start_run(home), start_run(home)
    errors = [p.communicate(timeout=300)[1] for p in runs]
    return home, [(p.returncode, err) for p, err in zip(runs, errors, strict=True)]


def test_two_runs_started_together_release_once(raced) -> None:
    home, ends = raced
    for code, err in ends:
        assert code == 0, err[-2000:]
    assert_complete_and_charged_once(home)


def test_a_step_waiting_for_the_warehouse_lock_names_its_holder_in_the_runs_log(
    prepared, tmp_path
) -> None:
    """The one-writer rule is the warehouse's flock: a run that finds it held waits (it does
    not fail), says who holds it in its Dagster event log, and finishes once it is free."""
    home = copy_home(prepared, tmp_path / "home")
    config = str(home.root / "campaigns.yaml")
    day_before = str(START - timedelta(days=1))  # nothing due: it registers, launches nothing
    register = ["run", "--home", str(home.root), "--config", config, "--through", day_before]
    done = subprocess.run([*CLI, *register], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]  # registered: the next run opens no warehouse
    assert ledger_counts(home.root) == (0, 0)
    with home.warehouse_lock():  # this test process is the holder
        run = start_run(home)
        instance = instance_for(home)
        deadline = time.monotonic() + 300
        waiting = f"waiting for the warehouse lock held by pid {os.getpid()}"
        seen = False
        while not seen:
            assert run.poll() is None, run.communicate()[1][-2000:]
            assert time.monotonic() < deadline, "no run logged that it waits for the lock"
            for record in instance.get_runs():
                messages = [entry.user_message for entry in instance.all_logs(record.run_id)]
                seen = seen or any(waiting in message for message in messages)
            time.sleep(0.5)
        assert ledger_counts(home.root) == (0, 0)  # nothing drawn while it waited
    _, err = run.communicate(timeout=300)
    assert run.returncode == 0, err[-2000:]
    assert_complete_and_charged_once(home)


def test_a_run_whose_worker_is_killed_fails_in_one_line_and_the_next_run_finishes(
    prepared, tmp_path
) -> None:
    """A fail point SIGKILLs the run worker inside its release step (the worker holds the
    warehouse lock then): its code server marks the run failed, and `dp-platform run` says so
    in one line, exit 1, no traceback; the next run completes, each day charged once."""
    home = copy_home(prepared, tmp_path / "home")
    command = [*CLI, "run", "--home", str(home.root), "--config", str(home.root / "campaigns.yaml")]
    env = {**os.environ, "PYTHONWARNINGS": "ignore", "DP_PLATFORM_FAULT": "release.drawn@2"}
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 1, done.stderr[-2000:]
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert "Spring_daily" in lines[0] and "signal 9" in lines[0], lines[0]
    assert ledger_counts(home.root)[1] < DAYS  # it died part-way
    again = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr[-2000:]
    assert_complete_and_charged_once(home)


SENTINEL_USERS = 4321  # a true count planted in the data; it must never reach the UI or logs


def plant_sentinel(home) -> None:
    """4321 users each click publisher pub_sentinel on day 2 and convert an hour later."""
    day = datetime.combine(START + timedelta(days=1), datetime.min.time())
    imp_path, conv_path = home.root / "sentinel_imp.csv", home.root / "sentinel_conv.csv"
    with imp_path.open("w", newline="") as imp, conv_path.open("w", newline="") as conv:
        imps, convs = csv.writer(imp), csv.writer(conv)
        imps.writerow(
            ["impression_id", "user_id", "publisher_id", "advertiser_id", "ts", "interaction"]
        )
        convs.writerow(["conversion_id", "user_id", "advertiser_id", "ts", "value"])
        for i in range(SENTINEL_USERS):
            ts = day + timedelta(seconds=5 * i)
            imps.writerow(
                [f"si{i}", f"su{i}", "pub_sentinel", "acme", f"{ts.isoformat()}Z", "click"]
            )
            conv_ts = ts + timedelta(hours=1)
            convs.writerow([f"sc{i}", f"su{i}", "acme", f"{conv_ts.isoformat()}Z", "1.0"])
    with Warehouse(home.warehouse) as warehouse:
        report = warehouse.ingest(imp_path, conv_path).to_json()
    assert report["conversions"]["accepted"] == SENTINEL_USERS


def _around(text: str, match: re.Match | None) -> str:
    return "" if match is None else text[max(0, match.start() - 400) : match.end() + 100]


def number_pattern(value: float) -> re.Pattern:
    text = repr(float(value)).removesuffix(".0")
    # the value as a whole number (4321, 4321.0, 4321.00), not a noisy neighbour like 4321.18
    return re.compile(rf"(?<![0-9a-f.\-]){re.escape(text)}(?:\.0+)?(?![0-9a-f.])")


def test_true_values_and_svt_thresholds_never_reach_dagster(prepared, tmp_path) -> None:
    home = copy_home(prepared, tmp_path / "home")
    plant_sentinel(home)
    # Also a one-shot campaign with reach & frequency over the same data: its true sum for
    # pub_sentinel is exactly the planted count (one conversion per sentinel user, bound 1).
    base = catalogue(days=DAYS)["campaigns"][0]
    # ρ = 0.01 gives Laplace scale ≈ 7: the noisy sum, rounded to its noise for display, equals
    # the planted count about one run in 14 — which is why every displayed release value is
    # verified against the ledger's DP outputs and kept out of the search below.
    once = {**base, "name": "once", "mode": "one_shot", "privacy": {"rho": 0.01}}
    once["reach"] = {"rho": 0.1}
    (home.root / "campaigns.yaml").write_text(
        yaml.safe_dump(catalogue(3.0, [{**base, "reach": {"rho": 0.1}}, once]))
    )
    run = start_run(home)
    out, err = run.communicate(timeout=300)
    assert run.returncode == 0, err[-2000:]
    cli_output = out + err
    with Ledger.at_home(home.root) as ledger:
        assert set(ledger.campaign_releases("once")) == {"one_shot", "reach"}
        assert set(ledger.campaign_releases("spring")) == {"reach"}

    instance = instance_for(home)
    # Every value a release asset shows is computed from DP outputs only: each materialisation's
    # metadata equals what the display functions give for the ledger's stored releases. Those
    # values are rounded to their noise, so one may equal a true count by chance: they are
    # verified here and left out of the text searched for planted values below.
    expected = expected_release_metadata(home)
    texts = []
    checked = outputs_checked = 0
    for record in instance.get_runs():
        for entry in instance.all_logs(record.run_id):
            event = entry.dagster_event
            shown = _release_metadata(event)
            if shown is not None:
                campaign, asset, partition, values = shown
                want = expected[(campaign, asset, partition)]
                assert {k: v for k, v in values.items() if k in want} == want, (asset, partition)
                # beyond the DP outputs only what the release read (commit ids), searched below
                read = {k: v for k, v in values.items() if k not in want}
                assert set(read) <= LINEAGE_KEYS, (asset, partition, sorted(read))
                texts.append(repr(read))
                checked += 1
                outputs_checked += event.is_successful_output
                continue
            texts.append(serialize_value(entry))
    assert checked, "no release was materialised"
    assert outputs_checked >= 3, "the campaign-level releases' output events were not checked"
    assert texts, "the run left no event log to inspect"
    everything = "\n".join([*texts, cli_output])

    sentinel = number_pattern(SENTINEL_USERS)
    found = sentinel.search(everything)
    assert found is None, (
        f"a planted true count reached the event log: {_around(everything, found)}"
    )

    with Ledger.at_home(home.root) as ledger:
        secret_states = ledger._db.execute("SELECT secret_state_json FROM bound_choices").fetchall()
    thresholds = set()
    for (text,) in secret_states:
        svt = json.loads(text)["svt"]
        if svt:
            for test in ("up", "down"):
                if svt[test]["noisy_threshold"] is not None:
                    thresholds.add(svt[test]["noisy_threshold"])
    assert thresholds, "the SVT ran, so there are thresholds to look for"
    for threshold in thresholds:
        assert repr(threshold) not in everything, "an SVT noisy threshold reached Dagster"


RELEASE_ASSETS = {
    "noisy_daily_release",
    "cumulative_query_answers",
    "one_shot_release",
    "reach_and_frequency",
}
FINAL_RELEASE_ASSETS = {"one_shot_release", "reach_and_frequency"}
SHOWN_FROM_RELEASES = {"drawn_now", "run_first_day", "run_last_day", "days_in_run", "date", "day"}


def _release_metadata(event) -> tuple[str, str, str | None, dict] | None:
    """(campaign, asset, partition, metadata values) of a release materialisation, else None.

    A campaign-level release's metadata is also carried by its step's output event (Dagster
    copies a ``MaterializeResult``'s metadata there): checked the same way."""
    if event is not None and event.is_successful_output and event.step_key:
        campaign, _, asset = event.step_key.rpartition("__")
        metadata = event.step_output_data.metadata
        if asset in FINAL_RELEASE_ASSETS and metadata:
            values = {k: v.value for k, v in metadata.items() if k not in SHOWN_FROM_RELEASES}
            return campaign, asset, None, values
    if event is None or event.asset_key is None or event.asset_key.path[-1] not in RELEASE_ASSETS:
        return None
    materialization = getattr(event.event_specific_data, "materialization", None)
    if materialization is None:
        return None
    values = {
        k: v.value for k, v in materialization.metadata.items() if k not in SHOWN_FROM_RELEASES
    }
    return event.asset_key.path[0], event.asset_key.path[-1], materialization.partition, values


def expected_release_metadata(home) -> dict[tuple[str, str, str | None], dict]:
    """What the UI may show for each release partition, from the ledger's DP outputs alone."""
    from assets.metadata import answers_metadata, release_metadata, shown_metadata
    from dp_platform import mechanisms
    from dp_platform.publication import published_days

    def values(metadata: dict) -> dict:
        return {k: v.value for k, v in metadata.items() if k not in SHOWN_FROM_RELEASES}

    expected: dict[tuple[str, str, str | None], dict] = {}
    with Ledger.at_home(home.root) as ledger:
        history = published_days(ledger, "spring")
        for published in history:
            partition = (START + timedelta(days=published.day - 1)).isoformat()
            release = values(release_metadata(published, True))
            expected["spring", "noisy_daily_release", partition] = release
            answers = answers_metadata(history[: published.day])
            expected["spring", "cumulative_query_answers", partition] = values(answers)
        for name in ("spring", "once"):
            stored = ledger.campaign_releases(name)
            for kind, payload in stored.items():
                mechanism = mechanisms.campaign_level(kind)
                shown = shown_metadata(mechanism.shown(payload), True)
                expected[name, mechanism.asset, None] = values(shown)
    return expected


def test_cli_commands_read_the_same_home(raced) -> None:
    home, ends = raced
    assert [code for code, _ in ends] == [0, 0]
    released = subprocess.run(
        [*CLI, "releases", "--home", str(home.root), "--campaign", "spring", "--json"],
        capture_output=True,
        text=True,
        check=True,
    )
    days = json.loads(released.stdout)["days"]
    assert [d["day"] for d in days] == list(range(1, DAYS + 1))
    existing = {"day", "bound", "sigma", "rho_charged", "values", "answers", "cells"}
    assert set(days[0]) == existing | {"level", "values_ci", "total_ci", "answers_ci"}
    budget = subprocess.run(
        [*CLI, "budget", "--home", str(home.root), "--json"],
        capture_output=True,
        text=True,
        check=True,
    )
    report = json.loads(budget.stdout)
    assert report["campaigns"]["spring"]["remaining"] == pytest.approx(0.0, abs=1e-12)
    assert sum(d["rho_charged"] for d in days) == pytest.approx(1.0)
    again = subprocess.run(
        [*CLI, "run", "--home", str(home.root), "--config", str(home.root / "campaigns.yaml")],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "nothing due" in again.stdout
    refused = subprocess.run(
        [*CLI, "budget", "--home", str(home.root), "--set-cap", "acme-users", "0.5"],
        capture_output=True,
        text=True,
    )
    assert refused.returncode == 2
    assert "cannot lower the cap" in refused.stderr and refused.stderr.count("\n") == 1

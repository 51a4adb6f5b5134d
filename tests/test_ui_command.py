"""`dp-platform ui` (what `make ui` runs): `dg dev` over a home, gone within 5 s of Ctrl-C or
SIGTERM, without Dagster's warning that `dagster dev` is superseded."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import yaml

from assets.commands.ui import GRACE, stop
from tests.platform_fixtures import catalogue

STOP_WITHIN = 5.0  # seconds from SIGTERM until `dp-platform ui` and everything it started is gone


def _state(pid: int) -> str | None:
    """The process's state letter (``Z`` for a zombie), None once it is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return None


def test_stop_ends_a_group_that_ignores_the_interrupt_after_the_grace() -> None:
    """What `dg dev`'s slow children look like to stop(): a process group that keeps running
    after SIGINT, with a grandchild. Both are gone after the grace, and not much later."""
    process = subprocess.Popen(
        ["sh", "-c", 'trap "" INT; sleep 60 & echo $!; wait'],
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    grandchild = int(process.stdout.readline())
    started = time.monotonic()
    assert stop(process, GRACE) == 0
    took = time.monotonic() - started
    assert GRACE <= took < GRACE + 1.0, took
    assert process.returncode == -signal.SIGKILL
    deadline = time.monotonic() + 2
    while _state(grandchild) not in (None, "Z") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _state(grandchild) in (None, "Z")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _loaded(base: str) -> bool:
    query = "{ workspaceOrError { ... on Workspace { locationEntries { loadStatus } } } }"
    request = urllib.request.Request(
        f"{base}/graphql",
        data=json.dumps({"query": query}).encode(),
        headers={"Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            entries = json.load(response)["data"]["workspaceOrError"]["locationEntries"]
    except OSError:
        return False
    return bool(entries) and all(e["loadStatus"] == "LOADED" for e in entries)


def test_dp_platform_ui_stops_within_five_seconds_of_sigterm(tmp_path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "campaigns.yaml").write_text(yaml.safe_dump(catalogue()))
    port, log = _free_port(), tmp_path / "ui.log"
    with log.open("w") as output:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "dp_platform.cli",
                "ui",
                "--home",
                str(home),
                "--port",
                str(port),
            ],
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 240
        while not _loaded(f"http://127.0.0.1:{port}"):
            assert process.poll() is None, log.read_text()[-3000:]
            assert time.monotonic() < deadline, "the UI did not come up in 240 s"
            time.sleep(1)
        (dg_dev,) = subprocess.run(
            ["ps", "-o", "pid=", "--ppid", str(process.pid)], capture_output=True, text=True
        ).stdout.split()
        group = subprocess.run(  # `dg dev` leads its own group: webserver, daemon, code server
            ["ps", "-o", "pid=", "-g", dg_dev], capture_output=True, text=True
        ).stdout.split()
        started = time.monotonic()
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=30)
        took = time.monotonic() - started
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    assert took <= STOP_WITHIN, f"`dp-platform ui` took {took:.1f} s to stop"
    assert len(group) >= 3, group
    for member in group:
        assert _state(int(member)) in (None, "Z"), member  # a zombie waits for init to reap it
    text = log.read_text()
    assert "dg dev" not in text and "superseded" not in text.lower(), text[-3000:]
    assert "will not be used to configure Dagster" not in text

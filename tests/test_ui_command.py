"""How `dp-platform ui` (what `make ui` runs) stops `dg dev`: a group that ignores the interrupt
is ended after the grace. The real command, stopped by SIGTERM within 5 s with every process of
its group gone, is the browser test's `ui` fixture (tests/browser/test_ui_browser.py)."""

from __future__ import annotations

import signal
import subprocess
import time

from assets.commands.ui import GRACE, stop
from tests.process_runs import process_state


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
    while process_state(grandchild) not in (None, "Z") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert process_state(grandchild) in (None, "Z")

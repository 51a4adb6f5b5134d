"""The harness calls a schedule hung only when its processes stop moving, not when they are
slow: four runs of seed 5, starved of CPU on a loaded machine under ``nice``, took over 600 s
through the writer pool one step at a time, and a wall-clock limit reported them as hung."""

from __future__ import annotations

import os
import time

from tests.faults.harness import Progress, cpu_seconds


def test_slow_processes_that_use_cpu_are_not_hung() -> None:
    progress = Progress(0.0, hung_after=180.0)
    # two processes, each getting a sliver of CPU every 30 s, for 20 minutes
    for minute_half in range(1, 41):
        now = 30.0 * minute_half
        assert not progress.hung(now, {1: 0.01 * minute_half, 2: 0.5})


def test_processes_that_all_sleep_are_hung_after_the_limit() -> None:
    progress = Progress(0.0, hung_after=180.0)
    assert not progress.hung(10.0, {1: 2.0, 2: 3.0})
    assert not progress.hung(189.0, {1: 2.0, 2: 3.0})  # 179 s without CPU
    assert progress.hung(190.0, {1: 2.0, 2: 3.0})


def test_a_start_or_an_exit_counts_as_moving() -> None:
    progress = Progress(0.0, hung_after=180.0)
    assert not progress.hung(100.0, {1: 1.0})
    progress.moved(250.0)
    assert not progress.hung(279.0, {1: 1.0})
    assert progress.hung(431.0, {1: 1.0})


def test_unknown_cpu_counts_as_moving() -> None:
    progress = Progress(0.0, hung_after=180.0)
    assert not progress.hung(500.0, {1: None})


def test_cpu_seconds_reads_this_process_and_knows_no_missing_one() -> None:
    before = cpu_seconds(os.getpid())
    assert before is not None
    deadline = time.process_time() + 0.3
    while time.process_time() < deadline:
        pass
    assert cpu_seconds(os.getpid()) > before
    assert cpu_seconds(2**22 + 12345) is None  # above the kernel's pid limit

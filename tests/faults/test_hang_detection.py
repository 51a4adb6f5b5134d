"""The harness calls a schedule hung only when its process groups stop moving, not when they
are slow: four runs of seed 5, starved of CPU on a loaded machine under ``nice``, once took over
600 s one step at a time, and a wall-clock limit reported them as hung. And a schedule's process
group is over only when none of its members runs: what a process leaves running is reported."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from tests.faults.harness import (
    Proc,
    Progress,
    end_group,
    group_cpu,
    group_members,
    holds_lock,
    process_table,
)


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


def test_group_cpu_sums_a_groups_members_and_knows_no_missing_group() -> None:
    table = process_table()
    mine = os.getpgid(0)
    before = group_cpu([mine], table)[mine]
    assert before is not None
    deadline = time.process_time() + 0.3
    while time.process_time() < deadline:
        pass
    assert group_cpu([mine], process_table())[mine] > before
    missing = 2**22 + 12345  # above the kernel's pid limit
    assert group_cpu([missing], table) == {missing: None}


def _group_with_a_grandchild() -> subprocess.Popen:
    """A group leader that starts a long sleeper in its group and exits at once."""
    script = "import subprocess; subprocess.Popen(['sleep', '60'])"
    leader = subprocess.Popen([sys.executable, "-c", script], start_new_session=True)
    leader.wait()
    return leader


def _members(pgid: int) -> list[int]:
    return [p.pid for p in process_table() if p.pgid == pgid and p.state != "Z"]


def test_what_an_exited_process_left_running_is_reported_and_killed() -> None:
    leader = _group_with_a_grandchild()
    assert _members(leader.pid)  # the sleeper outlived its parent
    leftovers = end_group(leader.pid, killed=False, grace=0.5)
    assert len(leftovers) == 1 and "sleep 60" in leftovers[0]
    assert _members(leader.pid) == []


def test_a_killed_group_is_waited_for_without_a_report() -> None:
    leader = _group_with_a_grandchild()
    assert end_group(leader.pid, killed=True) == []
    assert _members(leader.pid) == []


def test_a_group_holding_the_warehouse_lock_is_told_from_one_that_does_not(tmp_path) -> None:
    """What the harness notes when it kills a group: did a member hold the lock right then."""
    lock = tmp_path / ".warehouse.lock"
    script = (
        "import fcntl, os, sys, time; fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT); "
        "fcntl.flock(fd, fcntl.LOCK_EX); print('held', flush=True); time.sleep(60)"
    )
    holder = subprocess.Popen(
        [sys.executable, "-c", script, str(lock)], stdout=subprocess.PIPE, start_new_session=True
    )
    other = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == b"held\n"
        assert holds_lock(lock, holder.pid)
        assert not holds_lock(lock, other.pid)
        assert not holds_lock(tmp_path / "missing.lock", holder.pid)
    finally:
        for process in (holder, other):
            process.kill()
            process.wait()
    assert not holds_lock(lock, holder.pid)


def test_a_stranger_given_the_groups_number_is_no_member(monkeypatch) -> None:
    """After a group empties, its number may go to an unrelated group leader: never killed."""
    # orphans go to init here, whatever a fault test run earlier in this worker made itself
    monkeypatch.setattr("tests.faults.harness._ORPHANS_GO_TO", {1})
    orphan = Proc(pid=200, state="S", ppid=1, pgid=100, cpu=0.0, start=5)  # leader 100 died
    worker = Proc(pid=201, state="S", ppid=200, pgid=100, cpu=0.0, start=6)
    stranger = Proc(pid=100, state="S", ppid=77, pgid=100, cpu=0.0, start=9)
    its_child = Proc(pid=300, state="S", ppid=100, pgid=100, cpu=0.0, start=10)
    table = [stranger, its_child, worker, orphan]
    assert {p.pid for p in group_members(100, table)} == {200, 201}
    assert group_members(100, [stranger, its_child]) == []

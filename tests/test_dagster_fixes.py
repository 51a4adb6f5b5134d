"""The corrections to Dagster in assets/dagster_fixes.py: each bug is still there in the pinned
Dagster (so a correction is removed when Dagster fixes it), and the correction works."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from types import SimpleNamespace

import dagster as dg
import pytest
from dagster._core.execution.plan import instance_concurrency_context as concurrency
from dagster._core.execution.plan.active import ActiveExecution
from dagster._core.storage import sql

from assets.dagster_fixes import (
    POOL_POLL_SECONDS,
    apply_pool_assignment,
    apply_pool_wait,
    apply_revision_cache,
)
from assets.factory import WRITER_POOL
from assets.runner import instance_for
from dp_platform.home import Home


def _waiting_context(next_check_in: float) -> SimpleNamespace:
    """What ``interval_to_next_pending_claim_check`` reads: one step waiting for a slot."""
    return SimpleNamespace(
        _pending_claims={"step"}, _pending_timeouts={"step": time.time() + next_check_in}
    )


def test_dagsters_pool_wait_never_sleeps_and_backs_off_to_15_s() -> None:
    apply_pool_wait()
    fixed = concurrency.InstanceConcurrencyContext.interval_to_next_pending_claim_check
    dagster_interval, dagster_backoff = fixed._dagster_original
    # the bug: a step whose next claim check is 5 s away is told to sleep 0 s (so it spins)
    assert dagster_interval(_waiting_context(5.0)) == 0
    # ... and its checks back off: the 20th comes 1.1**20 ≈ 6.7 s after the 19th
    assert dagster_backoff(None, 20) > 6


def test_the_correction_sleeps_until_the_next_check_every_poll_interval() -> None:
    apply_pool_wait()
    fixed = concurrency.InstanceConcurrencyContext
    assert 4.0 < fixed.interval_to_next_pending_claim_check(_waiting_context(5.0)) <= 5.0
    assert fixed.interval_to_next_pending_claim_check(_waiting_context(-1.0)) == 0.0
    assert concurrency._calculate_timeout_interval(None, 20) == POOL_POLL_SECONDS
    assert concurrency._calculate_timeout_interval(3.0, 20) == 3.0  # a storage's own wins


@dg.asset(pool=WRITER_POOL)
def _writer() -> None:
    """A step in the writer pool."""


def test_a_run_waiting_for_a_held_slot_sleeps_and_starts_once_it_is_freed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    apply_pool_wait()
    instance = instance_for(Home.at(tmp_path / "home"))
    storage = instance.event_log_storage
    storage.set_concurrency_slots(WRITER_POOL, 1)
    assert storage.claim_concurrency_slot(WRITER_POOL, "holder", "step").is_claimed
    loops = []
    original = ActiveExecution.get_next_step

    def counted(self):  # type: ignore[no-untyped-def]
        loops.append(time.monotonic())
        return original(self)

    monkeypatch.setattr(ActiveExecution, "get_next_step", counted)
    definitions = dg.Definitions(assets=[_writer], jobs=[dg.define_asset_job("writer_job")])
    job = definitions.resolve_job_def("writer_job")
    results = []
    runner = threading.Thread(
        target=lambda: results.append(job.execute_in_process(instance=instance))
    )
    runner.start()
    time.sleep(2.0)
    waited = len(loops)
    storage.free_concurrency_slots_for_run("holder")
    runner.join(timeout=120)
    assert not runner.is_alive(), "the run never took the freed slot"
    assert results and results[0].success
    # a sleeping wait checks about every POOL_POLL_SECONDS (≈ 10 times in 2 s); Dagster's own
    # loop spins through thousands of iterations in that time
    assert 1 <= waited < 100, waited
    instance.dispose()


def _stranded_queue(tmp_path: Path):  # type: ignore[no-untyped-def]
    """The state a SIGKILL left at fault-harness seed 874: the writer slot free, and two runs
    queued for it, neither assigned."""
    instance = instance_for(Home.at(tmp_path / "home"))
    storage = instance.event_log_storage
    storage.set_concurrency_slots(WRITER_POOL, 1)
    for run in ("first", "second"):
        storage.add_pending_step(WRITER_POOL, run, "step", should_assign=False)
    assert storage.has_unassigned_slots(WRITER_POOL)
    return instance, storage


def test_dagster_never_assigns_a_free_slot_to_a_queue_that_was_stranded(tmp_path: Path) -> None:
    apply_pool_assignment()
    instance, storage = _stranded_queue(tmp_path)
    claim = type(storage).claim_concurrency_slot._dagster_original
    for _ in range(3):  # any number of checks: blocked for ever
        for run in ("first", "second"):
            status = claim(storage, WRITER_POOL, run, "step")
            assert not status.is_claimed and not status.is_assigned
    instance.dispose()


def test_the_correction_assigns_the_queues_head_and_the_queue_moves_on(tmp_path: Path) -> None:
    apply_pool_assignment()
    instance, storage = _stranded_queue(tmp_path)
    waiting = storage.claim_concurrency_slot(WRITER_POOL, "second", "step")
    assert not waiting.is_claimed and not waiting.is_assigned  # the head goes first ...
    assert storage.claim_concurrency_slot(WRITER_POOL, "first", "step").is_claimed
    assert not storage.has_unassigned_slots(WRITER_POOL)  # ... and the pool is never exceeded
    assert not storage.claim_concurrency_slot(WRITER_POOL, "second", "step").is_claimed
    storage.free_concurrency_slots_for_run("first")
    assert storage.claim_concurrency_slot(WRITER_POOL, "second", "step").is_claimed
    instance.dispose()


def test_one_script_directory_per_location_gives_dagsters_head_revision(tmp_path: Path) -> None:
    apply_revision_cache()
    config = sql.get_alembic_config(sql.__file__.replace("sql.py", "runs/sqlite/__init__.py"))
    head = sql.ScriptDirectory._scripts.from_config(config).as_revision_number("head")
    assert sql.ScriptDirectory.from_config(config) is sql.ScriptDirectory.from_config(config)
    assert sql.ScriptDirectory.from_config(config).as_revision_number("head") == head
    instance = instance_for(Home.at(tmp_path / "home"))  # every storage opens against it
    assert instance.get_runs() == []
    instance.dispose()

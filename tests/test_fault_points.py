"""dp_platform/faults.py: a fail point does nothing unless the environment names it, then the
process dies by SIGKILL at exactly that point (nothing after it runs)."""

from __future__ import annotations

import multiprocessing
import os
import signal
from pathlib import Path

import pytest

from dp_platform.faults import FAULT_RECORD_VARIABLE, FAULT_VARIABLE, fault_point


def test_an_unset_variable_does_nothing(monkeypatch) -> None:
    monkeypatch.delenv(FAULT_VARIABLE, raising=False)
    for _ in range(3):
        fault_point("release.drawn")  # still alive


def test_another_point_named_does_nothing(monkeypatch) -> None:
    monkeypatch.setenv(FAULT_VARIABLE, "bound.drawn")
    fault_point("release.drawn")
    fault_point("bound.drawnx")


def _pass_points(
    name: str, setting: str, passes: int, marker: str, record: str | None = None
) -> None:
    """Child: pass ``name`` ``passes`` times, writing a line before each pass."""
    os.environ[FAULT_VARIABLE] = setting
    if record:
        os.environ[FAULT_RECORD_VARIABLE] = record
    with Path(marker).open("a") as out:
        for n in range(1, passes + 1):
            out.write(f"{n}\n")
            out.flush()
            fault_point(name)
        out.write("survived\n")


@pytest.mark.parametrize(("setting", "lines"), [("release.drawn", 1), ("release.drawn@3", 3)])
def test_a_named_point_kills_its_process_there(tmp_path, setting, lines) -> None:
    marker = tmp_path / "passes.txt"
    child = multiprocessing.get_context("spawn").Process(
        target=_pass_points, args=("release.drawn", setting, 5, str(marker))
    )
    child.start()
    child.join(60)
    assert child.exitcode == -signal.SIGKILL
    assert marker.read_text().split() == [str(n) for n in range(1, lines + 1)]


def test_the_child_survives_when_nothing_is_named(tmp_path) -> None:
    marker = tmp_path / "passes.txt"
    child = multiprocessing.get_context("spawn").Process(
        target=_pass_points, args=("release.drawn", "", 2, str(marker))
    )
    child.start()
    child.join(60)
    assert child.exitcode == 0
    assert marker.read_text().split() == ["1", "2", "survived"]


def test_a_fired_point_is_recorded_before_the_kill_when_asked(tmp_path) -> None:
    """The harness counts a kill in a run worker (not its own child) from this record."""
    marker, record = tmp_path / "passes.txt", tmp_path / "fired.txt"
    child = multiprocessing.get_context("spawn").Process(
        target=_pass_points, args=("release.drawn", "release.drawn@2", 5, str(marker), str(record))
    )
    child.start()
    child.join(60)
    assert child.exitcode == -signal.SIGKILL
    assert record.read_text() == f"release.drawn@2 {child.pid}\n"

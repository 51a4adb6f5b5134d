"""The per-file time budget (tests/time_budget.py) fails a run whose file is over the ceiling,
names the file, and passes a run under it: run on a two-file suite of its own."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.time_budget import CEILING_ENV

ROOT = Path(__file__).resolve().parents[1]
SUITE = {
    "test_slow.py": "import time\n\ndef test_sleeps():\n    time.sleep(0.6)\n",
    "test_quick.py": "def test_nothing():\n    pass\n",
}


def _run(directory: Path, ceiling: str) -> subprocess.CompletedProcess[str]:
    for name, text in SUITE.items():
        (directory / name).write_text(text)
    (directory / "pytest.ini").write_text("[pytest]\n")  # not the repository's addopts
    env = {**os.environ, CEILING_ENV: ceiling, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "tests.time_budget", "-p", "no:cacheprovider"],
        cwd=directory,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


def test_a_file_over_the_ceiling_fails_the_run_and_is_named(tmp_path: Path) -> None:
    done = _run(tmp_path, "0.3")
    assert done.returncode == 1, done.stdout
    assert "2 passed" in done.stdout
    failed = [line for line in done.stdout.splitlines() if "FAILED time budget" in line]
    assert len(failed) == 1 and "test_slow.py took" in failed[0], done.stdout


def test_files_under_the_ceiling_pass_and_are_listed_slowest_first(tmp_path: Path) -> None:
    done = _run(tmp_path, "120")
    assert done.returncode == 0, done.stdout
    after = done.stdout.split("slowest test files", 1)[1].splitlines()[1:]
    listed = [line for line in after if line.strip()][:2]
    assert "test_slow.py" in listed[0] and "test_quick.py" in listed[1], done.stdout
    assert "FAILED time budget" not in done.stdout


def test_a_ceiling_that_is_not_a_number_is_a_usage_error(tmp_path: Path) -> None:
    done = _run(tmp_path, "two minutes")
    assert done.returncode == 4, done.stdout + done.stderr
    assert f"{CEILING_ENV}='two minutes': expected a number of seconds" in done.stderr

"""The test suite's time budget, visible in every run: each test file's time (setup, call and
teardown of its tests, summed) is listed for the slowest files, and the run fails naming every
file over a ceiling — so a slow new test is seen when it lands, not when CI runs out of time.

The ceiling (``DP_PLATFORM_FILE_CEILING_S``, default :data:`DEFAULT_CEILING_S`; ``0`` turns it
off) is docs/testing.md's: a file over it is split or shortened, not the ceiling raised.

Loaded by the root conftest.py; a plugin module so a test can run it on a suite of its own
(``pytest -p tests.time_budget``). Under pytest-xdist the controller receives every worker's
reports, so the sums cover the whole run.
"""

from __future__ import annotations

import os
from collections import defaultdict

import pytest

CEILING_ENV = "DP_PLATFORM_FILE_CEILING_S"
DEFAULT_CEILING_S = 900.0
SLOWEST_SHOWN = 10


class FileTimes:
    """Seconds per test file, summed over every phase of every test in it."""

    def __init__(self, ceiling_s: float) -> None:
        self.ceiling_s = ceiling_s
        self.seconds: defaultdict[str, float] = defaultdict(float)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.seconds[report.nodeid.split("::", 1)[0]] += report.duration

    def over_ceiling(self) -> list[tuple[str, float]]:
        if self.ceiling_s <= 0:
            return []
        return [(f, s) for f, s in self.slowest(len(self.seconds)) if s > self.ceiling_s]

    def slowest(self, count: int) -> list[tuple[str, float]]:
        return sorted(self.seconds.items(), key=lambda item: -item[1])[:count]

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.over_ceiling() and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if not self.seconds:
            return
        terminalreporter.section("slowest test files (setup + call + teardown, summed)")
        for path, seconds in self.slowest(SLOWEST_SHOWN):
            terminalreporter.write_line(f"{seconds:8.1f} s  {path}")
        for path, seconds in self.over_ceiling():
            terminalreporter.write_line(
                f"FAILED time budget: {path} took {seconds:.1f} s, over the per-file ceiling "
                f"of {self.ceiling_s:.0f} s ({CEILING_ENV}; docs/testing.md)",
                red=True,
            )


def pytest_configure(config: pytest.Config) -> None:
    if hasattr(config, "workerinput"):
        return  # an xdist worker: the controller sums every worker's reports
    raw = os.environ.get(CEILING_ENV, "")
    try:
        ceiling = float(raw) if raw else DEFAULT_CEILING_S
    except ValueError:
        raise pytest.UsageError(f"{CEILING_ENV}={raw!r}: expected a number of seconds") from None
    config.pluginmanager.register(FileTimes(ceiling), "dp_platform_file_times")

"""Benchmarks (run with `make bench`): the derived totals and campaign-to-date numbers that
`releases --json` adds for a campaign with cells (dp_platform/release_view.py), at 31 days.

P publishers × 5 regions × 3 devices × 2 measures: (P+1)·6·4·2 cells and totals, each projected
over days 1..d on every day d (isotonic regression, d = 1..31).
"""

from __future__ import annotations

import numpy as np
import pytest

from dp_platform.cells import CellLayout, cell_records
from dp_platform.publication import PublishedDay
from dp_platform.release_view import CumulativeRows, total_levels

pytestmark = pytest.mark.system  # benchmarks: measured, not part of the development loop

DAYS = 31


def _days(publishers: int) -> tuple[CellLayout, list[PublishedDay]]:
    layout = CellLayout(
        tuple(f"pub_{i}" for i in range(publishers)),
        (("region", tuple("abcde")), ("device", ("mobile", "desktop", "tablet"))),
        ("count", "value"),
        value_cap=200.0,
    )
    rng = np.random.default_rng(0)
    days = []
    for day in range(1, DAYS + 1):
        entries = rng.normal(1.0, 3.0, layout.size)
        days.append(
            PublishedDay(
                day=day,
                bound=1.0,
                sigma=3.0,
                rho_charged=0.01,
                rho_spent=0.01 * day,
                rho_planned=1.0,
                values={},
                answers={},
                answer_std={},
                value_std=3.0,
                cells=cell_records(layout, entries, 3.0),
            )
        )
    return layout, days


@pytest.mark.parametrize("publishers", [20, 100])
def test_bench_cumulative_rows_of_every_day(benchmark, publishers: int) -> None:
    layout, days = _days(publishers)

    def run() -> list[list[dict]]:
        cumulative = CumulativeRows(layout, days)
        return [cumulative.day_rows(d) for d in range(1, DAYS + 1)]

    rows = benchmark.pedantic(run, rounds=3, iterations=1)
    expected = (publishers + 1) * 6 * 4 * 2
    assert len(rows) == DAYS and all(len(r) == expected for r in rows)
    assert len(total_levels(layout)) == 7


@pytest.mark.parametrize("method", ["per_day_regressions", "one_pass"])
def test_bench_projection_of_every_day(benchmark, method: str) -> None:
    """The projection step alone at 100 publishers (4848 rows × 31 days): one isotonic
    regression per row and day (the definition) against the one-pass PAV the release uses."""
    from dp_platform.consistency import isotonic_cumulative
    from dp_platform.release_view import prefix_isotonic

    rng = np.random.default_rng(0)
    raw = np.cumsum(rng.normal(1.0, 3.0, (4848, DAYS)), axis=1)
    se = np.sqrt(np.cumsum(np.full(raw.shape, 9.0), axis=1))

    def per_day() -> np.ndarray:
        columns = [isotonic_cumulative(raw[:, :d], se[:, :d])[:, -1] for d in range(1, DAYS + 1)]
        return np.stack(columns, axis=1)

    def one_pass() -> np.ndarray:
        return prefix_isotonic(raw, se)[0]

    last = benchmark.pedantic(
        per_day if method == "per_day_regressions" else one_pass, rounds=3, iterations=1
    )
    assert last.shape == raw.shape and np.all(last >= 0)

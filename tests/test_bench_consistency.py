"""Benchmarks (run with `make bench`): WLS over measured levels at a breakdown's scale.

1000 publishers × 5 regions × 3 devices × 2 measures = 30 000 cells, with the publisher totals
and the grand total also measured (2002 totals): the fit, and every cell's standard error.
"""

from __future__ import annotations

import numpy as np
import pytest

from dp_platform.consistency import PUBLISHER, CellLayout, Measured, derived_totals, wls_combine

pytestmark = pytest.mark.system  # benchmarks: measured, not part of the development loop


def _measurements(publishers: int) -> tuple[CellLayout, list[Measured]]:
    layout = CellLayout(
        tuple(f"pub_{i}" for i in range(publishers)),
        (("region", tuple("abcde")), ("device", ("mobile", "desktop", "tablet"))),
        ("conversions", "value"),
    )
    rng = np.random.default_rng(0)
    cells = rng.normal(10.0, 5.0, layout.shape)
    measured = [Measured((), cells, np.ones(layout.shape))]
    for over in (("region", "device"), (PUBLISHER, "region", "device")):
        totals = derived_totals(layout, cells, np.ones(layout.shape), over).values
        measured.append(Measured(over, totals, np.full(totals.shape, 2.0)))
    return layout, measured


@pytest.mark.parametrize("publishers", [100, 1000])
def test_bench_wls_fit_and_every_cells_standard_error(benchmark, publishers: int) -> None:
    layout, measured = _measurements(publishers)

    def run() -> np.ndarray:
        return wls_combine(layout, measured).totals().standard_errors

    errors = benchmark.pedantic(run, rounds=3, iterations=1)
    assert errors.shape == layout.shape and np.all(errors > 0)

"""What a residual strategy gains on the demo's broken-down layout (docs/slices.md).

``dp-platform evaluate --marginals`` prints, for 20 publishers × 3 creatives × 5 regions with
count and value (the demo's sliced campaign), the σ of one published number of each marginal
per unit of the release's σ: the plan's exact figure and the RMSE of seeded runs (noise only,
decoded as the platform decodes a release) for the cells measured one by one and for the
default residual workload, next to a count-only campaign's publisher total. Seeded noise on no
data: nothing it prints is a differentially private release.
"""

from __future__ import annotations

import numpy as np

from dp_platform.cell_strategy import MarginalWeights
from dp_platform.cells import PUBLISHER, CellLayout, published_values

__all__ = ["marginals_report"]

PUBLISHERS = tuple(f"publisher_{i:02d}" for i in range(20))
DIMENSIONS = (
    ("creative", ("banner", "video", "native")),
    ("region", ("north", "south", "east", "west", "centre")),
)
VALUE_CAP = 200.0
MARGINALS = (
    (PUBLISHER,),
    (PUBLISHER, "creative"),
    (PUBLISHER, "region"),
    (PUBLISHER, "creative", "region"),
    (),
)


def _layouts() -> dict[str, CellLayout]:
    names = [name for name, _ in DIMENSIONS]
    base = CellLayout(PUBLISHERS, DIMENSIONS, ("count", "value"), value_cap=VALUE_CAP)
    residual = CellLayout(
        PUBLISHERS,
        DIMENSIONS,
        ("count", "value"),
        value_cap=VALUE_CAP,
        marginals=MarginalWeights.default(names),
    )
    return {"independent cells": base, "residual (default weights)": residual}


def _seeded_rmse(layout: CellLayout, runs: int, seed: int) -> dict[tuple, float]:
    """RMSE of each marginal's numbers (published units, per unit σ) over ``runs`` draws of
    N(0, I) added to what the strategy encodes, decoded and published as a release is."""
    rng = np.random.default_rng(seed)
    squares: dict[tuple, float] = {}
    for _ in range(runs):
        noise = layout.strategy.decode(rng.standard_normal(layout.size))
        cells = layout.as_array(published_values(layout, noise))
        for kept in MARGINALS:
            summed = layout.summed_axes([n for n in layout.axis_names[:-1] if n not in kept])
            totals = cells.sum(axis=summed)
            for index, measure in enumerate(layout.measures):
                numbers = totals[..., index]
                key = (kept, measure)
                squares[key] = squares.get(key, 0.0) + float(np.mean(numbers**2))
    return {key: float(np.sqrt(total / runs)) for key, total in squares.items()}


def marginals_report(*, runs: int = 200, seed: int = 0) -> tuple[str, dict]:
    """The table of docs/slices.md#measuring-every-marginal-the-residual-strategy."""
    layouts = _layouts()
    plain = CellLayout(PUBLISHERS, (), ("count",))
    count_only = plain.strategy.entry_std((PUBLISHER,), "count")
    rows, payload = [], {"runs": runs, "seed": seed, "count_only_publisher_total": count_only}
    empirical = {name: _seeded_rmse(layout, runs, seed) for name, layout in layouts.items()}
    for kept in MARGINALS:
        for measure in ("count", "value"):
            unit = VALUE_CAP if measure == "value" else 1.0
            exact = {
                name: layout.strategy.entry_std(kept, measure) / unit
                for name, layout in layouts.items()
            }
            seen = {name: empirical[name][(kept, measure)] / unit for name in layouts}
            independent, residual = exact.values()
            rows.append((kept, measure, exact, seen, residual / independent))
            payload[f"{' × '.join(kept) or 'campaign total'} / {measure}"] = {
                "exact": exact,
                "seeded_rmse": seen,
                "residual_over_independent": residual / independent,
            }
    names = list(layouts)
    lines = [
        f"σ of one published number per unit of the release's σ (value in units of its cap "
        f"{VALUE_CAP:g}); exact from the plan, seeded RMSE over {runs} runs (seed {seed}). A "
        f"count-only campaign's publisher total: {count_only:.3f}.",
        "",
        f"| marginal | measure | {names[0]}: exact / seeded | {names[1]}: exact / seeded "
        "| residual ÷ independent |",
        "|---|---|---:|---:|---:|",
    ]
    for kept, measure, exact, seen, ratio in rows:
        label = " × ".join(kept) or "campaign total (all publishers)"
        cells = [f"{exact[n]:.3f} / {seen[n]:.3f}" for n in names]
        lines.append(f"| {label} | {measure} | {cells[0]} | {cells[1]} | {ratio:.3f} |")
    return "\n".join(lines), payload

"""What a residual strategy gains on the demo's broken-down layout (docs/slices.md).

``dp-platform evaluate --marginals`` prints, for 20 publishers × 3 creatives × 5 regions with
count and value (the demo's sliced campaign), the σ of one published number of each marginal
per unit of the release's σ: the plan's exact figure and the RMSE of seeded runs (noise only,
decoded as the platform decodes a release) for the cells measured one by one and for the
default residual workload, next to a count-only campaign's publisher total. Seeded noise on no
data: nothing it prints is a differentially private release.
"""

from __future__ import annotations

import itertools
import math

import cvxpy as cp
import numpy as np

from dp_platform.cell_strategy import MarginalWeights
from dp_platform.cells import PUBLISHER, CellLayout, published_values

__all__ = ["marginals_at_bar", "marginals_floor", "marginals_report"]

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
    floors = {"both_measures": marginals_floor(both_measures=True)}
    floors["count_only"] = marginals_floor(both_measures=False)
    payload["floor_of_both_bars"] = floors
    at_bar = marginals_at_bar(1.3)
    payload["at_the_bars"] = at_bar
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
    lines += [
        "",
        "The least ratio at which a publisher total is within it of a count-only campaign's and "
        "a full cell within it of independent cells', over every residual strategy with the "
        f"centred value: {floors['both_measures']:.3f} holding both measures' publisher totals, "
        f"{floors['count_only']:.3f} holding the count's only. Holding the count's publisher "
        "total and both measures' full cells at 1.3, the value's publisher total is at best "
        f"{at_bar['publisher / value']:.3f}× a count-only campaign's, and the strategy reaching "
        "it has publisher × creative and × region at "
        f"{at_bar['publisher × creative / count']:.3f}× and "
        f"{at_bar['publisher × region / count']:.3f}× (count) independent cells'.",
    ]
    return "\n".join(lines), payload


def _residual_program(bar: float | None) -> tuple[cp.Problem, dict[str, cp.Expression]]:
    """The residual strategies with the centred value (every scale free) on the demo's layout,
    as a convex program in the scales' variances λ (cvxpy): the per-unit-σ variance of one
    number of each marginal named in the result, ratios to a count-only campaign's publisher
    total (1) and to independent cells' (2 per cell, × the cells summed)."""
    sizes = [len(PUBLISHERS), *(len(values) for _, values in DIMENSIONS)]
    axes, cells = len(sizes), math.prod(sizes)
    residuals = [
        frozenset(c) for k in range(axes + 1) for c in itertools.combinations(range(axes), k)
    ]
    count = {b: cp.Variable(pos=True) for b in residuals}  # λ of the count row
    centred = {b: cp.Variable(pos=True) for b in residuals}  # λ of value − ½·count

    def dimension(b: frozenset[int]) -> int:
        return math.prod(sizes[i] - 1 for i in b)

    def variance(lam: dict, kept: frozenset[int]) -> cp.Expression:
        summed = math.prod(n for i, n in enumerate(sizes) if i not in kept)
        width = math.prod(sizes[i] for i in kept)
        return sum(lam[b] * dimension(b) * summed for b in residuals if b <= kept) / width

    def independent(kept: frozenset[int]) -> float:
        return 2.0 * math.prod(n for i, n in enumerate(sizes) if i not in kept)

    cost = sum(dimension(b) / cells * cp.inv_pos(count[b]) for b in residuals) + 0.25 * sum(
        dimension(b) / cells * cp.inv_pos(centred[b]) for b in residuals
    )
    ratios: dict[str, cp.Expression] = {}
    for kept in (frozenset({0}), frozenset({0, 1}), frozenset({0, 2}), frozenset(range(axes))):
        base = 1.0 if kept == frozenset({0}) else independent(kept)
        name = " × ".join(["publisher", *(DIMENSIONS[i - 1][0] for i in sorted(kept) if i)])
        ratios[f"{name} / count"] = variance(count, kept) / base
        ratios[f"{name} / value"] = (variance(centred, kept) + 0.25 * variance(count, kept)) / base
    bound = cp.Variable() if bar is None else bar**2
    full = " × ".join(["publisher", *(name for name, _ in DIMENSIONS)])
    constraints = [
        cost <= 1,
        ratios["publisher / count"] <= bound,
        ratios[f"{full} / count"] <= bound,
        ratios[f"{full} / value"] <= bound,
    ]
    # with the bars held, the best the value's publisher total can then be
    objective = cp.Minimize(bound if bar is None else ratios["publisher / value"])
    problem = cp.Problem(objective, constraints)
    ratios["bound"] = bound if bar is None else cp.Constant(bar**2)
    return problem, ratios


def marginals_floor(*, both_measures: bool) -> float:
    """The least t such that some residual strategy with the centred value has each measure's
    full cells within t × independent cells' σ and the count's publisher totals — with
    ``both_measures`` the value's too — within t × a count-only campaign's: the issue's two
    bars at once."""
    problem, ratios = _residual_program(None)
    if both_measures:
        problem = cp.Problem(
            problem.objective,
            [*problem.constraints, ratios["publisher / value"] <= ratios["bound"]],
        )
    problem.solve(solver=cp.CLARABEL)
    return math.sqrt(float(ratios["bound"].value))


def marginals_at_bar(bar: float = 1.3) -> dict[str, float]:
    """Holding the count's publisher total within ``bar`` × a count-only campaign's and the
    full cells within ``bar`` × independent cells', the least the value's publisher total can
    be, and what every marginal's σ then is (ratios as in :func:`_residual_program`)."""
    problem, ratios = _residual_program(bar)
    problem.solve(solver=cp.CLARABEL)
    return {name: math.sqrt(float(r.value)) for name, r in ratios.items() if name != "bound"}

"""What a residual strategy gains on the demo's broken-down layout (docs/slices.md).

``dp-platform evaluate --marginals`` prints, for 20 publishers × 3 creatives × 5 regions with
count and value (the demo's sliced campaign), the σ of one published number of each marginal
per unit of the release's σ: the plan's exact figure and the RMSE of seeded runs (noise only,
decoded as the platform decodes a release) for the cells measured one by one (before residual
strategies), the default residual workload and the demo campaign's own workload, next to a
count-only campaign's publisher total; then the demo campaign against issue 28's two bars.
Seeded noise on no data: nothing it prints is a differentially private release.
"""

from __future__ import annotations

import itertools
import math

import cvxpy as cp
import numpy as np

from dp_platform.cell_strategy import MarginalWeights
from dp_platform.cells import PUBLISHER, CellLayout, published_values
from dp_platform.events.campaign import CREATIVES, REGIONS

__all__ = ["DEMO_MARGINALS", "marginals_at_bar", "marginals_floor", "marginals_report"]

PUBLISHERS = tuple(f"publisher_{i:02d}" for i in range(20))
DIMENSIONS = (("creative", tuple(CREATIVES)), ("region", tuple(REGIONS)))
"""The demo's breakdown, from the generator's public lists: a change there changes this layout."""
VALUE_CAP = 200.0
MARGINALS = (
    (PUBLISHER,),
    (PUBLISHER, "creative"),
    (PUBLISHER, "region"),
    (PUBLISHER, "creative", "region"),
    ("creative", "region"),  # the demo's top-slices chart: over all publishers
    (),
)
FULL = (PUBLISHER, "creative", "region")
DEMO_MARGINALS = {
    "publisher": {"count": 60, "value": 1},
    "publisher,creative,region": {"count": 12, "value": 6},
}
"""The demo's sliced campaign's ``marginals:`` (assets/demo.py; a test keeps them equal): what
its report reads — each publisher's conversions and the full cells — weighed to hold issue
28's bars, found as the Lagrange multipliers of :func:`marginals_at_bar`'s program."""
BAR = 1.3
INDEPENDENT, DEFAULT, DEMO = (
    "independent cells",
    "residual (default weights)",
    "residual (the demo's weights)",
)


def _layouts() -> dict[str, CellLayout]:
    names = [name for name, _ in DIMENSIONS]

    def layout(marginals: MarginalWeights | None) -> CellLayout:
        return CellLayout(
            PUBLISHERS, DIMENSIONS, ("count", "value"), value_cap=VALUE_CAP, marginals=marginals
        )

    return {
        INDEPENDENT: layout(None),
        DEFAULT: layout(MarginalWeights.default(names)),
        DEMO: layout(MarginalWeights.written(DEMO_MARGINALS)),
    }


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


def _label(kept: tuple[str, ...]) -> str:
    return " × ".join(kept) or "campaign total (all publishers)"


def marginals_report(*, runs: int = 1000, seed: int = 0) -> tuple[str, dict]:
    """The tables of docs/slices.md#measuring-every-marginal-the-residual-strategy."""
    layouts = _layouts()
    count_only = CellLayout(PUBLISHERS, (), ("count",)).strategy.entry_std((PUBLISHER,), "count")
    payload: dict = {"runs": runs, "seed": seed, "count_only_publisher_total": count_only}
    exact: dict[tuple, dict[str, float]] = {}
    seen: dict[tuple, dict[str, float]] = {}
    empirical = {name: _seeded_rmse(layout, runs, seed) for name, layout in layouts.items()}
    names = list(layouts)
    lines = [
        f"σ of one published number per unit of the release's σ (value in units of its cap "
        f"{VALUE_CAP:g}); exact from the plan, seeded RMSE over {runs} runs (seed {seed}). A "
        f"count-only campaign's publisher total: {count_only:.3f}.",
        "",
        "| marginal | measure | "
        + " | ".join(f"{name}: exact / seeded" for name in names)
        + " | default ÷ independent | demo's ÷ independent |",
        "|---|---|" + "---:|" * (len(names) + 2),
    ]
    for kept in MARGINALS:
        for measure in ("count", "value"):
            unit = VALUE_CAP if measure == "value" else 1.0
            key = (kept, measure)
            exact[key] = {
                name: layout.strategy.entry_std(kept, measure) / unit
                for name, layout in layouts.items()
            }
            seen[key] = {name: empirical[name][key] / unit for name in layouts}
            ratios = {name: exact[key][name] / exact[key][INDEPENDENT] for name in (DEFAULT, DEMO)}
            payload[f"{_label(kept)} / {measure}"] = {
                "exact": exact[key],
                "seeded_rmse": seen[key],
                "over_independent": ratios,
            }
            cells = [f"{exact[key][n]:.3f} / {seen[key][n]:.3f}" for n in names]
            lines.append(
                f"| {_label(kept)} | {measure} | "
                + " | ".join(cells)
                + f" | {ratios[DEFAULT]:.3f} | {ratios[DEMO]:.3f} |"
            )
    bars = _bars(exact, seen, count_only)
    payload["demo_at_the_bars"] = bars
    floors = {"both_measures": marginals_floor(both_measures=True)}
    floors["count_only"] = marginals_floor(both_measures=False)
    payload["floor_of_both_bars"] = floors
    at_bar = marginals_at_bar(BAR)
    payload["at_the_bars"] = at_bar
    lines += [
        "",
        f"The demo's sliced campaign against the bars ({BAR:g}×), exact / seeded:",
        "",
        "| bar | exact | seeded | held |",
        "|---|---:|---:|---|",
        *(
            f"| {name} | {row['exact']:.3f} | {row['seeded']:.3f} | "
            f"{'yes' if max(row['exact'], row['seeded']) <= BAR else 'no'} |"
            for name, row in bars.items()
        ),
        "",
        "The least ratio at which a publisher total is within it of a count-only campaign's and "
        "a full cell within it of independent cells', over every residual strategy with the "
        f"centred value: {floors['both_measures']:.3f} holding both measures' publisher totals, "
        f"{floors['count_only']:.3f} holding the count's only. Holding the count's publisher "
        f"total and both measures' full cells at {BAR:g}, the value's publisher total is at best "
        f"{at_bar['publisher / value']:.3f}× a count-only campaign's, and the strategy reaching "
        "it has publisher × creative and × region at "
        f"{at_bar['publisher × creative / count']:.3f}× and "
        f"{at_bar['publisher × region / count']:.3f}× (count) independent cells'.",
    ]
    return "\n".join(lines), payload


def _bars(
    exact: dict[tuple, dict[str, float]], seen: dict[tuple, dict[str, float]], count_only: float
) -> dict[str, dict[str, float]]:
    """Issue 28's bars for the demo's campaign: its count publisher total ÷ a count-only
    campaign's (exact σ: 1 per unit σ by construction) and each measure's full cell ÷ the
    cells measured one by one, from the exact σ and from the seeded RMSE (each ÷ its own
    reference's seeded RMSE for the cells)."""
    publisher = ((PUBLISHER,), "count")
    bars = {
        "publisher total (count) ÷ a count-only campaign's": {
            "exact": exact[publisher][DEMO] / count_only,
            "seeded": seen[publisher][DEMO] / count_only,
        }
    }
    for measure in ("count", "value"):
        key = (FULL, measure)
        bars[f"full cell ({measure}) ÷ independent cells'"] = {
            "exact": exact[key][DEMO] / exact[key][INDEPENDENT],
            "seeded": seen[key][DEMO] / seen[key][INDEPENDENT],
        }
    return bars


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

"""Consistent answers and their intervals (dp_platform/consistency.py), checked.

- Every derived total equals the sum of its slices, for random layouts (hypothesis), from the
  noisy cells and from the WLS cells alike.
- WLS equals a brute-force generalised least squares (numpy.linalg) on small cases, and its
  variance formula matches a seeded simulation.
- The isotonic projection is feasible, idempotent, and equals a brute-force QP (cvxpy).
- 95 % intervals cover 95 % ± 2 % over 1000 seeded runs of x + N(0, σ²) on unclipped data,
  through cells → derived totals → WLS.
"""

from __future__ import annotations

import itertools
import math

import cvxpy as cp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dp_platform.consistency import (
    ALL,
    GRID,
    MEASURE,
    PUBLISHER,
    CellLayout,
    Measured,
    derived_totals,
    isotonic_cumulative,
    normal_interval,
    on_grid,
    slice_rows,
    wls_combine,
)


@st.composite
def layouts(draw: st.DrawFn) -> CellLayout:
    publishers = draw(st.integers(1, 3))
    dimensions = draw(st.lists(st.integers(1, 4), min_size=0, max_size=3))
    measures = draw(st.integers(1, 2))
    return CellLayout(
        publishers=tuple(f"pub_{i}" for i in range(publishers)),
        dimensions=tuple(
            (f"dim{k}", tuple(f"v{j}" for j in range(size))) for k, size in enumerate(dimensions)
        ),
        measures=tuple(f"m{i}" for i in range(measures)),
    )


@st.composite
def layout_and_cells(draw: st.DrawFn) -> tuple[CellLayout, np.ndarray, np.ndarray, tuple, str]:
    layout = draw(layouts())
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    values = rng.normal(100.0, 50.0, size=layout.shape)
    sigmas = rng.uniform(0.5, 20.0, size=layout.shape)
    summable = [name for name in layout.axis_names if name != MEASURE]
    over = tuple(draw(st.lists(st.sampled_from(summable), unique=True)))
    rest = [name for name in summable if name not in over]
    slice_axis = draw(st.sampled_from(rest)) if rest else ""
    return layout, values, sigmas, over, slice_axis


def _sum_axis(totals, name: str) -> np.ndarray:
    position = [axis for axis, _ in totals.axes].index(name)
    return totals.values.sum(axis=position), (totals.standard_errors**2).sum(axis=position)


@settings(max_examples=150, deadline=None)
@given(layout_and_cells())
def test_every_derived_total_equals_the_sum_of_its_slices(case) -> None:
    layout, values, sigmas, over, slice_axis = case
    if not slice_axis:
        return
    slices = derived_totals(layout, values, sigmas, over)
    total = derived_totals(layout, values, sigmas, (*over, slice_axis))
    summed, variance = _sum_axis(slices, slice_axis)
    np.testing.assert_array_equal(total.values, summed)  # exact: cells on the grid
    np.testing.assert_allclose(total.standard_errors**2, variance, rtol=1e-12)
    # and the grand total per measure is the sum of every cell
    grand = derived_totals(layout, values, sigmas, [n for n in layout.axis_names if n != MEASURE])
    every_cell = on_grid(values).reshape(-1, len(layout.measures)).sum(axis=0)
    np.testing.assert_array_equal(grand.values, every_cell)
    np.testing.assert_allclose(
        grand.values, values.reshape(-1, len(layout.measures)).sum(0), atol=GRID * values.size
    )


@settings(max_examples=60, deadline=None)
@given(layout_and_cells())
def test_wls_totals_equal_the_sum_of_their_slices(case) -> None:
    layout, values, sigmas, over, slice_axis = case
    if not slice_axis:
        return
    measured_total = derived_totals(layout, values, sigmas, (*over, slice_axis))
    combined = wls_combine(
        layout,
        [
            Measured((), values, sigmas),
            Measured(
                (*over, slice_axis), measured_total.values + 3.0, measured_total.values * 0 + 2
            ),
        ],
    )
    slices = combined.totals(over)
    total = combined.totals((*over, slice_axis))
    summed, _ = _sum_axis(slices, slice_axis)
    np.testing.assert_array_equal(total.values, summed)  # exact: cells on the grid


def _dense_gls(layout: CellLayout, measurements: list[Measured]) -> tuple[np.ndarray, np.ndarray]:
    """Brute force: stack A and W densely and solve by numpy.linalg."""
    a = np.vstack([layout.aggregation(m.over).toarray() for m in measurements])
    y = np.concatenate([np.ravel(m.values) for m in measurements])
    w = np.concatenate([1.0 / np.ravel(m.sigmas) ** 2 for m in measurements])
    root = np.sqrt(w)
    estimate, *_ = np.linalg.lstsq(a * root[:, None], y * root, rcond=None)
    covariance = np.linalg.inv(a.T @ (a * w[:, None]))
    return estimate, covariance


def _hierarchy(rng: np.random.Generator) -> tuple[CellLayout, list[Measured]]:
    layout = CellLayout(
        ("p0", "p1"), (("age", ("a", "b", "c")), ("gender", ("F", "M"))), ("count", "value")
    )
    truth = rng.uniform(0, 100, size=layout.shape)
    levels = [(), ("gender",), ("age", "gender"), (PUBLISHER, "age", "gender")]
    measurements = []
    for over, sigma in zip(levels, (4.0, 3.0, 2.0, 1.5), strict=True):
        exact = derived_totals(layout, truth, np.ones(layout.shape), over).values
        sigmas = np.full(exact.shape, sigma)
        measurements.append(Measured(over, exact + rng.normal(0, sigma, exact.shape), sigmas))
    return layout, measurements


def test_wls_equals_brute_force_generalised_least_squares() -> None:
    rng = np.random.default_rng(11)
    for _ in range(5):
        layout, measurements = _hierarchy(rng)
        combined = wls_combine(layout, measurements)
        estimate, covariance = _dense_gls(layout, measurements)
        np.testing.assert_allclose(combined.values.ravel(), estimate, rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(combined.covariance(), covariance, rtol=1e-9, atol=1e-12)
        b = layout.aggregation(("age",)).toarray()
        np.testing.assert_allclose(
            combined.totals(("age",)).standard_errors.ravel(),
            np.sqrt(np.diag(b @ covariance @ b.T)),
            rtol=1e-9,
        )


def test_wls_with_the_cells_alone_returns_them_and_their_sigmas() -> None:
    layout, measurements = _hierarchy(np.random.default_rng(3))
    cells = measurements[0]
    combined = wls_combine(layout, [cells])
    np.testing.assert_allclose(combined.values, cells.values, rtol=1e-12)
    np.testing.assert_allclose(combined.totals().standard_errors, cells.sigmas, rtol=1e-12)


def test_wls_refuses_measurements_without_the_cells() -> None:
    layout, measurements = _hierarchy(np.random.default_rng(3))
    with pytest.raises(ValueError, match="cells themselves"):
        wls_combine(layout, measurements[1:])


@pytest.mark.slow
def test_wls_variance_formula_matches_a_seeded_simulation() -> None:
    """1000 draws: the sample variance of each WLS total is within 25 % of b(AᵀWA)⁻¹bᵀ.

    The relative sd of a sample variance over 1000 normal draws is √(2/999) ≈ 4.5 %, so 25 %
    is > 5.5 sd for each of the 8 totals checked.
    """
    rng = np.random.default_rng(5)
    layout, measurements = _hierarchy(rng)
    over = (PUBLISHER, "gender")
    formula = wls_combine(layout, measurements).totals(over).standard_errors ** 2
    draws = []
    for _ in range(1000):
        noisy = [
            Measured(m.over, m.values + rng.normal(0, m.sigmas), m.sigmas) for m in measurements
        ]
        draws.append(wls_combine(layout, noisy).totals(over).values)
    np.testing.assert_allclose(np.var(draws, axis=0, ddof=1), formula, rtol=0.25)
    # and it is smaller than the variance of the same totals summed from the cells alone
    from_cells = derived_totals(layout, measurements[0].values, measurements[0].sigmas, over)
    assert np.all(formula < from_cells.standard_errors**2)


def _brute_force_projection(y: np.ndarray, w: np.ndarray) -> np.ndarray:
    s = cp.Variable(len(y))
    constraints = [s[0] >= 0] + [s[i + 1] >= s[i] for i in range(len(y) - 1)]
    cp.Problem(cp.Minimize(cp.sum(cp.multiply(w, cp.square(s - y)))), constraints).solve()
    return np.asarray(s.value)


def test_isotonic_equals_a_brute_force_projection() -> None:
    rng = np.random.default_rng(2)
    for n in (1, 2, 5, 9):
        for _ in range(8):
            y = np.cumsum(rng.normal(0.5, 3.0, n)) - 2.0
            sigmas = rng.uniform(0.5, 3.0, n)
            projected = isotonic_cumulative(y, sigmas)
            np.testing.assert_allclose(
                projected, _brute_force_projection(y, 1 / sigmas**2), atol=1e-5
            )


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.floats(-1e4, 1e4), min_size=1, max_size=20),
    st.floats(0.1, 100.0),
)
def test_isotonic_is_feasible_and_idempotent(values: list[float], sigma: float) -> None:
    y = np.asarray(values)
    projected = isotonic_cumulative(y, np.full(len(y), sigma))
    assert np.all(projected >= 0)
    assert np.all(np.diff(projected) >= -1e-9 * (1 + np.abs(projected[1:])))
    np.testing.assert_allclose(isotonic_cumulative(projected, sigma), projected, atol=1e-9)
    feasible = np.maximum.accumulate(np.maximum(y, 0))
    np.testing.assert_allclose(isotonic_cumulative(feasible, sigma), feasible, atol=1e-9)


def test_isotonic_projects_every_row_of_a_matrix() -> None:
    rows = np.array([[3.0, 1.0, 2.0], [-1.0, -2.0, 5.0]])
    out = isotonic_cumulative(rows, np.ones(3))
    for row, projected in zip(rows, out, strict=True):
        np.testing.assert_allclose(projected, isotonic_cumulative(row, np.ones(3)))


def test_normal_interval_is_the_normal_quantile() -> None:
    low, high = normal_interval(np.array([10.0]), np.array([2.0]))
    np.testing.assert_allclose(high - 10.0, 2.0 * 1.959963984540054)
    np.testing.assert_allclose(10.0 - low, 2.0 * 1.959963984540054)
    low, high = normal_interval(0.0, 1.0, level=0.6827)
    assert abs(float(high) - 1.0) < 1e-3
    with pytest.raises(ValueError, match="level"):
        normal_interval(0.0, 1.0, level=1.0)


def test_bad_input_is_refused_with_the_axis_or_cell() -> None:
    layout = CellLayout(("p",), (("age", ("a", "b")),), ("count",))
    with pytest.raises(ValueError, match="measures are never summed"):
        derived_totals(layout, np.ones(2), np.ones(2), [MEASURE])
    with pytest.raises(ValueError, match="unknown axis 'region'"):
        derived_totals(layout, np.ones(2), np.ones(2), ["region"])
    with pytest.raises(ValueError, match=r"cell \(0, 1, 0\) has σ ≤ 0"):
        derived_totals(layout, np.ones(2), np.array([1.0, 0.0]), ["age"])
    with pytest.raises(ValueError, match="expected 2 cells"):
        derived_totals(layout, np.ones(3), np.ones(3), ["age"])
    with pytest.raises(ValueError, match="distinct"):
        CellLayout(("p",), ((PUBLISHER, ("a",)),), ("count",))


def _coverage_layout() -> CellLayout:
    return CellLayout(
        ("p0", "p1", "p2"),
        (("age", ("18-24", "25-34", "35-44", "45+")), ("gender", ("F", "M"))),
        ("count", "value"),
    )


@pytest.mark.slow
def test_95_percent_intervals_cover_95_percent_over_1000_seeded_runs() -> None:
    """Unclipped data x, cells x + N(0, σ²), totals measured at two levels, 1000 runs.

    Every released number's interval — cells, totals derived from the cells, the directly
    measured totals' WLS estimate and its cells — contains the true value 95 % ± 2 % of the time
    (per kind; each kind pools ≥ 8 000 intervals, so the binomial sd is ≤ 0.25 %).
    """
    layout = _coverage_layout()
    rng = np.random.default_rng(20260)
    truth = rng.poisson(40.0, size=layout.shape).astype(np.float64)
    sigmas = rng.uniform(2.0, 8.0, size=layout.shape)
    levels = {("age", "gender"): 6.0, (PUBLISHER, "age"): 5.0}
    hits: dict[str, list[np.ndarray]] = {k: [] for k in ("cells", "derived", "wls", "wls_cells")}
    derived_over = (PUBLISHER, "gender")
    for _ in range(1000):
        noisy = truth + rng.normal(0.0, sigmas)
        measurements = [Measured((), noisy, sigmas)]
        for over, sigma in levels.items():
            exact = derived_totals(layout, truth, sigmas, over).values
            measurements.append(
                Measured(
                    over, exact + rng.normal(0, sigma, exact.shape), np.full(exact.shape, sigma)
                )
            )
        derived = derived_totals(layout, noisy, sigmas, derived_over)
        combined = wls_combine(layout, measurements)
        true_total = derived_totals(layout, truth, sigmas, derived_over).values
        for kind, estimate, se, target in (
            ("cells", noisy, sigmas, truth),
            ("derived", derived.values, derived.standard_errors, true_total),
            (
                "wls",
                combined.totals(derived_over).values,
                combined.totals(derived_over).standard_errors,
                true_total,
            ),
            ("wls_cells", combined.values, combined.totals().standard_errors, truth),
        ):
            low, high = normal_interval(estimate, se)
            hits[kind].append(((low <= target) & (target <= high)).ravel())
    for kind, runs in hits.items():
        coverage = float(np.concatenate(runs).mean())
        assert 0.93 <= coverage <= 0.97, f"{kind}: coverage {coverage:.4f}"


@pytest.mark.slow
def test_isotonic_intervals_keep_their_coverage_on_flat_and_increasing_truths() -> None:
    """The projected value with the unprojected half-width: measured, ≥ 93 % per series shape.

    Not exact (the projection is non-linear): this pins the finding docs/slices.md reports, on
    a cumulative series of 31 days with a flat start (no conversions on days 1–10).
    """
    rng = np.random.default_rng(77)
    daily = np.r_[np.zeros(10), rng.poisson(5.0, 21)].astype(np.float64)
    truth = np.cumsum(daily)
    day_sigma = np.full(31, 4.0)
    cumulative_se = np.sqrt(np.cumsum(day_sigma**2))
    raw_hits, projected_hits = [], []
    for _ in range(1000):
        noisy = np.cumsum(daily + rng.normal(0.0, day_sigma))
        projected = isotonic_cumulative(noisy, cumulative_se)
        for estimate, store in ((noisy, raw_hits), (projected, projected_hits)):
            low, high = normal_interval(estimate, cumulative_se)
            store.append((low <= truth) & (truth <= high))
    raw = float(np.mean(raw_hits))
    projected = float(np.mean(projected_hits))
    assert 0.93 <= raw <= 0.97
    assert projected >= 0.93, f"projected coverage {projected:.4f}"


def test_layout_aggregation_orders_cells_in_c_order() -> None:
    layout = _coverage_layout()
    a = layout.aggregation(("age",)).toarray()
    for p, g, m in itertools.product(range(3), range(2), range(2)):
        row = np.ravel_multi_index((p, g, m), (3, 2, 2))
        cells = [np.ravel_multi_index((p, age, g, m), layout.shape) for age in range(4)]
        assert sorted(np.flatnonzero(a[row])) == sorted(cells)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.floats(-1e9, 1e9), min_size=2, max_size=200), st.randoms())
def test_sums_of_gridded_values_do_not_depend_on_the_order(values: list[float], rnd) -> None:
    gridded = on_grid(np.asarray(values))
    assert np.all(np.abs(gridded - np.asarray(values)) <= GRID / 2)
    shuffled = list(gridded)
    rnd.shuffle(shuffled)
    assert float(np.sum(gridded)) == sum(shuffled) == math.fsum(gridded)


def test_on_grid_refuses_cells_too_large_for_exact_sums() -> None:
    with pytest.raises(ValueError, match="2\\^42"):
        on_grid(np.array([2.0**41, 2.0**41]))


def test_slice_rows_label_summed_axes_and_add_up() -> None:
    layout = CellLayout(("p0", "p1"), (("age", ("a", "b", "c")),), ("count",))
    values = np.arange(6.0).reshape(2, 3, 1) + 0.25
    sigmas = np.full((2, 3, 1), 2.0)
    rows = slice_rows(layout, values, sigmas, [(), ("age",), (PUBLISHER, "age")])
    assert len(rows) == 6 + 2 + 1
    assert rows[0] == {
        PUBLISHER: "p0",
        "age": "a",
        MEASURE: "count",
        "value": 0.25,
        "se": 2.0,
        "ci_low": pytest.approx(0.25 - 1.959963984540054 * 2),
        "ci_high": pytest.approx(0.25 + 1.959963984540054 * 2),
    }
    p1_total = next(r for r in rows if r[PUBLISHER] == "p1" and r["age"] == ALL)
    assert p1_total["value"] == sum(r["value"] for r in rows[3:6])
    assert p1_total["se"] == pytest.approx(2.0 * math.sqrt(3))
    grand = rows[-1]
    assert grand[PUBLISHER] == grand["age"] == ALL and grand["value"] == float(values.sum())

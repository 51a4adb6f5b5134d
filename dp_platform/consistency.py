"""Consistent answers from noisy cells, and the standard error of every derived number.

A day's release is a vector of noisy *cells*: publisher × the values of each breakdown
dimension × measure, each cell with its own Gaussian σ (drawn independently). Everything here
is **post-processing** of those DP outputs — no data, no noise, no privacy cost — and pure
NumPy/SciPy with no I/O.

- :func:`derived_totals` sums cells over any subset of the axes. A slice and its total are sums
  of the same noisy cells, so they agree by construction — exactly, not up to rounding: the
  cells are put on a binary grid first (:func:`on_grid`); the standard error √Σσ² is exact.
- :func:`wls_combine` takes the cells *and* totals measured directly (several levels of a
  hierarchy or any marginals) and returns the weighted-least-squares cells consistent with all
  of them (the generalised least squares of Hay, Rastogi, Miklau and Suciu, "Boosting the
  accuracy of differentially private histograms through consistency"). The estimate is linear in
  the measurements, so its covariance (AᵀWA)⁻¹ and every standard error derived from it are
  exact; totals read from it are again sums of its cells, hence consistent.
- :func:`isotonic_cumulative` projects a cumulative series onto non-negative, non-decreasing
  series (weighted isotonic regression, then clipping at 0). The projection is non-linear:
  there is no exact standard error for it, and it is biased upward near 0 (see the function).
- :func:`normal_interval`: the two-sided normal interval at a level (95 % by default).

**What the intervals cover: the noise only.** A release is noisy *clipped* data: each user's
contribution is bounded before noise, and the difference between the clipped and the true total
(clipping bias, always ≤ 0 for counts and non-negative values) is not in σ and not in these
intervals. They cover the clipped total the mechanism measured, at the stated level.

Axis order of a cell array (C order): ``publisher``, then the dimensions in the layout's order,
then ``measure``. A measure is never summed with another (a count and a value sum do not add).
The layout is the platform's one :class:`~dp_platform.cells.CellLayout` (re-exported here), and
the grid :func:`~dp_platform.cells.on_grid` the one the published cells are already on.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from statistics import NormalDist

import numpy as np
import scipy.linalg
import scipy.optimize
import scipy.sparse

from dp_platform.cells import GRID, MEASURE, PUBLISHER, CellLayout, on_grid

__all__ = [
    "GRID",
    "MEASURE",
    "PUBLISHER",
    "CellLayout",
    "Combined",
    "Measured",
    "Totals",
    "derived_totals",
    "isotonic_cumulative",
    "normal_interval",
    "on_grid",
    "slice_rows",
    "wls_combine",
]

_SOLVE_COLUMNS = 256  # right-hand sides per sparse solve when reading standard errors


def _positive_sigmas(layout: CellLayout, sigmas: np.ndarray, what: str) -> np.ndarray:
    array = layout.as_array(sigmas, what)
    bad = np.flatnonzero(~(array > 0) | ~np.isfinite(array))
    if bad.size:
        cell = np.unravel_index(int(bad[0]), layout.shape)
        raise ValueError(f"{what}: cell {tuple(int(c) for c in cell)} has σ ≤ 0 or not finite")
    return array


@dataclass(frozen=True)
class Totals:
    """Totals over some axes: values and exact standard errors, shaped by the kept axes."""

    axes: tuple[tuple[str, tuple[str, ...]], ...]
    values: np.ndarray
    standard_errors: np.ndarray

    def interval(self, level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
        """Noise-only ``(ci_low, ci_high)`` at ``level`` (clipping bias not covered)."""
        return normal_interval(self.values, self.standard_errors, level)


def derived_totals(
    layout: CellLayout, values: np.ndarray, sigmas: np.ndarray, over: Sequence[str]
) -> Totals:
    """Totals over the axes ``over`` as sums of the noisy cells, with their exact SE.

    Independent cells: a sum of k cells has variance Σσ². Cells measured by a residual strategy
    (dp_platform/cell_strategy.py) share correlated noise: the marginal's own σ, which the
    layout's strategy states (:meth:`~dp_platform.cell_strategy.CellStrategy.total_std`).
    The cells are first put on the grid :data:`GRID` (:func:`on_grid`), so every sum is exact in
    floating point: a total equals the sum of its slices bit for bit, in any order. Summing
    over ``()`` returns the (gridded) cells themselves.
    """
    cells = on_grid(layout.as_array(values, "values"))
    scales = _positive_sigmas(layout, sigmas, "sigmas")
    summed = layout.summed_axes(over)
    return Totals(
        axes=layout.kept(over),
        values=cells.sum(axis=summed),
        standard_errors=layout.strategy.total_std(scales, summed),
    )


@dataclass(frozen=True)
class Measured:
    """Totals over ``over`` measured directly, each with its own σ (shaped by the kept axes).

    ``over=()`` are the cells themselves. The noise of every measurement is independent of the
    others' (separate Gaussian draws).
    """

    over: tuple[str, ...]
    values: np.ndarray
    sigmas: np.ndarray


@dataclass(frozen=True, eq=False)
class Combined:
    """The WLS cells consistent with every measurement, and exact standard errors of totals.

    With the cells measured directly (precision D = diag Σ1/σ²) and totals M x measured with
    weights W, the cells' covariance is N⁻¹ = (D + MᵀWM)⁻¹ = D⁻¹ − D⁻¹Mᵀ S⁻¹ M D⁻¹ with
    S = W⁻¹ + M D⁻¹ Mᵀ (Woodbury): one dense Cholesky of size (measured totals)², never of
    size cells², so a grand total over every cell costs no fill-in. S⁻¹ is kept (dense,
    (measured totals)²) because every standard error reads it.
    """

    layout: CellLayout
    values: np.ndarray
    cell_variance: np.ndarray  # D⁻¹, flat
    totals_matrix: scipy.sparse.csr_matrix | None  # M: the measured totals (None: no totals)
    schur_inverse: np.ndarray | None  # S⁻¹ (None: no totals measured)

    def _correction(self, b: scipy.sparse.csr_matrix) -> scipy.sparse.csr_matrix:
        """Gᵀ = B D⁻¹ Mᵀ (sparse: a total meets one measured total per level)."""
        if self.totals_matrix is None:
            raise ValueError("no totals were measured: nothing to correct")
        return (b @ scipy.sparse.diags(self.cell_variance) @ self.totals_matrix.T).tocsr()

    def covariance(self, over: Sequence[str] = ()) -> np.ndarray:
        """Full covariance B N⁻¹ Bᵀ of the totals over ``over`` (small layouts: dense)."""
        b = self.layout.aggregation(over)
        base = (b @ scipy.sparse.diags(self.cell_variance) @ b.T).toarray()
        if self.schur_inverse is None:
            return base
        g_t = self._correction(b)
        return base - g_t @ (g_t @ self.schur_inverse).T

    def totals(self, over: Sequence[str] = ()) -> Totals:
        """Totals of the WLS cells over ``over`` with their exact standard errors.

        Var of total t = b_tᵀD⁻¹b_t − g_tᵀS⁻¹g_t with g_t sparse, a block of totals at a time:
        cost ∝ (non-zeros of G) × (measured totals), memory (measured totals) × 256 floats.
        """
        b = self.layout.aggregation(over)
        variances = b @ self.cell_variance  # b is 0/1: b_tᵀ D⁻¹ b_t = Σ over its cells
        if self.schur_inverse is not None:
            for start in range(0, b.shape[0], _SOLVE_COLUMNS):
                g_t = self._correction(b[start : start + _SOLVE_COLUMNS])
                quadratic = g_t.multiply(g_t @ self.schur_inverse).sum(axis=1)
                variances[start : start + g_t.shape[0]] -= np.asarray(quadratic).ravel()
        return Totals(
            axes=self.layout.kept(over),
            values=on_grid(self.values).sum(axis=self.layout.summed_axes(over)),
            standard_errors=np.sqrt(np.maximum(variances, 0.0)).reshape(
                self.layout.kept_shape(over)
            ),
        )


def _checked(layout: CellLayout, k: int, measured: Measured) -> tuple[np.ndarray, np.ndarray]:
    shape = layout.kept_shape(measured.over)
    what = f"measurement {k} (over {list(measured.over)})"
    y = np.asarray(measured.values, dtype=np.float64)
    sigma = np.asarray(measured.sigmas, dtype=np.float64)
    if y.shape != shape or sigma.shape != shape:
        raise ValueError(f"{what}: values and sigmas must be shaped {shape}")
    if not (np.all(sigma > 0) and np.all(np.isfinite(sigma)) and np.all(np.isfinite(y))):
        raise ValueError(f"{what}: σ must be > 0 and every value finite")
    return y.ravel(), sigma.ravel()


def wls_combine(layout: CellLayout, measurements: Sequence[Measured]) -> Combined:
    """Weighted least squares of the cells from every measurement (the cells must be one).

    Minimises Σ_k Σ_t (y_kt − (A_k x)_t)² / σ_kt² over cell vectors x, A_k summing cells over
    measurement k's axes: x̂ = (AᵀWA)⁻¹AᵀWy for any set of marginals (a hierarchy included),
    solved through :class:`Combined`'s Woodbury form. Linear in y, so Cov(x̂) = (AᵀWA)⁻¹
    exactly when the σ's are the true noise scales; x̂ is unbiased for the clipped cells; with
    the cells alone it returns them.
    """
    if not any(len(m.over) == 0 for m in measurements):
        raise ValueError("wls_combine needs the cells themselves among the measurements (over=())")
    precision = np.zeros(layout.size)
    rhs = np.zeros(layout.size)
    blocks, totals, weights = [], [], []
    for k, measured in enumerate(measurements):
        y, sigma = _checked(layout, k, measured)
        a = layout.aggregation(measured.over)
        rhs += a.T @ (y / sigma**2)
        if measured.over:
            blocks.append(a)
            totals.append(y)
            weights.append(1.0 / sigma**2)
        else:
            precision += 1.0 / sigma**2
    cell_variance = 1.0 / precision
    if not blocks:
        return Combined(
            layout, (cell_variance * rhs).reshape(layout.shape), cell_variance, None, None
        )
    m = scipy.sparse.vstack(blocks).tocsr()
    w = np.concatenate(weights)
    m_scaled = m @ scipy.sparse.diags(cell_variance)
    schur_matrix = (m_scaled @ m.T).toarray() + np.diag(1.0 / w)
    schur = scipy.linalg.cho_factor(schur_matrix)
    first = cell_variance * rhs
    estimate = first - cell_variance * (m.T @ scipy.linalg.cho_solve(schur, m @ first))
    schur_inverse = np.ascontiguousarray(scipy.linalg.cho_solve(schur, np.eye(len(w))))
    return Combined(layout, estimate.reshape(layout.shape), cell_variance, m, schur_inverse)


def isotonic_cumulative(series: np.ndarray, sigmas: np.ndarray) -> np.ndarray:
    """Project cumulative series (last axis = time) onto non-negative, non-decreasing ones.

    Weighted isotonic regression (weights 1/σ², scipy's pool-adjacent-violators) then clipping at
    0: together the weighted least-squares projection onto {0 ≤ s_1 ≤ … ≤ s_n} (clipping an
    isotonic fit at a bound gives the bounded isotonic fit). Post-processing of DP outputs: free.

    Not linear, so no exact standard error, and biased upward near 0 (it never lowers a number
    below 0 and pooling a dip raises it): summed over many cells the bias adds up, so
    ``releases`` publishes it only as a labelled ``projected`` field next to the unbiased running
    sum (dp_platform/release_view.py). The half-width of the unprojected sum around a projected
    value, measured below, is not published any more. The true cumulative series is in the
    constraint set, so the projection never moves the whole series further from it in the
    weighted norm; per value, measured coverage is at or above the nominal level on flat and
    increasing truths (docs/slices.md), but that is an empirical finding, not a guarantee.
    """
    values = np.asarray(series, dtype=np.float64)
    scales = np.broadcast_to(np.asarray(sigmas, dtype=np.float64), values.shape)
    if not (np.all(scales > 0) and np.all(np.isfinite(scales))):
        raise ValueError("sigmas must be > 0 and finite")
    if not np.all(np.isfinite(values)):
        raise ValueError("series must be finite")
    flat = values.reshape(-1, values.shape[-1]) if values.ndim else values.reshape(1, 1)
    weights = 1.0 / scales.reshape(flat.shape) ** 2
    fitted = np.empty_like(flat)
    for row in range(flat.shape[0]):
        fitted[row] = scipy.optimize.isotonic_regression(
            flat[row], weights=weights[row], increasing=True
        ).x
    return np.maximum(fitted, 0.0).reshape(values.shape)


@lru_cache(maxsize=16)
def _normal_quantile(level: float) -> float:
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level}")
    # the standard library's quantile (Wichura's AS241, ~1e-16): SciPy's stats module alone
    # costs ~0.3 s at every start of a process that only shows intervals
    return NormalDist().inv_cdf((1.0 + level) / 2.0)


def normal_interval(
    value: np.ndarray | float, se: np.ndarray | float, level: float = 0.95
) -> tuple[np.ndarray, np.ndarray]:
    """``value ∓ z·se`` with z the normal quantile of (1 + level)/2 (1.95996… at 95 %).

    Exact coverage for a Gaussian estimate with standard error ``se`` — noise only: clipping
    bias is not covered.
    """
    z = _normal_quantile(level)
    centre = np.asarray(value, dtype=np.float64)
    half = z * np.asarray(se, dtype=np.float64)
    return centre - half, centre + half


ALL = "all"  # the label of a summed axis in slice_rows


def slice_rows(
    layout: CellLayout,
    values: np.ndarray,
    sigmas: np.ndarray,
    levels: Sequence[Sequence[str]],
    level: float = 0.95,
) -> list[dict[str, str | float]]:
    """Every released number of one day at the requested levels, with its interval.

    One row per total: each axis's label (``"all"`` where the level sums it), ``value``, ``se``,
    ``ci_low``, ``ci_high``. All levels are sums of the same gridded cells
    (:func:`derived_totals`), so any row equals the sum of the rows it splits into. The one
    call a release needs to publish cells and totals consistently.
    """
    rows: list[dict[str, str | float]] = []
    for over in levels:
        totals = derived_totals(layout, values, sigmas, over)
        low, high = totals.interval(level)
        summed = set(over)
        for index in np.ndindex(totals.values.shape):
            labels = iter(index)
            row: dict[str, str | float] = {
                name: ALL if name in summed else axis_labels[next(labels)]
                for name, axis_labels in layout.axes
            }
            row.update(
                value=float(totals.values[index]),
                se=float(totals.standard_errors[index]),
                ci_low=float(low[index]),
                ci_high=float(high[index]),
            )
            rows.append(row)
    return rows

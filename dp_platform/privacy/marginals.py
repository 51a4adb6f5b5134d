"""Residual strategies: every marginal of a broken-down release measured at its optimal noise.

A broken-down campaign's day is a table x over publisher × dimension values × measure, in the
vector order of :class:`dp_platform.cells.CellLayout` (publisher first, measure last). An
advertiser reads *marginals* of it — publisher totals, publisher × one dimension, …, the full
cells — not only the full cells. Measuring the full cells with i.i.d. noise and summing them
makes a publisher total over k cells √k times noisier than it has to be. ResidualPlanner
(Xiao, He, Zhang and Kifer, "An optimal and scalable matrix mechanism for noisy marginals under
convex loss functions", NeurIPS 2023) measures instead, for every subset B of the attributes,
the *residual* of x on B — the part of the B-marginal that coarser marginals do not already
explain — with its own noise scale; they prove that for marginal workloads the optimal Gaussian
linear mechanism is of this form, and for a weighted sum of the marginals' variances its scales
have a closed form (:func:`optimal_scales`).

Here each attribute axis has the orthonormal Helmert basis H_i (first row 1/√n_i, the rest
orthogonal to it), so H = ⊗ H_i maps the cells to coefficients indexed by (k_1..k_d), the
coefficient belonging to residual B = {i : k_i ≠ 0}. The strategy releases
y = D·(T ⊗ H)·x + N(0, σ² I), D diagonal with d_{m,B} for the measure row m and residual B, and
publishes the cells x̂ = (T ⊗ H)⁻¹ D⁻¹ y — post-processing, and every marginal of x̂ is the sum
of its cells, so released marginals are consistent by construction.

**Measures.** T acts on the measure axis: the count stays, the value is *centred*,
v − c·count with c = ½. A conversion adds (w, w·t) to (count, value), t = min(v, cap)/cap in
[0, 1], so its centred value w·(t − ½) has magnitude ≤ w/2: measuring the pair (count, value − ½
count) costs one conversion 1/σ_c² + ¼/σ_v² where independent counts and values cost
1/σ_c² + 1/σ_v² — the value measure then needs a quarter of the budget it needed.

**Optimality, checked** (tests/test_marginals.py solves the matrix mechanism's semidefinite
program over every Gaussian linear strategy on small layouts): with one measure the closed form
is the optimum; with count and value weighed alike, too; weighed differently, within 1 % (the
centring and independent noise per measure row are then not exactly optimal).

**Privacy.** Privacy unit one user, add/remove adjacency. The per-day clip keeps a user's day
to L1 ≤ r conversions (docs/algorithm.md#clipping); one conversion's part of x is a convex
combination (over the publishers its credit is split across) of vertices w = 1 at one cell,
t ∈ {0, 1}. The scales are normalised so that every vertex has ‖D(T ⊗ H)u‖₂ ≤ 1 with equality
at the worst (:meth:`ResidualStrategy.vertex_norm`), hence ℓ2 sensitivity ≤ r, the same as the
i.i.d. release it replaces: zCDP cost r²/(2σ²), unchanged. AdsBPC+'s filter may charge each
user the exact ‖D(T ⊗ H)x_user‖² (:meth:`ResidualStrategy.user_norm`), which is ≤ r² and lower
for a user whose conversions do not pile into one cell.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

__all__ = [
    "CENTRE",
    "Marginal",
    "ResidualStrategy",
    "helmert",
    "measure_transform",
    "optimal_scales",
    "subsets",
]

CENTRE = 0.5
"""c in value − c·count: the midpoint of a conversion's value share t ∈ [0, 1] (worst |t − c|
is then ½, the least any c achieves)."""

Marginal = frozenset[int]
"""A marginal or a residual: the attribute axes it keeps (0 = publisher)."""


def helmert(n: int) -> np.ndarray:
    """Orthonormal n×n matrix whose first row is 1/√n (the constant direction) and whose other
    rows span the vectors orthogonal to it — the residual basis of one attribute."""
    basis = np.zeros((n, n))
    basis[0] = 1.0 / math.sqrt(n)
    for k in range(1, n):
        basis[k, :k] = 1.0
        basis[k, k] = -k
        basis[k] /= math.sqrt(k * (k + 1))
    return basis


def subsets(axes: int) -> list[Marginal]:
    return [
        frozenset(chosen)
        for size in range(axes + 1)
        for chosen in itertools.combinations(range(axes), size)
    ]


def measure_transform(measures: int) -> np.ndarray:
    """T on the measure axis: identity for count alone; (count, value − c·count) for both."""
    if measures == 1:
        return np.eye(1)
    if measures == 2:
        return np.array([[1.0, 0.0], [-CENTRE, 1.0]])
    raise ValueError("a release has one measure (count) or two (count, value)")


def _vertex_weights(measures: int) -> np.ndarray:
    """max over a conversion's vertices of (T·(1, t))_m²: what a measure row costs per unit
    of 1/d² — 1 for the count, max(c, 1 − c)² for the centred value."""
    transform = measure_transform(measures)
    shares = [np.array([1.0, t])[:measures] for t in (0.0, 1.0)]
    return np.max([(transform @ share) ** 2 for share in shares], axis=0)


def optimal_scales(
    sizes: Sequence[int], measures: int, weights: Mapping[tuple[int, Marginal], float]
) -> dict[tuple[int, Marginal], float]:
    """d_{m,B} minimising Σ w_{k,A}·(mean variance of a cell of marginal A of measure k) at
    σ = 1, under the vertex-norm normalisation Σ_B q_B·Σ_m κ_m·d_{m,B}² = 1 (κ from
    :func:`_vertex_weights`, q_B = Π_{i∈B}(n_i − 1)/N: the share of a cell's unit vector in
    residual B). Zero-weight residuals are not measured (d = 0).

    The variance of the total of marginal A (measure k) over its cells is
    Σ_{B⊆A} Σ_m (T⁻¹)_{km}²·λ_{m,B}·Π_{i∈B}(n_i − 1)·Π_{i∉A} n_i with λ = 1/d², so the
    objective is Σ λ_{m,B}·e_{m,B} and Lagrange gives λ_{m,B} ∝ √(κ_m q_B / e_{m,B})
    (ResidualPlanner's closed form, with the measure rows as one more index).
    """
    axes, total = len(sizes), math.prod(sizes)
    inverse = np.linalg.inv(measure_transform(measures))
    kappa = _vertex_weights(measures)
    rows: dict[tuple[int, Marginal], tuple[float, float]] = {}
    for m, residual in itertools.product(range(measures), subsets(axes)):
        dimension = math.prod(sizes[i] - 1 for i in residual)
        share = kappa[m] * dimension / total
        effect = sum(
            weight
            * inverse[k, m] ** 2
            * dimension
            * math.prod(sizes[i] for i in range(axes) if i not in kept)
            / math.prod(sizes[i] for i in kept)
            for (k, kept), weight in weights.items()
            if residual <= kept
        )
        rows[(m, residual)] = (share, effect)
    norm = sum(math.sqrt(share * effect) for share, effect in rows.values())
    return {
        key: math.sqrt(math.sqrt(effect / share) / norm) if effect > 0 and share > 0 else 0.0
        for key, (share, effect) in rows.items()
    }


@dataclass(frozen=True)
class ResidualStrategy:
    """The public strategy of one campaign: attribute sizes (publishers, then each breakdown
    dimension's list), the number of measures, and the scales d_{m,B}."""

    sizes: tuple[int, ...]
    measures: int
    scales: Mapping[tuple[int, Marginal], float]

    @classmethod
    def planned(
        cls,
        sizes: Sequence[int],
        measures: int,
        weights: Mapping[tuple[int, Marginal], float],
    ) -> ResidualStrategy:
        sizes = tuple(int(n) for n in sizes)
        return cls(sizes, measures, optimal_scales(sizes, measures, weights))

    @cached_property
    def _bases(self) -> list[np.ndarray]:
        return [helmert(n) for n in self.sizes]

    @cached_property
    def _diagonal(self) -> np.ndarray:
        """D as a tensor of shape sizes + (measures,): coefficient (k_1..k_d) belongs to
        residual B = {i : k_i ≠ 0}."""
        grids = np.meshgrid(*(np.arange(n) for n in self.sizes), indexing="ij")
        diagonal = np.zeros((*self.sizes, self.measures))
        for (m, residual), d in self.scales.items():
            inside = np.ones(self.sizes, dtype=bool)
            for axis, grid in enumerate(grids):
                inside &= (grid != 0) if axis in residual else (grid == 0)
            diagonal[..., m][inside] = d
        return diagonal

    def _tensor(self, vector: np.ndarray) -> np.ndarray:
        return np.asarray(vector, dtype=np.float64).reshape(*self.sizes, self.measures)

    def _apply(
        self, tensor: np.ndarray, bases: list[np.ndarray], measure: np.ndarray
    ) -> np.ndarray:
        for axis, basis in enumerate(bases):
            tensor = np.moveaxis(np.tensordot(basis, tensor, axes=(1, axis)), 0, axis)
        return np.tensordot(tensor, measure, axes=(-1, 1))

    def measure_vector(self, cells: np.ndarray) -> np.ndarray:
        """D(T ⊗ H)x: what the Gaussian is added to (a vector as long as x)."""
        coefficients = self._apply(
            self._tensor(cells), self._bases, measure_transform(self.measures)
        )
        return (self._diagonal * coefficients).ravel()

    def reconstruct(self, measured: np.ndarray) -> np.ndarray:
        """x̂ = (T ⊗ H)⁻¹ D⁻¹ y (post-processing); unmeasured residuals (d = 0) read as 0."""
        diagonal = self._diagonal
        scaled = np.divide(
            self._tensor(measured), diagonal, out=np.zeros_like(diagonal), where=diagonal > 0
        )
        inverse = np.linalg.inv(measure_transform(self.measures))
        return self._apply(scaled, [basis.T for basis in self._bases], inverse).ravel()

    def user_norm(self, cells: np.ndarray) -> float:
        """‖D(T ⊗ H)x‖₂ of one user's day: their exact sensitivity (≤ their L1 in conversions)."""
        return float(np.linalg.norm(self.measure_vector(cells)))

    def vertex_norm(self) -> float:
        """max over one conversion's vertices (one cell, value share t ∈ {0, 1}) of
        ‖D(T ⊗ H)u‖₂ — 1 by the normalisation: the per-conversion sensitivity."""
        kappa = _vertex_weights(self.measures)
        total = math.prod(self.sizes)
        squared = sum(
            kappa[m] * math.prod(self.sizes[i] - 1 for i in residual) / total * d**2
            for (m, residual), d in self.scales.items()
        )
        return math.sqrt(squared)

    def marginal_variance(self, measure: int, kept: Marginal) -> float:
        """Variance of one cell of marginal ``kept`` of ``measure`` at σ = 1 (every cell of a
        marginal has the same variance, by the symmetry of the residual basis); inf when a
        residual it needs is not measured."""
        inverse = np.linalg.inv(measure_transform(self.measures))
        axes = len(self.sizes)
        total = 0.0
        for m in range(self.measures):
            for residual in subsets(axes):
                if not residual <= kept or inverse[measure, m] == 0:
                    continue
                d = self.scales[(m, residual)]
                if d == 0:
                    return math.inf
                total += (
                    inverse[measure, m] ** 2
                    / d**2
                    * math.prod(self.sizes[i] - 1 for i in residual)
                    * math.prod(self.sizes[i] for i in range(axes) if i not in kept)
                )
        return total / math.prod(self.sizes[i] for i in kept)

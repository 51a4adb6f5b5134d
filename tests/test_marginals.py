"""Residual strategies for marginals (dp_platform/privacy/marginals.py): exact inversion, the
per-conversion sensitivity by brute force, the closed form's optimality against a semidefinite
program over every Gaussian linear strategy, and the stated variances against seeded draws."""

from __future__ import annotations

import itertools
import math

import cvxpy as cp
import numpy as np
import pytest

from dp_platform.privacy.marginals import Marginal, ResidualStrategy, helmert

PUBLISHER_TOTALS = frozenset({0})


def every_marginal(axes: int) -> list[Marginal]:
    """The marginals an advertiser reads: each keeps the publisher axis (0)."""
    return [
        frozenset({0, *chosen})
        for size in range(axes)
        for chosen in itertools.combinations(range(1, axes), size)
    ]


def weights_for(axes: int, measures: int, publisher_weight: float = 1.0) -> dict:
    return {
        (k, kept): publisher_weight if kept == PUBLISHER_TOTALS else 1.0
        for k in range(measures)
        for kept in every_marginal(axes)
    }


def vertices(sizes: tuple[int, ...], measures: int) -> list[np.ndarray]:
    """One conversion, whole, in one cell, with value share t ∈ {0, 1}: the extreme points of
    what one conversion adds to a day (a split credit is a convex combination of them)."""
    cells = math.prod(sizes)
    found = []
    for cell, share in itertools.product(range(cells), (0.0, 1.0)[: 2 if measures == 2 else 1]):
        vertex = np.zeros((cells, measures))
        vertex[cell, 0] = 1.0
        if measures == 2:
            vertex[cell, 1] = share
        found.append(vertex.ravel())
    return found


def marginal_matrix(sizes: tuple[int, ...], measures: int, measure: int, kept: Marginal):
    """Q mapping the vector (cells × measures, measure last) to marginal ``kept`` of one
    measure."""
    factors = [np.eye(n) if i in kept else np.ones((1, n)) for i, n in enumerate(sizes)]
    matrix = factors[0]
    for factor in factors[1:]:
        matrix = np.kron(matrix, factor)
    pick = np.zeros((1, measures))
    pick[0, measure] = 1.0
    return np.kron(matrix, pick)


ASYMMETRIC = {
    (0, PUBLISHER_TOTALS): 5.0,
    (0, frozenset({0, 1})): 1.0,
    (1, frozenset({0, 1})): 1.0,
}
"""Count publisher totals weighed 5×, the value's not at all: the measures differ."""

DEMO_LIKE = {
    (0, PUBLISHER_TOTALS): 50.0,
    (1, PUBLISHER_TOTALS): 1.0,
    (0, frozenset({0, 1, 2})): 10.0,
    (1, frozenset({0, 1, 2})): 5.0,
}
"""Per-measure weights of the demo's sliced campaign's shape (docs/slices.md)."""


def objective(strategy: ResidualStrategy, weights: dict) -> float:
    return sum(w * strategy.marginal_variance(k, kept) for (k, kept), w in weights.items())


@pytest.mark.parametrize("n", [1, 2, 3, 7])
def test_the_helmert_basis_is_orthonormal_with_the_constant_first(n: int) -> None:
    basis = helmert(n)
    np.testing.assert_allclose(basis @ basis.T, np.eye(n), atol=1e-12)
    np.testing.assert_allclose(basis[0], np.full(n, 1 / math.sqrt(n)))


@pytest.mark.parametrize(("sizes", "measures"), [((4,), 1), ((3, 2, 4), 1), ((3, 2, 4), 2)])
def test_reconstruction_inverts_the_measurement(sizes: tuple[int, ...], measures: int) -> None:
    strategy = ResidualStrategy.planned(sizes, measures, weights_for(len(sizes), measures))
    x = np.random.default_rng(0).random(math.prod(sizes) * measures)
    np.testing.assert_allclose(strategy.reconstruct(strategy.measure_vector(x)), x, atol=1e-12)


@pytest.mark.parametrize(
    ("sizes", "measures", "weights"),
    [
        ((3, 2), 1, weights_for(2, 1)),
        ((2, 2, 3), 2, weights_for(3, 2)),
        ((2, 2, 3), 2, weights_for(3, 2, 8.0)),
        ((5,), 2, weights_for(1, 2)),
        ((3, 2), 2, ASYMMETRIC),
        ((2, 2, 3), 2, DEMO_LIKE),
    ],
)
def test_one_conversion_has_sensitivity_one_by_brute_force(
    sizes: tuple[int, ...], measures: int, weights: dict
) -> None:
    """Every vertex's norm is ≤ 1 and the worst is exactly 1 = ``vertex_norm``; a conversion
    split over publishers (a convex combination) stays ≤ 1: the release's sensitivity per
    conversion is that of the i.i.d. release it replaces, so its zCDP charge r²/(2σ²) holds —
    with the measures weighed alike or apart."""
    strategy = ResidualStrategy.planned(sizes, measures, weights)
    norms = [strategy.user_norm(v) for v in vertices(sizes, measures)]
    assert max(norms) == pytest.approx(1.0, abs=1e-12)
    assert strategy.vertex_norm() == pytest.approx(1.0, abs=1e-12)
    rng = np.random.default_rng(1)
    points = np.array(vertices(sizes, measures))
    for _ in range(200):
        split = rng.dirichlet(np.ones(len(points)) * 0.3)
        assert strategy.user_norm(split @ points) <= 1.0 + 1e-12


@pytest.mark.parametrize("weights", [weights_for(3, 2, 4.0), DEMO_LIKE])
def test_a_users_day_costs_at_most_r_squared_with_equality_by_brute_force(weights: dict) -> None:
    """Every user with r = 2 conversions (any two vertices, with repetition) on a small
    layout: max ‖Sx‖² = r² exactly — the worst-case charge r²/(2σ²) of AdsBPC is neither
    understated (a user above it) nor loose (no user reaches it)."""
    sizes, measures = (2, 2, 2), 2
    strategy = ResidualStrategy.planned(sizes, measures, weights)
    points = vertices(sizes, measures)
    worst = max(
        strategy.user_norm(a + b) ** 2
        for a, b in itertools.combinations_with_replacement(points, 2)
    )
    assert worst == pytest.approx(4.0, rel=1e-12)


def semidefinite_optimum(sizes: tuple[int, ...], measures: int, weights: dict) -> float:
    """min over every Gaussian linear strategy (X = SᵀS ⪰ 0) of the weighted mean marginal
    variances Σ w·tr(Q X⁻¹ Qᵀ)/rows, subject to every vertex u having uᵀXu ≤ 1 — the matrix
    mechanism's program, small enough to solve exactly here."""
    size = math.prod(sizes) * measures
    gram = cp.Variable((size, size), PSD=True)
    total = 0
    for (k, kept), w in weights.items():
        q = marginal_matrix(sizes, measures, k, kept)
        total += w * cp.matrix_frac(q.T, gram) / q.shape[0]
    constraints = [v @ gram @ v <= 1 for v in vertices(sizes, measures)]
    problem = cp.Problem(cp.Minimize(total), constraints)
    problem.solve(solver=cp.CLARABEL)
    return float(problem.value)


@pytest.mark.parametrize(
    ("sizes", "publisher_weight"), [((3, 2), 1.0), ((2, 3), 5.0), ((2, 2, 2), 1.0)]
)
def test_one_measure_is_optimal_among_all_gaussian_strategies(
    sizes: tuple[int, ...], publisher_weight: float
) -> None:
    """ResidualPlanner's optimality, checked: the closed form equals the semidefinite program's
    optimum over every strategy matrix (not only residual ones)."""
    weights = weights_for(len(sizes), 1, publisher_weight)
    closed = objective(ResidualStrategy.planned(sizes, 1, weights), weights)
    assert closed == pytest.approx(semidefinite_optimum(sizes, 1, weights), rel=1e-5)


@pytest.mark.parametrize(
    ("sizes", "weights", "within"),
    [
        ((2, 2), weights_for(2, 2, 2.0), 1e-6),
        ((3, 2), weights_for(2, 2, 5.0), 1e-6),
        ((3, 2), ASYMMETRIC, 0.01),
    ],
)
def test_count_and_centred_value_against_the_optimum(
    sizes: tuple[int, ...], weights: dict, within: float
) -> None:
    """With two measures weighed alike, the centred value (value − count/2, independent noise
    per measure) is optimal among all Gaussian strategies; weighed differently it is not
    exactly (the program finds 0.4 % less on the asymmetric layout) but within 1 %."""
    optimum = semidefinite_optimum(sizes, 2, weights)
    closed = objective(ResidualStrategy.planned(sizes, 2, weights), weights)
    assert optimum * (1 - 1e-6) <= closed <= optimum * (1 + within)


@pytest.mark.parametrize("measures", [1, 2])
def test_stated_marginal_variances_match_seeded_draws(measures: int) -> None:
    """Reconstruct from y = Sx + N(0, I) many times (seeded): each marginal's empirical cell
    variance is its ``marginal_variance`` (4 000 draws: a variance's relative sd is 2.2 %)."""
    sizes = (4, 3, 2)
    strategy = ResidualStrategy.planned(sizes, measures, weights_for(3, measures, 3.0))
    rng = np.random.default_rng(7)
    size = math.prod(sizes) * measures
    draws = np.array(
        [strategy.reconstruct(rng.standard_normal(size)) for _ in range(4000)]
    )  # x = 0: the reconstruction is the noise alone
    for k, kept in itertools.product(range(measures), every_marginal(3)):
        cells = draws @ marginal_matrix(sizes, measures, k, kept).T
        empirical = float(np.mean(cells.var(axis=0)))
        assert empirical == pytest.approx(strategy.marginal_variance(k, kept), rel=0.08)


def test_an_unweighted_residual_is_not_measured_and_its_marginal_is_unknown() -> None:
    """Only publisher totals weighted: the finer residuals get no budget (d = 0) and the full
    cells' variance is infinite, said as such rather than as a number."""
    strategy = ResidualStrategy.planned((3, 2), 1, {(0, PUBLISHER_TOTALS): 1.0})
    assert strategy.scales[(0, frozenset({1}))] == 0.0
    assert math.isinf(strategy.marginal_variance(0, frozenset({0, 1})))
    # as if the totals alone were measured at sensitivity 1 (the full cells would give 2)
    assert strategy.marginal_variance(0, PUBLISHER_TOTALS) == pytest.approx(1.0)

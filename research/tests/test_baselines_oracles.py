"""Oracle values of docs/baselines.md#worked-table and docs/baselines.md#test-oracles, reproduced
from the library (that page's values are the only hard-coded expectations; tolerances are stated
per test)."""

from __future__ import annotations

import numpy as np
import pytest

from dp_research.baselines import BIN, IPA, MMBPC, UMM, prefix, prefix_weights, sliding
from dp_research.baselines import tree as tr
from dp_research.baselines.factorization import (
    denisov_fixed_point,
    optimal_strategy,
    sqrt_coefficients,
    sqrt_strategy,
)
from dp_research.evaluation.metrics import analytic_max_variance, analytic_wrmse

ORACLE = dict(rel=1e-6)  # docs/baselines.md prints 6–7 significant digits


def printed(text: str):
    """Match a value as docs/baselines.md prints it: within half a unit of its last digit."""
    decimals = len(text.split(".")[1]) if "." in text else 0
    return pytest.approx(float(text), abs=0.5 * 10.0**-decimals * (1 + 1e-9), rel=0)


def weights7(n: int) -> np.ndarray:
    """The oracle tables' weight vector (1, …, 1, 7) (not the product's γ²)."""
    return prefix_weights(n, squared=False)


def prefix_matrix(n: int) -> np.ndarray:
    return np.tril(np.ones((n, n)))


# docs/baselines.md#oracle-tree ----------------------------------------------------------------


@pytest.mark.parametrize(("n", "levels"), [(4, 3), (7, 3), (8, 4), (30, 5), (31, 5), (32, 6)])
def test_tree_levels(n: int, levels: int) -> None:
    assert tr.tree_levels(n) == levels
    # the vertex "everything on day 1" lies in exactly L kept nodes
    assert tr.node_incidence(n)[:, 0].sum() == levels


def test_tree_full_convention_flag() -> None:
    assert tr.tree_levels(30, full_tree=True) == 6
    assert tr.tree_levels(32, full_tree=True) == 6


@pytest.mark.parametrize(("n", "count"), [(8, 15), (30, 56), (32, 63)])
def test_tree_node_counts(n: int, count: int) -> None:
    assert len(tr.tree_nodes(n)) == count
    assert count == sum(n >> j for j in range(tr.tree_levels(n)))


@pytest.mark.parametrize(
    ("t", "factor"),
    [(2, 2 / 3), (3, 5 / 3), (4, 4 / 7), (7, 2.238095), (8, 8 / 15), (16, 16 / 31)],
)
def test_honaker_prefix_variances(t: int, factor: float) -> None:
    plan = BIN(gs=1.0, rho=0.5).plan(prefix(32))  # σ_node² = L·1/(2·0.5) = L
    unit = plan.query_variances() / plan.sigma**2
    assert unit[t - 1] == pytest.approx(factor, rel=1e-6)


def test_simple_prefix_variance_is_popcount() -> None:
    plan = BIN(gs=1.0, rho=0.5, simple=True).plan(prefix(30))
    unit = plan.query_variances() / plan.sigma**2
    popcount = [bin(t).count("1") for t in range(1, 31)]
    np.testing.assert_allclose(unit, popcount, rtol=1e-12)


@pytest.mark.parametrize(
    ("n", "simple_sum", "honaker_sum"),
    [(7, 30, 22.380952), (8, 19, 12.685714), (30, 99, 63.038710)],
)
def test_weighted_tree_sums(n: int, simple_sum: float, honaker_sum: float) -> None:
    w = weights7(n)
    simple = BIN(1.0, 1.0, simple=True).plan(prefix(n))
    honaker = BIN(1.0, 1.0).plan(prefix(n))
    assert w @ simple.query_variances() / simple.sigma**2 == pytest.approx(simple_sum, rel=1e-12)
    assert w @ honaker.query_variances() / honaker.sigma**2 == pytest.approx(honaker_sum, **ORACLE)


@pytest.mark.parametrize("n", [1, 2, 7, 30, 31, 64])
def test_honaker_equals_streaming_gls(n: int) -> None:
    gls = tr.gls_decoder(n, prefix_matrix(n), np.arange(n))
    np.testing.assert_allclose(tr.honaker_prefix_decoder(n), gls, atol=1e-12)


# docs/baselines.md#oracle-iid -----------------------------------------------------------------


@pytest.mark.parametrize(("n", "total"), [(7, 70), (8, 84), (30, 645)])
def test_ipa_weighted_sum(n: int, total: int) -> None:
    plan = IPA(gs=1.0, rho=0.5).plan(prefix(n))  # σ² = 1
    np.testing.assert_allclose(plan.query_variances(), np.arange(1, n + 1), rtol=1e-12)
    assert weights7(n) @ plan.query_variances() == pytest.approx(total, rel=1e-12)
    assert total == n * (n - 1) / 2 + 7 * n


# docs/baselines.md#oracle-sqrt ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("n", "s_n", "ones_x_ones", "weighted_loss"),
    [
        (4, 1.48828125, None, None),
        (7, 1.674500465, 33.535256, 33.552083),
        (8, 1.718379259, 43.407985, 37.836516),
        (30, 2.146267508, 582.676569, 146.659060),
    ],
)
def test_sqrt_factorization(n: int, s_n: float, ones_x_ones, weighted_loss) -> None:
    b = sqrt_strategy(n)
    np.testing.assert_allclose(b @ b, prefix_matrix(n), atol=1e-12)
    c = sqrt_coefficients(n)
    assert np.sum(c**2) == pytest.approx(s_n, rel=1e-9)
    t = np.arange(1, n + 1)
    c_t = sqrt_coefficients(n + 1)[1:]  # c_1 … c_n
    np.testing.assert_allclose(np.cumsum(c), 2 * t * c_t, rtol=1e-12)  # Σ_{k<t} c_k = 2t·c_t
    if ones_x_ones is not None:
        assert np.sum((b @ np.ones(n)) ** 2) == pytest.approx(ones_x_ones, **ORACLE)
        assert np.sum((2 * t * c_t) ** 2) == pytest.approx(ones_x_ones, **ORACLE)
        # UMM with GS = 1, ρ = 1/2: σ² = s_n and Var_t = s_n Σ_{k<t} c_k²
        plan = UMM(gs=1.0, rho=0.5).plan(prefix(n))
        np.testing.assert_allclose(plan.query_variances(), s_n * np.cumsum(c**2), rtol=1e-9)
        assert weights7(n) @ plan.query_variances() == pytest.approx(weighted_loss, **ORACLE)


def test_sqrt_coefficients_closed_form() -> None:
    np.testing.assert_allclose(sqrt_coefficients(6), [1, 1 / 2, 3 / 8, 5 / 16, 35 / 128, 63 / 256])


# docs/baselines.md#oracle-optimal -------------------------------------------------------------

DENISOV = [
    # n, unweighted loss, γ_n = 7 loss, 1ᵀX1 unweighted, 1ᵀX1 γ_n = 7
    (4, 6.874144, 16.689258, None, None),
    (7, 14.880967, 27.088213, 20.509919, 28.026534),
    (8, 17.866177, 30.726897, 25.689365, 34.961234),
    (14, 38.167797, 54.120556, 67.3192, 88.1942),
    (28, 96.097348, 116.656607, 230.1169, 280.8147),
    (30, 105.240199, 126.303205, 260.515724, 315.585088),
    (60, 259.670746, 286.222455, 918.3762, 1039.4224),
]


@pytest.mark.parametrize(("n", "loss", "loss7", "ones", "ones7"), DENISOV)
def test_denisov_table(n: int, loss: float, loss7: float, ones, ones7) -> None:
    for last, expected_loss, expected_ones in ((1.0, loss, ones), (7.0, loss7, ones7)):
        w = prefix_weights(n, last, squared=False)
        q_w = np.sqrt(w)[:, None] * prefix_matrix(n)
        b, fixed = optimal_strategy(q_w)
        x = fixed.gram
        np.testing.assert_allclose(np.diag(x), 1.0, atol=1e-10)
        np.testing.assert_allclose(b.T @ b, x, atol=1e-10)
        assert np.allclose(b, np.tril(b))
        assert x.min() > 0 and b.min() >= -1e-12  # X > 0, B ≥ 0 ⇒ rᵀXr is exact
        true_loss = np.trace(q_w.T @ q_w @ np.linalg.inv(x))
        assert true_loss == pytest.approx(fixed.loss, rel=1e-9)  # tr(M X⁻¹) = Σ v
        assert fixed.loss == pytest.approx(expected_loss, **ORACLE)
        if expected_ones is not None:
            digits = 1e-6 if n in (7, 8, 30) else 1e-5  # fewer digits are printed there
            assert x.sum() == pytest.approx(expected_ones, rel=digits)


def test_denisov_n4_entries() -> None:
    m = prefix_matrix(4).T @ prefix_matrix(4)
    fixed = denisov_fixed_point(m)
    np.testing.assert_allclose(fixed.gram[0, 1:], [0.557432, 0.339534, 0.164737], atol=1e-6)
    np.testing.assert_allclose(fixed.v, [3.321839, 1.686335, 1.174493, 0.691478], atol=1e-6)


@pytest.mark.parametrize("n", [4, 7, 8, 30])
def test_sqrt_over_optimal_ratio(n: int) -> None:
    for last, low, high in ((1.0, 1.110, 1.131), (7.0, 1.161, 1.254)):
        w = prefix_weights(n, last, squared=False)
        opt = UMM(1.0, 0.5, "optimal", tuple(w)).plan(prefix(n))
        sq = UMM(1.0, 0.5).plan(prefix(n))
        ratio = (w @ sq.query_variances()) / (w @ opt.query_variances())
        assert low - 5e-4 <= ratio <= high + 5e-4


# docs/baselines.md#worked-table ---------------------------------------------------------------

N, RHO, GS, R5 = 30, 1.0, 50.0, (5.0,) * 30
W7 = tuple(prefix_weights(N, squared=False))

WORKED = [
    # mechanism, σ² used, Var_1, Var_30, WMSE, WRMSE (as printed in docs/baselines.md)
    (IPA(GS, RHO), "1250", "1250", "37500", "22395.8333", "149.6524"),
    (BIN(GS, RHO, simple=True), "6250", "6250", "25000", "17187.5000", "131.1011"),
    (BIN(GS, RHO), "6250", "6250", "14297.235", "10944.2204", "104.6146"),
    (UMM(GS, RHO, "optimal", W7), "1250", "3673.920", "3862.385", "4385.5280", "66.2233"),
    (UMM(GS, RHO, "sqrt"), None, "2682.834", "5758.080", "5092.3285", "71.3606"),
    (MMBPC(R5, RHO, "optimal", W7), "3944.814", "11594.345", "12189.110", "13840.0723", "117.6438"),
    (MMBPC(R5, RHO, "sqrt"), "7283.457", "7283.457", "15632.247", "13824.8399", "117.5791"),
]


@pytest.mark.parametrize(
    "row", WORKED, ids=[f"{type(row[0]).__name__}-{i}" for i, row in enumerate(WORKED)]
)
def test_worked_table(row) -> None:
    mechanism, sigma2, var_1, var_n, wmse, wrmse_value = row
    plan = mechanism.plan(prefix(N))
    variances = plan.query_variances()
    if sigma2 is None:  # "1250·s_30": the square-root B is kept unnormalised, Δ = GS√s_n
        assert plan.sigma**2 == pytest.approx(1250 * np.sum(sqrt_coefficients(N) ** 2), rel=1e-12)
    else:
        assert plan.sigma**2 == printed(sigma2)
    assert variances[0] == printed(var_1)
    assert variances[-1] == printed(var_n)
    assert np.average(variances, weights=W7) == printed(wmse)
    assert analytic_wrmse(variances, np.array(W7)) == printed(wrmse_value)


def test_worked_table_mmbpc_sensitivities() -> None:
    assert MMBPC(R5, RHO, "optimal", W7).plan(prefix(N)).sensitivity ** 2 == pytest.approx(
        7889.627202, rel=1e-9
    )
    assert MMBPC(R5, RHO, "sqrt").plan(prefix(N)).sensitivity ** 2 == pytest.approx(
        14566.914219, rel=1e-9
    )


def test_group_privacy_reading_is_looser() -> None:
    """docs/baselines.md#mmbpc variant (i): Σ r_i‖b_i‖ gives 22500 against rᵀXr = 7889.6 for
    the optimal B, r ≡ 5."""
    group = MMBPC(R5, RHO, "optimal", W7, sensitivity="group").plan(prefix(N))
    assert group.sensitivity**2 == pytest.approx(22500, rel=1e-9)


SLIDING = [
    (IPA(GS, RHO), "8750"),
    (BIN(GS, RHO, simple=True), "18750"),
    (BIN(GS, RHO), "13988.095"),
    (UMM(GS, RHO, "optimal", W7), "7074.332"),
    (MMBPC(R5, RHO, "optimal", W7), "22325.537"),
]


@pytest.mark.parametrize(("mechanism", "max_variance"), SLIDING, ids=lambda v: str(v)[:12])
def test_sliding_max_variance_table(mechanism, max_variance: str) -> None:
    plan = mechanism.plan(sliding(N, 7))
    assert len(plan.query_ends) == 24
    assert analytic_max_variance(plan.query_variances()) == printed(max_variance)


def test_sliding_simple_cover_and_naive_difference() -> None:
    """3 cover nodes for every window; the naive prefix difference would reach 43750."""
    window = sliding(N, 7)
    cover = tr.cover_decoder(N, window.starts, window.ends)
    assert set(cover.sum(axis=1)) == {3.0}
    prefix_cover = tr.cover_decoder(N, np.zeros(N, dtype=np.int64), np.arange(N))
    naive = prefix_cover[window.ends].copy()
    naive[1:] -= prefix_cover[window.starts[1:] - 1]
    assert np.max(np.sum(naive**2, axis=1)) * 6250 == pytest.approx(43750, rel=1e-12)


def test_sliding_gls_unit_max_is_first_window() -> None:
    plan = BIN(GS, RHO).plan(sliding(N, 7))
    unit = plan.query_variances() / plan.sigma**2
    assert unit.max() == pytest.approx(2.238095, rel=1e-6)
    assert int(np.argmax(unit)) == 0  # window [1, 7]

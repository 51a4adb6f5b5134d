"""InitScales: closed form = cvxpy optimum, and the oracle values of
docs/baselines.md#worked-table and docs/baselines.md#oracle-adsbpc."""

from __future__ import annotations

import numpy as np
import pytest

from dp_platform import workload
from dp_platform.config import ObjectiveConfig
from dp_platform.config_loader import parse_campaign
from dp_platform.errors import ConfigError
from dp_platform.privacy import scales


def prefix_weights(n: int, last: float) -> np.ndarray:
    weights = np.ones(n)
    weights[-1] = last
    return weights


@pytest.mark.parametrize("seed", range(8))
def test_closed_form_equals_cvxpy_optimum(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 32))
    queries = rng.integers(1, 2 * n)
    matrix = (rng.random((queries, n)) < 0.4) * rng.uniform(0.5, 2.0, (queries, n))
    matrix[rng.integers(0, queries, n), np.arange(n)] = 1.0  # every day in some query
    weights = rng.uniform(0.2, 10.0, queries)
    rho1 = float(rng.uniform(0.05, 3.0))
    r_bar = rng.uniform(0.5, 5.0, n)
    closed = scales.wsum_closed_form(matrix, weights, rho1, r_bar)
    numeric = scales.wsum_cvxpy(matrix, weights, rho1, r_bar)
    assert np.sqrt(closed) == pytest.approx(np.sqrt(numeric), rel=1e-6)
    assert 0.5 * np.sum(r_bar**2 / closed) == pytest.approx(rho1, rel=1e-12)


def test_sum_of_root_a_for_prefix_n30_weight_7() -> None:
    n = 30
    a = (prefix_weights(n, 7.0)[:, None] * workload.prefix_matrix(n) ** 2).sum(axis=0)
    assert a == pytest.approx(n - np.arange(1, n + 1) + 7)
    assert np.sqrt(a).sum() == pytest.approx(135.967236, abs=1e-6)
    variances = scales.wsum_closed_form(workload.prefix_matrix(n), prefix_weights(n, 7.0), 1.0)
    assert float(a @ variances) == pytest.approx(9243.544641, rel=1e-9)  # J* = S²/(2ρ)


def test_worked_table_adsbpc_row() -> None:
    # docs/baselines.md#worked-table: n = 30, ρ = 1, r ≡ 5, weights (1,…,1,7)
    n, r = 30, np.full(30, 5.0)
    variances = scales.wsum_closed_form(workload.prefix_matrix(n), prefix_weights(n, 7.0), 1.0, r)
    assert variances[0] == pytest.approx(283.265, abs=1e-3)
    assert variances[-1] == pytest.approx(642.385, abs=1e-3)
    prefix_var = workload.prefix_matrix(n) @ variances
    assert (prefix_weights(n, 7.0) @ prefix_var) / 36 == pytest.approx(6419.1282, abs=1e-4)


def test_random_feasible_scales_never_beat_the_closed_form() -> None:
    rng = np.random.default_rng(5)
    n = 12
    matrix, weights = workload.prefix_matrix(n), prefix_weights(n, 7.0)
    a = (weights[:, None] * matrix**2).sum(axis=0)
    best = float(a @ scales.wsum_closed_form(matrix, weights, 0.7))
    for _ in range(2000):
        v = rng.uniform(0.1, 10, n)
        v *= 0.5 * np.sum(1 / v) / 0.7  # rescale onto the budget ½Σ1/v = 0.7
        assert float(a @ v) >= best * (1 - 1e-12)


def test_maxvar_n28_k7_is_k_n_over_two_rho() -> None:
    matrix = workload.sliding_matrix(28, 7)
    variances = scales.maxvar_scales(matrix, 1.0)
    assert float((matrix @ variances).max()) == pytest.approx(7 * 28 / 2, rel=1e-6)
    assert 0.5 * np.sum(1 / variances) == pytest.approx(1.0, rel=1e-12)


def test_maxvar_n30_matches_the_dual_bound() -> None:
    # docs/baselines.md#sliding-table: r ≡ 5, max variance 2618.03
    # (dual 2618.0328 ≤ optimum ≤ primal 2618.0388)
    matrix = workload.sliding_matrix(30, 7)
    variances = scales.maxvar_scales(matrix, 1.0, np.full(30, 5.0))
    value = float((matrix @ variances).max())
    assert 2618.0328 - 1e-3 <= value <= 2618.0388


def test_min_budget_meets_every_cap_with_the_least_budget() -> None:
    matrix = workload.sliding_matrix(30, 7)
    variances, rho1 = scales.min_budget_scales(matrix, 100.0)
    assert float((matrix @ variances).max()) <= 100.0 * (1 + 1e-12)
    # duality with maxvar: spending that ρ1 optimally gives max variance 100
    maxvar = scales.maxvar_scales(matrix, rho1)
    assert float((matrix @ maxvar).max()) == pytest.approx(100.0, rel=1e-6)


def test_workload_matrices() -> None:
    assert workload.sliding_matrix(4, 2).tolist() == [
        [1, 0, 0, 0],
        [1, 1, 0, 0],
        [0, 1, 1, 0],
        [0, 0, 1, 1],
    ]
    assert workload.range_matrix(4, [(2, 3)]).tolist() == [[0, 1, 1, 0]]
    assert workload.prefix_matrix(3).tolist() == [[1, 0, 0], [1, 1, 0], [1, 1, 1]]


def base_campaign(**overrides) -> dict:
    data = {
        "name": "c",
        "advertiser": "a",
        "account": "acct",
        "start": "2026-03-01",
        "days": 10,
        "bounds": {"quantile_days": 3},
    }
    data.update(overrides)
    return data


def test_a_day_in_no_query_is_refused_with_the_day_named() -> None:
    campaign = parse_campaign(base_campaign(workload={"kind": "range", "ranges": [[1, 8]]}))
    with pytest.raises(ConfigError, match=r"day 9, 10 is in none"):
        workload.workload_matrix(campaign)


def test_matrix_workload_from_csv(tmp_path) -> None:
    (tmp_path / "q.csv").write_text("1,1,0\n0,1,1\n")
    campaign = parse_campaign(
        base_campaign(
            days=3, bounds={"quantile_days": 1}, workload={"kind": "matrix", "path": "q.csv"}
        )
    )
    assert workload.workload_matrix(campaign, tmp_path).shape == (2, 3)
    (tmp_path / "q.csv").write_text("1,1\n")
    with pytest.raises(ConfigError, match="columns"):
        workload.workload_matrix(campaign, tmp_path)


def test_gammas_must_match_the_queries() -> None:
    with pytest.raises(ConfigError, match="one γ per query"):
        workload.query_weights(ObjectiveConfig(gammas=[1.0, 2.0]), 3)
    assert workload.query_weights(ObjectiveConfig(), 3).tolist() == [1, 1, 49]

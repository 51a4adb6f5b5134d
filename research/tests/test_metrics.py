"""Metrics (docs/baselines.md#workloads) and the non-private given-bounds helper
(docs/baselines.md#given-bounds)."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest

from dp_platform.privacy.noise import SeededNoise
from dp_research.baselines import IPA, Conversions, prefix, prefix_weights, sliding
from dp_research.evaluation.bounds import NON_PRIVATE_LABEL, nonprivate_given_bounds
from dp_research.evaluation.metrics import (
    analytic_max_variance,
    analytic_paper_wrmse,
    analytic_wrmse,
    expected_squared_errors,
    max_window_mse,
    paper_scale_wrmse,
    per_publisher_wrmse,
    wrmse,
)


def test_wrmse_definition_on_a_small_example() -> None:
    truth = np.array([[0.0, 0.0, 0.0], [10.0, 10.0, 10.0]])
    estimates = np.array([[[1.0, 2.0, 3.0], [10.0, 10.0, 14.0]]])  # one repeat
    w = np.array([1.0, 1.0, 2.0])
    # publisher 0: (1 + 4 + 2·9)/4 = 23/4; publisher 1: (0 + 0 + 2·16)/4 = 8
    np.testing.assert_allclose(per_publisher_wrmse(estimates, truth, w), np.sqrt([23 / 4, 8]))
    assert wrmse(estimates, truth, w) == pytest.approx(np.sqrt((23 / 4 + 8) / 2))
    # paper scale: sqrt(mean_p Σ w err²) / n = sqrt((23 + 32)/2) / 3
    assert paper_scale_wrmse(estimates, truth, w) == pytest.approx(np.sqrt(55 / 2) / 3)
    # window metric: max over queries of the mean squared error over publishers
    assert max_window_mse(estimates, truth) == pytest.approx((9 + 16) / 2)


def test_repeats_are_averaged_before_the_root() -> None:
    truth = np.zeros((1, 2))
    estimates = np.array([[[2.0, 0.0]], [[0.0, 0.0]]])  # two repeats
    assert wrmse(estimates, truth, np.ones(2)) == pytest.approx(np.sqrt((4 / 2 + 0) / 2))


def test_paper_scale_is_a_rescaling() -> None:
    rng = np.random.default_rng(0)
    n = 31
    truth = rng.normal(size=(5, n))
    estimates = truth + rng.normal(size=(3, 5, n))
    w = prefix_weights(n)
    ratio = paper_scale_wrmse(estimates, truth, w) / wrmse(estimates, truth, w)
    assert ratio == pytest.approx(np.sqrt(w.sum()) / n, rel=1e-12)


@pytest.mark.parametrize("weights", [prefix_weights(30), prefix_weights(30, squared=False)])
def test_analytic_matches_monte_carlo_with_clipping_bias(weights: np.ndarray) -> None:
    """E[err²] = Var + bias² for data-independent noise; R = 4000 publishers, 5% on WMSE."""
    n, publishers = 30, 4000
    plan = IPA(2.0, 1.0).plan(prefix(n))
    rng = np.random.default_rng(1)
    truth_x = rng.poisson(3.0, size=(publishers, n)).astype(float)
    clipped_x = np.minimum(truth_x, 2.0)  # some clipping, so the bias is not zero
    truth = truth_x @ plan.decoder.T
    bias = clipped_x @ plan.decoder.T - truth
    estimates = plan.release(clipped_x, SeededNoise(2))
    expected = analytic_wrmse(plan.query_variances(), weights, bias)
    assert wrmse(estimates, truth, weights) ** 2 == pytest.approx(expected**2, rel=0.05)
    assert analytic_paper_wrmse(plan.query_variances(), weights, bias) == pytest.approx(
        expected * np.sqrt(weights.sum()) / n, rel=1e-12
    )
    assert expected > analytic_wrmse(plan.query_variances(), weights)  # bias counts


def test_sliding_analytic_max_variance_matches_monte_carlo() -> None:
    n, publishers = 20, 4000
    plan = IPA(1.0, 0.5).plan(sliding(n, 7))
    x = np.ones((publishers, n))
    estimates = plan.release(x, SeededNoise(3))
    truth = x @ plan.decoder.T
    assert analytic_max_variance(plan.query_variances()) == pytest.approx(7.0, rel=1e-12)
    assert max_window_mse(estimates, truth) == pytest.approx(7.0, rel=0.10)


def test_expected_squared_errors_shapes() -> None:
    variances = np.array([1.0, 2.0])
    np.testing.assert_array_equal(expected_squared_errors(variances), [[1.0, 2.0]])
    bias = np.array([[1.0, 0.0], [0.0, 3.0]])
    np.testing.assert_array_equal(expected_squared_errors(variances, bias), [[2, 2], [1, 11]])


def test_bad_weights_and_empty_windows_are_refused() -> None:
    with pytest.raises(ValueError):
        analytic_wrmse(np.ones(3), np.ones(2))
    with pytest.raises(ValueError):
        analytic_wrmse(np.ones(2), np.array([1.0, -1.0]))
    with pytest.raises(ValueError, match="no queries"):
        analytic_max_variance(IPA(1.0, 1.0).plan(sliding(3, 7)).query_variances())


# AdsBPC rows of docs/baselines.md#worked-table (closed form: docs/baselines.md#adsbpc-scales)


def adsbpc_variances(r: np.ndarray, weights: np.ndarray, rho: float) -> np.ndarray:
    a = np.cumsum(weights[::-1])[::-1]  # a_i = Σ_{t≥i} w_t
    s = np.sum(r * np.sqrt(a))
    return r * s / (2 * rho * np.sqrt(a))


def test_adsbpc_worked_row() -> None:
    n = 30
    w = prefix_weights(n, squared=False)
    sigma2 = adsbpc_variances(np.full(n, 5.0), w, 1.0)
    assert np.sum(25 / sigma2) == pytest.approx(2.0, rel=1e-12)  # Σ r²/σ² = 2ρ
    assert sigma2[0] == pytest.approx(283.265, abs=5e-4)
    assert sigma2[-1] == pytest.approx(642.385, abs=5e-4)
    variances = np.cumsum(sigma2)
    assert variances[-1] == pytest.approx(11868.014, abs=5e-4)
    assert analytic_wrmse(variances, w) ** 2 == pytest.approx(6419.1282, abs=5e-5)
    assert analytic_wrmse(variances, w) == pytest.approx(80.1195, abs=5e-5)
    at_one = np.cumsum(adsbpc_variances(np.ones(n), w, 1.0))
    assert analytic_wrmse(at_one, w) ** 2 == pytest.approx(256.765, abs=5e-4)
    assert analytic_wrmse(at_one, w) == pytest.approx(16.02, abs=5e-3)


@pytest.mark.parametrize(("n", "expected"), [(30, 2625.0), (28, 2450.0)])
def test_adsbpc_uniform_sliding_rows(n: int, expected: float) -> None:
    """Uniform σ² = n r²/(2ρ) with r ≡ 5: max window variance K·σ² (2625; 2450 for n = 28)."""
    window = sliding(n, 7)
    sigma2 = np.full(n, n * 25 / 2.0)
    assert analytic_max_variance(window.matrix @ sigma2) == pytest.approx(expected, rel=1e-12)


# Given bounds (non-private) ---------------------------------------------------------------


def test_given_bounds_are_per_day_quantiles_of_nonzero_user_counts() -> None:
    rng = np.random.default_rng(4)
    n, size = 6, 5000
    conversions = Conversions(
        user=rng.integers(0, 700, size=size),
        day=rng.integers(0, n - 1, size=size),  # the last day stays empty
        publisher=rng.integers(0, 3, size=size),
        time=rng.random(size),
    )
    counts = defaultdict(lambda: defaultdict(int))
    for u, d in zip(conversions.user, conversions.day, strict=True):
        counts[int(d)][int(u)] += 1
    for q in (0.5, 0.9, 0.999):
        bounds = nonprivate_given_bounds(conversions, n, q)
        for day in range(n - 1):
            values = np.array(list(counts[day].values()))
            assert bounds[day] == np.quantile(values, q, method="inverted_cdf")
        assert bounds[-1] == 0
    assert "non-private" in NON_PRIVATE_LABEL

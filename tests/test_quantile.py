"""PrivateQuantile: the exact exponential-mechanism distribution, sensitivity 1, and its cost."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from dp_platform.privacy.accounting import exponential_mechanism_rho
from dp_platform.privacy.quantile import (
    cap_histogram,
    private_quantile,
    unit_utilities,
)
from tests.oracles import interval_probabilities

DRAWS = 100_000
P_THRESHOLD = 1e-3  # the chi-square test accepts unless p < 0.001 (fixed seed, so deterministic)


def paper_interval_probabilities(counts: list[int], p: float, cap: int, eps: float) -> np.ndarray:
    """The paper's formulation, independently: sorted capped counts c_1..c_K, c_0 = 0,
    c_{K+1} = Λ, interval j weighted (c_{j+1} − c_j)·exp(−ε|j − pK|/2); returned as the mass on
    each unit interval [v, v+1] (uniform within an interval)."""
    values = sorted(min(c, cap) for c in counts)
    k = len(values)
    ends = [0, *values, cap]
    mass = np.zeros(cap)
    weights = [(ends[j + 1] - ends[j]) * math.exp(-eps * abs(j - p * k) / 2) for j in range(k + 1)]
    total = sum(weights)
    for j in range(k + 1):
        width = ends[j + 1] - ends[j]
        for v in range(ends[j], ends[j + 1]):
            mass[v] += weights[j] / total / width
    return mass


def to_histogram(counts: list[int]) -> np.ndarray:
    return np.bincount(np.asarray(counts, dtype=np.int64), minlength=1)


@pytest.mark.parametrize(
    ("counts", "p", "cap", "eps"),
    [
        ([1, 1, 2, 3, 3, 3, 5, 9, 14], 0.9, 10, 1.0),
        ([1] * 40 + [2] * 10 + [4] * 3 + [12], 0.99, 10, 0.414),
        ([2, 7], 0.5, 8, 3.0),
    ],
)
def test_unit_intervals_reproduce_the_paper_distribution(
    counts: list[int], p: float, cap: int, eps: float
) -> None:
    ours = interval_probabilities(to_histogram(counts), p, cap, eps)
    assert ours == pytest.approx(paper_interval_probabilities(counts, p, cap, eps), rel=1e-12)


@pytest.mark.slow
def test_empirical_frequencies_match_exact_probabilities(seeded) -> None:
    counts = [1] * 300 + [2] * 120 + [3] * 40 + [5] * 15 + [8] * 5 + [30] * 2
    histogram, p, cap, eps = to_histogram(counts), 0.9, 10, 0.05
    exact = paper_interval_probabilities(counts, p, cap, eps)
    noise = seeded(20261122)
    draws = np.array(
        [private_quantile(histogram, p=p, cap=cap, epsilon=eps, noise=noise) for _ in range(DRAWS)]
    )
    assert np.all((draws >= 0) & (draws <= cap))
    observed = np.bincount(np.floor(draws).astype(int), minlength=cap)[:cap]
    keep = exact * DRAWS >= 5  # chi-square needs expected counts >= 5; pool the rest
    expected = np.r_[exact[keep], exact[~keep].sum()] * DRAWS
    seen = np.r_[observed[keep], observed[~keep].sum()]
    if expected[-1] == 0:
        expected, seen = expected[:-1], seen[:-1]
    assert stats.chisquare(seen, expected).pvalue > P_THRESHOLD
    # and a mechanism with a wrong ε (privacy cost misstated by 2×) is rejected
    wrong = paper_interval_probabilities(counts, p, cap, 2 * eps)
    wrong_expected = np.r_[wrong[keep], wrong[~keep].sum()] * DRAWS
    if wrong_expected[-1] == 0:
        wrong_expected = wrong_expected[:-1]
    assert stats.chisquare(seen, wrong_expected).pvalue < 1e-9


counts_strategy = st.lists(st.integers(min_value=1, max_value=25), min_size=0, max_size=40)


@settings(max_examples=200, deadline=None)
@given(
    counts=counts_strategy,
    extra=st.integers(1, 25),
    p=st.floats(0.01, 0.99),
    cap=st.integers(1, 20),
)
def test_adding_or_removing_one_user_moves_every_utility_by_at_most_one(
    counts: list[int], extra: int, p: float, cap: int
) -> None:
    before = unit_utilities(to_histogram(counts), p, cap)
    after = unit_utilities(to_histogram([*counts, extra]), p, cap)
    assert np.max(np.abs(after - before)) <= 1 + 1e-12


@settings(max_examples=200, deadline=None)
@given(
    counts=counts_strategy.filter(bool),
    new=st.integers(1, 25),
    p=st.floats(0.01, 0.99),
    cap=st.integers(1, 20),
)
def test_replacing_one_user_moves_every_utility_by_at_most_one(
    counts: list[int], new: int, p: float, cap: int
) -> None:
    before = unit_utilities(to_histogram(counts), p, cap)
    after = unit_utilities(to_histogram([*counts[1:], new]), p, cap)
    assert np.max(np.abs(after - before)) <= 1 + 1e-12


def test_cost_matches_opendp_accounting_of_the_sampler() -> None:
    """The Gumbel report-noisy-max OpenDP builds for our scale costs exactly what we charge."""
    import opendp.prelude as dp

    dp.enable_features("contrib")
    eps = 0.414
    scale = 2.0 / eps  # what private_quantile passes for utility sensitivity 1
    meas = dp.m.make_noisy_max(
        dp.vector_domain(dp.atom_domain(T=float, nan=False)),
        dp.linf_distance(T=float),
        dp.zero_concentrated_divergence(),
        scale=scale,
    )
    assert meas.map(1.0) == pytest.approx(float(exponential_mechanism_rho(eps)), rel=1e-12)


def test_cap_histogram_moves_heavy_users_to_the_cap() -> None:
    capped = cap_histogram(np.array([5, 2, 0, 1, 4, 1]), 3)
    assert capped.tolist() == [0, 2, 0, 6]
    with pytest.raises(ValueError):
        cap_histogram(np.array([0, -1]), 3)


def test_a_day_without_active_users_gives_a_uniform_bound(seeded) -> None:
    probabilities = interval_probabilities(np.zeros(1, dtype=np.int64), 0.99, 10, 1.0)
    assert probabilities == pytest.approx(np.full(10, 0.1))
    value = private_quantile(np.zeros(1), p=0.99, cap=10, epsilon=1.0, noise=seeded(1))
    assert 0 <= value <= 10

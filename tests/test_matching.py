"""Private matching (Agarwal et al. §3): privacy of each mechanism on neighbouring graphs
(one click's edges moved by ≤ 1 in ℓ1) and the error bounds of Theorems 6 and 7, with fixed
seeds."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from dp_platform.matching import (
    all_matchings,
    exponential_matching,
    greedy_exponential_matching,
    laplace_matching,
    matching_weight,
    optimal_matching,
    private_matching_value,
)
from dp_platform.privacy.noise import SeededNoise
from dp_platform.privacy.noise_check import Amount
from tests.oracles import greedy_law, log_ratio_bound, theorem6_gap, theorem7_gap


def neighbour(rng: np.random.Generator, w: np.ndarray) -> np.ndarray:
    """Move one click's column by an ℓ1 distance of exactly 1 (spread over the bags), ≥ 0."""
    out = w.copy()
    v = rng.integers(w.shape[1])
    split = rng.dirichlet(np.ones(w.shape[0])) * rng.choice([-1, 1], w.shape[0])
    out[:, v] = np.abs(out[:, v] + split)  # |x + s| differs from x by ≤ |s|: ℓ1 ≤ 1
    return out


class SpyNoise(SeededNoise):
    def __init__(self, seed: int) -> None:
        super().__init__(seed)
        self.scales: list[float] = []

    def add_laplace(self, values: np.ndarray, scale: float, **declared: Amount) -> np.ndarray:
        self.scales.append(scale)
        return super().add_laplace(values, scale, **declared)


def test_greedy_is_epsilon_dp_in_total_and_the_bound_is_nearly_reached() -> None:
    """Exact laws: over random neighbours the loss stays ≤ ε/2 (one score moves per step, and
    the click's ℓ1 budget is shared by the steps: not m·ε), and a click moved along one bag's
    edge reaches ≥ 0.35ε — so a Δ understated by 2× (loss ≈ 0.8ε > ε/2) is caught."""
    rng = np.random.default_rng(1)
    eps = 1.0
    worst = 0.0
    for _ in range(150):
        w = rng.uniform(0, 3, (3, 4))
        law = greedy_law(w, epsilon=eps)
        other = greedy_law(neighbour(rng, w), epsilon=eps)
        worst = max(
            worst, log_ratio_bound(np.array(list(law.values())), np.array(list(other.values())))
        )
    assert worst <= eps / 2 + 1e-9
    w = np.zeros((2, 6))
    moved = w.copy()
    moved[0, 0] = 1.0  # bag 0 → click 0 gains 1: P(click 0 first) up by ~e^{ε/2}, others down
    law, other = greedy_law(w, epsilon=eps), greedy_law(moved, epsilon=eps)
    loss = log_ratio_bound(np.array(list(law.values())), np.array(list(other.values())))
    assert 0.35 * eps <= loss <= eps / 2


@pytest.mark.slow
def test_greedy_sampler_follows_its_law() -> None:
    w = np.array([[1.0, 2.0, 0.0], [0.5, 0.0, 2.5]])
    law = greedy_law(w, epsilon=1.5)
    noise = SeededNoise(2)
    draws = [
        greedy_exponential_matching(w, epsilon=1.5, noise=noise).assignment for _ in range(6000)
    ]
    keys = list(law)
    observed = np.array([sum(d == k for d in draws) for k in keys])
    assert stats.chisquare(observed, np.array([law[k] for k in keys]) * 6000).pvalue > 1e-3


def test_laplace_matching_uses_scale_delta_over_epsilon_and_theorem_6() -> None:
    """The noise is Lap(Δ/ε) on every edge (a smaller scale would cost more than ε), and the
    matching's shortfall exceeds (2m/ε)·ln(mn/γ) in at most a γ share of 2000 runs."""
    rng = np.random.default_rng(3)
    m, n, eps, gamma = 4, 7, 0.5, 0.1
    spy = SpyNoise(4)
    exceed = 0
    for _ in range(2000):
        w = rng.uniform(0, 10, (m, n))
        opt = matching_weight(w, optimal_matching(w))
        release = laplace_matching(w, epsilon=eps, sensitivity=2.0, noise=spy)
        exceed += opt - matching_weight(w, release.assignment) > 2 * theorem6_gap(
            m, n, epsilon=eps, gamma=gamma
        )
    assert set(spy.scales) == {2.0 / eps}
    assert exceed / 2000 <= gamma
    assert float(release.rho) == pytest.approx(eps * math.tanh(eps / 2), rel=1e-9)


def test_exponential_matching_theorem_7() -> None:
    """m = 3 bags, n = 5 clicks: mean shortfall ≤ 2(m ln n + 1)/ε; tail at k = 2 ≤ e^{−2}."""
    rng = np.random.default_rng(5)
    m, n, eps = 3, 5, 2.0
    noise = SeededNoise(6)
    shortfalls = []
    for _ in range(1500):
        w = rng.uniform(0, 5, (m, n))
        opt = matching_weight(w, optimal_matching(w))
        shortfalls.append(
            opt - matching_weight(w, exponential_matching(w, epsilon=eps, noise=noise).assignment)
        )
    shortfalls = np.array(shortfalls)
    assert shortfalls.mean() <= theorem7_gap(m, n, epsilon=eps, k=1)
    assert np.mean(shortfalls > theorem7_gap(m, n, epsilon=eps, k=2)) <= math.exp(-2)
    assert len(all_matchings(m, n)) == 60


def test_greedy_error_on_disjoint_bags() -> None:
    """Disjoint bags of n/m clicks each: greedy is m exponential mechanisms, mean shortfall
    ≤ m·2(ln n + 1)/ε."""
    rng = np.random.default_rng(7)
    m, per, eps = 3, 4, 1.0
    noise = SeededNoise(8)
    shortfalls = []
    for _ in range(800):
        w = np.zeros((m, m * per))
        for b in range(m):
            w[b, b * per : (b + 1) * per] = rng.uniform(0, 6, per)
        opt = matching_weight(w, optimal_matching(w))
        got = greedy_exponential_matching(w, epsilon=eps, noise=noise).assignment
        shortfalls.append(opt - matching_weight(w, got))
    assert np.mean(shortfalls) <= m * 2 * (math.log(m * per) + 1) / eps


def test_value_release_sensitivity_and_error() -> None:
    """OPT moves by ≤ 1 between neighbours (brute force); the release's mean |error| ≈ 1/ε."""
    rng = np.random.default_rng(9)
    worst = 0.0
    for _ in range(500):
        w = rng.uniform(0, 4, (3, 5))
        worst = max(
            worst,
            abs(
                matching_weight(w, optimal_matching(w))
                - matching_weight(o := neighbour(rng, w), optimal_matching(o))
            ),
        )
    assert worst <= 1 + 1e-9
    eps = 0.8
    w = rng.uniform(0, 4, (3, 5))
    opt = matching_weight(w, optimal_matching(w))
    noise = SeededNoise(10)
    errors = [
        abs(private_matching_value(w, epsilon=eps, noise=noise)[0] - opt) for _ in range(4000)
    ]
    assert np.mean(errors) == pytest.approx(1 / eps, abs=4 / eps / math.sqrt(4000))

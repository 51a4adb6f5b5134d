"""Exponential mechanism and report-noisy-max: law, privacy (ε-DP and ε²/8-zCDP), utility.

The two examples of Wu's lecture 6 (*Algorithms for Private Data Analysis*) are the utility tests:
the heavy hitter (d = 100 websites, ε = 0.5, Δ = 1) and the price of a digital good (200 prices, Δ =
1.99). Every statistical check uses a fixed seed, so it is deterministic; tolerances are stated next
to each."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from dp_platform.privacy.discrete import SeededIntegerNoise
from dp_platform.privacy.exponential import (
    exponential_mechanism,
    exponential_mechanism_rho,
    grouped_exponential,
    report_noisy_max,
    report_noisy_max_rho,
    utility_gap,
)
from dp_platform.privacy.noise import SeededNoise
from tests.oracles import expected_utility_gap, exponential_probabilities, log_ratio_bound

P_THRESHOLD = 1e-3  # chi-square tests accept unless p < 0.001 (fixed seeds: deterministic)


def renyi(p: np.ndarray, q: np.ndarray, alpha: float) -> float:
    """D_α(P‖Q) for two laws on the same finite set."""
    return float(np.log(np.sum(p**alpha * q ** (1 - alpha))) / (alpha - 1))


def heavy_hitter_scores(sets: list[set[int]], d: int) -> np.ndarray:
    counts = np.zeros(d)
    for chosen in sets:
        for site in chosen:
            counts[site] += 1
    return counts


def random_users(rng: np.random.Generator, n: int, d: int) -> list[set[int]]:
    popularity = rng.dirichlet(np.ones(d) * 0.3)
    return [
        set(rng.choice(d, size=rng.integers(1, 6), replace=False, p=popularity).tolist())
        for _ in range(n)
    ]


@pytest.mark.slow
def test_sampler_follows_the_stated_law() -> None:
    scores = np.array([0.0, 1.0, 2.5, 2.0, -1.0])
    probs = exponential_probabilities(scores, epsilon=1.2, sensitivity=0.7)
    expected = np.exp(1.2 * scores / 1.4)
    assert probs == pytest.approx(expected / expected.sum(), rel=1e-12)
    noise = SeededNoise(1)
    draws = [exponential_mechanism(scores, epsilon=1.2, sensitivity=0.7, noise=noise)]
    draws += [
        exponential_mechanism(scores, epsilon=1.2, sensitivity=0.7, noise=noise)
        for _ in range(19_999)
    ]
    observed = np.bincount(draws, minlength=scores.size)
    assert stats.chisquare(observed, probs * len(draws)).pvalue > P_THRESHOLD


def test_heavy_hitter_sensitivity_is_one_and_reached() -> None:
    """Brute force over neighbours (remove each user; add random users): max |Δq(y)| = 1."""
    rng = np.random.default_rng(2)
    d = 30
    users = random_users(rng, 60, d)
    base = heavy_hitter_scores(users, d)
    worst = 0.0
    for i in range(len(users)):
        worst = max(worst, np.abs(base - heavy_hitter_scores(users[:i] + users[i + 1 :], d)).max())
    for extra in random_users(rng, 60, d):
        worst = max(worst, np.abs(base - heavy_hitter_scores([*users, extra], d)).max())
    assert worst == 1.0


def test_privacy_loss_of_neighbours_within_epsilon() -> None:
    """ε-DP on every neighbour of a heavy-hitter dataset (exact laws, no sampling)."""
    rng = np.random.default_rng(3)
    d, eps = 20, 0.8
    users = random_users(rng, 40, d)
    law = exponential_probabilities(heavy_hitter_scores(users, d), epsilon=eps, sensitivity=1.0)
    for i in range(len(users)):
        other = heavy_hitter_scores(users[:i] + users[i + 1 :], d)
        loss = log_ratio_bound(law, exponential_probabilities(other, epsilon=eps, sensitivity=1))
        assert loss <= eps + 1e-12


@pytest.mark.parametrize("eps", [0.1, 0.5, 1.0, 2.0])
def test_zcdp_cost_holds_and_is_tight(eps: float) -> None:
    """Rényi divergences of the worst pair s = 0, s′ = (Δ, −Δ) stay ≤ α·ε²/8 for every α, and
    reach most of it: a charge of ε²/16 (half) would be refuted by the same pair."""
    p = exponential_probabilities([0.0, 0.0], epsilon=eps, sensitivity=1.0)
    q = exponential_probabilities([1.0, -1.0], epsilon=eps, sensitivity=1.0)
    rho = float(exponential_mechanism_rho(eps))
    assert rho == pytest.approx(min(eps**2 / 8, eps * math.tanh(eps / 2)), rel=1e-9)
    alphas = np.concatenate([np.linspace(1.001, 3, 60), np.geomspace(3, 200, 60)])
    ratios = [max(renyi(p, q, a), renyi(q, p, a)) / a for a in alphas]
    assert max(ratios) <= rho * (1 + 1e-9)
    assert max(ratios) > rho / 2  # understating the cost by 2× is caught
    assert log_ratio_bound(p, q) == pytest.approx(eps / 2 + math.log(math.cosh(eps / 2)), 1e-9)


def test_heavy_hitter_utility_lecture_example() -> None:
    """d = 100, ε = 0.5, t = ln 100: P(score < max − 36.8) ≤ 1% (Wu, lecture 6, Prop. 1.4 and
    Ex. 1.5)."""
    rng = np.random.default_rng(4)
    d, eps = 100, 0.5
    scores = heavy_hitter_scores(random_users(rng, 3000, d), d)
    gap = utility_gap(d, epsilon=eps, sensitivity=1.0, t=math.log(100))
    assert gap == pytest.approx(36.84, abs=0.01)
    noise = SeededNoise(5)
    draws = np.array(
        [
            exponential_mechanism(scores, epsilon=eps, sensitivity=1.0, noise=noise)
            for _ in range(4000)
        ]
    )
    failures = np.mean(scores[draws] < scores.max() - gap)
    assert failures <= 0.01 + 3 * math.sqrt(0.01 * 0.99 / 4000)  # 3 binomial s.d. of slack
    shortfall = scores.max() - scores[draws].mean()
    assert shortfall <= expected_utility_gap(d, epsilon=eps, sensitivity=1.0)


def test_digital_good_pricing_seed_002_example() -> None:
    """Prices $0.01..$1.99, revenue q(p) = p·#{x_i ≥ p}: Δ = 1.99 and E[q] ≥ max − 2Δ(ln d+1)/ε."""
    rng = np.random.default_rng(6)
    prices = np.round(np.arange(1, 200) / 100, 2)
    values = rng.beta(2, 3, size=500) * 2.0

    def revenue(x: np.ndarray) -> np.ndarray:
        return prices * (x[None, :] >= prices[:, None]).sum(axis=1)

    base = revenue(values)
    worst = max(np.abs(base - revenue(np.delete(values, i))).max() for i in range(0, 500, 7))
    worst = max(worst, np.abs(base - revenue(np.append(values, 1.995))).max())
    assert worst <= 1.99 + 1e-12 and worst >= 1.98  # the stated Δ holds and is (nearly) reached
    eps = 1.0
    noise = SeededNoise(7)
    draws = np.array(
        [
            exponential_mechanism(base, epsilon=eps, sensitivity=1.99, noise=noise)
            for _ in range(3000)
        ]
    )
    bound = expected_utility_gap(prices.size, epsilon=eps, sensitivity=1.99)
    assert base.max() - base[draws].mean() <= bound
    failures = np.mean(
        base[draws] < base.max() - utility_gap(199, epsilon=eps, sensitivity=1.99, t=2)
    )
    assert failures <= math.exp(-2)


def _rnm_two(delta_score: float, scale: float) -> float:
    """P(argmax = 0) for scores (s0, s1), s0 − s1 = delta_score, i.i.d. Exp(scale) noise."""
    x = abs(delta_score) / scale
    tail = math.exp(-x) / 2  # P(E1 − E0 > |Δs|): E1 − E0 is Lap(scale)
    return 1 - tail if delta_score >= 0 else tail


@pytest.mark.slow
@pytest.mark.parametrize("eps", [0.5, 1.0, 2.0])
def test_report_noisy_max_is_epsilon_dp_and_half_the_noise_is_not(eps: float) -> None:
    """Two candidates, neighbours s = (0, 0) and s′ = (Δ, −Δ): with Exp(2Δ/ε) every output's
    ratio is ≤ e^ε; with Exp(Δ/ε) (the monotone scale misapplied) it is not."""
    for scale, ok in ((2.0 / eps, True), (1.0 / eps, False)):
        p1, q1 = 0.5, 1 - _rnm_two(2.0, scale)
        worst = max(math.log(p1 / q1), math.log((1 - q1) / 0.5))
        assert (worst <= eps + 1e-12) is ok
    noise = SeededNoise(8)
    wins = sum(
        report_noisy_max([1.0, -1.0], epsilon=eps, sensitivity=1.0, noise=noise) == 0
        for _ in range(20_000)
    )
    expected = _rnm_two(2.0, 2.0 / eps)
    assert abs(wins / 20_000 - expected) < 4 * math.sqrt(expected * (1 - expected) / 20_000)
    assert float(report_noisy_max_rho(eps)) == pytest.approx(eps * math.tanh(eps / 2), rel=1e-9)


def test_grouped_race_has_the_exponential_law_per_group() -> None:
    """The vectorised race picks i in its group with probability e^{a_i}/Σ e^{a_j}."""
    exponents = np.array([0.0, 1.0, 2.0, 5.0, 5.0, -3.0, 0.5, 0.7])
    starts = np.array([0, 3, 5, 6])  # groups {0,1,2}, {3,4}, {5}, {6,7}
    reps = 20_000
    noise = SeededIntegerNoise(9)
    counts = np.zeros(exponents.size)
    for _ in range(reps // 100):
        tiled = np.tile(exponents, 100)
        tiled_starts = (starts[None, :] + exponents.size * np.arange(100)[:, None]).ravel()
        # exponents a_i = s_i/b with b = 1: a race of Gumbel scale 1, declared at Δ = 1, ε = 2
        draws = noise.exponentials(tiled.size, gumbel_scale=1.0, sensitivity=1.0, epsilon=2.0)
        picks = grouped_exponential(tiled_starts, tiled, draws)
        np.add.at(counts, picks % exponents.size, 1)
    for lo, hi in ((0, 3), (3, 5), (5, 6), (6, 8)):
        law = np.exp(exponents[lo:hi]) / np.exp(exponents[lo:hi]).sum()
        if hi - lo == 1:
            assert counts[lo] == reps
            continue
        assert stats.chisquare(counts[lo:hi], law * reps).pvalue > P_THRESHOLD


def test_grouped_race_rejects_bad_groups() -> None:
    with pytest.raises(ValueError):
        grouped_exponential(np.array([1]), np.zeros(3), np.ones(3))
    with pytest.raises(ValueError):
        grouped_exponential(np.array([0, 0]), np.zeros(3), np.ones(3))

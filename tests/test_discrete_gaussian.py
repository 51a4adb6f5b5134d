"""The vector sampler of N_ℤ(0, S²) (dp_platform/privacy/discrete_gaussian.py) and its use by
SecureNoise: the law, the exact branches that decide what 64 random bits cannot, the grid
arithmetic around it, and the secure words it draws from.

The laws are checked on words from a *seeded* generator (deterministic tests of the algorithm,
not of the OS's generator); the unseeded secure draws are checked in tests/test_noise.py, whose
Gaussian test goes through this sampler (asserted below).
"""

from __future__ import annotations

import math
import multiprocessing
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

import dp_platform.privacy.discrete_gaussian as sampler
import dp_platform.privacy.noise as noise
from dp_platform.privacy.noise import Draw, SecureNoise, gaussian_grid_k
from tests.sampler_laws import dkw_radius, integer_ks_distance, ks_distance, law_distance

SAMPLES = 40_000


def seeded_words(seed: int):  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(seed)
    return lambda n: rng.integers(0, 1 << 64, size=n, dtype=np.uint64)


def discrete_gaussian_cdf(scale: int, reach: int = 40):  # type: ignore[no-untyped-def]
    support = np.arange(-reach * scale, reach * scale + 1)
    weights = np.exp(-(support.astype(float) ** 2) / (2.0 * scale**2))
    cumulative = np.cumsum(weights / weights.sum())
    return lambda z: np.interp(np.floor(z), support, cumulative, left=0.0, right=1.0)


@pytest.mark.parametrize(("scale", "seed"), [(1, 1), (3, 2), (17, 3)])
def test_small_scales_follow_the_discrete_gaussian_and_not_a_30_percent_other_scale(
    scale: int, seed: int
) -> None:
    draws = sampler.discrete_gaussian(scale, SAMPLES, seeded_words(seed)).astype(np.int64)
    radius = dkw_radius(SAMPLES)
    right = discrete_gaussian_cdf(scale)
    assert integer_ks_distance(draws, right) <= radius
    grid = np.arange(-40 * scale, 40 * scale + 1)
    for other in (scale * 1.3, scale / 1.3):
        wrong = lambda z, o=other: stats.norm(0.0, o).cdf(np.floor(z) + 0.5)  # noqa: E731
        assert law_distance(right, wrong, grid) > 2 * radius
        assert integer_ks_distance(draws, wrong) > radius


def test_a_scale_of_2_to_the_53_is_the_normal_law_in_grid_units() -> None:
    scale = (1 << 53) + 1
    draws = sampler.discrete_gaussian(scale, SAMPLES, seeded_words(4)).astype(np.float64)
    assert ks_distance(draws / scale, stats.norm(0.0, 1.0).cdf) <= dkw_radius(SAMPLES)
    assert ks_distance(draws / scale, stats.norm(0.0, 1.3).cdf) > dkw_radius(SAMPLES)


def test_the_largest_scale_still_samples_exactly_in_integers() -> None:
    draws = sampler.discrete_gaussian(sampler.MAX_SCALE, 2000, seeded_words(5))
    assert all(isinstance(z, int) for z in draws)
    assert ks_distance(draws.astype(np.float64) / sampler.MAX_SCALE, stats.norm().cdf) < 0.06
    with pytest.raises(ValueError, match="scale"):
        sampler.discrete_gaussian(sampler.MAX_SCALE + 1, 1, seeded_words(5))


@pytest.mark.parametrize("bound", [1, 2, 3, 5, 6, 1000, (1 << 53) + 1, (1 << 62) - 1])
def test_uniform_below_a_bound_stays_below_it_and_is_uniform(bound: int) -> None:
    one = sampler._uniform_below(bound, 30_000, seeded_words(bound % 97))
    many = sampler._uniform_below(np.full(30_000, bound), 30_000, seeded_words(bound % 89))
    for drawn in (one, many):
        assert drawn.min() >= 0 and drawn.max() < bound
        if bound <= 1000:
            counts = np.bincount(drawn, minlength=bound)
            assert stats.chisquare(counts).pvalue > 1e-6 if bound > 1 else counts[0] == 30_000
        else:
            assert ks_distance(drawn / bound, stats.uniform().cdf) <= dkw_radius(30_000)


def test_bernoulli_exp_of_a_fraction_succeeds_with_probability_exp_minus_a_over_b() -> None:
    words, n = seeded_words(6), 100_000
    for numerator, denominator in [(0, 7), (1, 3), (5, 7), (6, 7)]:
        hits = sampler._bernoulli_exp_fraction(np.full(n, numerator), denominator, words)
        p = math.exp(-numerator / denominator)
        assert abs(hits.mean() - p) < 6 * math.sqrt(p * (1 - p) / n) + 1e-9


def test_exp_minus_one_is_pinned_to_64_bits_and_runs_are_geometric() -> None:
    lo, hi = sampler._exp_minus_one_bounds(80)
    assert lo <= Fraction(math.exp(-1)) + Fraction(1, 1 << 52) and hi - lo < Fraction(1, 1 << 79)
    assert sampler._E1_WORD == math.floor(lo * (1 << 64)) == math.floor(hi * (1 << 64))
    runs = sampler._exp1_runs(100_000, seeded_words(7))
    for v in range(4):  # P(run ≥ v) = e^-v
        p = math.exp(-v)
        assert abs((runs >= v).mean() - p) < 6 * math.sqrt(p * (1 - p) / 1e5) + 1e-9


def _scripted(*words: int):  # type: ignore[no-untyped-def]
    queue = list(words)
    return lambda n: np.array([queue.pop(0) for _ in range(n)], dtype=np.uint64)


def test_a_word_equal_to_e_minus_one_is_decided_by_the_next_bits() -> None:
    """U = 0.w₁w₂…: with w₁ = ⌊e^−1·2^64⌋ only w₂… can say whether U < e^−1."""
    lo, _ = sampler._exp_minus_one_bounds(200)
    next_word = math.floor(lo * (1 << 128)) % (1 << 64)  # e^-1's bits 65..128
    first = np.array([sampler._E1_WORD], dtype=np.uint64)
    assert sampler._below_exp_minus_one(first, _scripted(next_word - 1))[0]
    assert not sampler._below_exp_minus_one(first, _scripted(next_word + 1))[0]


def test_a_ratio_the_first_64_bits_cannot_decide_is_decided_exactly() -> None:
    """1/3 = 0.0101…: the word 0x5555… straddles it, the next word decides."""
    third = (1 << 64) // 3
    remainder, denominator = np.array([1], dtype=object), 3
    assert sampler._bernoulli_big(remainder, denominator, _scripted(third, 0))[0]
    assert not sampler._bernoulli_big(remainder, denominator, _scripted(third, (1 << 64) - 1))[0]
    assert sampler._bernoulli_big(remainder, denominator, _scripted(third - 1))[0]
    assert not sampler._bernoulli_big(remainder, denominator, _scripted(third + 1))[0]


def test_the_gaussian_grid_makes_the_scale_a_whole_number_of_steps() -> None:
    for scale, delta, size in [(9.4, 2.0, 1000), (2.0, 1.0, 40_000), (0.37, 3.5, 7), (1e-3, 1, 1)]:
        k = gaussian_grid_k(delta, scale, size)
        assert k <= noise.grid_k(delta, scale, math.sqrt(size))
        assert (Fraction(scale) / Fraction(2) ** k).denominator == 1


def test_secure_gaussian_noise_is_drawn_by_the_vector_sampler_on_the_checked_grid(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The test_noise Gaussian's parameters and AdsBPC's take the vector path; OpenDP's own
    sampler is not called (its map still is, by the check)."""
    calls: list[int] = []
    real = sampler.discrete_gaussian

    def counting(scale: int, size: int, bits):  # type: ignore[no-untyped-def]
        calls.append(scale)
        return real(scale, size, bits)

    monkeypatch.setattr(noise, "discrete_gaussian", counting)
    monkeypatch.setattr(Draw, "measurement", property(lambda self: pytest.fail("OpenDP drew")))
    source = SecureNoise()
    values = np.arange(2000, dtype=np.float64) * 1000.0
    noisy = source.add_gaussian(values, 2.0, l2_sensitivity=1.0, rho=0.125)
    assert np.all(np.abs(noisy - values) < 2.0 * 20)  # each value keeps its own noise
    source.add_gaussian(np.zeros(1000), 9.4, l2_sensitivity=2.0, rho=1 / (2 * 4.7**2))
    k = gaussian_grid_k(1.0, 2.0, 2000)
    assert calls[0] == Fraction(2.0) / Fraction(2) ** k and len(calls) == 2


def test_short_vectors_and_out_of_range_grids_are_left_to_opendp(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(noise, "discrete_gaussian", lambda *a: pytest.fail("vector path"))
    source = SecureNoise()
    short = source.add_gaussian(np.zeros(63), 9.4, l2_sensitivity=2.0, rho=1 / (2 * 4.7**2))
    tiny = source.add_gaussian(np.zeros(64), 1e-300, l2_sensitivity=1e-301, rho=1.0)  # k < -1022
    huge = source.add_gaussian(np.full(64, 1e300), 1e300, l2_sensitivity=1e300, rho=0.5)  # k > 900
    beyond = source.add_gaussian(np.full(64, 1e300), 1e-14, l2_sensitivity=2e-15, rho=1.0)
    for drawn in (short, tiny, huge, beyond):  # beyond: x/2^k overflows a double
        assert drawn.shape in {(63,), (64,)} and np.all(np.isfinite(drawn))


def test_any_shape_keeps_its_shape_and_each_entry_its_noise() -> None:
    source = SecureNoise()
    values = np.arange(200, dtype=np.float64).reshape(2, 100) * 1000.0
    noisy = source.add_gaussian(values, 2.0, l2_sensitivity=1.0, rho=0.125)
    assert noisy.shape == (2, 100) and np.all(np.abs(noisy - values) < 2.0 * 20)
    assert source.add_laplace(np.zeros((2, 3)), 1.0, l1_sensitivity=1.0, epsilon=1.0).shape == (
        2,
        3,
    )


def _child_words(queue) -> None:  # type: ignore[no-untyped-def]
    queue.put(noise._SECURE_WORDS(4).tolist())


def test_a_forked_child_never_reuses_its_parents_unread_words() -> None:
    noise._SECURE_WORDS(1)  # the parent has read a chunk, most of it unread
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=_child_words, args=(queue,))
    child.start()
    theirs = queue.get(timeout=60)
    child.join(timeout=60)
    ours = noise._SECURE_WORDS(4).tolist()
    assert theirs != ours  # equal with probability 2^-256 if the child reads its own

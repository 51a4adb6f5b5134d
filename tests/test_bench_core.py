"""Benchmarks (run with `make bench`): plan + 31 daily steps on histograms, secure noise."""

from __future__ import annotations

import numpy as np
import pytest

from dp_platform.config_loader import parse_campaign
from dp_platform.mechanisms.adsbpc import initial_state, make_plan, step
from dp_platform.privacy.noise import SecureNoise

pytestmark = pytest.mark.system  # benchmarks: measured, not part of the development loop


def _campaign(publishers: int):
    return parse_campaign(
        {
            "name": "bench",
            "advertiser": "a",
            "account": "u",
            "start": "2026-03-01",
            "days": 31,
            "publishers": [f"p{i}" for i in range(publishers)],
            "mechanism": "adsbpc",  # AdsBPC's plan (the default under add/remove is AdsBPC+)
        }
    )


def _histogram(seed: int) -> np.ndarray:
    counts = np.random.default_rng(seed).zipf(3.0, 1_000_000)  # a day of 10⁶ active users
    return np.bincount(counts).astype(np.int64)


@pytest.mark.parametrize("publishers", [5, 1000])
def test_bench_plan_and_31_steps(benchmark, publishers: int) -> None:
    histograms = [_histogram(day) for day in range(31)]
    clipped = np.linspace(0.0, 100.0, publishers)

    def run() -> float:
        plan = make_plan(_campaign(publishers))
        state = initial_state()
        for histogram in histograms:
            _, state = step(plan, state, histogram, lambda r: clipped)  # secure noise
        return float(state.spent)

    spent = benchmark.pedantic(run, rounds=3, iterations=1)
    assert spent == pytest.approx(1.0)


@pytest.mark.parametrize("coordinates", [1000, 10_000])
def test_bench_secure_gaussian_draws(benchmark, coordinates: int) -> None:
    """One day's release: 1000 publishers, or 10 000 cells of a broken-down campaign — exact
    Gaussian draws at an AdsBPC scale (σ = 4.7·r, r = 2), checked against OpenDP's map first;
    the per-coordinate cost is this ÷ ``coordinates``."""
    source = SecureNoise()
    values = np.linspace(0.0, 100.0, coordinates)

    def draw() -> np.ndarray:
        return source.add_gaussian(values, 9.4, l2_sensitivity=2.0, rho=1 / (2 * 4.7**2))

    noisy = benchmark.pedantic(draw, rounds=5, iterations=1)
    assert noisy.shape == values.shape and not np.array_equal(noisy, values)

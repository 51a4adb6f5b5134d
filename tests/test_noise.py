"""The secure samplers draw from the right distribution, and production never seeds them."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from dp_platform.privacy.noise import SecureNoise, SeededNoise, resolve

SAMPLES = 100_000
ALPHA = 1e-3  # accept the right distribution unless p < 0.001 (fails 1 run in 1000 at random)
REJECT = 1e-6  # a σ off by 30% must be rejected at p < 1e-6 (KS on 100k draws: p ≈ 0)
ROOT = Path(__file__).resolve().parents[1] / "dp_platform"


@pytest.fixture(scope="module")
def gaussian_draws() -> np.ndarray:
    return SecureNoise().add_gaussian(np.full(SAMPLES, 5.0), 2.0) - 5.0


def test_secure_gaussian_has_the_stated_sigma(gaussian_draws: np.ndarray) -> None:
    assert stats.kstest(gaussian_draws, "norm", args=(0.0, 2.0)).pvalue > ALPHA


@pytest.mark.parametrize("wrong", [2.0 * 1.3, 2.0 / 1.3])
def test_secure_gaussian_rejects_a_sigma_off_by_30_percent(
    gaussian_draws: np.ndarray, wrong: float
) -> None:
    assert stats.kstest(gaussian_draws, "norm", args=(0.0, wrong)).pvalue < REJECT


def test_secure_laplace_has_the_stated_scale() -> None:
    draws = SecureNoise().add_laplace(np.zeros(SAMPLES), 3.0)
    assert stats.kstest(draws, "laplace", args=(0.0, 3.0)).pvalue > ALPHA
    assert stats.kstest(draws, "laplace", args=(0.0, 3.9)).pvalue < REJECT


def test_secure_exponential_index_follows_exp_scores() -> None:
    source = SecureNoise()
    scores = np.array([0.0, 1.0, 2.0])
    draws = np.array([source.exponential_index(scores, 1.0) for _ in range(6000)])
    observed = np.bincount(draws, minlength=3)
    expected = np.exp(scores) / np.exp(scores).sum() * draws.size
    assert stats.chisquare(observed, expected).pvalue > ALPHA


def test_secure_noise_cannot_be_seeded_and_resolve_defaults_to_it() -> None:
    assert isinstance(resolve(None), SecureNoise)
    with pytest.raises(TypeError):
        SecureNoise(42)  # type: ignore[call-arg]
    seeded = SeededNoise(1)
    assert resolve(seeded) is seeded


def test_zero_scale_adds_nothing_and_bad_input_is_refused() -> None:
    source = SecureNoise()
    assert np.array_equal(source.add_gaussian(np.array([1.5, 2.0]), 0.0), [1.5, 2.0])
    with pytest.raises(ValueError):
        source.add_gaussian(np.array([np.nan]), 1.0)
    with pytest.raises(ValueError):
        source.add_gaussian(np.array([1.0]), -1.0)


# Modules that never produce a release: synthetic data, experiments on synthetic or public data
# (seeded on purpose, documented there), benchmarks, and the sampler module itself.
# validity.py draws random *test datasets* for its brute-force sensitivity verifier, not noise.
NOT_RELEASE_PATH = (
    "events/",
    "evaluation/",
    "simulation.py",
    "privacy/noise.py",
    "commands/",
    "validity.py",
)
RELEASE_PATH = sorted(
    str(path.relative_to(ROOT))
    for path in ROOT.rglob("*.py")
    if not str(path.relative_to(ROOT)).startswith(NOT_RELEASE_PATH)
    and "bench" not in path.name
    and "reference" not in path.name
)


@pytest.mark.parametrize("module", RELEASE_PATH)
def test_release_path_draws_no_noise_of_its_own(module: str) -> None:
    """numpy.random / random / SeededNoise may not appear in the release path (noise.py only)."""
    tree = ast.parse((ROOT / module).read_text())
    names = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
    attributes = {node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)}
    imports = {
        alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in node.names
    } | {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert "random" not in attributes and "random" not in imports
    assert "SeededNoise" not in names | imports
    assert "default_rng" not in attributes


def test_real_and_integer_secure_sources_are_distinct() -> None:
    from dp_platform.privacy.noise import SecureIntegerNoise, resolve_integer

    assert isinstance(resolve(None), SecureNoise)
    assert isinstance(resolve_integer(None), SecureIntegerNoise)
    assert isinstance(resolve(None), SecureNoise)  # whichever is resolved first

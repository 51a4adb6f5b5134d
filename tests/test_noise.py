"""The secure samplers draw from the right distribution, and production never seeds them.

The statistical checks here run on *unseeded* secure draws: each accepts while the Kolmogorov
distance to the stated law is within the DKW radius, so it fails a correct sampler with
probability ≤ 1e-8, and asserts that the same draws reject the law with the scale off by 30 %,
whose chance of not happening is bounded from the two laws (see ``tests/sampler_laws.py``).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from dp_platform.privacy.noise import SecureNoise, SeededNoise, resolve
from dp_platform.privacy.noise_check import Draw
from tests.sampler_laws import (
    dkw_radius,
    integer_ks_distance,
    ks_distance,
    law_distance,
    power_failure_bound,
)

SAMPLES = 40_000
POWER = 1e-12  # a 30 % wrong scale escapes rejection with probability below this
ROOT = Path(__file__).resolve().parents[1] / "dp_platform"
REAL_LINE = np.linspace(-60.0, 60.0, 240_001)


def _accepts_and_rejects(draws: np.ndarray, right, wrongs) -> None:  # type: ignore[no-untyped-def]
    """D_n to the right law ≤ the DKW radius (false failure ≤ 1e-8); every wrong law rejected,
    and the design's power bound (from the laws, not the draws) below POWER."""
    radius = dkw_radius(draws.size)
    assert ks_distance(draws, right) <= radius
    for wrong in wrongs:
        assert power_failure_bound(draws.size, law_distance(right, wrong, REAL_LINE)) < POWER
        assert ks_distance(draws, wrong) > radius


@pytest.fixture(scope="module")
def gaussian_draws() -> np.ndarray:
    source = SecureNoise()
    return source.add_gaussian(np.full(SAMPLES, 5.0), 2.0, l2_sensitivity=1.0, rho=0.125) - 5.0


def test_secure_gaussian_has_the_stated_sigma_and_not_30_percent_off(
    gaussian_draws: np.ndarray,
) -> None:
    _accepts_and_rejects(
        gaussian_draws,
        stats.norm(0.0, 2.0).cdf,
        [stats.norm(0.0, 2.0 * 1.3).cdf, stats.norm(0.0, 2.0 / 1.3).cdf],
    )


def test_secure_laplace_has_the_stated_scale_and_not_30_percent_off() -> None:
    draws = SecureNoise().add_laplace(np.zeros(SAMPLES), 3.0, l1_sensitivity=1.0, epsilon=1 / 3)
    _accepts_and_rejects(
        draws,
        stats.laplace(0.0, 3.0).cdf,
        [stats.laplace(0.0, 3.0 * 1.3).cdf, stats.laplace(0.0, 3.0 / 1.3).cdf],
    )


def _index_cdf(scores: np.ndarray, scale: float):  # type: ignore[no-untyped-def]
    weights = np.exp(scores / scale)
    cumulative = np.cumsum(weights / weights.sum())
    return lambda z: np.where(z < 0, 0.0, cumulative[np.clip(z, 0, scores.size - 1)])


@pytest.mark.slow
def test_secure_exponential_index_follows_exp_scores_and_not_a_30_percent_other_scale() -> None:
    source = SecureNoise()
    scores = np.array([0.0, 1.0, 2.0])
    draws = 10_000
    picks = np.array(
        [source.exponential_index(scores, 1.0, sensitivity=0.5, epsilon=1.0) for _ in range(draws)]
    )
    radius = dkw_radius(draws)
    right = _index_cdf(scores, 1.0)
    assert integer_ks_distance(picks, right) <= radius
    for wrong_scale in (1.3, 1 / 1.3):
        wrong = _index_cdf(scores, wrong_scale)
        gap = law_distance(right, wrong, np.arange(-1, 3))
        assert power_failure_bound(draws, gap) < POWER
        assert integer_ks_distance(picks, wrong) > radius


def test_secure_noise_cannot_be_seeded_and_resolve_defaults_to_it() -> None:
    assert isinstance(resolve(None), SecureNoise)
    with pytest.raises(TypeError):
        SecureNoise(42)  # type: ignore[call-arg]
    seeded = SeededNoise(1)
    assert resolve(seeded) is seeded


def test_zero_scale_adds_nothing_and_bad_input_is_refused() -> None:
    source = SecureNoise()
    free = {"l2_sensitivity": 0.0, "rho": 0}
    assert np.array_equal(source.add_gaussian(np.array([1.5, 2.0]), 0.0, **free), [1.5, 2.0])
    with pytest.raises(ValueError):
        source.add_gaussian(np.array([np.nan]), 1.0, **free)
    with pytest.raises(ValueError):
        source.add_gaussian(np.array([1.0]), -1.0, **free)
    with pytest.raises(ValueError):
        source.add_gaussian(np.array([1.0]), 1.0, l2_sensitivity=-1.0, rho=1)
    with pytest.raises(ValueError):
        source.add_gaussian(np.array([1.0]), 1.0, l2_sensitivity=1.0, rho=-0.5)


# Modules that never produce a release: synthetic data, experiments on synthetic or public data
# (seeded on purpose, documented there), benchmarks, and the sampler module itself.
# validity.py draws random *test datasets* for its brute-force sensitivity verifier, not noise.
NOT_RELEASE_PATH = (
    "events/",
    "evaluation/",
    # the empirical audit's runner: its fair coins decide which *simulated* canaries a
    # throwaway run holds (the auditor's randomness, not a release's); its releases draw from
    # the platform's samplers like any run's (docs/privacy.md#the-empirical-audit)
    "audit/runner.py",
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


# -- every production draw ends in an OpenDP sampler ------------------------------------------

_RAW_DRAWS = {
    "_gaussian": lambda s: s._gaussian(np.zeros(100), Draw(2.0, "gaussian", 100, -40)),
    "_laplace": lambda s: s._laplace(np.zeros(100), Draw(2.0, "laplace", 100, -40)),
    "_gumbel_max": lambda s: s._gumbel_max(np.zeros(3), Draw(1.0, "gumbel_max")),
    "_exponential_max": lambda s: s._exponential_max(np.zeros(3), Draw(1.0, "exponential_max")),
    "_uniform": lambda s: s._uniform(0.0, 1.0),
    "_discrete_laplace": lambda s: s._discrete_laplace(
        np.zeros(100, dtype=np.int64), Draw(2.0, "discrete_laplace")
    ),
    "_discrete_gaussian": lambda s: s._discrete_gaussian(
        np.zeros(100, dtype=np.int64), Draw(2.0, "discrete_gaussian")
    ),
    "_exponentials": lambda s: s._exponentials(100),
}


def test_every_raw_draw_of_the_abstract_sources_is_listed_here() -> None:
    """A new kind of draw must join the OpenDP check below: the list is the sources' own."""
    from dp_platform.privacy.noise import IntegerNoiseSource, NoiseSource

    assert NoiseSource.__abstractmethods__ | IntegerNoiseSource.__abstractmethods__ == set(
        _RAW_DRAWS
    )


@pytest.mark.parametrize("method", sorted(_RAW_DRAWS))
def test_every_secure_draw_ends_in_an_opendp_sampler_and_no_other_randomness(
    method: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each raw draw of the secure sources invokes an OpenDP measurement or transformation (its
    sampler over the OS's secure generator), and no other generator is touched: Python's
    ``secrets``/``random``/``os.urandom`` and NumPy's generators raise if called."""
    import os
    import random
    import secrets

    import opendp.core

    from dp_platform.privacy.noise import IntegerNoiseSource, SecureIntegerNoise

    invoked: list[str] = []
    for name in ("measurement_invoke", "transformation_invoke"):  # what __call__ runs
        original = getattr(opendp.core, name)

        def spy(self, arg, _original=original, _name=name):  # type: ignore[no-untyped-def]
            invoked.append(_name)
            return _original(self, arg)

        monkeypatch.setattr(opendp.core, name, spy)

    def forbidden(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise AssertionError("a secure draw used a generator other than OpenDP's")

    for module, names in (
        (secrets, ("randbits", "token_bytes", "randbelow", "choice")),
        (random, ("random", "getrandbits", "randint", "gauss")),
        (os, ("urandom",)),
        (np.random, ("default_rng", "random", "normal", "laplace", "randint", "exponential")),
    ):
        for name in names:
            monkeypatch.setattr(module, name, forbidden)
    integer = method in IntegerNoiseSource.__abstractmethods__
    _RAW_DRAWS[method](SecureIntegerNoise() if integer else SecureNoise())
    assert invoked, f"{method} drew without calling OpenDP"


def test_no_module_but_the_sampler_reaches_a_random_generator() -> None:
    """Grep the release path (as above: not the simulators, research or benchmarks): no module
    names a random generator, and in privacy/noise.py only the seeded test sources do — the
    secure sources' code names none (they call OpenDP, checked above)."""
    pattern = re.compile(
        r"\b(secrets|urandom|token_bytes|randbits|getrandbits|default_rng|np\.random|"
        r"numpy\.random|import random)\b"
    )
    offenders = [
        str(path.relative_to(ROOT))
        for path in ROOT.rglob("*.py")
        if pattern.search(path.read_text())
        and not str(path.relative_to(ROOT)).startswith(NOT_RELEASE_PATH)
        and "bench" not in path.name
        and "reference" not in path.name
    ]
    assert offenders == []
    sampler = (ROOT / "privacy" / "noise.py").read_text()
    secure_part = sampler[sampler.index("class SecureNoise") : sampler.index("class SeededNoise")]
    secure_part += sampler[
        sampler.index("class SecureIntegerNoise") : sampler.index("class SeededIntegerNoise")
    ]
    assert not pattern.search(secure_part)

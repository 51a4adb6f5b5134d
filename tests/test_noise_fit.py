"""The demo's accuracy verdict (dp_platform/noise_fit.py): each day's error against that day's
stated std, judged with the noise's correlation across days. Seeded inputs: errors drawn from
the stated noise are within it; the same errors with a planted downward bias are beyond it and
named as clipping's direction; an upward one is not blamed on clipping."""

from __future__ import annotations

import numpy as np
import pytest

from dp_platform.noise_fit import noise_fit

DAYS = 31


def _prefix_noise(seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Errors of 31 prefix sums of independent daily noise with growing σ_i, their stds and
    correlation: the shape of the demo's cumulative answers."""
    rng = np.random.default_rng(seed)
    sigmas = np.linspace(5.0, 15.0, DAYS)
    lower = np.tril(np.ones((DAYS, DAYS)))
    cov = lower @ np.diag(sigmas**2) @ lower.T
    stds = np.sqrt(np.diag(cov))
    errors = lower @ (sigmas * rng.standard_normal(DAYS))
    return errors, stds, cov / np.outer(stds, stds)


@pytest.mark.parametrize("seed", range(5))
def test_errors_drawn_from_the_stated_noise_are_within_it(seed) -> None:
    errors, stds, corr = _prefix_noise(seed)
    fit = noise_fit(errors, stds, corr)
    assert fit.within_noise
    assert fit.sentence().startswith("within its noise: RMS z ")
    assert f"over {DAYS} days" in fit.sentence() and "expected ≈1.4" in fit.sentence()


def test_within_noise_holds_in_about_99_percent_of_seeded_runs() -> None:
    """Both tests at 1 %: about 2 % of runs of pure noise are flagged, never most."""
    flagged = sum(not noise_fit(*_prefix_noise(seed)).within_noise for seed in range(400))
    assert flagged <= 20  # expected ≈ 8; 20 is > 4 standard deviations above


def test_a_planted_downward_bias_is_beyond_the_noise_and_named_as_clipping() -> None:
    errors, stds, corr = _prefix_noise(0)
    fit = noise_fit(errors - 3.0 * stds, stds, corr)
    assert not fit.within_noise and fit.mean_z < 0
    assert fit.sentence().startswith("beyond its noise (biased downwards, as clipping does")


def test_a_planted_upward_bias_is_not_blamed_on_clipping() -> None:
    errors, stds, corr = _prefix_noise(1)
    sentence = noise_fit(errors + 3.0 * stds, stds, corr).sentence()
    assert sentence.startswith("beyond its noise (biased upwards")


def test_noise_larger_than_stated_is_beyond_it_without_a_bias() -> None:
    rng = np.random.default_rng(3)
    stds = np.full(DAYS, 10.0)
    fit = noise_fit(3.0 * stds * rng.standard_normal(DAYS), stds)  # independent, 3× the std
    assert "errors larger than the stated noise" in fit.sentence()


def test_ignoring_the_correlation_would_call_one_noise_draw_a_bias() -> None:
    """Why the correlation matters: some seed's prefix-sum noise looks biased when its days are
    taken as independent, and is within its noise when they are not."""
    for seed in range(200):
        errors, stds, corr = _prefix_noise(seed)
        if not noise_fit(errors, stds).within_noise:
            assert noise_fit(errors, stds, corr).within_noise
            return
    pytest.fail("no seed's noise looked biased without the correlation")

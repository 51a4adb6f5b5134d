"""Intervals on a published day's numbers (dp_platform/release_intervals.py)."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from dp_platform.publication import PublishedDay
from dp_platform.release_intervals import day_intervals

Z95 = 1.959963984540054


def _day(history: np.ndarray, sigmas: np.ndarray, query: np.ndarray) -> PublishedDay:
    """Day len(sigmas) as publication.published_days builds it (values, answers, answer_std)."""
    publishers = [f"pub_{p}" for p in range(history.shape[1])]
    day = len(sigmas)
    answer = query[:day] @ history
    std = math.sqrt(len(publishers) * float(query[:day] ** 2 @ sigmas**2))
    return PublishedDay(
        day=day,
        bound=1.0,
        sigma=float(sigmas[-1]),
        rho_charged=0.1,
        rho_spent=0.1 * day,
        rho_planned=1.0,
        values=dict(zip(publishers, history[-1].tolist(), strict=True)),
        answers={"1": dict(zip(publishers, answer.tolist(), strict=True))},
        answer_std={"1": std},
        value_std=float(sigmas[-1]),  # a count-only campaign: σ_i
    )


def test_each_interval_is_the_value_plus_minus_its_exact_standard_error() -> None:
    sigmas = np.array([2.0, 3.0, 1.5])
    history = np.array([[10.0, 20.0], [11.0, 19.0], [12.0, 30.0]])
    query = np.ones(3)
    out = day_intervals(_day(history, sigmas, query))
    one = out["values_ci"]["pub_1"]
    assert one["ci_low"] == pytest.approx(30.0 - Z95 * 1.5)
    assert one["ci_high"] == pytest.approx(30.0 + Z95 * 1.5)
    assert out["total_ci"]["ci_high"] == pytest.approx(42.0 + Z95 * 1.5 * math.sqrt(2))
    answer_se = math.sqrt(4 + 9 + 2.25)  # one publisher's prefix sum over 3 days
    first = out["answers_ci"]["1"]["pub_0"]
    assert first["ci_high"] - first["ci_low"] == pytest.approx(2 * Z95 * answer_se)
    total = out["answers_ci"]["1"]["total"]
    assert total["ci_high"] - total["ci_low"] == pytest.approx(2 * Z95 * answer_se * math.sqrt(2))


@pytest.mark.slow
def test_answer_intervals_cover_95_percent_over_2000_seeded_days() -> None:
    """Prefix answers of 4 publishers over 5 days: 8000 intervals, binomial sd 0.24 %."""
    rng = np.random.default_rng(31)
    sigmas = np.array([4.0, 3.0, 3.0, 2.5, 6.0])
    truth = rng.poisson(30.0, size=(5, 4)).astype(np.float64)
    query = np.array([1.0, 1.0, 1.0, 1.0, 7.0])  # a weighted prefix query
    hits = []
    for _ in range(2000):
        noisy = truth + rng.normal(0.0, sigmas[:, None], size=truth.shape)
        out = day_intervals(_day(noisy, sigmas, query))["answers_ci"]["1"]
        exact = query @ truth
        hits += [
            out[f"pub_{p}"]["ci_low"] <= exact[p] <= out[f"pub_{p}"]["ci_high"] for p in range(4)
        ]
    assert 0.93 <= float(np.mean(hits)) <= 0.97


def test_a_released_remainder_gets_its_own_interval_and_an_unreleased_one_none() -> None:
    sigmas = np.array([2.0, 3.0])
    history = np.array([[10.0, 20.0], [11.0, 19.0]])
    day = _day(history, sigmas, np.ones(2))
    assert "remainder_ci" not in day_intervals(day)
    day = dataclasses.replace(day, remainder=7.5, remainder_std=4.0)
    out = day_intervals(day)["remainder_ci"]
    assert out == {
        "ci_low": pytest.approx(7.5 - Z95 * 4.0),
        "ci_high": pytest.approx(7.5 + Z95 * 4.0),
    }
    assert day.to_json()["remainder"] == 7.5

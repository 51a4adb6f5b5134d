"""Releases: Monte Carlo agrees with the analytic variances (docs/baselines.md#oracle-monte-carlo),
streaming invariance (docs/baselines.md#oracle-streaming) and degenerate inputs
(docs/baselines.md#oracle-degenerate)."""

from __future__ import annotations

import numpy as np
import pytest

from dp_platform.privacy.noise import SeededNoise
from dp_research.baselines import (
    BIN,
    IPA,
    MMBPC,
    UMM,
    Conversions,
    Stream,
    cached_plan,
    prefix,
    prefix_weights,
    sliding,
)
from dp_research.baselines.contributions import clip_global
from dp_research.baselines.plan import LinearPlan

R = 4000  # repeats; the squared-error mean has relative sd ≈ √(2/R) ≈ 2.2%
N = 12
RATES = np.linspace(1.0, 9.0, N)


def mechanisms(n: int) -> list:
    r = tuple(np.linspace(1.0, 3.0, n))
    return [
        IPA(4.0, 0.8),
        BIN(4.0, 0.8),
        BIN(4.0, 0.8, simple=True),
        BIN(4.0, 0.8, full_tree=True),
        UMM(4.0, 0.8),
        UMM(4.0, 0.8, "optimal"),
        MMBPC(r, 0.8),
        MMBPC(r, 0.8, "optimal", tuple(prefix_weights(n, squared=False))),
        MMBPC(r, 0.8, rescale=True),
    ]


def ids(values: list) -> list[str]:
    return [f"{type(m).__name__}-{i}" for i, m in enumerate(values)]


@pytest.mark.parametrize("mechanism", mechanisms(N), ids=ids(mechanisms(N)))
@pytest.mark.parametrize("workload", [prefix(N), sliding(N, 4)], ids=["prefix", "sliding"])
def test_monte_carlo_matches_analytic_variance(mechanism, workload) -> None:
    """R = 4000 publishers act as repeats: per query within 10%, weighted sum within 5%."""
    plan = mechanism.plan(workload)
    x = np.tile(RATES, (R, 1))  # any data: the noise is data-independent
    answers = plan.release(x, SeededNoise(11))
    truth = x @ workload.matrix.T
    empirical = np.mean((answers - truth) ** 2, axis=0)
    analytic = plan.query_variances()
    assert np.all(analytic > 0)
    np.testing.assert_allclose(empirical, analytic, rtol=0.10)
    weights = np.ones(len(analytic))
    if workload.kind == "prefix":
        weights = prefix_weights(N)
    assert weights @ empirical == pytest.approx(weights @ analytic, rel=0.05)
    assert np.abs(np.mean(answers - truth, axis=0)).max() < 5 * np.sqrt(analytic.max() / R)


def test_monte_carlo_would_catch_a_wrong_variance() -> None:
    """The tolerance is tight enough to reject a variance formula off by 20%."""
    plan = BIN(4.0, 0.8).plan(prefix(N))
    x = np.zeros((R, N))
    empirical = np.mean(plan.release(x, SeededNoise(3)) ** 2, axis=0)
    assert not np.allclose(empirical, 1.2 * plan.query_variances(), rtol=0.10)


# streaming invariance ------------------------------------------------------------------------


@pytest.mark.parametrize("mechanism", mechanisms(N), ids=ids(mechanisms(N)))
@pytest.mark.parametrize("workload", [prefix(N), sliding(N, 4)], ids=["prefix", "sliding"])
def test_answers_unchanged_when_future_days_change(mechanism, workload) -> None:
    plan = mechanism.plan(workload)
    rng = np.random.default_rng(5)
    x = rng.poisson(5.0, size=(3, N)).astype(float)
    base = plan.release(x, SeededNoise(9))
    for day in range(N - 1):
        later = x.copy()
        later[:, day + 1 :] += rng.poisson(50.0, size=(3, N - day - 1))
        changed = plan.release(later, SeededNoise(9))
        released = workload.ends <= day
        np.testing.assert_allclose(changed[:, released], base[:, released], rtol=0, atol=1e-9)
        if np.any(~released):
            assert not np.allclose(changed[:, ~released], base[:, ~released])


@pytest.mark.parametrize("mechanism", mechanisms(N), ids=ids(mechanisms(N)))
def test_decoders_read_only_released_measurements(mechanism) -> None:
    for workload in (prefix(N), sliding(N, 5)):
        plan = mechanism.plan(workload)
        measured = plan.measured_on
        reads = np.abs(plan.decoder) > 1e-12
        for q, end in enumerate(workload.ends):
            assert measured[reads[q]].max() <= end
        if workload.kind == "prefix" and plan.strategy.shape[0] == N:
            assert np.allclose(plan.decoder, np.tril(plan.decoder))  # L lower-triangular
            assert np.allclose(plan.strategy, np.tril(plan.strategy))


def test_a_plan_that_reads_the_future_cannot_be_built() -> None:
    with pytest.raises(ValueError, match="future"):
        LinearPlan(
            name="bad",
            strategy=np.eye(3),
            decoder=np.ones((3, 3)),
            sigma=1.0,
            sensitivity=1.0,
            rho=0.5,
            query_ends=np.arange(3),
        )


def random_conversions(rng: np.random.Generator, users: int, n: int, heavy: int = 0):
    per_user = rng.integers(1, 15, size=users)
    per_user[:heavy] = 60
    user = np.repeat(np.arange(users), per_user)
    size = len(user)
    return Conversions(
        user=user,
        day=rng.integers(0, n, size=size),
        publisher=rng.integers(0, 3, size=size),
        time=rng.random(size),
    )


def test_stream_answers_unchanged_when_future_days_change() -> None:
    n = 16
    rng = np.random.default_rng(2)
    conversions = random_conversions(rng, 3000, n, heavy=400)
    plan = Stream(64.0, 1.0).plan(prefix(n))
    base = plan.release(conversions, 3, SeededNoise(4))
    assert len(set(base.rungs)) > 1  # the ladder actually moves in this data
    for day in (2, 7, 11):
        # drop some future conversions and add a burst of new ones after ``day``
        keep = (conversions.day <= day) | (rng.random(len(conversions)) < 0.5)
        extra = random_conversions(rng, 500, n, heavy=200)
        later = extra.day > day
        merged = Conversions(
            user=np.concatenate([conversions.user[keep], extra.user[later] + 10_000]),
            day=np.concatenate([conversions.day[keep], extra.day[later]]),
            publisher=np.concatenate([conversions.publisher[keep], extra.publisher[later]]),
            time=np.concatenate([conversions.time[keep], extra.time[later]]),
        )
        changed = plan.release(merged, 3, SeededNoise(4))
        np.testing.assert_array_equal(changed.rungs[: day + 1], base.rungs[: day + 1])
        np.testing.assert_allclose(
            changed.answers[:, : day + 1], base.answers[:, : day + 1], rtol=0, atol=1e-9
        )


def test_stream_climbs_for_heavy_users_and_stays_for_light_ones() -> None:
    n = 8
    rng = np.random.default_rng(0)
    plan = Stream(64.0, 1.0).plan(prefix(n))
    light = random_conversions(rng, 50, n)
    assert plan.release(light, 3, SeededNoise(1)).rungs.max() <= 1
    heavy = Conversions(  # 5000 users with 64 conversions each, all on day 0
        user=np.repeat(np.arange(5000), 64),
        day=np.zeros(5000 * 64, dtype=np.int64),
        publisher=np.zeros(5000 * 64, dtype=np.int64),
        time=rng.random(5000 * 64),
    )
    rungs = plan.release(heavy, 1, SeededNoise(1)).rungs
    np.testing.assert_array_equal(rungs, plan.instances)  # top rung from day 0 on


def test_stream_conditional_variance_matches_monte_carlo() -> None:
    """Given the rung path, answers are unbiased for the rung-clipped counts with the chosen
    tree's variance (R = 4000 publishers as repeats; 10% per query)."""
    n = 8
    rng = np.random.default_rng(6)
    users = 3000
    per_user = rng.integers(1, 40, size=users)
    user = np.repeat(np.arange(users), per_user)
    conversions = Conversions(
        user=user,
        day=rng.integers(0, n, size=len(user)),
        publisher=rng.integers(0, R, size=len(user)),
        time=rng.random(len(user)),
    )
    workload = prefix(n)
    plan = Stream(32.0, 1.0).plan(workload)
    release = plan.release(conversions, R, SeededNoise(0))
    truth_by_rung = np.stack(
        [
            conversions.to_matrix(clip_global(conversions, tau), R, n) @ workload.matrix.T
            for tau in plan.taus
        ]
    )
    rung_of_query = release.rungs[workload.ends]
    truth = truth_by_rung[rung_of_query, :, np.arange(n)].T
    empirical = np.mean((release.answers - truth) ** 2, axis=0)
    np.testing.assert_allclose(empirical, plan.conditional_variances(release.rungs), rtol=0.10)


# degenerate cases ------------------------------------------------------------------------------


@pytest.mark.parametrize("mechanism", mechanisms(1), ids=ids(mechanisms(1)))
def test_single_day_is_one_gaussian_count(mechanism) -> None:
    """n = 1: every mechanism is one Gaussian count with σ² = Δ²/(2ρ) (L = 1, s_1 = 1)."""
    for workload in (prefix(1), sliding(1, 1)):
        plan = mechanism.plan(workload)
        bound = 4.0 if not isinstance(mechanism, MMBPC) else 1.0  # r = linspace(1, 3, 1) = 1
        assert plan.sensitivity == pytest.approx(bound, rel=1e-12)
        np.testing.assert_allclose(plan.query_variances(), [bound**2 / (2 * 0.8)], rtol=1e-10)


def test_stream_single_day() -> None:
    plan = Stream(4.0, 0.8).plan(prefix(1))
    np.testing.assert_allclose(plan.trees[-1].query_variances(), [16 * 3 / (2 * 0.4)])


ZERO_MECHANISMS = [
    IPA(0.0, 1.0),
    BIN(0.0, 1.0),
    BIN(0.0, 1.0, simple=True),
    UMM(0.0, 1.0),
    UMM(0.0, 1.0, "optimal"),
    MMBPC((0.0,) * 6, 1.0),
    MMBPC((0.0,) * 6, 1.0, "optimal", rescale=True),
]


@pytest.mark.parametrize("mechanism", ZERO_MECHANISMS, ids=ids(ZERO_MECHANISMS))
def test_zero_bound_means_zero_noise_and_zero_output(mechanism) -> None:
    rng = np.random.default_rng(1)
    conversions = random_conversions(rng, 40, 6)
    with np.errstate(all="raise"):  # no division by zero anywhere
        x = mechanism.clip(conversions, 3, 6)
        for workload in (prefix(6), sliding(6, 3)):
            plan = mechanism.plan(workload)
            assert plan.sigma == 0 and plan.sensitivity == 0 and plan.zcdp_cost() == 0
            np.testing.assert_array_equal(plan.query_variances(), 0.0)
            np.testing.assert_array_equal(plan.release(x, SeededNoise(0)), 0.0)
    np.testing.assert_array_equal(x, 0.0)


def test_stream_zero_bound() -> None:
    rng = np.random.default_rng(1)
    with np.errstate(all="raise"):
        plan = Stream(0.0, 1.0).plan(prefix(6))
        release = plan.release(random_conversions(rng, 40, 6), 3, SeededNoise(0))
    assert plan.instances == 0 and plan.zcdp_cost() == 0
    np.testing.assert_array_equal(release.answers, 0.0)


def test_partly_zero_per_day_bounds() -> None:
    """Days with r_i = 0 carry no data and, with rescaling, no division by zero."""
    r = (2.0, 0.0, 1.0, 0.0)
    rng = np.random.default_rng(3)
    conversions = random_conversions(rng, 30, 4)
    for rescale in (False, True):
        mechanism = MMBPC(r, 1.0, rescale=rescale)
        with np.errstate(all="raise"):
            x = mechanism.clip(conversions, 3, 4)
            plan = mechanism.plan(prefix(4))
        np.testing.assert_array_equal(x[:, [1, 3]], 0.0)
        assert plan.sensitivity > 0


def test_rescaled_equals_default_for_constant_bounds() -> None:
    """docs/baselines.md#mmbpc variant (ii) is identical to the default when r is constant."""
    r = (3.0,) * 9
    for workload in (prefix(9), sliding(9, 4)):
        a = MMBPC(r, 1.0).plan(workload).query_variances()
        b = MMBPC(r, 1.0, rescale=True).plan(workload).query_variances()
        np.testing.assert_allclose(a, b, rtol=1e-10)


def test_invalid_budget_is_refused() -> None:
    for mechanism in (IPA(1.0, 0.0), BIN(1.0, -1.0), UMM(1.0, 0.0), MMBPC((1.0,), 0.0)):
        with pytest.raises(ValueError, match="rho"):
            mechanism.plan(prefix(1))
    with pytest.raises(ValueError):
        Stream(1.0, 0.0).plan(prefix(1))


def test_cached_plans_are_shared_and_keyed_by_parameters() -> None:
    r = tuple(np.linspace(1.0, 3.0, N))
    first = cached_plan(MMBPC(r, 0.8, "optimal"), prefix(N))
    assert cached_plan(MMBPC(r, 0.8, "optimal"), prefix(N)) is first
    assert cached_plan(MMBPC(r, 0.9, "optimal"), prefix(N)) is not first
    assert cached_plan(MMBPC(r, 0.8, "optimal"), sliding(N, 4)) is not first
    with pytest.raises(ValueError, match="read-only"):
        first.decoder[0, 0] = 1.0  # a shared plan cannot be altered by one of its users

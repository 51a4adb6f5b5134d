"""Defence in depth: every draw is checked by OpenDP's own privacy map before it is made.

For each kind of mechanism: the map of the measurement the sampler uses agrees with our closed
form; a declared allotment just below the map is refused with :class:`AllotmentExceeded` and
*nothing is drawn* (the source's raw draw is never called, its random stream is untouched);
plans with an understated allotment are refused at their call sites; and the seeded test
sources go through the same check, with exactly the streams they always produced.
"""

from __future__ import annotations

import math
from dataclasses import replace
from fractions import Fraction

import numpy as np
import pytest

from dp_platform.config_loader import parse_campaign
from dp_platform.mechanisms import adsbpc, adsbpc_plus, adsbpc_plus_bound
from dp_platform.mechanisms.adsbpc import declare, make_plan, measure
from dp_platform.mechanisms.reach import declare as declare_reach
from dp_platform.mechanisms.reach import plan_reach, release_reach
from dp_platform.privacy import svt
from dp_platform.privacy.accounting import Rho, gaussian_rho
from dp_platform.privacy.noise import (
    IntegerNoiseSource,
    NoiseSource,
    SecureIntegerNoise,
    SecureNoise,
    SeededIntegerNoise,
    SeededNoise,
)
from dp_platform.privacy.noise_check import SLACK, AllotmentExceeded, grid_k, privacy_loss
from dp_research.baselines import BIN, prefix
from tests.counting_noise import CountingIntegerNoise, CountingNoise

CLOSE = 1e-13  # the map may exceed the closed form by the grid's ≤ 3·10⁻¹⁴ and a few ulps


# -- the map agrees with the closed forms ---------------------------------------------------

CASES = [(2.0, 1.0, 1), (0.37, 3.5, 1000), (1234.5, 0.01, 7), (5e-4, 2e-5, 31)]


@pytest.mark.parametrize(("scale", "delta", "size"), CASES)
def test_gaussian_map_is_delta_squared_over_two_sigma_squared(scale, delta, size) -> None:
    k = grid_k(delta, scale, math.sqrt(size))
    loss = privacy_loss("gaussian", scale, delta, size=size, k=k)
    closed = float(gaussian_rho(delta, scale))
    assert closed <= loss <= closed * (1 + CLOSE)
    assert loss < closed * (1 + SLACK)  # the grid's rounding term fits inside the slack


@pytest.mark.parametrize(("scale", "delta", "size"), CASES)
def test_laplace_map_is_delta_over_scale(scale, delta, size) -> None:
    k = grid_k(delta, scale, float(size))
    loss = privacy_loss("laplace", scale, delta, size=size, k=k)
    assert delta / scale <= loss <= delta / scale * (1 + CLOSE)


@pytest.mark.parametrize(("scale", "delta", "_"), CASES)
def test_selection_and_integer_maps_are_the_textbook_ones(scale, delta, _) -> None:
    eps = 2 * delta / scale
    assert privacy_loss("gumbel_max", scale, delta) == pytest.approx(eps**2 / 8, rel=CLOSE)
    assert privacy_loss("exponential_max", scale, delta) == pytest.approx(eps, rel=CLOSE)
    monotone = privacy_loss("exponential_max", scale, delta, monotonic=True)
    assert monotone == pytest.approx(delta / scale, rel=CLOSE)
    assert privacy_loss("discrete_laplace", scale, delta) == pytest.approx(delta / scale, rel=CLOSE)
    assert privacy_loss("discrete_gaussian", scale, delta) == pytest.approx(
        delta**2 / (2 * scale**2), rel=CLOSE
    )


@pytest.mark.parametrize(("scale", "delta", "size"), CASES)
def test_the_grid_is_the_coarsest_whose_rounding_is_within_the_margin(scale, delta, size) -> None:
    spread = math.sqrt(size)
    k = grid_k(delta, scale, spread)
    assert 2.0**k * spread <= 2.0**-46 * delta < 2.0 ** (k + 1) * spread
    assert grid_k(1e-310, 1.0, 1.0) == -1074  # never finer than the smallest double


def test_a_coarser_grid_would_cost_more_and_the_check_would_see_it() -> None:
    """The rounding term is inside the map: 2^20 times the chosen grid is visibly dearer."""
    scale, delta, size = 3.0, 1.0, 1000
    k = grid_k(delta, scale, math.sqrt(size))
    fine = privacy_loss("gaussian", scale, delta, size=size, k=k)
    coarse = privacy_loss("gaussian", scale, delta, size=size, k=k + 20)
    assert coarse > fine * (1 + 1e-9)


def test_no_noise_is_free_only_without_sensitivity() -> None:
    assert privacy_loss("gaussian", 0.0, 0.0) == 0.0
    assert privacy_loss("laplace", 0.0, 1.0) == math.inf
    with pytest.raises(AllotmentExceeded):
        SeededNoise(1).add_gaussian(np.ones(2), 0.0, l2_sensitivity=1.0, rho=1e9)


# -- an allotment just below the map is refused, and nothing is drawn ----------------------

BELOW = 1 - 1e-9  # far outside the slack


def _untouched(source: CountingNoise | CountingIntegerNoise, seed: int) -> None:
    """No raw draw happened and the random stream is where a fresh one starts."""
    assert source.raw == 0
    fresh = np.random.default_rng(seed)
    assert source._rng.random() == fresh.random()


def test_real_draws_just_above_their_allotment_are_refused_before_drawing() -> None:
    values = np.zeros(5)
    gaussian = privacy_loss(
        "gaussian", 2.0, 1.0, size=5, k=grid_k(1.0, 2.0, math.sqrt(5))
    )  # the measurement add_gaussian builds for these arguments
    laplace = privacy_loss("laplace", 2.0, 1.0, size=5, k=grid_k(1.0, 2.0, 5.0))
    calls = [
        lambda s: s.add_gaussian(values, 2.0, l2_sensitivity=1.0, rho=gaussian * BELOW),
        lambda s: s.add_laplace(values, 2.0, l1_sensitivity=1.0, epsilon=laplace * BELOW),
        lambda s: s.exponential_index(values, 2.0, sensitivity=1.0, epsilon=1.0 * BELOW),
        lambda s: s.noisy_max_index(values, 2.0, sensitivity=1.0, epsilon=1.0 * BELOW),
        lambda s: s.noisy_max_index(
            values, 2.0, sensitivity=1.0, epsilon=0.5 * BELOW, monotonic=True
        ),
    ]
    for call in calls:
        source = CountingNoise(17)
        with pytest.raises(AllotmentExceeded, match="OpenDP's privacy map") as refused:
            call(source)
        _untouched(source, 17)
        message = str(refused.value)
        assert "\n" not in message and "nothing was drawn" in message
    # and exactly at the map (the closed forms above), every call draws
    source = CountingNoise(17)
    source.add_gaussian(values, 2.0, l2_sensitivity=1.0, rho=Fraction(1, 8))
    source.add_laplace(values, 2.0, l1_sensitivity=1.0, epsilon=0.5)
    source.exponential_index(values, 2.0, sensitivity=1.0, epsilon=1.0)
    source.noisy_max_index(values, 2.0, sensitivity=1.0, epsilon=1.0)
    source.noisy_max_index(values, 2.0, sensitivity=1.0, epsilon=0.5, monotonic=True)
    assert source.raw == 5


def test_integer_draws_and_races_just_above_their_allotment_are_refused_before_drawing() -> None:
    values = np.zeros(5, dtype=np.int64)
    calls = [
        lambda s: s.add_discrete_laplace(values, 2.0, l1_sensitivity=1, epsilon=0.5 * BELOW),
        lambda s: s.add_discrete_gaussian(values, 2.0, l2_sensitivity=1, rho=0.125 * BELOW),
        lambda s: s.exponentials(5, gumbel_scale=2.0, sensitivity=1.0, epsilon=1.0 * BELOW),
        # a race whose b is half what its (Δ, ε) call for: costs 4× the declared ρ
        lambda s: s.exponentials(5, gumbel_scale=1.0, sensitivity=1.0, epsilon=1.0),
    ]
    for call in calls:
        source = CountingIntegerNoise(23)
        with pytest.raises(AllotmentExceeded):
            call(source)
        _untouched(source, 23)
    source = CountingIntegerNoise(23)
    source.add_discrete_laplace(values, 2.0, l1_sensitivity=1, epsilon=0.5)
    source.add_discrete_gaussian(values, 2.0, l2_sensitivity=math.sqrt(2), rho=0.25)
    source.exponentials(5, gumbel_scale=2.0, sensitivity=1.0, epsilon=1.0)
    assert source.raw == 3


@pytest.mark.parametrize("source", [SecureNoise(), SecureIntegerNoise()])
def test_the_secure_sources_are_checked_by_the_same_base_class(source) -> None:
    assert isinstance(source, NoiseSource | IntegerNoiseSource)
    with pytest.raises(AllotmentExceeded):
        if isinstance(source, NoiseSource):
            source.add_gaussian(np.zeros(3), 1.0, l2_sensitivity=1.0, rho=0.25)
        else:
            source.add_discrete_gaussian(
                np.zeros(3, dtype=np.int64), 1.0, l2_sensitivity=1, rho=0.25
            )


# -- understated plans are refused where they draw -----------------------------------------


def _campaign(**overrides):
    data = {
        "name": "c",
        "advertiser": "a",
        "account": "u",
        "start": "2026-03-01",
        "days": 10,
        "publishers": ["p0", "p1", "p2"],
        "mechanism": "adsbpc",  # named (the default under add/remove is AdsBPC+); overridable
    }
    data.update(overrides)
    return parse_campaign(data)


def test_adsbpc_measure_declares_the_plan_and_passes() -> None:
    plan = make_plan(_campaign(privacy={"rho": 1.0, "adjacency": "replace"}))
    choice = adsbpc.BoundChoice(day=3, bound=2.5, method="quantile", charges={})
    sigma = adsbpc._sigma_for_allotment(2.5, plan.allotments[2], plan.factor)
    loss = privacy_loss(
        "gaussian", sigma, 2.5 * math.sqrt(2), size=3, k=grid_k(2.5 * math.sqrt(2), sigma, 3**0.5)
    )
    assert plan.factor == 2
    assert loss <= float(plan.allotments[2]) * (1 + SLACK)  # the day's allotment, by the map
    measure(plan, choice, np.ones(3), allotment=declare(plan, choice), noise=SeededNoise(1))


def test_adsbpc_sigma_that_forgets_the_replace_factor_is_refused(monkeypatch) -> None:
    """A σ computed for add/remove on a replace plan costs 2× the day's allotment."""
    plan = make_plan(_campaign(privacy={"rho": 1.0, "adjacency": "replace"}))
    original = adsbpc._sigma_for_allotment
    monkeypatch.setattr(
        adsbpc,
        "_sigma_for_allotment",
        lambda bound, allotment, factor: original(bound, allotment, 1),
    )
    choice = adsbpc.BoundChoice(day=1, bound=2.0, method="quantile", charges={})
    source = CountingNoise(3)
    with pytest.raises(AllotmentExceeded, match="Gaussian mechanism"):
        measure(plan, choice, np.ones(3), allotment=declare(plan, choice), noise=source)
    _untouched(source, 3)


def test_adsbpc_plus_histogram_with_a_halved_allotment_is_refused() -> None:
    campaign = _campaign(
        mechanism="adsbpc_plus",
        privacy={"rho": 0.8},
        adsbpc_plus={"profile_days": 4, "cap": 6},
    )
    plan = adsbpc_plus.make_plan(campaign)
    halved = replace(plan, budget=replace(plan.budget, histogram_day=plan.budget.histogram_day / 2))
    histogram = np.array([0, 50, 20, 5, 1])
    source = CountingNoise(5)
    with pytest.raises(AllotmentExceeded):
        adsbpc_plus_bound.choose_bound(
            halved, adsbpc_plus_bound.PlusState(), histogram, publishers=3, noise=source
        )
    _untouched(source, 5)
    choice, _ = adsbpc_plus_bound.choose_bound(
        plan, adsbpc_plus_bound.PlusState(), histogram, publishers=3, noise=SeededNoise(5)
    )
    assert choice.day == 1


def test_svt_query_noise_that_forgets_k_is_refused(monkeypatch) -> None:
    """Lap(4/ε') instead of Lap(4k/ε') with k = 3 positives: 3× the query allotment."""
    test = svt.SparseVectorTest(threshold=10.0, epsilon=0.5, max_reports=3)
    source = CountingNoise(7)
    started = test.start(source)
    assert source.raw == 1
    monkeypatch.setattr(
        svt.SparseVectorTest, "query_scale", lambda self: 4.0 * svt.QUERY_SENSITIVITY / self.epsilon
    )
    with pytest.raises(AllotmentExceeded, match="Laplace mechanism"):
        started.ask(12.0, source)
    assert source.raw == 1


def test_baseline_plan_with_a_halved_rho_is_refused() -> None:
    plan = BIN(4.0, 0.5).plan(prefix(8))
    source = CountingNoise(9)
    with pytest.raises(AllotmentExceeded):
        replace(plan, rho=plan.rho / 2).measure(np.ones((2, 8)), source)
    _untouched(source, 9)
    assert plan.measure(np.ones((2, 8)), SeededNoise(9)).shape == (2, plan.strategy.shape[0])


def test_reach_plan_with_a_halved_rho_is_refused() -> None:
    plan = plan_reach(Fraction(1, 2), 5, "replace")
    declared = declare_reach(5, "replace", Fraction(1, 2))
    halved = replace(declared, loss=declared.loss / 2)
    source = CountingIntegerNoise(11)
    with pytest.raises(AllotmentExceeded, match="discrete Gaussian"):
        release_reach(np.arange(5), plan, allotment=halved, noise=source)
    _untouched(source, 11)
    drawn = release_reach(np.arange(5), plan, allotment=declared, noise=SeededIntegerNoise(11))
    assert drawn.sigma == plan.sigma


# -- the seeded sources keep their streams --------------------------------------------------


def test_seeded_streams_are_numpys_draws_in_order() -> None:
    values = np.array([1.0, -2.0, 3.5])
    source = SeededNoise(31)
    rng = np.random.default_rng(31)
    got = source.add_gaussian(values, 2.0, l2_sensitivity=1.0, rho=Rho(Fraction(1, 8)))
    np.testing.assert_array_equal(got, values + rng.normal(0.0, 2.0, size=3))
    got = source.add_laplace(values, 2.0, l1_sensitivity=1.0, epsilon=0.5)
    np.testing.assert_array_equal(got, values + rng.laplace(0.0, 2.0, size=3))
    index = source.exponential_index(values, 2.0, sensitivity=1.0, epsilon=1.0)
    assert index == int(np.argmax(values + rng.gumbel(0.0, 2.0, size=3)))
    assert source.uniform(0.0, 1.0) == rng.uniform(0.0, 1.0)
    integers = SeededIntegerNoise(37)
    rng = np.random.default_rng(37)
    race = integers.exponentials(4, gumbel_scale=2.0, sensitivity=1.0, epsilon=1.0)
    np.testing.assert_array_equal(race, rng.exponential(1.0, 4))

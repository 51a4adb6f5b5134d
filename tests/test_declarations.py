"""Every mechanism's draw is declared from the registered plan, apart from what sizes its noise.

Through the production path (dp_platform/daily.py: the real ledger, the registered plan, the
stored bound chain; a stand-in warehouse returns fixed public-shaped vectors), a σ halved or a
sensitivity halved (σ then sized from it) inside the mechanism's own code is refused with
:class:`AllotmentExceeded`: no raw draw, no release stored, nothing charged for it. The same
campaign un-injected draws (positive control). Mechanisms: AdsBPC, AdsBPC+ with the diagonal
and the square-root (correlated) strategy, the one-shot release (Laplace and discrete
Laplace) and reach (discrete Gaussian).
"""

from __future__ import annotations

from dataclasses import replace
from datetime import date, timedelta

import numpy as np
import pytest

from dp_platform.campaign_total import total_additions
from dp_platform.config import AccountConfig
from dp_platform.config_loader import parse_campaign
from dp_platform.daily import bound_day, campaign_release, release_day
from dp_platform.ledger import Ledger
from dp_platform.mechanisms import (
    adsbpc,
    adsbpc_plus,
    adsbpc_plus_accounting,
    adsbpc_plus_bound,
    oneshot,
    reach,
)
from dp_platform.mechanisms.adsbpc_plus_plan import PROFILE_BINS
from dp_platform.plans import campaign_plan
from dp_platform.privacy.noise import SeededNoise
from dp_platform.privacy.noise_check import AllotmentExceeded
from dp_platform.registration import Registration, registered_campaign
from dp_platform.release_view import release_document
from tests.counting_noise import CountingIntegerNoise, CountingNoise

ACCOUNT = AccountConfig(name="users", rho_cap=100.0)
PUBLISHERS = ["p0", "p1", "p2"]
START = date(2026, 3, 1)
DAYS = 8
INJECTED_DAY = 3  # days 1..2 run as planned, so a correlated row carries earlier days


class StandInWarehouse:
    """Fixed vectors of the shapes the mechanisms read (these tests check declarations, not
    data: the brute-force tests of the warehouse check the sensitivities themselves)."""

    identity = "stand-in-warehouse"  # one warehouse: AdsBPC+ binds its campaign to it

    def day_histogram(self, campaign, day):
        return np.bincount([1] * 60 + [2] * 25 + [3] * 8 + [7] * 2)

    def clipped_vector(self, campaign, day, bound):
        return np.array([10.0, 4.0, 7.5])

    def plus_clipped_vector(
        self, campaign, day, bound, sigma, cap, *, row=None, marginals=None, remainder_cap=None
    ):
        return np.array([10.0, 4.0, 7.5])

    def plus_remainder(self, campaign, day):
        return 4.5

    def plus_profile_histogram(
        self, campaign, days, bounds, factors, top, *, grid, cross, marginals=None
    ):
        return np.r_[np.zeros(PROFILE_BINS - 8), np.full(8, 20)].astype(np.int64)

    def attribute_day(self, campaign, day):
        return None

    def one_shot_sums(self, campaign, bound, *, publishers=None):
        return np.array([12.0, 3.0, 8.0])

    def reach_histogram(self, campaign, max_frequency, *, publishers=None):
        return np.arange(max_frequency, dtype=np.int64) + 5


def _register(ledger: Ledger, **entry) -> Registration:
    config = parse_campaign(
        {
            "name": "c",
            "advertiser": "acme",
            "account": "users",
            "start": START.isoformat(),
            "days": DAYS,
            "publishers": PUBLISHERS,
            **entry,
        }
    )
    return registered_campaign(
        ledger,
        config,
        campaign_plan(config),
        ACCOUNT,
        advertiser_publishers=lambda: [],
        warehouse_identity=lambda: StandInWarehouse.identity,
    )


@pytest.fixture
def ledger(ledger_location: str):
    with Ledger(ledger_location) as opened:
        yield opened


# -- stream mechanisms ---------------------------------------------------------------------

ADSBPC = {"privacy": {"rho": 1.0, "adjacency": "replace"}, "bounds": {"quantile_days": 2}}


def _plus(strategy: str) -> dict:
    return {
        "privacy": {"rho": 1.0},
        "mechanism": {
            "kind": "adsbpc_plus",
            "strategy": strategy,
            "profile_days": 2,
            "cap": 6,
            "prior_scale": 1.0,  # day costs ≈ g_i: the worst case stays below ρ1 until day 8
            "early_scale": None,  # (an early cap would raise days 1..m's worst case)
        },
    }


def _plus_early_cap() -> dict:
    """The square-root strategy with days 1..m's noise unit capped at ε0·Λ = 1.8 (< ψ0·r_i for
    every r_i > 1.8): the declaration restates the cap apart from the choice's σ."""
    entry = _plus("sqrt")
    return {**entry, "mechanism": {**entry["mechanism"], "early_scale": 0.3}}


def _plus_remainder() -> dict:
    """The square-root strategy with a daily remainder (its own draw, on 5 % of ρ)."""
    entry = _plus("sqrt")
    return {**entry, "mechanism": {**entry["mechanism"], "remainder_share": 0.05}}


def _halve_sigma(monkeypatch, module, name: str) -> None:
    original = getattr(module, name)
    monkeypatch.setattr(module, name, lambda *args: original(*args) / 2)


def _adsbpc_sensitivity_halved(monkeypatch) -> None:
    """σ sized for r/2: _sigma_for_allotment is where AdsBPC turns (r_i, factor) into σ_i."""
    original = adsbpc._sigma_for_allotment
    monkeypatch.setattr(
        adsbpc,
        "_sigma_for_allotment",
        lambda bound, allotment, factor: original(bound / 2, allotment, factor),
    )


def _plus_sensitivity_halved(monkeypatch) -> None:
    """The row's ℓ2 bound the day is charged at, halved (σ_i does not depend on it here)."""
    original = adsbpc_plus_bound.row_sensitivity
    monkeypatch.setattr(
        adsbpc_plus_bound, "row_sensitivity", lambda plan, bounds: original(plan, bounds) / 2
    )


MAP = "OpenDP's privacy map"  # the sampler's refusal: the map at σ says more than declared
CHARGES = "below the most"  # AdsBPC+'s declaration: the chain charged less than the plan's worst

STREAMS = {
    "adsbpc-sigma": (ADSBPC, lambda mp: _halve_sigma(mp, adsbpc, "_sigma_for_allotment"), MAP),
    "adsbpc-sensitivity": (ADSBPC, _adsbpc_sensitivity_halved, MAP),
    "plus-diagonal-sigma": (
        _plus("diagonal"),
        lambda mp: _halve_sigma(mp, adsbpc_plus_bound, "day_sigma"),
        MAP,
    ),
    "plus-diagonal-sensitivity": (_plus("diagonal"), _plus_sensitivity_halved, CHARGES),
    "plus-sqrt-sigma": (
        _plus("sqrt"),
        lambda mp: _halve_sigma(mp, adsbpc_plus_bound, "day_sigma"),
        MAP,
    ),
    "plus-sqrt-sensitivity": (_plus("sqrt"), _plus_sensitivity_halved, CHARGES),
    # the remainder's σ_R halved where the draw reads it: refused before the day's row is drawn
    "plus-remainder-sigma": (
        _plus_remainder(),
        lambda mp: _halve_sigma(mp, adsbpc_plus_accounting, "remainder_sigma"),
        MAP,
    ),
}


def _day(index: int) -> date:
    return START + timedelta(days=index - 1)


def _run_day(warehouse, ledger: Ledger, registration: Registration, index: int, noise) -> None:
    bound_day(warehouse, ledger, registration, _day(index), noise=SeededNoise(100 + index))
    release_day(warehouse, ledger, registration, _day(index), noise=noise)


@pytest.mark.parametrize("case", list(STREAMS))
def test_a_stream_mechanisms_wrong_sigma_or_sensitivity_is_refused_before_drawing(
    case: str, ledger: Ledger, monkeypatch
) -> None:
    entry, inject, refusal = STREAMS[case]
    registration = _register(ledger, **entry)
    warehouse = StandInWarehouse()
    for index in range(1, INJECTED_DAY):
        _run_day(warehouse, ledger, registration, index, SeededNoise(index))
    inject(monkeypatch)  # AdsBPC+ sizes σ_i in the bound step, AdsBPC at the draw: both after
    bound_day(warehouse, ledger, registration, _day(INJECTED_DAY), noise=SeededNoise(7))
    spent = ledger.campaign_budget("c").spent
    source = CountingNoise(11)
    with pytest.raises(AllotmentExceeded, match=refusal) as refused:
        release_day(warehouse, ledger, registration, _day(INJECTED_DAY), noise=source)
    assert "nothing was drawn" in str(refused.value) and source.raw == 0
    assert [m.day for m in ledger.releases("c")] == list(range(1, INJECTED_DAY))
    assert ledger.campaign_budget("c").spent == spent


@pytest.mark.parametrize(
    "entry", [ADSBPC, _plus("diagonal"), _plus("sqrt"), _plus_remainder(), _plus_early_cap()]
)
def test_an_uninjected_stream_draws_every_day_through_the_same_declarations(
    entry: dict, ledger: Ledger
) -> None:
    """Positive control: every day (quantile, SVT, the profile day, the last day) draws — the
    day's row, and the remainder where the plan releases one — and the campaign is charged
    exactly its plan."""
    registration = _register(ledger, **entry)
    warehouse = StandInWarehouse()
    side = getattr(registration.plan.stream, "remainder_cap", None) is not None
    for index in range(1, DAYS + 1):
        source = CountingNoise(index)
        _run_day(warehouse, ledger, registration, index, source)
        assert source.raw == (2 if side else 1)
    assert ledger.campaign_budget("c").spent == registration.plan.total
    assert all((m.remainder is not None) == side for m in ledger.releases("c"))
    published = release_document(ledger, "c")["days"]  # what `releases --json` prints
    assert all(("remainder" in d and "remainder_ci" in d) == side for d in published)
    if side:  # the last day answers the campaign's queries; its total adds the remainder
        last = published[-1]
        estimates = last["total_estimates"]
        assert set(estimates) == set(last["answers"]) and estimates
        queries = np.asarray(registration.plan.stream.queries)
        noisy = np.array([m.remainder for m in ledger.releases("c")])
        sigma = registration.plan.stream.remainder_sigma
        for query, per_publisher in last["answers"].items():
            row = queries[int(query) - 1 : int(query)]
            added = total_additions(row, noisy, sigma)[0]
            assert estimates[query] == pytest.approx(sum(per_publisher.values()) + added)


# -- campaign-level releases ---------------------------------------------------------------


def _one_shot(noise: str) -> dict:
    return {
        "privacy": {"rho": 0.5, "adjacency": "replace"},
        "mechanism": {"kind": "one_shot", "bound": 2, "noise": noise},
    }


def _property_halved(monkeypatch, owner: type, name: str) -> None:
    original = getattr(owner, name)
    monkeypatch.setattr(owner, name, property(lambda self: original.fget(self) / 2))


def _one_shot_sensitivity_halved(monkeypatch) -> None:
    """C0·r·Δ(f) halved where the plan keeps it; the Laplace scale is computed from it."""
    _property_halved(monkeypatch, oneshot.OneShotPlan, "l1_sensitivity")


REACH = {"reach": {"rho": 0.2, "max_frequency": 4}, "privacy": {"rho": 1.0, "adjacency": "replace"}}


def _reach_sensitivity_halved(monkeypatch) -> None:
    """The histogram's Δ₂ halved where plan_reach takes it; σ is computed from it."""
    original = reach.histogram_sensitivity
    monkeypatch.setattr(
        reach, "histogram_sensitivity", lambda k, adjacency: original(k, adjacency) / 2
    )


CAMPAIGN_LEVEL = {
    # (entry, release, inject after registration?, injection)
    "one-shot-laplace-scale": (
        _one_shot("laplace"),
        "one_shot",
        True,
        lambda mp: _property_halved(mp, oneshot.OneShotPlan, "scale"),
    ),
    "one-shot-laplace-sensitivity": (
        _one_shot("laplace"),
        "one_shot",
        True,
        _one_shot_sensitivity_halved,
    ),
    "one-shot-discrete-scale": (
        _one_shot("discrete_laplace"),
        "one_shot",
        True,
        lambda mp: _property_halved(mp, oneshot.OneShotPlan, "scale"),
    ),
    "one-shot-discrete-sensitivity": (
        _one_shot("discrete_laplace"),
        "one_shot",
        True,
        _one_shot_sensitivity_halved,
    ),
    # reach sizes σ when it plans: the bug is in the registered plan record itself
    "reach-sigma": (REACH, "reach", False, lambda mp: _halve_sigma(mp, reach, "gaussian_sigma")),
    "reach-sensitivity": (REACH, "reach", False, _reach_sensitivity_halved),
}


@pytest.mark.parametrize("case", list(CAMPAIGN_LEVEL))
def test_a_campaign_level_releases_wrong_scale_or_sensitivity_is_refused_before_drawing(
    case: str, ledger: Ledger, monkeypatch
) -> None:
    entry, name, after_registration, inject = CAMPAIGN_LEVEL[case]
    if not after_registration:
        inject(monkeypatch)
    registration = _register(ledger, **entry)
    if after_registration:
        inject(monkeypatch)
    noise, integer_noise = CountingNoise(5), CountingIntegerNoise(6)
    with pytest.raises(AllotmentExceeded, match="nothing was drawn"):
        campaign_release(
            StandInWarehouse(),
            ledger,
            registration,
            name,
            noise=noise,
            integer_noise=integer_noise,
        )
    assert noise.raw == 0 and integer_noise.raw == 0
    assert ledger.campaign_releases("c") == {}
    assert ledger.campaign_budget("c").spent.value == 0


@pytest.mark.parametrize(
    ("entry", "name"),
    [
        (_one_shot("laplace"), "one_shot"),
        (_one_shot("discrete_laplace"), "one_shot"),
        (REACH, "reach"),
    ],
)
def test_an_uninjected_campaign_level_release_draws(entry: dict, name: str, ledger: Ledger) -> None:
    registration = _register(ledger, **entry)
    noise, integer_noise = CountingNoise(5), CountingIntegerNoise(6)
    payload, drawn = campaign_release(
        StandInWarehouse(), ledger, registration, name, noise=noise, integer_noise=integer_noise
    )
    assert drawn and noise.raw + integer_noise.raw == 1
    assert ledger.campaign_releases("c")[name] == payload


# -- the declarations themselves -----------------------------------------------------------


def test_the_declarations_are_the_registered_figures(ledger: Ledger) -> None:
    """AdsBPC declares the ledger's g_i at r_i·√2 (replace); one-shot C0·r·2 and its ε; reach
    √2 and the configured ρ — none read back from the σ or scale the draw uses."""
    registration = _register(ledger, **ADSBPC)
    plan = registration.plan.stream
    choice = adsbpc.BoundChoice(day=4, bound=2.5, method="svt_none", charges={})
    declared = adsbpc.declare(plan, choice)
    assert declared.loss == plan.day_charge(4)["gaussian"].value
    assert declared.sensitivity**2 >= 2 * 2.5**2 > np.nextafter(declared.sensitivity, 0) ** 2
    one_shot = oneshot.plan_one_shot(rho=0.5, rule="lta", bound=2, adjacency="replace")
    stated = oneshot.declare(one_shot, adjacency="replace", several_cells=True)
    assert (stated.sensitivity, stated.loss) == (one_shot.c0 * 2 * 2, one_shot.epsilon)
    assert oneshot.declare(one_shot, adjacency="replace", several_cells=False).sensitivity == 2
    stated = reach.declare(4, "replace", 0.2)
    assert stated.sensitivity**2 >= 2 and float(stated.loss) == 0.2
    assert reach.declare(1, "replace", 0.2).sensitivity == 1.0


def test_plus_declares_the_row_norm_from_the_stored_bounds_and_refuses_short_charges(
    ledger: Ledger,
) -> None:
    """AdsBPC+ (square-root strategy): Δ_t = Σ_j C_tj r_j over the chain's bounds; a chain
    whose Gaussian charges fall short of the plan's worst case is refused."""
    registration = _register(ledger, **_plus("sqrt"))
    plan = registration.plan.stream
    warehouse = StandInWarehouse()
    for index in range(1, 4):
        _run_day(warehouse, ledger, registration, index, SeededNoise(index))
    chain = adsbpc_plus.MECHANISM.chain
    choice = ledger.bound_choice("c", 3, chain)
    state = ledger.bound_state("c", 3, chain)
    declared = adsbpc_plus_accounting.declare(plan, choice, state)
    row = plan.matrix[2, :3] @ np.asarray(state.bounds)
    assert declared.sensitivity == pytest.approx(row, rel=1e-15) and row > state.bounds[-1]
    assert float(declared.loss) == pytest.approx(row**2 / (2 * choice.sigma**2), rel=1e-12)
    short = replace(state, gaussian_charged=state.gaussian_charged / 2)
    with pytest.raises(AllotmentExceeded, match="below the most"):
        adsbpc_plus_accounting.declare(plan, choice, short)
    with pytest.raises(ValueError, match="state after day 3"):
        adsbpc_plus_accounting.declare(plan, choice, ledger.bound_state("c", 2, chain))


def test_plus_histogram_noise_halved_in_the_registered_plan_is_refused_before_drawing(
    ledger: Ledger, monkeypatch
) -> None:
    """The bound step's noisy histogram was already declared independently: σ_h is the plan's
    (sized by histogram_sigma at registration), ρ_h the ledger's charge for it. A σ_h halved
    when planning is refused on day 1, with no bound stored and nothing charged."""
    _halve_sigma(monkeypatch, adsbpc_plus, "histogram_sigma")
    registration = _register(ledger, **_plus("diagonal"))
    source = CountingNoise(3)
    with pytest.raises(AllotmentExceeded, match=MAP):
        bound_day(StandInWarehouse(), ledger, registration, _day(1), noise=source)
    assert source.raw == 0
    assert ledger.bound_choice("c", 1, adsbpc_plus.MECHANISM.chain) is None
    assert ledger.campaign_budget("c").spent.value == 0

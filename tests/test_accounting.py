"""zCDP arithmetic: exact sums, safe rounding, conversions checked against OpenDP."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest

from dp_platform.privacy import accounting as acc
from tests.oracles import zcdp_delta


def test_gaussian_rho_is_delta_squared_over_two_sigma_squared() -> None:
    assert acc.gaussian_rho(3.0, 2.0) == Fraction(9, 8)
    assert acc.gaussian_rho(0.0, 0.0) == 0
    with pytest.raises(ValueError):
        acc.gaussian_rho(1.0, 0.0)


@pytest.mark.parametrize("rho", [1e-4, 0.0213, 0.7, 1.0, 3.3, 50.0])
@pytest.mark.parametrize("delta", [0.3, 1.0, 7.5])
def test_gaussian_sigma_never_overspends_and_is_tight(rho: float, delta: float) -> None:
    sigma = acc.gaussian_sigma(delta, rho)
    spent = acc.gaussian_rho(delta, sigma)
    assert spent <= Fraction(repr(rho))
    assert float(spent) == pytest.approx(rho, rel=1e-14)


def test_pure_dp_conversions() -> None:
    for eps in [1e-3, 0.1, 0.5, 1.0, 2.0, 5.0]:
        square = acc.pure_dp_rho_square(eps)
        tanh = acc.pure_dp_rho_tanh(eps)
        assert float(square) == pytest.approx(eps**2 / 2, rel=1e-15)
        assert float(tanh) == pytest.approx(eps * math.tanh(eps / 2), rel=1e-14)
        assert tanh >= Fraction(eps * math.tanh(eps / 2))  # rounded up, never down
        assert acc.pure_dp_to_zcdp(eps) == min(square, tanh) == tanh  # tanh(x) ≤ x
    # ε²/8 (bounded range) is the tighter bound for the exponential mechanism below ε ≈ 8.
    assert float(acc.exponential_mechanism_rho(1.0)) == pytest.approx(1 / 8)
    assert float(acc.exponential_mechanism_rho(20.0)) == pytest.approx(20 * math.tanh(10))


@pytest.mark.parametrize("rho", [1e-5, 0.01, 0.15 / 7, 0.15, 1.0, 10.0])
def test_inverse_epsilons_spend_at_most_rho_and_are_tight(rho: float) -> None:
    budget = Fraction(repr(rho))
    eps2 = acc.epsilon_for_exponential_rho(rho)
    eps3 = acc.epsilon_for_pure_rho(rho)
    assert acc.exponential_mechanism_rho(eps2) <= budget
    assert acc.pure_dp_to_zcdp(eps3) <= budget
    assert float(acc.exponential_mechanism_rho(eps2)) == pytest.approx(rho, rel=1e-12)
    assert float(acc.pure_dp_to_zcdp(eps3)) == pytest.approx(rho, rel=1e-12)
    # one step larger would overspend: the inverse is the largest safe ε
    assert acc.exponential_mechanism_rho(math.nextafter(eps2, 10) * (1 + 1e-12)) > budget


def test_default_split_epsilons() -> None:
    eps2 = acc.epsilon_for_exponential_rho(Fraction(3, 140))
    assert eps2 == pytest.approx(math.sqrt(8 * 3 / 140), rel=1e-12)  # ε²/8 branch


def _opendp_epsilon(rho: float, delta: float) -> float:
    import opendp.prelude as dp

    dp.enable_features("contrib")
    space = dp.atom_domain(T=float, nan=False), dp.absolute_distance(T=float)
    gauss = dp.m.make_gaussian(*space, scale=1.0 / math.sqrt(2.0 * rho))
    assert gauss.map(1.0) == pytest.approx(rho, rel=1e-12)
    return dp.c.make_zCDP_to_approxDP(gauss).map(1.0).epsilon(delta)


@pytest.mark.parametrize("rho", [0.001, 0.05, 0.5, 1.0, 4.0, 16.0])
@pytest.mark.parametrize("delta", [1e-3, 1e-6, 1e-9, 1e-12])
def test_zcdp_to_approx_dp_matches_opendp(rho: float, delta: float) -> None:
    ours = acc.zcdp_epsilon(rho, delta)
    theirs = _opendp_epsilon(rho, delta)
    # OpenDP's ρ is the float Δ²/(2σ²) of its σ, which may differ from ours in the last ulp.
    assert ours == pytest.approx(theirs, abs=1e-9, rel=1e-9)
    # and the two directions agree with each other
    assert zcdp_delta(rho, ours) == pytest.approx(delta, rel=1e-6)


def test_zcdp_epsilon_is_below_the_simple_bound() -> None:
    for rho in [0.1, 1.0]:
        simple = rho + 2 * math.sqrt(rho * math.log(1 / 1e-6))
        assert acc.zcdp_epsilon(rho, 1e-6) < simple


def test_campaign_budget_is_exact() -> None:
    budget = acc.BudgetSplit.from_split(1.0, 0.7, 0.15, 0.15, 7)
    assert budget.total == acc.Rho.of(1)
    assert budget.rho2.value == Fraction(3, 140)
    odd = acc.BudgetSplit.from_split(0.3, 0.6, 0.3, 0.1, 3)
    assert odd.total.value == Fraction(3, 10)
    with pytest.raises(ValueError, match="sum"):
        acc.BudgetSplit.from_split(1.0, 0.7, 0.2, 0.15, 7)


def test_rho_sums_do_not_drift_and_round_trip() -> None:
    daily = acc.Rho.of(0.1)
    total = sum([daily] * 10, acc.Rho.zero())
    assert total == acc.Rho.of(1)  # with floats, 0.1 * 10 summed is 0.9999999999999999
    assert acc.Rho.from_json(total.to_json()) == total
    with pytest.raises(ValueError):
        acc.Rho.of(0.1) - acc.Rho.of(0.2)

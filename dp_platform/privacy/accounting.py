"""zCDP arithmetic: what every mechanism costs, and a budget type whose sums never drift.

Amounts of ρ are held as exact rationals (:class:`fractions.Fraction`). A float such as 0.7 is
read by its shortest decimal form (7/10), so a split of 0.7 + 0.15 + 0.15 of ρ = 1 sums to exactly
1 and a ledger that adds thirty-one daily charges ends on exactly the plan. Where a cost involves a
transcendental function (tanh), the float result is rounded *up* by a few ulps before it becomes
a Fraction, so an allocation computed from it is never exceeded by rounding.

References: Bun & Steinke 2016 (zCDP, Gaussian ρ = Δ²/(2σ²), ε-DP ⇒ ε²/2-zCDP); Cesar & Rogers
2021 (exponential mechanism is ε²/8-zCDP); Steinke 2024 (ε-DP ⇒ ε·tanh(ε/2)-zCDP, tight);
Canonne, Kamath & Steinke 2020 (zCDP ⇒ (ε, δ)-DP conversion).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction

__all__ = [
    "REPORTED_DELTAS",
    "BudgetSplit",
    "Rho",
    "charges_from_json",
    "charges_to_json",
    "epsilon_at_deltas",
    "epsilon_for_exponential_rho",
    "epsilon_for_pure_rho",
    "exponential_mechanism_rho",
    "gaussian_rho",
    "gaussian_sigma",
    "pure_dp_rho_square",
    "pure_dp_rho_tanh",
    "pure_dp_to_zcdp",
    "zcdp_epsilon",
]

_ULP_MARGIN = 8  # ulps added to a float cost computed through libm before it is trusted


def _exact(value: float | int | Fraction | str) -> Fraction:
    """A Fraction from a user-facing number: floats by their shortest decimal form (0.7 → 7/10)."""
    if isinstance(value, Fraction):
        return value
    if isinstance(value, int):
        return Fraction(value)
    if isinstance(value, str):
        return Fraction(value)
    if not math.isfinite(value):
        raise ValueError(f"a privacy amount must be finite, got {value!r}")
    return Fraction(repr(float(value)))


def _round_up(value: float) -> Fraction:
    """An exact upper bound on a float computed with a few ulps of libm error."""
    bumped = value
    for _ in range(_ULP_MARGIN):
        bumped = math.nextafter(bumped, math.inf)
    return Fraction(bumped)


@dataclass(frozen=True, order=True)
class Rho:
    """An amount of zCDP budget ρ ≥ 0, exact. Adding charges never drifts from the plan."""

    value: Fraction

    def __post_init__(self) -> None:
        if not isinstance(self.value, Fraction):
            object.__setattr__(self, "value", _exact(self.value))
        if self.value < 0:
            raise ValueError(f"ρ must be >= 0, got {float(self.value)}")

    @classmethod
    def of(cls, value: float | int | Fraction | str | Rho) -> Rho:
        return value if isinstance(value, Rho) else cls(_exact(value))

    @classmethod
    def zero(cls) -> Rho:
        return cls(Fraction(0))

    def __add__(self, other: Rho) -> Rho:
        return Rho(self.value + Rho.of(other).value)

    def __sub__(self, other: Rho) -> Rho:
        """Difference; refuses to go negative (spending more than is left is a bug, not a value)."""
        return Rho(self.value - Rho.of(other).value)

    def __mul__(self, factor: int | Fraction) -> Rho:
        return Rho(self.value * _exact(factor))

    __rmul__ = __mul__

    def __truediv__(self, divisor: int | Fraction) -> Rho:
        return Rho(self.value / _exact(divisor))

    def __float__(self) -> float:
        return float(self.value)

    def to_json(self) -> str:
        """Lossless text form ("p/q"); read back with :meth:`from_json`."""
        return str(self.value)

    @classmethod
    def from_json(cls, text: str) -> Rho:
        return cls(Fraction(text))


def charges_to_json(charges: dict[str, Rho]) -> dict[str, str]:
    """A step's charges by part ({"gaussian": ρ, ...}) as lossless text (ledger, state)."""
    return {part: rho.to_json() for part, rho in charges.items()}


def charges_from_json(data: dict[str, str]) -> dict[str, Rho]:
    return {part: Rho.from_json(text) for part, text in data.items()}


def gaussian_rho(sensitivity: float, sigma: float) -> Fraction:
    """Gaussian mechanism with ℓ2 sensitivity Δ and noise N(0, σ²): ρ = Δ²/(2σ²), exactly.

    σ = 0 with Δ > 0 is infinitely expensive and refused; Δ = 0 costs nothing.
    """
    delta, scale = Fraction(float(sensitivity)), Fraction(float(sigma))
    if delta < 0 or scale < 0:
        raise ValueError("sensitivity and sigma must be >= 0")
    if delta == 0:
        return Fraction(0)
    if scale == 0:
        raise ValueError("sigma = 0 with a positive sensitivity is not private")
    return delta * delta / (2 * scale * scale)


def gaussian_sigma(sensitivity: float, rho: float | Fraction) -> float:
    """The smallest float σ with Δ²/(2σ²) ≤ ρ (exactly): σ = Δ/√(2ρ), rounded up if needed."""
    budget = _exact(rho) if not isinstance(rho, Fraction) else rho
    if budget <= 0:
        raise ValueError("rho must be > 0")
    if sensitivity == 0:
        return 0.0
    sigma = float(sensitivity) / math.sqrt(2.0 * float(budget))
    while gaussian_rho(sensitivity, sigma) > budget:
        sigma = math.nextafter(sigma, math.inf)
    return sigma


def pure_dp_rho_square(epsilon: float) -> Fraction:
    """ε-DP ⇒ (ε²/2)-zCDP (Bun & Steinke 2016, Prop. 1.4); exact for a float ε."""
    eps = Fraction(float(epsilon))
    return eps * eps / 2


def pure_dp_rho_tanh(epsilon: float) -> Fraction:
    """ε-DP ⇒ (ε·tanh(ε/2))-zCDP (Steinke 2024; tight, ≤ ε²/2 always); rounded up."""
    if epsilon == 0:
        return Fraction(0)
    return _round_up(float(epsilon) * math.tanh(float(epsilon) / 2.0))


def pure_dp_to_zcdp(epsilon: float) -> Fraction:
    """The tighter of the two conversions of an ε-DP mechanism to zCDP."""
    return min(pure_dp_rho_square(epsilon), pure_dp_rho_tanh(epsilon))


def exponential_mechanism_rho(epsilon: float) -> Fraction:
    """Exponential mechanism with privacy ε: min(ε²/8, ε·tanh(ε/2)) zCDP.

    ε²/8 is the bounded-range bound (Cesar & Rogers 2021); the second is the generic ε-DP one.
    """
    eps = Fraction(float(epsilon))
    return min(eps * eps / 8, pure_dp_rho_tanh(epsilon))


def _largest_epsilon(cost: object, rho: Fraction) -> float:
    """Largest float ε with cost(ε) ≤ ρ for an increasing cost function (bisect, then nudge)."""
    target = float(rho)
    upper = 1.0
    while float(cost(upper)) < target:  # type: ignore[operator]
        upper *= 2.0
    from scipy.optimize import brentq  # imported when planning, not on every CLI start

    eps = brentq(lambda e: float(cost(e)) - target, 0.0, upper, xtol=1e-15, rtol=1e-15)  # type: ignore[operator]
    while cost(eps) > rho:  # type: ignore[operator]
        eps = math.nextafter(eps, 0.0)
    return float(eps)


def epsilon_for_exponential_rho(rho: float | Fraction) -> float:
    """ε2 of PrivateQuantile such that the exponential mechanism costs at most ρ2."""
    budget = _exact(rho) if not isinstance(rho, Fraction) else rho
    if budget <= 0:
        raise ValueError("rho must be > 0")
    return _largest_epsilon(exponential_mechanism_rho, budget)


def epsilon_for_pure_rho(rho: float | Fraction) -> float:
    """ε3 of an ε-DP mechanism (the SVT) such that its zCDP cost ε·tanh(ε/2) is at most ρ3."""
    budget = _exact(rho) if not isinstance(rho, Fraction) else rho
    if budget <= 0:
        raise ValueError("rho must be > 0")
    return _largest_epsilon(pure_dp_to_zcdp, budget)


def _cks_epsilon_at(alpha: float, rho: float, delta: float) -> float:
    # Canonne, Kamath & Steinke 2020, Prop. 12 solved for ε at a fixed Rényi order α > 1.
    return alpha * rho + (
        math.log(1 / delta) + (alpha - 1) * math.log1p(-1 / alpha) - math.log(alpha)
    ) / (alpha - 1)


def zcdp_epsilon(rho: float, delta: float) -> float:
    """Smallest ε such that ρ-zCDP implies (ε, δ)-DP by the Canonne–Kamath–Steinke bound."""
    if not 0 < delta < 1:
        raise ValueError("delta must be in (0, 1)")
    if rho < 0:
        raise ValueError("rho must be >= 0")
    if rho == 0:
        return 0.0
    return max(0.0, _min_over_orders(lambda alpha: _cks_epsilon_at(alpha, rho, delta)))


def _min_over_orders(objective: Callable[[float], float]) -> float:
    """min over Rényi orders α > 1 of ``objective(α)``, searched on log(α − 1) ∈ [−30, 30]."""
    from scipy.optimize import minimize_scalar

    result = minimize_scalar(
        lambda log_excess: objective(1.0 + math.exp(log_excess)),
        bounds=(-30.0, 30.0),
        method="bounded",
        options={"xatol": 1e-12},
    )
    return float(result.fun)


def _cks_log_delta_at(alpha: float, rho: float, epsilon: float) -> float:
    return (
        (alpha - 1) * (alpha * rho - epsilon) - math.log(alpha - 1) + alpha * math.log1p(-1 / alpha)
    )


REPORTED_DELTAS = (1e-5, 1e-6, 1e-9)
"""The δ values at which plans report the (ε, δ)-DP equivalent of their ρ."""


def epsilon_at_deltas(rho: float) -> dict[str, float]:
    """ρ-zCDP as (ε, δ)-DP at each reported δ (Canonne–Kamath–Steinke), keyed by δ's text."""
    return {f"{delta:g}": zcdp_epsilon(rho, delta) for delta in REPORTED_DELTAS}


@dataclass(frozen=True)
class BudgetSplit:
    """AdsBPC's split of a campaign's ρ: ρ = ρ1 + l·ρ2 + ρ3, exact.

    ρ1 pays for the Gaussian measurements of all n days, ρ2 for *each* of the first l days'
    PrivateQuantile, ρ3 for the whole life of the two sparse-vector tests. ``split.quantile`` is
    the share of all l quantile days together (docs/algorithm.md#budget), so ρ2 = quantile·ρ / l.
    """

    rho: Rho
    rho1: Rho
    rho2: Rho
    rho3: Rho
    quantile_days: int

    @classmethod
    def from_split(
        cls, rho: float, measurement: float, quantile: float, svt: float, quantile_days: int
    ) -> BudgetSplit:
        total = Rho.of(rho)
        shares = [_exact(measurement), _exact(quantile), _exact(svt)]
        if sum(shares) > 1:
            raise ValueError(f"budget shares sum to {float(sum(shares))} > 1")
        if quantile_days < 1:
            raise ValueError("quantile_days must be >= 1")
        return cls(
            rho=total,
            rho1=total * shares[0],
            rho2=total * shares[1] / quantile_days,
            rho3=total * shares[2],
            quantile_days=quantile_days,
        )

    @property
    def total(self) -> Rho:
        """ρ1 + l·ρ2 + ρ3: what the campaign spends if it runs to the end (never more than ρ)."""
        return self.rho1 + self.rho2 * self.quantile_days + self.rho3

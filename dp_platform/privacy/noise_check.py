"""The check every draw passes before anything is drawn: the exact OpenDP measurement the draw
applies, its privacy map at the declared sensitivity, and the refusal above the declared
allotment (:class:`AllotmentExceeded`, nothing drawn).

:mod:`dp_platform.privacy.noise` (the only module that draws) runs it in its base classes, so
every source, seeded test sources included, is checked as production is; the table of methods
and measurements, the slack and the grid are explained there.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from typing import TYPE_CHECKING, Literal

from dp_platform.privacy.accounting import Rho

if TYPE_CHECKING:
    from opendp.mod import Measurement

__all__ = [
    "GRID_MARGIN_BITS",
    "SLACK",
    "AllotmentExceeded",
    "Amount",
    "Draw",
    "Kind",
    "bounded_range_allotment",
    "declared_amount",
    "declared_sensitivity",
    "float_domain",
    "grid_k",
    "opendp_prelude",
    "privacy_loss",
    "refuse_above",
]

SLACK = 1e-12  # relative room for float rounding between a declared allotment and the map
GRID_MARGIN_BITS = 46  # the grid's rounding adds at most 2^-46 of the declared sensitivity
_FINEST_K = -1074  # the smallest subnormal double: no finer grid exists

Amount = Rho | Fraction | float | int
"""A declared allotment: ρ (a :class:`Rho`, a Fraction or a float) or ε (a float)."""

Kind = Literal[
    "gaussian",
    "laplace",
    "gumbel_max",
    "exponential_max",
    "discrete_laplace",
    "discrete_gaussian",
]

_DESCRIPTION: dict[str, str] = {
    "gaussian": "Gaussian mechanism",
    "laplace": "Laplace mechanism",
    "gumbel_max": "exponential mechanism (Gumbel report-noisy-max)",
    "exponential_max": "report-noisy-max with exponential noise",
    "discrete_laplace": "discrete Laplace mechanism",
    "discrete_gaussian": "discrete Gaussian mechanism",
}


class AllotmentExceeded(ValueError):
    """A draw whose loss by OpenDP's privacy map is above what its caller declared.

    Raised before anything is drawn. The message names the mechanism, the map's loss and the
    allotment only: privacy parameters, never data.
    """


# -- OpenDP measurements and their maps ----------------------------------------------------


@lru_cache(maxsize=1)
def opendp_prelude():  # type: ignore[no-untyped-def]
    import opendp.prelude as dp

    dp.enable_features("contrib")
    return dp


@lru_cache(maxsize=64)
def float_domain(size: int | None):  # type: ignore[no-untyped-def]
    dp = opendp_prelude()
    return dp.vector_domain(dp.atom_domain(T=float, nan=False), size=size)


def grid_k(sensitivity: float, scale: float, spread: float) -> int:
    """The coarsest grid exponent k with spread·2^k ≤ 2^−46·Δ (the rounding OpenDP adds to the
    sensitivity: spread = √n in ℓ2, n in ℓ1); from the scale instead when Δ = 0."""
    reference = sensitivity if sensitivity > 0 else scale
    _, exponent = math.frexp(reference / spread)  # reference/spread ∈ [2^(e−1), 2^e)
    return max(exponent - 1 - GRID_MARGIN_BITS, _FINEST_K)


@lru_cache(maxsize=1024)
def _measurement(
    kind: Kind, scale: float, size: int | None, k: int | None, monotonic: bool
) -> Measurement:
    """The exact OpenDP measurement of one draw (cached: daily scales repeat)."""
    dp = opendp_prelude()
    if kind == "gaussian":
        domain = float_domain(size)
        return dp.m.make_gaussian(domain, dp.l2_distance(T=float), scale=scale, k=k)
    if kind == "laplace":
        domain = float_domain(size)
        return dp.m.make_laplace(domain, dp.l1_distance(T=float), scale=scale, k=k)
    if kind == "gumbel_max":
        metric = dp.linf_distance(T=float)
        return dp.m.make_noisy_max(
            float_domain(None), metric, dp.zero_concentrated_divergence(), scale=scale
        )
    if kind == "exponential_max":
        metric = dp.linf_distance(T=float, monotonic=monotonic)
        return dp.m.make_noisy_max(float_domain(None), metric, dp.max_divergence(), scale=scale)
    integers = dp.vector_domain(dp.atom_domain(T="i64"))
    if kind == "discrete_laplace":
        return dp.m.make_laplace(integers, dp.l1_distance(T=float), scale=scale)
    if kind == "discrete_gaussian":
        return dp.m.make_gaussian(integers, dp.l2_distance(T=float), scale=scale)
    raise ValueError(f"unknown mechanism kind {kind!r}")


@lru_cache(maxsize=4096)
def _mapped(
    kind: Kind, scale: float, size: int | None, k: int | None, monotonic: bool, sensitivity: float
) -> float:
    return float(_measurement(kind, scale, size, k, monotonic).map(sensitivity))


def privacy_loss(
    kind: Kind,
    scale: float,
    sensitivity: float,
    *,
    size: int | None = None,
    k: int | None = None,
    monotonic: bool = False,
) -> float:
    """OpenDP's map of the measurement at ``sensitivity``: ρ for zCDP kinds, ε for pure ones.

    Scale 0 is no noise: free at sensitivity 0, infinitely expensive otherwise.
    """
    if scale == 0:
        return 0.0 if sensitivity == 0 else math.inf
    return _mapped(kind, scale, size, k, monotonic, sensitivity)


def declared_amount(value: Amount, name: str) -> Fraction:
    if isinstance(value, Rho):
        return value.value
    if isinstance(value, Fraction | int):
        amount = Fraction(value)
    else:
        number = float(value)
        if not math.isfinite(number):
            raise ValueError(f"{name} must be finite, got {value!r}")
        amount = Fraction(number)
    if amount < 0:
        raise ValueError(f"{name} must be >= 0, got {float(amount)!r}")
    return amount


def declared_sensitivity(value: float, name: str) -> float:
    number = float(value)
    if not (number >= 0 and math.isfinite(number)):
        raise ValueError(f"{name} must be finite and >= 0, got {value!r}")
    return number


def refuse_above(
    kind: Kind, loss: float, allotment: Fraction, unit: str, allotment_name: str | None = None
) -> None:
    """Raise unless loss ≤ allotment·(1 + SLACK); the message carries no data value."""
    if math.isinf(loss) or Fraction(loss) > allotment * (1 + Fraction(SLACK)):
        raise AllotmentExceeded(
            f"{_DESCRIPTION[kind]}: OpenDP's privacy map gives {unit} = {loss:.17g} at the "
            f"declared sensitivity, above the declared allotment {allotment_name or unit} = "
            f"{float(allotment):.17g}; nothing was drawn"
        )


@dataclass(frozen=True)
class Draw:
    """A draw the check has allowed: its scale and the OpenDP measurement the map was asked of
    (``None`` at scale 0, where nothing is drawn)."""

    scale: float
    kind: Kind
    size: int | None = None
    k: int | None = None
    monotonic: bool = False

    @property
    def measurement(self) -> Measurement:
        return _measurement(self.kind, self.scale, self.size, self.k, self.monotonic)


def bounded_range_allotment(epsilon: Amount) -> Fraction:
    """ε of an exponential mechanism as the ρ its map is compared with: ε²/8 (bounded range)."""
    eps = declared_amount(epsilon, "epsilon")
    return eps * eps / 8

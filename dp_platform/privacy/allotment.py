"""What one draw may cost, as the registered plan states it: the declaration the sampler checks.

A mechanism computes its noise scale from its own code (σ_i, a Laplace scale); the sampler
(:mod:`dp_platform.privacy.noise`) asks OpenDP's privacy map what a draw at that scale costs at
a declared sensitivity, and refuses it if the map says more than the declared loss. That check
is only worth something if the declaration does not come from the same computation as the
scale: a σ derived from the declared loss would always fit it, and a sensitivity understated
in the code that sizes σ would be understated in the declaration too.

So each mechanism's ``declare`` restates the draw's (sensitivity, loss) from the *registered*
plan and configuration — the privacy unit and adjacency, the stored bounds (DP outputs) and
the ledger's figure for the draw — without calling the functions that size its noise. A σ or
sensitivity bug in those functions then makes the map exceed the declaration and the draw is
refused (``AllotmentExceeded``) before anything is drawn; tests/test_declarations.py injects
both into every mechanism. What it cannot catch: a bug shared by the plan record and the
declaration (the registered plan itself is trusted: it is audited before day 1, ``dp-platform
plan``), and a data path that breaks the declared sensitivity (a clip that lets a user exceed
r_i): that is what the warehouse brute-force tests cover.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

from dp_platform.privacy.accounting import Rho

__all__ = ["Allotment", "float_above", "root_above"]


def float_above(value: Fraction) -> float:
    """The smallest float ≥ ``value`` (a declared sensitivity may round up, never down)."""
    approx = float(value)
    return approx if Fraction(approx) >= value else math.nextafter(approx, math.inf)


def root_above(squared: Fraction) -> float:
    """The smallest float whose square is ≥ ``squared``: an ℓ2 sensitivity √(Δ²) declared
    never below the exact root (libm's √ may round down)."""
    root = math.sqrt(squared)
    while Fraction(root) ** 2 < squared:
        root = math.nextafter(root, math.inf)
    return root


@dataclass(frozen=True)
class Allotment:
    """One draw's declaration: its sensitivity in the mechanism's metric (ℓ2 for Gaussian
    noise, ℓ1 for Laplace noise) and the loss it may cost (ρ for zCDP draws, ε for pure-DP
    ones), both from the registered plan."""

    sensitivity: float
    loss: Fraction

    def __post_init__(self) -> None:
        if not (self.sensitivity >= 0 and math.isfinite(self.sensitivity)):
            raise ValueError(
                f"a declared sensitivity must be finite and >= 0: {self.sensitivity!r}"
            )
        if isinstance(self.loss, Rho):
            object.__setattr__(self, "loss", self.loss.value)
        if not isinstance(self.loss, Fraction) or self.loss < 0:
            raise ValueError(f"a declared loss must be an exact amount >= 0: {self.loss!r}")

    @classmethod
    def exact(cls, sensitivity: Fraction, loss: Fraction) -> Allotment:
        """From an exact sensitivity, rounded up to the float the sampler takes."""
        return cls(float_above(sensitivity), loss)

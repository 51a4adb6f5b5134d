"""What a count of correct guesses proves: confidence bounds and the privacy they refute.

A zCDP claim is a claim about hypothesis tests. If a mechanism is ρ-zCDP for a user, then for
any test that reads its output and says "in" or "out" of that user, with true-positive rate p
(user in) and false-positive rate q (user out), the outcome is a post-processing of the output,
so the Rényi divergence of the two Bernoulli outcomes is bounded like the mechanism's
(data-processing inequality): D_α(Bern(p) ‖ Bern(q)) ≤ ρ·α for every order α > 1, and the same
with p and q swapped (both neighbours of a pair are covered). An audit that measured p and q
therefore proves the mechanism is *not* ρ-zCDP for any

    ρ < sup_α max(D_α(Bern(p) ‖ Bern(q)), D_α(Bern(q) ‖ Bern(p))) / α,

which is its lower bound on ρ. With p and q known only from counts, the bound uses a one-sided
Clopper–Pearson lower limit of p and upper limit of q (each at (1 − confidence)/2, so both hold
together at the stated confidence): the divergence only grows as the two move apart, so the
bound holds at that confidence.

Why ρ and not ε at the campaign's δ: ρ = 1 means (ε ≈ 7.8, δ = 10⁻⁶)-DP, an ε that only the tails
of the noise reach — a test would need a false-positive rate near e^(−7.8)·p, i.e. millions of
trials with no false positive. The (ε, δ) lower bound ln((p − δ)/q) is reported too, but a finite
audit of a correct or a subtly broken mechanism cannot reach the claimed ε; it can reach ρ
(docs/privacy.md, "The empirical audit").
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from scipy.optimize import minimize_scalar
from scipy.stats import beta

__all__ = [
    "GuessCounts",
    "bernoulli_renyi",
    "clopper_pearson_lower",
    "clopper_pearson_upper",
    "epsilon_lower_bound",
    "rho_lower_bound",
    "rho_refuted_by_rates",
]


@dataclass(frozen=True)
class GuessCounts:
    """One test's outcomes: how many canaries were in and out, and how many of each it called in."""

    called_in_when_in: int
    included: int
    called_in_when_out: int
    excluded: int

    def __post_init__(self) -> None:
        if not (0 <= self.called_in_when_in <= self.included):
            raise ValueError("called_in_when_in must be within 0..included")
        if not (0 <= self.called_in_when_out <= self.excluded):
            raise ValueError("called_in_when_out must be within 0..excluded")


def clopper_pearson_lower(successes: int, trials: int, tail: float) -> float:
    """One-sided lower confidence limit of a binomial rate (exact; P[limit > rate] ≤ tail)."""
    if trials <= 0 or successes <= 0:
        return 0.0
    return float(beta.ppf(tail, successes, trials - successes + 1))


def clopper_pearson_upper(successes: int, trials: int, tail: float) -> float:
    """One-sided upper confidence limit of a binomial rate (exact; P[limit < rate] ≤ tail)."""
    if trials <= 0 or successes >= trials:
        return 1.0
    return float(beta.ppf(1.0 - tail, successes + 1, trials - successes))


def bernoulli_renyi(p: float, q: float, alpha: float) -> float:
    """D_α(Bern(p) ‖ Bern(q)) in nats, α > 1 (infinite when q is 0 or 1 and p is not)."""
    terms = []
    for a, b in ((p, q), (1.0 - p, 1.0 - q)):
        if a <= 0.0:
            continue
        if b <= 0.0:
            return math.inf
        terms.append(alpha * math.log(a) + (1.0 - alpha) * math.log(b))
    peak = max(terms)
    return (peak + math.log(sum(math.exp(t - peak) for t in terms))) / (alpha - 1.0)


def rho_refuted_by_rates(p: float, q: float) -> float:
    """The largest ρ that rates p (in) and q (out) of one test refute: sup over α of
    max(D_α(p‖q), D_α(q‖p))/α (0 when p ≤ q: the test did no better than chance)."""
    if p <= q:
        return 0.0
    if q <= 0.0 or p >= 1.0:
        return math.inf

    def worst(log_excess: float) -> float:
        alpha = 1.0 + math.exp(log_excess)
        return -max(bernoulli_renyi(p, q, alpha), bernoulli_renyi(q, p, alpha)) / alpha

    result = minimize_scalar(worst, bounds=(-12.0, 8.0), method="bounded")
    return max(0.0, -float(result.fun))


def rho_lower_bound(counts: GuessCounts, confidence: float) -> float:
    """ρ that the counts refute at ``confidence``: the rates' Clopper–Pearson limits, each at
    (1 − confidence)/2, put into :func:`rho_refuted_by_rates`."""
    return rho_refuted_by_rates(*_limits(counts, confidence))


def epsilon_lower_bound(counts: GuessCounts, confidence: float, delta: float) -> float:
    """ε that the counts refute at δ and ``confidence``: (ε, δ)-DP needs p ≤ e^ε·q + δ and
    1 − q ≤ e^ε·(1 − p) + δ, so ε ≥ the larger of ln((p − δ)/q) and ln((1 − q − δ)/(1 − p))."""
    p, q = _limits(counts, confidence)
    candidates = [0.0]
    if p - delta > 0 and q > 0:
        candidates.append(math.log((p - delta) / q))
    if 1 - q - delta > 0 and p < 1:
        candidates.append(math.log((1 - q - delta) / (1 - p)))
    return max(candidates)


def _limits(counts: GuessCounts, confidence: float) -> tuple[float, float]:
    """The lower limit of the rate in and the upper limit of the rate out, each at
    (1 − confidence)/2: both hold together at ``confidence``."""
    if not 0.0 < confidence < 1.0:
        raise ValueError("confidence must be in (0, 1)")
    tail = (1.0 - confidence) / 2.0
    return (
        clopper_pearson_lower(counts.called_in_when_in, counts.included, tail),
        clopper_pearson_upper(counts.called_in_when_out, counts.excluded, tail),
    )

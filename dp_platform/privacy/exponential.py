"""The exponential mechanism and report-noisy-max over a finite set of candidates.

Privacy unit and adjacency are the caller's: a *score function* s(y; D) with a stated
sensitivity Δ = max over candidates y and neighbouring D ~ D′ of |s(y; D) − s(y; D′)|.

* :func:`exponential_mechanism` draws y with P(y) ∝ exp(ε·s(y)/(2Δ)). ε-DP (McSherry–Talwar;
  Wu, lecture 6, Thm 1.3) and, being ε-bounded-range, ε²/8-zCDP (Cesar & Rogers 2021); the ledger
  charges :func:`exponential_mechanism_rho` = min(ε²/8, ε·tanh(ε/2)).
* :func:`report_noisy_max` returns argmax of s(y) + Exp(2Δ/ε) (Exp(Δ/ε) when every score moves
  in the same direction between neighbours, e.g. counts under add/remove): report-noisy-max
  with exponential noise, which has the law of permute-and-flip (Ding, Kifer et al., "The
  permute-and-flip mechanism is identical to report-noisy-max with exponential noise"; McKenna
  & Sheldon, "Permute-and-flip"). ε-DP; it is *not* known to be bounded-range, so it costs
  ε·tanh(ε/2) (:func:`report_noisy_max_rho`).
* :func:`grouped_exponential` runs many independent exponential mechanisms at once (one per
  group, e.g. one per conversion), vectorised: the exponential race argmin_i E_i·e^{−a_i},
  E_i ~ Exp(1) i.i.d., picks i with probability e^{a_i}/Σ_j e^{a_j} — the same law as Gumbel-max.

Sampling is secure: the single-draw mechanisms use the NoiseSource's exact OpenDP Gumbel and
exponential-noise samplers (``make_noisy_max``), each draw checked against OpenDP's map at the
declared (Δ, ε); the race's Exp(1) variables come from :func:`dp_platform.privacy.discrete.
exponentials` (OpenDP Laplace magnitudes), whose caller declares the race's (Δ, ε) too. The
output is an index, not a noisy real, so the floating-point attacks on textbook Laplace do not
apply; the float arithmetic of the scores moves each probability by a relative O(2⁻⁵²) only.

Utility (Wu, lecture 6, Prop. 1.4): P(s(Y) < s_max − 2Δ(ln d + t)/ε) ≤ e^{−t} and
E[s(Y)] ≥ s_max − 2Δ(ln d + 1)/ε, for d candidates (:func:`utility_gap`).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from dp_platform.privacy.accounting import exponential_mechanism_rho, pure_dp_rho_tanh
from dp_platform.privacy.noise import NoiseSource, resolve

__all__ = [
    "exponential_mechanism",
    "exponential_mechanism_rho",
    "grouped_exponential",
    "report_noisy_max",
    "report_noisy_max_rho",
    "utility_gap",
]


def _check(epsilon: float, sensitivity: float) -> None:
    if not (epsilon > 0 and math.isfinite(epsilon)):
        raise ValueError(f"epsilon must be finite and > 0, got {epsilon!r}")
    if not (sensitivity > 0 and math.isfinite(sensitivity)):
        raise ValueError(f"sensitivity must be finite and > 0, got {sensitivity!r}")


def _scores(scores: np.ndarray | list[float]) -> np.ndarray:
    vector = np.asarray(scores, dtype=np.float64)
    if vector.ndim != 1 or vector.size == 0:
        raise ValueError("scores must be a non-empty 1-d array")
    if not np.all(np.isfinite(vector)):
        raise ValueError("scores must be finite")
    return vector


def exponential_mechanism(
    scores: np.ndarray | list[float],
    *,
    epsilon: float,
    sensitivity: float,
    noise: NoiseSource | None = None,
) -> int:
    """Index y drawn with P(y) ∝ exp(ε·s(y)/(2Δ)); ε-DP and ε²/8-zCDP if s is Δ-sensitive."""
    _check(epsilon, sensitivity)
    # Gumbel-max with Gumbel scale 2Δ/ε has exactly this law (OpenDP's exact sampler).
    return resolve(noise).exponential_index(
        _scores(scores), 2.0 * sensitivity / epsilon, sensitivity=sensitivity, epsilon=epsilon
    )


def report_noisy_max(
    scores: np.ndarray | list[float],
    *,
    epsilon: float,
    sensitivity: float,
    monotonic: bool = False,
    noise: NoiseSource | None = None,
) -> int:
    """argmax_y s(y) + Exp(2Δ/ε) (Exp(Δ/ε) if ``monotonic``); ε-DP, costs ε·tanh(ε/2) zCDP.

    ``monotonic`` is only sound when, for every pair of neighbours, all scores move in the same
    direction (counting queries under add/remove); the caller asserts it.
    """
    _check(epsilon, sensitivity)
    vector = _scores(scores)
    scale = (1.0 if monotonic else 2.0) * sensitivity / epsilon
    return resolve(noise).noisy_max_index(
        vector, scale, sensitivity=sensitivity, epsilon=epsilon, monotonic=monotonic
    )


def report_noisy_max_rho(epsilon: float) -> Fraction:
    """zCDP cost of :func:`report_noisy_max`: a generic ε-DP mechanism, ε·tanh(ε/2)."""
    return pure_dp_rho_tanh(epsilon)


def utility_gap(candidates: int, *, epsilon: float, sensitivity: float, t: float) -> float:
    """2Δ(ln d + t)/ε: the exponential mechanism falls this far below s_max w.p. ≤ e^{−t}."""
    _check(epsilon, sensitivity)
    if candidates < 1:
        raise ValueError("candidates must be >= 1")
    return 2.0 * sensitivity * (math.log(candidates) + t) / epsilon


def grouped_exponential(
    group_starts: np.ndarray,
    exponents: np.ndarray,
    exponentials: np.ndarray,
) -> np.ndarray:
    """For each group of consecutive candidates, the index of the one picked w.p. ∝ e^{a_i}.

    ``group_starts`` are the offsets of the groups in ``exponents`` (sorted, first = 0, every
    group non-empty); ``exponents`` are a_i = ε·s(i)/(2Δ); ``exponentials`` are i.i.d. Exp(1)
    draws, one per candidate, from a secure source. Returns global indices, one per group. The
    exponential race — argmin of ln E_i − a_i within a group — is exact for any shift of the
    a_i inside a group, so no normalisation (and no overflow) is needed.
    """
    starts = np.asarray(group_starts, dtype=np.int64)
    a = np.asarray(exponents, dtype=np.float64)
    e = np.asarray(exponentials, dtype=np.float64)
    if a.shape != e.shape or a.ndim != 1:
        raise ValueError("exponents and exponentials must be 1-d arrays of the same length")
    if starts.size == 0:
        return np.zeros(0, dtype=np.int64)
    if starts[0] != 0 or np.any(np.diff(starts) <= 0) or starts[-1] >= a.size:
        raise ValueError("group_starts must start at 0, increase strictly and stay in range")
    if np.any(e <= 0) or not np.all(np.isfinite(a)):
        raise ValueError("exponentials must be > 0 and exponents finite")
    keys = np.log(e) - a
    group = np.repeat(np.arange(starts.size), np.diff(np.append(starts, a.size)))
    order = np.lexsort((keys, group))  # by group, then key: the first of each group wins
    return order[starts]

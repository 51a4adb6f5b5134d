"""The campaign total with AdsBPC+'s remainder added: post-processing of released values only.

Where AdsBPC+'s clipping cuts heavy users, every publisher's answer loses them the same way and
the campaign total (the answers summed over publishers) adds those biases up. A plan with a
remainder (``remainder_share``) also releases X̃_t = X_t + N(0, σ_R²) a day, X_t =
Σ_u min(c_ut − k_ut, E) what the clipping left out capped at E per user (docs/privacy.md, "The
remainder"). For a query q, Σ_t q_t X̃_t is unbiased for Σ_t q_t X_t.

Adding it in full removes that bias up to E a user and day but adds its noise, which where
little is cut (few users, or light ones) costs more than it corrects. So the total adds q·X̂,
X̂ an estimate of the days released by the query's end, k of them, in two parts:

- **the level**, the days' mean m̃ (noise σ_R²/k), kept by the one-number rule
  max(0, 1 − (σ_R²/k)/m̃²)·m̃ (0 when m̃ ≤ 0: X_t ≥ 0) — close to m̃ where the days stand,
  together, above their noise, close to 0 where they do not;
- **the days' differences from it**, X̃ − m̃, shrunk towards 0 by the positive-part
  James–Stein factor max(0, 1 − (k − 3)σ_R²/‖X̃ − m̃‖²) (Lindley's estimator towards the mean,
  in Efron and Morris, "Stein's estimation rule and its competitors — an empirical Bayes
  approach", JASA 1973).

So X̂ = level + factor·(X̃ − m̃). Why two parts: a remainder that is steady from day to day
(heavy users clipped every day) is mostly level, and the level is read over k days at σ_R/√k
where each day is read at σ_R. James–Stein on the days themselves (X̂ = max(0, 1 −
(k − 2)σ_R²/‖X̃‖²)·X̃, the rule before 2026-11-29) shrinks by the days' signal-to-noise one by
one: on 20 000 users a day × 20 Zipf publishers (E = 2) X_t ≈ 6 a day against σ_R ≈ 35, so
it kept about 12 % of the remainder, while the 31 days' mean stands about one of its standard
deviations clear and the one-number rule keeps much of it when it reads high. With k < 4 the
one-number rule on R̃ = q·X̃ stands in. Either reads only X̃ and the public σ_R, so the total
is post-processing and costs nothing. Measured in docs/results.md.
"""

from __future__ import annotations

import numpy as np

__all__ = ["days_estimate", "remainder_answers", "remainder_std", "shrunk", "total_additions"]


def remainder_answers(queries: np.ndarray, remainders: np.ndarray) -> np.ndarray:
    """R̃_q = Σ_t q_t X̃_t for each query (rows of ``queries``, over the days released)."""
    days = np.asarray(remainders).shape[-1]
    return np.asarray(remainders, np.float64) @ np.asarray(queries, np.float64)[:, :days].T


def remainder_std(queries: np.ndarray, sigma: float, days: int) -> np.ndarray:
    """The standard deviation of each R̃_q: σ_R·‖q‖₂ over the days it reads."""
    return float(sigma) * np.sqrt((np.asarray(queries, dtype=np.float64)[:, :days] ** 2).sum(1))


def shrunk(answers: np.ndarray, std: np.ndarray) -> np.ndarray:
    """max(0, 1 − sd²/R̃²)·R̃ where R̃ > 0, else 0: the one-number rule (module doc)."""
    answers = np.asarray(answers, dtype=np.float64)
    std = np.asarray(std, dtype=np.float64)
    positive = answers > 0
    safe = np.where(positive, answers, 1.0)
    factor = np.where(positive, np.maximum(0.0, 1.0 - std**2 / safe**2), 0.0)
    return factor * answers


def days_estimate(remainders: np.ndarray, sigma: float) -> np.ndarray:
    """X̂ of days 1..k (k ≥ 4, the last axis): the level by the one-number rule plus the days'
    differences from it by James–Stein (module doc)."""
    days = np.asarray(remainders, dtype=np.float64)
    k = days.shape[-1]
    if k < 4:
        raise ValueError("the two-part estimate needs k >= 4 days")
    mean = days.mean(axis=-1, keepdims=True)
    level = shrunk(mean, np.full(mean.shape, sigma / np.sqrt(k)))
    spread = days - mean
    power = (spread**2).sum(axis=-1, keepdims=True)
    noise = np.full(power.shape, (k - 3) * sigma**2)
    ratio = np.divide(noise, power, out=np.ones_like(power), where=power > noise)
    return level + (1.0 - ratio) * spread  # positive part: 0 where ‖X̃ − m̃‖² ≤ (k − 3)σ²


def total_additions(queries: np.ndarray, remainders: np.ndarray, sigma: float) -> np.ndarray:
    """(..., m) what each query's total adds to its answers summed over publishers: q·X̂, X̂
    the estimate of the days 1..k the query has ended by (module doc: the level by the
    one-number rule, the differences from it by James–Stein).
    ``remainders`` (..., n): the released X̃ of days 1..n (leading axes: independent draws)."""
    x = np.asarray(remainders, dtype=np.float64)
    n = x.shape[-1]
    rows = np.asarray(queries, dtype=np.float64)[:, :n]
    linear = remainder_answers(rows, x)
    std = remainder_std(rows, sigma, n)
    out = np.empty_like(linear)
    for j, row in enumerate(rows):
        read = np.flatnonzero(row)
        k = int(read[-1]) + 1 if read.size else 1
        if k < 4:
            out[..., j] = shrunk(linear[..., j], np.full(linear[..., j].shape, std[j]))
            continue
        out[..., j] = days_estimate(x[..., :k], sigma) @ row[:k]
    return out

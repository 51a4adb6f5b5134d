"""The campaign total with AdsBPC+'s remainder added: post-processing of released values only.

Where AdsBPC+'s clipping cuts heavy users, every publisher's answer loses them the same way and
the campaign total (the answers summed over publishers) adds those biases up. A plan with a
remainder (``remainder_share``) also releases X̃_t = X_t + N(0, σ_R²) a day, X_t =
Σ_u min(c_ut − k_ut, E) what the clipping left out capped at E per user (docs/privacy.md, "The
remainder"). For a query q, Σ_t q_t X̃_t is unbiased for Σ_t q_t X_t.

Adding it in full removes that bias up to E a user and day but adds its noise, which where
little is cut (few users, or light ones) costs more than it corrects. So the total adds q·X̂,
X̂ the positive-part James–Stein estimate of the days released by the query's end, k of them:
X̂ = max(0, 1 − (k − 2)σ_R²/‖X̃_{1..k}‖²)·X̃ — close to X̃ where the days stand far above their
noise, close to 0 where they do not (James and Stein, "Estimation with quadratic loss", 1961;
for k ≥ 3 its total squared error over the days is below X̃'s whatever X is). With k < 3 the
one-number rule max(0, 1 − sd²/R̃²)·R̃ for R̃ = q·X̃ > 0 (else 0) stands in. Either reads only
X̃ and the public σ_R, so the total is post-processing and costs nothing. Measured in
docs/results.md.
"""

from __future__ import annotations

import numpy as np

__all__ = ["remainder_answers", "remainder_std", "shrunk", "total_additions"]


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


def total_additions(queries: np.ndarray, remainders: np.ndarray, sigma: float) -> np.ndarray:
    """(..., m) what each query's total adds to its answers summed over publishers: q·X̂, X̂
    the James–Stein estimate of the days 1..k the query has ended by (module doc).
    ``remainders`` (..., n): the released X̃ of days 1..n (leading axes: independent draws)."""
    x = np.asarray(remainders, dtype=np.float64)
    n = x.shape[-1]
    rows = np.asarray(queries, dtype=np.float64)[:, :n]
    linear = remainder_answers(rows, x)
    std = remainder_std(rows, sigma, n)
    power = np.cumsum(x**2, axis=-1)  # ‖X̃_{1..k}‖² for k = 1..n
    out = np.empty_like(linear)
    for j, row in enumerate(rows):
        read = np.flatnonzero(row)
        k = int(read[-1]) + 1 if read.size else 1
        if k < 3:
            out[..., j] = shrunk(linear[..., j], np.full(linear[..., j].shape, std[j]))
            continue
        spread = np.maximum(power[..., k - 1], np.finfo(np.float64).tiny)
        out[..., j] = np.maximum(0.0, 1.0 - (k - 2) * sigma**2 / spread) * linear[..., j]
    return out

"""The campaign total with AdsBPC+'s remainder added: post-processing of released values only.

Where AdsBPC+'s clipping cuts heavy users, every publisher's answer loses them the same way and
the campaign total (the answers summed over publishers) adds those biases up. A plan with a
remainder (``remainder_share``) also releases X̃_t = Σ_u min(c_ut − k_ut, E) + N(0, σ_R²) a
day, what the clipping left out capped at E per user (docs/privacy.md, "The remainder"). For a
query q its answer R̃_q = Σ_t q_t X̃_t is unbiased for Σ_t q_t X_t with standard deviation
σ_R·‖q‖₂.

Adding R̃_q in full removes that bias up to E a user and day but adds its noise, which where
little is cut (few heavy users, or many users with light days) costs more than it corrects. So
the total adds R̃_q shrunk towards 0 by the positive-part James–Stein factor
max(0, 1 − sd²/R̃_q²) (and nothing where R̃_q ≤ 0: X_t ≥ 0): close to all of it where it stands
far above its noise, little of it where it does not. The factor reads only R̃_q and the public
σ_R, so the total is post-processing and costs nothing. Measured in docs/results.md ("A paced
filter, with the remainder on top").
"""

from __future__ import annotations

import numpy as np

__all__ = ["remainder_answers", "remainder_std", "shrunk"]


def remainder_answers(queries: np.ndarray, remainders: np.ndarray) -> np.ndarray:
    """R̃_q = Σ_t q_t X̃_t for each query (rows of ``queries``, over the days released)."""
    days = len(remainders)
    return np.asarray(queries, dtype=np.float64)[:, :days] @ np.asarray(remainders, np.float64)


def remainder_std(queries: np.ndarray, sigma: float, days: int) -> np.ndarray:
    """The standard deviation of each R̃_q: σ_R·‖q‖₂ over the days it reads."""
    return float(sigma) * np.sqrt((np.asarray(queries, dtype=np.float64)[:, :days] ** 2).sum(1))


def shrunk(answers: np.ndarray, std: np.ndarray) -> np.ndarray:
    """max(0, 1 − sd²/R̃²)·R̃ where R̃ > 0, else 0: what the campaign total adds (module doc)."""
    answers = np.asarray(answers, dtype=np.float64)
    std = np.asarray(std, dtype=np.float64)
    positive = answers > 0
    safe = np.where(positive, answers, 1.0)
    factor = np.where(positive, np.maximum(0.0, 1.0 - std**2 / safe**2), 0.0)
    return factor * answers

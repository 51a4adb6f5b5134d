"""Private single-touch attribution (Agarwal et al. §2): ``rule: private_last_touch``.

For each conversion at t_C with candidate touches t_1 < … < t_n (the warehouse's candidates:
same user and advertiser, inside the look-back window), the credited touch is drawn by the
exponential mechanism, P(i) ∝ exp(ε·s(i)/(2Δ)), with a score that prefers recent touches.
Times are in hours relative to the conversion (age_i = t_C − t_i ≥ 0):

* ``time``: s(i) = t_i (= −age_i + const), Δ = τ;
* ``exp_time``: s(i) = e^{t_i − t_C} = e^{−max(age_i, 0)}, Δ = 1 − e^{−τ} (reached at age 0;
  the seed's e^{t_C}(e^τ − 1), = e^τ − 1 with t_C = 0, is a looser upper bound);
* ``inverse_gap``: s(i) = −1/max(age_i, α), Δ = 1/α − 1/(α + τ), which is at most the seed's
  1/(α − τ) − 1/α whenever α > τ.

Privacy unit and adjacency (Agarwal et al. Def. 1): one touch's *time*, moved by at most τ, the set
of candidate touches fixed. Each conversion's draw is ε-DP (ε²/8-zCDP) for that unit — in fact
ε/2, since only one score moves between neighbours (tested); we keep the seed's exponent
ε·s/(2Δ) and report ε. Draws of
different conversions are independent, so a touch shared by k conversions is kε-protected.
``exp_time`` clamps age at 0 and ``inverse_gap`` at α, so the stated Δ holds for *every* pair
of times, not only under the seed's separation assumption.

This is not the user-level guarantee of the releases: those are computed from the attributed
table and stay (ρ, user)-private whatever the draws, because each conversion still credits one
touch of its own user with weight 1 (docs/validity.md) and the draws of one user's conversions
are independent of everyone else's. The ledger's ρ is unchanged; ε here is reported, not
charged.

Scale: the draw happens in the warehouse. SQL lists the candidates with a dense index; Python
draws one Exp(1) per candidate from the secure source (data-independent but for the count)
and registers them; SQL picks argmin ln E_i − ε·s(i)/(2Δ) per conversion (the exponential
race, :func:`dp_platform.privacy.exponential.grouped_exponential`). No Python loop over rows.

The race is the exponential mechanism exactly: −ln E_i is standard Gumbel, so the argmin is
argmax_i s(i) + b·G_i, report-noisy-max with Gumbel noise of scale b = 2Δ/ε. The draws declare
(b, Δ, ε) to the sampler, which checks them against OpenDP's map of that very measurement
(ρ = (2Δ/b)²/8 ≤ ε²/8) before drawing anything.
"""

from __future__ import annotations

import math
from datetime import date
from typing import TYPE_CHECKING, Literal

import numpy as np
import pandas as pd

from dp_platform.privacy.discrete import IntegerNoiseSource, exponentials

if TYPE_CHECKING:
    from dp_platform.config import CampaignConfig
    from dp_platform.warehouse.runner import SqlRunner

__all__ = [
    "Score",
    "attribute_private_last_touch",
    "race_draws",
    "race_parameters",
    "scores",
    "sensitivity",
]

Score = Literal["time", "exp_time", "inverse_gap"]


def sensitivity(score: Score, tau: float, alpha: float | None = None) -> float:
    """Δ of the score function when one touch time moves by ≤ τ (hours)."""
    if not (tau > 0 and math.isfinite(tau)):
        raise ValueError("tau must be finite and > 0")
    if score == "time":
        return tau
    if score == "exp_time":
        return -math.expm1(-tau)
    if score == "inverse_gap":
        if alpha is None or not alpha > 0:
            raise ValueError("inverse_gap needs a separation alpha > 0")
        return 1.0 / alpha - 1.0 / (alpha + tau)
    raise ValueError(f"unknown score {score!r}")


def scores(score: Score, ages: np.ndarray, alpha: float | None = None) -> np.ndarray:
    """s(i) from ages t_C − t_i in hours (shifted per conversion: the law is shift-invariant
    for ``time``; the other two are written relative to t_C as the seed does)."""
    age = np.asarray(ages, dtype=np.float64)
    if score == "time":
        return -age
    if score == "exp_time":
        return np.exp(-np.maximum(age, 0.0))
    if score == "inverse_gap":
        if alpha is None:
            raise ValueError("inverse_gap needs alpha")
        return -1.0 / np.maximum(age, alpha)
    raise ValueError(f"unknown score {score!r}")


def race_parameters(campaign: CampaignConfig) -> dict[str, float | str]:
    """The exponential race's parameters for the warehouse's SQL (either engine):
    ε/(2Δ), the score, and α (1.0 when the score has none)."""
    options = campaign.attribution.private
    delta = sensitivity(options.score, options.tau_hours, options.alpha_hours)
    return {
        "eps_half_over_delta": options.epsilon / (2.0 * delta),
        "score": options.score,
        "alpha_hours": float(options.alpha_hours or 1.0),
    }


def race_draws(
    campaign: CampaignConfig, count: int, noise: IntegerNoiseSource | None = None
) -> np.ndarray:
    """One Exp(1) per candidate for the warehouse's race (either engine), declared to the noise
    source with the race's scale, its scores' sensitivity and ε so the draw is checked."""
    options = campaign.attribution.private
    delta = sensitivity(options.score, options.tau_hours, options.alpha_hours)
    multiplier = options.epsilon / (2.0 * delta)  # the race's 1/b, as the SQL applies it
    return exponentials(
        count, noise, gumbel_scale=1.0 / multiplier, sensitivity=delta, epsilon=options.epsilon
    )


def attribute_private_last_touch(
    sql: SqlRunner,
    campaign: CampaignConfig,
    first: date,
    last: date,
    *,
    tie_room: int,
    noise: IntegerNoiseSource | None = None,
) -> int:
    """Insert the private attribution of days first..last into attributed_conversions.

    Each conversion's touch is drawn once per campaign and kept (``private_touch_choices``):
    a re-run attributes from the stored draws and draws only for conversions never drawn, so
    the attributed table is reproducible and each conversion's ε is spent once, not per run.
    Runs inside the caller's transaction with ``campaign_pubs`` set (Warehouse.attribute_days
    does both). Returns the number of candidate rows drawn for now (monitoring only).
    """
    scope = {
        "campaign": campaign.name,
        "advertiser": campaign.advertiser,
        "first": first,
        "last": last,
        "lookback_days": campaign.attribution.lookback_days,
        "tie_room": tie_room,
    }
    count = int(sql.run("attribute_private_candidates", **scope)[0][0])
    draws = race_draws(campaign, count, noise)
    frame = pd.DataFrame({"idx": np.arange(count, dtype=np.int64), "e": draws})
    sql.con.register("race_noise", frame)
    try:
        sql.run("attribute_private_select", **scope, **race_parameters(campaign))
    finally:
        sql.con.unregister("race_noise")
    return count

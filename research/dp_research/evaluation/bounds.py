"""**Non-private** "given bounds" for the synthetic runs (docs/baselines.md#given-bounds).

r_i = the q-quantile of the nonzero per-user counts on day i, read directly from the data. It
spends no privacy budget *because it is not private*: results that use it must be labelled
"given bounds (non-private)". AdsBPC's own private r (DP quantile + SVT) is the honest input.
"""

from __future__ import annotations

import numpy as np

from dp_research.baselines.contributions import Conversions, user_day_totals

__all__ = ["NON_PRIVATE_LABEL", "nonprivate_given_bounds"]

NON_PRIVATE_LABEL = "given bounds (non-private)"


def nonprivate_given_bounds(
    conversions: Conversions, n_days: int, q: float = 0.999, method: str = "inverted_cdf"
) -> np.ndarray:
    """NON-PRIVATE per-day bounds: q-quantile of each day's nonzero per-user totals.

    ``inverted_cdf`` (default) returns an observed count (the smallest v with F(v) ≥ q); any
    ``numpy.quantile`` method may be passed. A day without conversions gets r_i = 0.
    """
    if not 0 <= q <= 1:
        raise ValueError(f"q must lie in [0, 1], got {q!r}")
    days, totals = user_day_totals(conversions)
    order = np.argsort(days, kind="stable")
    days, totals = days[order], totals[order]
    edges = np.searchsorted(days, np.arange(n_days + 1))
    bounds = np.zeros(n_days)
    for day in range(n_days):  # one quantile per day, not per event
        day_totals = totals[edges[day] : edges[day + 1]]
        day_totals = day_totals[day_totals > 0]
        if day_totals.size:
            bounds[day] = np.quantile(day_totals, q, method=method)
    return bounds

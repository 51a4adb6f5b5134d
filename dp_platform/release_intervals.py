"""95 % intervals for every number of a published day: ready for ``releases``, the table and the UI.

A day's published numbers are its noisy per-publisher values (each value + N(0, s²),
s = :attr:`~dp_platform.publication.PublishedDay.value_std`: σ_i, or with cells the σ of a
publisher's count as the cells' strategy states it) and the answers of the queries ending that
day, which are linear in the released values: answer_p = Σ_i q_i·x̃_{p,i}, so its standard
error is √(Σ_i q_i² s_i²). Publishers are independent for independent cells (the total's σ is
then √P times one's); a residual strategy correlates them, and the totals' σ are the
strategy's own (:meth:`~dp_platform.publication.PublishedDay.values_total_std`,
:meth:`~dp_platform.publication.PublishedDay.answer_one_std`). All are exact — for the
noise only: the interval covers the *clipped* value the mechanism measured, not the clipping
bias (docs/slices.md#confidence-intervals).
Reads only what :class:`~dp_platform.publication.PublishedDay` holds (DP outputs and σ's).
"""

from __future__ import annotations

from typing import NotRequired, TypedDict

from dp_platform.consistency import normal_interval
from dp_platform.publication import PublishedDay

__all__ = ["DayIntervals", "day_intervals"]

Interval = dict[str, float]  # {"ci_low", "ci_high"}


class DayIntervals(TypedDict):
    level: float
    values_ci: dict[str, Interval]
    total_ci: Interval
    answers_ci: dict[str, dict[str, Interval]]
    remainder_ci: NotRequired[Interval]  # AdsBPC+'s remainder of the day, if released


def _interval(value: float, se: float, level: float) -> Interval:
    low, high = normal_interval(value, se, level)
    return {"ci_low": float(low), "ci_high": float(high)}


def day_intervals(day: PublishedDay, level: float = 0.95) -> DayIntervals:
    """``ci_low``/``ci_high`` of each value, the day's total, each answer and each answer total
    (and of the day's remainder, where the plan releases one).

    Shaped to sit next to :meth:`PublishedDay.to_json`: ``values_ci`` (publisher → interval),
    ``total_ci``, ``answers_ci`` (query → publisher → interval, plus ``"total"``).
    """
    values = {p: _interval(v, day.value_std, level) for p, v in day.values.items()}
    total = _interval(sum(day.values.values()), day.values_total_std(), level)
    answers: dict[str, dict[str, Interval]] = {}
    for query, per_publisher in day.answers.items():
        total_se = day.answer_std[query]
        one_se = day.answer_one_std(query)
        answers[query] = {p: _interval(v, one_se, level) for p, v in per_publisher.items()}
        answers[query]["total"] = _interval(sum(per_publisher.values()), total_se, level)
    intervals: DayIntervals = {
        "level": level,
        "values_ci": values,
        "total_ci": total,
        "answers_ci": answers,
    }
    if day.remainder is not None and day.remainder_std is not None:
        intervals["remainder_ci"] = _interval(day.remainder, day.remainder_std, level)
    return intervals

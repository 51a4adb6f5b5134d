"""AdsBPC+ in experiments: the conversion rows the individual filter needs, and one repeat.

AdsBPC's :class:`~.prepared.PreparedData` keeps only per-publisher rank tensors; the filter needs
to know *whose* conversion a row is, because each user's cut depends on their own running spend.
So this keeps, per conversion row sorted by (day, user, time, row): user, publisher, rank in the
user's day, how many earlier conversions of that user-day went to the same publisher (j), and
‖C‖² of the user's earlier conversions of the day (Σ (2j + 1): unit weights, one publisher per
row, as the paper's datasets are attributed). All of it is bound-independent, computed once with
two sorts; a day of a repeat is then a handful of vectorised passes over that day's rows
(:func:`dp_platform.privacy.filter.clip_unit_rows`) — no Python loop over users or events.

The repeat runs the production code of :mod:`dp_platform.mechanisms.adsbpc_plus` (``choose_bound``,
``measure``) with the data access done here; evaluation only, seeded (:class:`SeededNoise`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dp_platform.clipping import count_fraction
from dp_platform.events.model import MS_PER_DAY, ConversionSet
from dp_platform.mechanisms.adsbpc_plus import (
    PROFILE_BINS,
    PlusPlan,
    PlusState,
    choose_bound,
    measure,
    profile_bins,
    profile_factors,
)
from dp_platform.privacy.filter import clip_unit_rows, remaining
from dp_platform.privacy.noise import NoiseSource

__all__ = ["PlusData", "PlusRun", "filter_day", "prepare_plus", "run_plus"]


def _ranks(new_group: np.ndarray) -> np.ndarray:
    starts = np.flatnonzero(new_group)
    sizes = np.diff(np.append(starts, new_group.size))
    return np.arange(new_group.size, dtype=np.int64) - np.repeat(starts, sizes)


def _starts(key: np.ndarray) -> np.ndarray:
    mask = np.empty(key.size, dtype=bool)
    mask[0] = True
    np.not_equal(key[1:], key[:-1], out=mask[1:])
    return mask


@dataclass(frozen=True, eq=False)
class PlusData:
    """Bound-independent row arrays (read-only), rows of day d at ``day_starts[d]:[d+1]``."""

    n_users: int
    n_publishers: int
    n_days: int
    day_starts: np.ndarray
    user: np.ndarray
    publisher: np.ndarray
    rank: np.ndarray
    same_before: np.ndarray
    sq_before: np.ndarray
    histograms: np.ndarray  # (n × (K+1)) users with exactly c conversions on day d

    def rows(self, day: int) -> slice:
        return slice(int(self.day_starts[day]), int(self.day_starts[day + 1]))


def prepare_plus(conversions: ConversionSet) -> PlusData:
    """Sort once by (day, user, time, row) and once more by publisher inside it; see module."""
    size = conversions.n_conversions
    if size == 0:
        raise ValueError("the dataset has no conversions")
    users, n, pubs = conversions.n_users, conversions.n_days, conversions.n_publishers
    group = np.asarray(conversions.day, dtype=np.int64) * users + conversions.user
    time_ms = np.asarray(conversions.time_ms, dtype=np.int64)
    order = np.argsort(group * MS_PER_DAY + time_ms, kind="stable")
    by_pub = np.argsort(
        (group * pubs + conversions.publisher) * MS_PER_DAY + time_ms, kind="stable"
    )
    del time_ms
    same = np.empty(size, dtype=np.int32)
    key = group[by_pub] * pubs + np.asarray(conversions.publisher, dtype=np.int64)[by_pub]
    same[by_pub] = _ranks(_starts(key))
    del key, by_pub
    group = group[order]
    new_group = _starts(group)
    rank = _ranks(new_group).astype(np.int32)
    same = same[order]
    increment = 2 * same.astype(np.int64) + 1
    running = np.cumsum(increment) - increment
    first = np.flatnonzero(new_group)
    sq_before = (running - np.repeat(running[first], np.diff(np.append(first, size)))).astype(
        np.int32
    )
    del running, increment
    day = group // users
    day_starts = np.searchsorted(day, np.arange(n + 1), side="left")
    starts = np.flatnonzero(new_group)
    sizes = np.diff(np.append(starts, size))
    slots = int(sizes.max())
    histograms = np.bincount(day[starts] * (slots + 1) + sizes, minlength=n * (slots + 1))
    return PlusData(
        n_users=users,
        n_publishers=pubs,
        n_days=n,
        day_starts=day_starts,
        user=np.asarray(conversions.user, dtype=np.int32)[order],
        publisher=np.asarray(conversions.publisher, dtype=np.int32)[order],
        rank=rank,
        same_before=same,
        sq_before=sq_before,
        histograms=histograms.reshape(n, slots + 1).astype(np.int64),
    )


@dataclass(frozen=True)
class PlusRun:
    """One repeat: per-day r_i, σ_i, ψ_i, the filtered clipped and released (P × n) matrices,
    and every user's final spend (evaluation and tests only)."""

    bounds: np.ndarray
    sigmas: np.ndarray
    scales: np.ndarray
    clipped: np.ndarray
    released: np.ndarray
    spend: np.ndarray
    day_costs: np.ndarray | None = None  # (n × users) if asked for: ‖c̄‖²/(2σ²) per day
    scale_estimate: float | None = None  # s, the profile scale chosen after day m


def filter_day(
    data: PlusData, day: int, bound: float, sigma: float, spend: np.ndarray, cap: float
) -> tuple[np.ndarray, np.ndarray]:
    """Day ``day`` (0-based) through the filter at public (r, σ): each row's kept fraction, and
    each user's cost ‖c̄_{u}‖²/(2σ²) (length n_users). Only a row's own user's spend enters."""
    rows = data.rows(day)
    user = data.user[rows]
    two_var = 2.0 * sigma**2
    allowed = two_var * remaining(cap, spend[user])
    keep, increment = clip_unit_rows(
        data.rank[rows], data.same_before[rows], data.sq_before[rows], allowed, bound
    )
    return keep, np.bincount(user, increment, minlength=data.n_users) / two_var


def run_plus(
    plan: PlusPlan, data: PlusData, noise: NoiseSource, *, keep_costs: bool = False
) -> PlusRun:
    """All n days of AdsBPC+ on ``data``: production choose_bound/measure, filter here."""
    if plan.days != data.n_days:
        raise ValueError(f"plan has {plan.days} days, data has {data.n_days}")
    cap = plan.filter_cap
    spend = np.zeros(data.n_users)
    demand = np.zeros(data.n_users)  # T_u over days 1..m (pre-filter, normalised)
    state = PlusState()
    shape = (data.n_publishers, data.n_days)
    clipped, released = np.zeros(shape), np.zeros(shape)
    costs = np.zeros((data.n_days, data.n_users)) if keep_costs else None
    m = plan.config.profile_days
    factors = profile_factors(plan)
    sigmas = []
    for day in range(data.n_days):
        rows = data.rows(day)
        profile = None
        if plan.needs_profile(day + 1):
            active = demand[demand > 0]
            profile = np.bincount(profile_bins(active, plan.config.cap), minlength=PROFILE_BINS)
        choice, state = choose_bound(
            plan,
            state,
            data.histograms[day],
            publishers=data.n_publishers,
            profile=profile,
            noise=noise,
        )
        user, rank, same = data.user[rows], data.rank[rows], data.same_before[rows]
        keep, cost = filter_day(data, day, choice.bound, choice.sigma, spend, cap)
        clipped[:, day] = np.bincount(data.publisher[rows], keep, minlength=data.n_publishers)
        spend += cost
        if costs is not None:
            costs[day] = cost
        if day < m:  # T_u = Σ_i φ_i ‖clip_{r_i}(c_{u,i})‖², φ_i = w_i/W_m (as in SQL)
            whole = count_fraction(rank, choice.bound)
            norms = np.bincount(user, whole * (2.0 * same + whole), minlength=data.n_users)
            demand += factors[day] * norms
        released[:, day] = measure(plan, choice, clipped[:, day], noise=noise).values
        sigmas.append(choice.sigma)
    return PlusRun(
        bounds=np.array(state.bounds),
        sigmas=np.array(sigmas),
        scales=np.array(state.scales),
        clipped=clipped,
        released=released,
        spend=spend,
        day_costs=costs,
        scale_estimate=state.scale_estimate,
    )

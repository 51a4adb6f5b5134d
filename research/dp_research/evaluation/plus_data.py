"""AdsBPC+ in experiments: the conversion rows the individual filter needs, and one repeat.

AdsBPC's :class:`~.prepared.PreparedData` keeps only per-publisher rank tensors; the filter needs
to know *whose* conversion a row is, because each user's cut depends on their own running spend.
So this keeps, per conversion row sorted by (day, user, time, row): user, publisher, rank in the
user's day, how many earlier conversions of that user-day went to the same publisher (j), and
‖C‖² of the user's earlier conversions of the day (Σ (2j + 1): unit weights, one publisher per
row, as the paper's datasets are attributed). All of it is bound-independent, computed once with
two sorts; a day of a repeat is then a handful of vectorised passes over that day's rows
(:func:`clip_unit_rows`) — no Python loop over users or events.

A correlated strategy C (:mod:`dp_platform.privacy.strategy`) makes day t's row of a user
Σ_{j≤t} C_tj k_{u,j} (k the kept amounts), so its norm involves the user's earlier days: only
on a publisher the user reached on several days do two days meet (⟨k_j, k_k⟩ sums over
publishers). :class:`Pairs` (a third sort, built on first use) lists those (user, publisher)
pairs and their days; everything else of a user's past is one number per day, ‖k_{u,j}‖²
summed over the publishers reached that day only. :class:`RowFilter` applies the filter row by
row from these, exactly.

The repeat runs the production code of :mod:`dp_platform.mechanisms.adsbpc_plus` (``choose_bound``,
``measure``) with the data access done here; evaluation only, seeded (:class:`SeededNoise`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import cached_property

import numpy as np

from dp_platform.clipping import count_fraction
from dp_platform.events.model import MS_PER_DAY, ConversionSet
from dp_platform.mechanisms.adsbpc_plus_accounting import declare, measure
from dp_platform.mechanisms.adsbpc_plus_bound import (
    PlusChoice,
    PlusState,
    choose_bound,
    decide,
    profile_scale,
)
from dp_platform.mechanisms.adsbpc_plus_plan import (
    PROFILE_BINS,
    PlusPlan,
    profile_bins,
    profile_cross,
    profile_factors,
    profile_top,
)
from dp_platform.mechanisms.base import Measurement
from dp_platform.privacy.filter import budget_fraction, filter_cap, remaining
from dp_platform.privacy.noise import NoiseSource
from dp_platform.privacy.quantile import cap_histogram

__all__ = [
    "Pairs",
    "PlusData",
    "PlusRun",
    "RowFilter",
    "clip_unit_rows",
    "filter_day",
    "oracle_plan",
    "prepare_plus",
    "run_plus",
]


def _ranks(new_group: np.ndarray) -> np.ndarray:
    starts = np.flatnonzero(new_group)
    sizes = np.diff(np.append(starts, new_group.size))
    return np.arange(new_group.size, dtype=np.int64) - np.repeat(starts, sizes)


def _starts(key: np.ndarray) -> np.ndarray:
    mask = np.empty(key.size, dtype=bool)
    mask[0] = True
    np.not_equal(key[1:], key[:-1], out=mask[1:])
    return mask


@dataclass(frozen=True)
class Pairs:
    """(user, publisher) pairs with conversions on two or more days, and their days.

    ``row_cell[r]``: the (pair, day) cell of row r, or −1 when its pair has one day only;
    ``cell_pair``/``cell_day``: each cell's pair and (0-based) day, cells in day order (day d's
    at ``day_cells[d]:[d+1]``); ``pair_user``: each pair's user. ``by_user``/``user_starts``:
    every row's index grouped by user (CSR), to gather one user's history when the filter
    cuts them.
    """

    row_cell: np.ndarray
    cell_pair: np.ndarray
    cell_day: np.ndarray
    day_cells: np.ndarray
    pair_user: np.ndarray
    by_user: np.ndarray
    user_starts: np.ndarray

    @property
    def cells(self) -> int:
        return int(self.cell_pair.size)

    @property
    def pairs(self) -> int:
        return int(self.pair_user.size)


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
    day: np.ndarray = field(repr=False, default_factory=lambda: np.zeros(0, dtype=np.int16))

    def rows(self, day: int) -> slice:
        return slice(int(self.day_starts[day]), int(self.day_starts[day + 1]))

    @cached_property
    def pairs(self) -> Pairs:
        """The multi-day (user, publisher) pairs (module doc): one sort, on first use."""
        key = (self.user.astype(np.int64) * self.n_publishers + self.publisher) * self.n_days
        key += self.day
        order = np.argsort(key, kind="stable")
        key = key[order]
        pair_key = key // self.n_days
        new_pair = _starts(pair_key)
        new_cell = _starts(key)
        del key
        pair_id = np.cumsum(new_pair) - 1
        cell_id = np.cumsum(new_cell) - 1
        days_per_pair = np.bincount(pair_id, weights=new_cell).astype(np.int64)
        multi_pair = days_per_pair >= 2
        multi_row = multi_pair[pair_id]
        # renumber the multi-day pairs and their cells 0.. in sorted order
        pair_index = np.cumsum(multi_pair) - 1
        cell_multi = np.zeros(int(cell_id[-1]) + 1, dtype=bool)
        cell_multi[cell_id[multi_row]] = True
        cell_index = np.cumsum(cell_multi) - 1
        row_cell = np.full(self.user.size, -1, dtype=np.int32)
        row_cell[order[multi_row]] = cell_index[cell_id[multi_row]]  # renumbered below
        first_of_cell = np.flatnonzero(new_cell & multi_row)
        cell_pair = pair_index[pair_id[first_of_cell]]
        cell_day = self.day[order[first_of_cell]].astype(np.int64)
        by_day = np.argsort(cell_day, kind="stable")  # cells in day order: a day's cells are
        renumber = np.empty_like(by_day)  # one block, earlier days a prefix
        renumber[by_day] = np.arange(by_day.size)
        cell_pair, cell_day = cell_pair[by_day], cell_day[by_day]
        day_cells = np.searchsorted(cell_day, np.arange(self.n_days + 1))
        first_of_pair = np.flatnonzero(new_pair & multi_row)
        pair_user = (pair_key[first_of_pair] // self.n_publishers).astype(np.int64)
        del order, pair_key, pair_id, cell_id, multi_row, new_pair, new_cell
        multi = row_cell >= 0
        row_cell[multi] = renumber[row_cell[multi]]
        by_user = np.argsort(self.user, kind="stable").astype(np.int32)
        user_starts = np.searchsorted(self.user[by_user], np.arange(self.n_users + 1))
        return Pairs(row_cell, cell_pair, cell_day, day_cells, pair_user, by_user, user_starts)


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
        day=day.astype(np.int16),
    )


@dataclass(frozen=True)
class PlusRun:
    """One repeat: per-day r_i, σ_i (the rows'), ψ_i, the filtered and released (P × n)
    matrices, and every user's final spend (evaluation and tests only).

    ``clipped`` is what the released days estimate without noise: the filtered days for the
    diagonal strategy, C⁻¹ of the filtered rows for a correlated one (a cut user's earlier
    days leave the later rows too, so their bias shows here)."""

    bounds: np.ndarray
    sigmas: np.ndarray
    scales: np.ndarray
    clipped: np.ndarray
    released: np.ndarray
    spend: np.ndarray
    day_costs: np.ndarray | None = None  # (n × users) if asked for: ‖row‖²/(2σ²) per day
    scale_estimate: float | None = None  # s, the profile scale chosen after day m
    rows: np.ndarray | None = None  # the filtered rows (P × n), correlated strategies only
    excess: np.ndarray | None = None  # (n,) or (n, caps) if asked: Σ_u min(c_ut − k_ut, E) a day
    remainders: np.ndarray | None = None  # (n,) the released X̃_t, if the plan releases them
    remainder_truth: np.ndarray | None = None  # (n,) their X_t (evaluation only)


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


class RowFilter:
    """The filter for a correlated strategy C, row by row (module doc; docs/privacy.md).

    Row t of user u is α_{u,t}·(P_{u,t} + C_tt·k_{u,t}), P_{u,t} = Σ_{j<t} C_tj k_{u,j} their
    earlier days' part. Their conversions of day t are kept in order while the row's squared
    norm stays within 2σ_t²(cap − s_u) (C ≥ 0: a conversion never lowers it), one in part; if
    ‖P_{u,t}‖² alone exceeds it, nothing of the day is kept and the row is scaled by
    α = √(room/‖P‖²) < 1, the user's spend reaching the day's cap. At the full cap that leaves
    no room, so every later row of theirs scales to 0; under a paced (lower) cap the room
    grows again and later rows read their whole past (the plain-loop reference of
    tests/test_filter.py, and the SQL given that cap). The cost of row t is exactly
    ‖row‖²/(2σ_t²).
    """

    def __init__(self, data: PlusData, matrix: np.ndarray) -> None:
        self.data = data
        self.c = np.asarray(matrix, dtype=np.float64)
        self.pairs = data.pairs
        self.spread = np.zeros((data.n_days, data.n_users))  # Σ k² of one-day pairs, per day
        self.cell_kept = np.zeros(self.pairs.cells)  # k of each multi-day (pair, day) cell
        self.days_kept = np.zeros((data.n_publishers, data.n_days))  # X_j over every user
        self.kept_rows = np.zeros(data.user.size)  # every row's kept fraction so far

    def _past(self, day: int) -> tuple[np.ndarray, np.ndarray]:
        """(‖P_{u,t}‖² per user, P_{u,t} at each multi-day pair)."""
        coef = self.c[day, :day]
        norms = coef**2 @ self.spread[:day]
        pairs = self.pairs
        end = int(pairs.day_cells[day])  # the cells of days < t: a prefix
        weights = np.repeat(coef, np.diff(pairs.day_cells[: day + 1]))
        pair_past = np.bincount(
            pairs.cell_pair[:end], weights * self.cell_kept[:end], minlength=pairs.pairs
        )
        norms += np.bincount(pairs.pair_user, pair_past**2, minlength=self.data.n_users)
        return norms, pair_past

    def _history(self, users: np.ndarray, weights: np.ndarray, before: int) -> np.ndarray:
        """(P × n) Σ_u weight_u·k_{u,j} over ``users`` for days j < ``before`` (their rows,
        gathered by user)."""
        pairs, data = self.pairs, self.data
        starts = pairs.user_starts[users]
        lengths = pairs.user_starts[users + 1] - starts
        offsets = np.repeat(starts - np.cumsum(lengths) + lengths, lengths)
        index = offsets + np.arange(int(lengths.sum()))
        rows = pairs.by_user[index]
        weight = np.repeat(weights, lengths)
        early = data.day[rows] < before
        rows, weight = rows[early], weight[early]
        cells = data.publisher[rows].astype(np.int64) * data.n_days + data.day[rows]
        out = np.bincount(
            cells, weight * self.kept_rows[rows], minlength=data.n_publishers * data.n_days
        )
        return out.reshape(data.n_publishers, data.n_days)

    def day(
        self,
        day: int,
        bound: float,
        sigma: float,
        spend: np.ndarray,
        cap: float,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Day ``day``'s row (0-based): (kept fraction of each of its conversion rows, each
        user's cost, the released row per publisher before noise); ``cap`` is the day's."""
        data, pairs, c = self.data, self.pairs, self.c
        rows = data.rows(day)
        user = data.user[rows]
        ctt = c[day, day]
        past_norm, pair_past = self._past(day)
        cell = pairs.row_cell[rows]
        multi = cell >= 0
        at_pub = np.zeros(user.size)  # P_{u,t} at the row's publisher
        at_pub[multi] = pair_past[pairs.cell_pair[cell[multi]]]
        same = data.same_before[rows].astype(np.float64)
        b = ctt * (at_pub + ctt * same)
        a = ctt * ctt
        increment = a + 2.0 * b  # a whole row's rise of the squared norm
        running = np.cumsum(increment) - increment
        first = data.rank[rows] == 0
        starts = np.flatnonzero(first)
        running -= np.repeat(running[starts], np.diff(np.append(starts, user.size)))
        two_var = 2.0 * sigma**2
        room = two_var * remaining(cap, spend)
        q = past_norm[user] + running
        keep = np.minimum(
            count_fraction(data.rank[rows], bound),
            budget_fraction(q, np.full(user.size, a), b, room[user]),
        )
        rise = np.bincount(user, keep * (2.0 * b + keep * a), minlength=data.n_users)
        over = past_norm > room
        cost = np.where(over, room, past_norm + rise) / two_var
        # what the day keeps
        self.kept_rows[rows] = keep
        square = np.where(multi, 0.0, keep * (2.0 * same + keep))  # one-day pairs only
        self.spread[day] = np.bincount(user, square, minlength=data.n_users)
        first_cell, last_cell = int(pairs.day_cells[day]), int(pairs.day_cells[day + 1])
        if last_cell > first_cell:
            index = np.where(multi, cell - first_cell, last_cell - first_cell)  # spill slot
            self.cell_kept[first_cell:last_cell] = np.bincount(
                index, keep, minlength=last_cell - first_cell + 1
            )[:-1]
        today = np.bincount(data.publisher[rows], keep, minlength=data.n_publishers)
        self.days_kept[:, day] = today
        # the row: every user's past through C, minus what scaled rows do not release
        released = self.days_kept[:, :day] @ c[day, :day] + ctt * today
        scaled = np.flatnonzero(over)
        if scaled.size:
            alpha = np.sqrt(room[scaled] / past_norm[scaled])
            lost = self._history(scaled, 1.0 - alpha, day)
            released -= lost[:, :day] @ c[day, :day]
        return keep, cost, released


def oracle_plan(plan: PlusPlan) -> PlusPlan:
    """NOT PRIVATE — the evaluation's reference: the plan with all of ρ on the measurement
    (ρ1 = ρ, σ̄ shrunk by √(ρ1/ρ), the allotments scaled by ρ/ρ1 so they still sum to ρ1 —
    the objective rule reads a day's share of ρ1 from them —, the filter's cap at ρ). So the
    oracle is the same whatever the plan gives its histograms, profile and remainder."""
    rho = plan.budget.rho
    shrink = math.sqrt(float(plan.budget.rho1) / float(rho))
    ratio = rho.value / plan.budget.rho1.value
    return replace(
        plan,
        sigma_bar=tuple(s * shrink for s in plan.sigma_bar),
        allotments=tuple(g * ratio for g in plan.allotments),
        filter_cap=filter_cap(rho.value),
        budget=replace(plan.budget, rho1=rho),
    )


def _oracle_choose(
    plan: PlusPlan,
    state: PlusState,
    histogram: np.ndarray,
    *,
    publishers: int,
    profile: np.ndarray | None,
    noise: NoiseSource,
) -> tuple[PlusChoice, PlusState]:
    """NOT PRIVATE: the mechanism's own choices on exact inputs — the day's true capped
    histogram (no noise, so none counted as risk), s by the plan's rule on the true profile
    (no confidence margin, no prior: the plain q-quantile, and for the objective rule the
    least planned error above it). ``noise`` is not used."""
    del noise
    estimate = state.scale_estimate
    if plan.needs_profile(state.day + 1):
        assert profile is not None
        exact = np.asarray(profile, dtype=np.float64)
        estimate = profile_scale(
            plan, exact, sigma=1.0, publishers=publishers, prior=profile_top(plan), z=0.0
        )
    capped = cap_histogram(histogram, plan.config.cap)[1:].astype(np.float64)
    return decide(plan, state, capped, estimate, publishers=publishers, histogram_sigma=0.0)


def run_plus(
    plan: PlusPlan,
    data: PlusData,
    noise: NoiseSource,
    *,
    keep_costs: bool = False,
    oracle: bool = False,
    choose: Callable[..., tuple[PlusChoice, PlusState]] | None = None,
    excess_cap: float | np.ndarray | None = None,
    pace: float | None = None,
) -> PlusRun:
    """All n days of AdsBPC+ on ``data``: production choose_bound/measure, filter here.

    ``oracle``: NOT PRIVATE — :func:`oracle_plan` and the choices on exact inputs
    (:func:`_oracle_choose`); the measurement noise is still drawn from ``noise``.
    ``choose``: a candidate bound rule in choose_bound's place (evaluation/plus_scale.py).
    ``excess_cap`` E (or an array of caps, one column each): also each day's Σ over users of
    min(conversions not kept, E), what a release of the clipped-off remainder at ℓ2
    sensitivity E would measure (total_layer.py).
    ``pace`` β: runs the plan as if paced at β (None: as the plan says, ``PlusPlan.day_cap``).
    No user's spend may run ahead of a flat profile's by more than β·ρ1; under a correlated
    strategy a user whose earlier days alone pass the paced room has that day's row scaled to
    it and goes on (:class:`RowFilter`)."""
    if oracle:
        plan = oracle_plan(plan)
        choose = _oracle_choose
    choose = choose_bound if choose is None else choose
    if plan.days != data.n_days:
        raise ValueError(f"plan has {plan.days} days, data has {data.n_days}")
    if pace is not None:
        plan = replace(plan, pace=pace)
    spend = np.zeros(data.n_users)
    demand = np.zeros(data.n_users)  # T_u over days 1..m (pre-filter, normalised)
    state = PlusState()
    shape = (data.n_publishers, data.n_days)
    clipped, released = np.zeros(shape), np.zeros(shape)
    costs = np.zeros((data.n_days, data.n_users)) if keep_costs else None
    m = plan.config.profile_days
    factors = profile_factors(plan)
    cross = profile_cross(plan)
    rows_filter = RowFilter(data, plan.matrix) if plan.correlated else None
    sigmas = []
    measurements: list[Measurement] = []
    caps = None if excess_cap is None else np.asarray(excess_cap, dtype=np.float64)
    excess = None if caps is None else np.zeros((data.n_days, *caps.shape))
    side_cap = plan.remainder_cap  # the plan's own remainder (production's, released)
    remainders = None if side_cap is None else np.zeros(data.n_days)
    truth = None if side_cap is None else np.zeros(data.n_days)
    for day in range(data.n_days):
        rows = data.rows(day)
        day_cap = plan.day_cap(day + 1)
        profile = None
        if plan.needs_profile(day + 1):
            if cross:
                demand += cross * _cross_norms(data, state.bounds[:m], m)
            active = demand[demand > 0]
            profile = np.bincount(profile_bins(active, profile_top(plan)), minlength=PROFILE_BINS)
        choice, state = choose(
            plan,
            state,
            data.histograms[day],
            publishers=data.n_publishers,
            profile=profile,
            noise=noise,
        )
        user, rank, same = data.user[rows], data.rank[rows], data.same_before[rows]
        if rows_filter is None:
            keep, cost = filter_day(data, day, choice.bound, choice.sigma, spend, day_cap)
            row = np.bincount(data.publisher[rows], keep, minlength=data.n_publishers)
        else:
            keep, cost, row = rows_filter.day(day, choice.bound, choice.sigma, spend, day_cap)
        clipped[:, day] = row
        spend += cost
        remainder = None
        if excess is not None or side_cap is not None:
            lost = np.bincount(user, 1.0 - keep, minlength=data.n_users)
            lost = lost[lost > 0][:, None]
            if excess is not None:
                excess[day] = np.minimum(lost, caps.reshape(1, -1)).sum(axis=0).reshape(caps.shape)
            if side_cap is not None:
                remainder = float(np.minimum(lost, side_cap).sum())
        if costs is not None:
            costs[day] = cost
        if day < m:  # T_u = Σ_i φ_i ‖clip_{r_i}(c_{u,i})‖², φ_i = w_i/W_m (as in SQL)
            whole = count_fraction(rank, choice.bound)
            norms = np.bincount(user, whole * (2.0 * same + whole), minlength=data.n_users)
            demand += factors[day] * norms
        measurement = measure(
            plan,
            choice,
            row,
            allotment=declare(plan, choice, state),
            noise=noise,
            earlier=tuple(measurements),
            remainder=remainder,
        )
        measurements.append(measurement)
        if remainders is not None and truth is not None:
            remainders[day], truth[day] = measurement.remainder, remainder
        released[:, day] = measurement.values
        sigmas.append(choice.sigma)
    filtered_rows = None
    if plan.correlated:  # what the days estimate without noise: C⁻¹ of the rows
        filtered_rows = clipped
        clipped = np.linalg.solve(plan.matrix, filtered_rows.T).T
    return PlusRun(
        bounds=np.array(state.bounds),
        sigmas=np.array(sigmas),
        scales=np.array(state.scales),
        clipped=clipped,
        released=released,
        spend=spend,
        day_costs=costs,
        scale_estimate=state.scale_estimate,
        rows=filtered_rows,
        excess=excess,
        remainders=remainders,
        remainder_truth=truth,
    )


def _cross_norms(data: PlusData, bounds: tuple[float, ...], m: int) -> np.ndarray:
    """Per user ‖Σ_{j<m} clip_j‖² − Σ_{j<m} ‖clip_j‖² at the days' bounds (before the filter):
    only publishers reached on two or more of the days contribute."""
    pairs = data.pairs
    end = int(data.day_starts[m])
    cell = pairs.row_cell[:end]
    multi = cell >= 0
    day = data.day[:end][multi].astype(np.int64)
    whole = count_fraction(data.rank[:end][multi], np.asarray(bounds)[day])
    end = int(pairs.day_cells[m])
    kept = np.bincount(cell[multi], whole, minlength=end)
    total = np.bincount(pairs.cell_pair[:end], kept, minlength=pairs.pairs)
    squares = np.bincount(pairs.cell_pair[:end], kept**2, minlength=pairs.pairs)
    return np.bincount(pairs.pair_user, total**2 - squares, minlength=data.n_users)


def clip_unit_rows(
    rank: np.ndarray,
    same_before: np.ndarray,
    sq_before: np.ndarray,
    allowed: np.ndarray,
    bound: float,
) -> tuple[np.ndarray, np.ndarray]:
    """Kept fraction and squared-norm increment of unit-weight rows (one publisher each).

    For the conversion-level data of the evaluation: a row's w is a unit vector, so a = 1 and
    b = ``same_before`` (earlier conversions of the same user, day and publisher); ``sq_before``
    is ‖C‖² of the user's earlier conversions of the day, ``allowed`` = 2σ²(cap − s_u) per row.
    Returns (f, 2fb + f²): the increments sum per user to ‖c̄_{u,i}‖₂² exactly as released.
    """
    j = np.asarray(same_before, dtype=np.float64)
    keep = np.minimum(
        count_fraction(rank, bound), budget_fraction(sq_before, np.ones_like(j), j, allowed)
    )
    return keep, keep * (2.0 * j + keep)

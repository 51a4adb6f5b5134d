"""One sort of a dataset, then every clipping the experiments need as cheap array lookups.

Every mechanism clips by *rank*: a conversion is kept by a per-day bound r if its rank among the
user's conversions of that day (time order) is below r (fractionally at ⌊r⌋,
docs/algorithm.md#clipping), and by a global bound b if its rank in the user's whole history is
below b (docs/baselines.md#contribution-bounds). A row's rank depends on no bound or noise: one
stable sort by (user, day, time, row) gives both ranks, and bincounts of (publisher, day, rank) give
tensors from which the (P × n) clipped matrix for *any* bound is a gather: no Python loop over
events or users, and nothing to redo across repeats or methods. The order and the fractional rule
are those of :func:`dp_research.baselines.clip_per_day` / :func:`~dp_research.baselines.clip_global`
(tests check equality).

Peak memory is a few int64 arrays of the dataset's length (≈ 5 GB at the Uniform set's
1.3·10⁸ conversions); the tensors kept afterwards are small (P × n × max rank).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dp_platform.clipping import count_fraction
from dp_platform.events.model import MS_PER_DAY, ConversionSet

__all__ = ["PreparedData", "prepare"]

_MAX_TENSOR_CELLS = 400_000_000


def _cumulative(counts: np.ndarray) -> np.ndarray:
    """C[..., j] = Σ_{k<j} counts[..., k] (one extra leading zero column)."""
    shape = (*counts.shape[:-1], counts.shape[-1] + 1)
    out = np.zeros(shape, dtype=np.float64)
    np.cumsum(counts, axis=-1, out=out[..., 1:])
    return out


def _clip_from_ranks(counts: np.ndarray, cumulative: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    """Σ over rows of the reference's kept fraction (dp_platform/clipping.py) per (publisher,
    day), from counts of conversions per rank; ``bounds`` is one per day. The fraction is
    non-zero on at most one rank per day, so this reads the prefix sums and one column."""
    slots = counts.shape[-1] - 1  # the last column holds no row (or the lumped ranks ≥ it)
    whole = np.minimum(np.floor(bounds), slots).astype(np.int64)
    fraction = np.where(np.floor(bounds) < slots, count_fraction(whole, bounds), 0.0)
    days = np.arange(counts.shape[1])
    return cumulative[:, days, whole] + fraction[None, :] * counts[:, days, whole]


@dataclass(frozen=True, eq=False)
class PreparedData:
    """Bound-independent summaries of one dataset (read-only once built).

    Attributes:
        histograms: (n × (K+1)) h[d, c] = users with exactly c conversions on day d (h[d, 0] = 0).
        day_rank_counts: (P × n × (K+1)) conversions whose rank in their user's day is k.
        global_rank_counts: (P × n × (G+1)) conversions whose rank in their user's history is
            k < G; column G collects every rank ≥ G (never kept by a bound ≤ G).
        truth: (P × n) unclipped conversions per publisher and day.
    """

    name: str
    n_users: int
    n_publishers: int
    n_days: int
    n_conversions: int
    global_bound: int
    histograms: np.ndarray
    day_rank_counts: np.ndarray
    global_rank_counts: np.ndarray
    truth: np.ndarray

    def __post_init__(self) -> None:
        object.__setattr__(self, "_day_cumulative", _cumulative(self.day_rank_counts))
        object.__setattr__(self, "_global_cumulative", _cumulative(self.global_rank_counts))
        for name in ("histograms", "day_rank_counts", "global_rank_counts", "truth"):
            getattr(self, name).setflags(write=False)

    @property
    def max_day_count(self) -> int:
        """K: the largest number of conversions one user has on one day."""
        return self.histograms.shape[1] - 1

    def per_day_clipped(self, bounds: np.ndarray) -> np.ndarray:
        """(P × n) sums after clipping every user to r_d on day d (AdsBPC, MMBPC)."""
        r = np.asarray(bounds, dtype=np.float64)
        if r.shape != (self.n_days,) or np.any(r < 0) or not np.all(np.isfinite(r)):
            raise ValueError(f"need {self.n_days} finite bounds >= 0")
        return _clip_from_ranks(self.day_rank_counts, self._day_cumulative, r)  # type: ignore[attr-defined]

    def day_clipped(self, day: int, bound: float) -> np.ndarray:
        """(P,) sums of day ``day`` (0-based) after clipping every user to ``bound``."""
        r = np.zeros(self.n_days)
        r[day] = bound
        return self.per_day_clipped(r)[:, day]

    def global_clipped(self, bound: float) -> np.ndarray:
        """(P × n) sums after keeping each user's first ``bound`` conversions (bound ≤ GS)."""
        if not 0 <= bound <= self.global_bound:
            raise ValueError(f"global bound must lie in [0, {self.global_bound}], got {bound!r}")
        bounds = np.full(self.n_days, float(bound))
        return _clip_from_ranks(self.global_rank_counts, self._global_cumulative, bounds)  # type: ignore[attr-defined]

    def exceed_counts(self, taus: np.ndarray) -> np.ndarray:
        """(J × n): users whose running total through day t exceeds τ_j (Stream's SVT query).

        A user's total first exceeds τ at their row of global rank ⌊τ⌋ (unit weights), so the
        count is the running sum over days of the rows with that rank.
        """
        per_day = self.global_rank_counts.sum(axis=0)  # (n × (G+1))
        out = np.zeros((len(taus), self.n_days))
        for j, tau in enumerate(np.asarray(taus, dtype=np.float64)):
            rank = int(np.floor(tau))
            if not 0 <= rank < self.global_bound:
                raise ValueError(f"τ = {tau!r} must lie in [0, GS)")
            out[j] = np.cumsum(per_day[:, rank])
        return out

    def true_bounds(self, q: float) -> np.ndarray:
        """NON-PRIVATE per-day q-quantile of the active users' counts (inverted CDF), 0 if none.

        The smallest c with F_d(c) ≥ q·K_d, as ``numpy.quantile(..., method="inverted_cdf")``
        and :func:`dp_research.evaluation.bounds.nonprivate_given_bounds`.
        """
        if not 0 < q <= 1:
            raise ValueError(f"q must lie in (0, 1], got {q!r}")
        cdf = np.cumsum(self.histograms, axis=1)
        active = cdf[:, -1]
        out = np.zeros(self.n_days)
        for day in range(self.n_days):  # one search per day
            if active[day]:
                out[day] = np.searchsorted(cdf[day], q * active[day], side="left")
        return out


def _group_ranks(new_group: np.ndarray) -> np.ndarray:
    """0-based position of every row inside its run of rows (runs start where the mask is set)."""
    starts = np.flatnonzero(new_group)
    sizes = np.diff(np.append(starts, new_group.size))
    ranks = np.arange(new_group.size, dtype=np.int64)
    ranks -= np.repeat(starts, sizes)
    return ranks


def prepare(conversions: ConversionSet, global_bound: int) -> PreparedData:
    """Sort once by (user, day, time, row) and tabulate ranks; see the module docstring."""
    n, publishers = conversions.n_days, conversions.n_publishers
    size = conversions.n_conversions
    if size == 0:
        raise ValueError("the dataset has no conversions")
    if global_bound < 1:
        raise ValueError("the global bound must be >= 1")
    time_ms = np.asarray(conversions.time_ms, dtype=np.int64)
    if time_ms.min() < 0 or time_ms.max() >= MS_PER_DAY:
        raise ValueError("times must lie within the day")
    group = np.asarray(conversions.user, dtype=np.int64) * n + conversions.day
    order = np.argsort(group * MS_PER_DAY + time_ms, kind="stable")
    del time_ms
    group = group[order]
    new_group = np.empty(size, dtype=bool)
    new_group[0] = True
    np.not_equal(group[1:], group[:-1], out=new_group[1:])
    new_user = np.empty(size, dtype=bool)
    new_user[0] = True
    np.not_equal(group[1:] // n, group[:-1] // n, out=new_user[1:])
    del group
    day = np.asarray(conversions.day, dtype=np.int64)[order]
    cell = np.asarray(conversions.publisher, dtype=np.int64)[order] * n + day
    del order

    day_rank = _group_ranks(new_group)
    starts = np.flatnonzero(new_group)
    sizes = np.diff(np.append(starts, size))
    slots = int(sizes.max())  # K
    if publishers * n * (max(slots, global_bound) + 1) > _MAX_TENSOR_CELLS:
        raise ValueError("rank tensors would be too large for this machine")
    histograms = np.bincount(day[starts] * (slots + 1) + sizes, minlength=n * (slots + 1))
    histograms = histograms.reshape(n, slots + 1)
    del day, starts, sizes
    day_counts = np.bincount(cell * (slots + 1) + day_rank, minlength=publishers * n * (slots + 1))
    del day_rank
    global_rank = np.minimum(_group_ranks(new_user), global_bound)
    global_counts = np.bincount(
        cell * (global_bound + 1) + global_rank, minlength=publishers * n * (global_bound + 1)
    )
    del global_rank, cell
    day_counts = day_counts.reshape(publishers, n, slots + 1).astype(np.float64)
    return PreparedData(
        name=conversions.name,
        n_users=conversions.n_users,
        n_publishers=publishers,
        n_days=n,
        n_conversions=size,
        global_bound=global_bound,
        histograms=histograms.astype(np.int64),
        day_rank_counts=day_counts,
        global_rank_counts=global_counts.reshape(publishers, n, global_bound + 1).astype(
            np.float64
        ),
        truth=day_counts.sum(axis=2),
    )

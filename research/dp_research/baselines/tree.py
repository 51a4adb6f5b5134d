"""Dyadic-tree structure and its streaming estimators (docs/baselines.md#bin), shared by BIN and
Stream.

Nodes are the dyadic intervals I_{j,k} = [(k−1)2^j + 1, k·2^j] (1-based days) with k·2^j ≤ n:
exactly the nodes a streaming run over n days can ever use; node I_{j,k} is released on day
k·2^j. Everything here is a pure function of n (and the query), so BIN and Stream share it and
the decoders can be cached.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

__all__ = [
    "dyadic_cover",
    "gls_decoder",
    "honaker_matrix",
    "honaker_variance_factor",
    "node_incidence",
    "tree_levels",
    "tree_nodes",
]


def tree_levels(n: int, *, full_tree: bool = False) -> int:
    """Number of nodes containing day 1: ⌊log₂ n⌋ + 1, or ⌈log₂ n⌉ + 1 for a full tree with root.

    This is the factor L in the sensitivity GS·√L: the worst user puts all mass on day 1, which
    every level covers. The full-tree convention pays for nodes that end after day n and are
    never released; it is kept only as a flag (docs/baselines.md#bin).
    """
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    if full_tree:
        return int(np.ceil(np.log2(n))) + 1 if n > 1 else 1
    return int(n).bit_length()


@lru_cache(maxsize=64)
def tree_nodes(n: int) -> np.ndarray:
    """(N × 3) int array of kept nodes (level j, first day, last day), 0-based days.

    Ordered by release day (last day), then by level, which is the order they are released in.
    """
    rows = [
        (level, (k - 1) << level, (k << level) - 1)
        for level in range(tree_levels(n))
        for k in range(1, (n >> level) + 1)
    ]
    nodes = np.array(sorted(rows, key=lambda row: (row[2], row[0])), dtype=np.int64)
    nodes.setflags(write=False)
    return nodes


def node_incidence(n: int) -> np.ndarray:
    """H (N × n): H[node, day] = 1 if the node's interval contains the day (the strategy S)."""
    nodes = tree_nodes(n)
    days = np.arange(n)
    return ((days >= nodes[:, 1:2]) & (days <= nodes[:, 2:3])).astype(np.float64)


def _node_index(n: int) -> dict[tuple[int, int], int]:
    """Map (first day, last day) → row of the node in :func:`tree_nodes`."""
    return {(int(first), int(last)): row for row, (_, first, last) in enumerate(tree_nodes(n))}


def dyadic_cover(first: int, last: int) -> list[tuple[int, int]]:
    """Minimal set of dyadic intervals partitioning [first, last] (0-based, inclusive).

    Greedy from the left: take the largest aligned block that starts at ``first`` and fits. For
    the prefix [0, t] this is the binary decomposition of t + 1 (one node per 1-bit). Every
    block ends ≤ last, so it is available on the query's release day.
    """
    cover: list[tuple[int, int]] = []
    start = first
    while start <= last:
        size = 1
        while start % (2 * size) == 0 and start + 2 * size - 1 <= last:
            size *= 2
        cover.append((start, start + size - 1))
        start += size
    return cover


def cover_decoder(n: int, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Simple estimator: each range query is the sum of the noisy nodes of its dyadic cover."""
    index = _node_index(n)
    decoder = np.zeros((len(starts), len(tree_nodes(n))))
    for q, (first, last) in enumerate(zip(starts, ends, strict=True)):
        for interval in dyadic_cover(int(first), int(last)):
            decoder[q, index[interval]] = 1.0
    return decoder


def honaker_variance_factor(level: int) -> float:
    """V_j = 2^j/(2^{j+1} − 1): variance of the efficient node estimate at level j, in σ²."""
    return 2.0**level / (2.0 ** (level + 1) - 1.0)


@lru_cache(maxsize=64)
def honaker_matrix(n: int) -> np.ndarray:
    """A (N × N) with ĥ = A y: Honaker's bottom-up efficient node estimates (docs/baselines.md#bin).

    ĥ_node = V_j y_node + (1 − V_j)(ĥ_left + ĥ_right): inverse-variance weighting of the node's
    own measurement and the sum of its children's estimates. ĥ_node reads only nodes inside its
    interval, hence none released after it.
    """
    nodes = tree_nodes(n)
    index = _node_index(n)
    estimate = np.eye(len(nodes))
    for row in np.argsort(nodes[:, 0], kind="stable"):  # bottom-up: children before parents
        level, first, last = (int(v) for v in nodes[row])
        if level == 0:
            continue
        half = 1 << (level - 1)
        left = index[(first, first + half - 1)]
        right = index[(first + half, last)]
        weight = honaker_variance_factor(level)
        children = estimate[left] + estimate[right]
        estimate[row] = weight * estimate[row] + (1.0 - weight) * children
    estimate.setflags(write=False)
    return estimate


def honaker_prefix_decoder(n: int) -> np.ndarray:
    """Prefix t = Σ of Honaker estimates over the binary decomposition of t (independent terms)."""
    ends = np.arange(n)
    return cover_decoder(n, np.zeros(n, dtype=np.int64), ends) @ honaker_matrix(n)


def gls_decoder(n: int, queries: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Best linear unbiased *streaming* estimator of each query from the nodes ending ≤ its end.

    For a query w released on day t: g = H_t (H_tᵀ H_t)⁻¹ w, where H_t is the incidence of the
    nodes released by day t restricted to days ≤ t (the leaves make H_tᵀ H_t invertible), and
    the variance is σ² wᵀ (H_tᵀ H_t)⁻¹ w. Nodes ending after t are never read (offline GLS is
    not a streaming estimator).
    """
    nodes = tree_nodes(n)
    incidence = node_incidence(n)
    decoder = np.zeros((len(ends), len(nodes)))
    for q, end in enumerate(ends):
        if np.any(np.abs(queries[q, end + 1 :]) > 0):
            raise ValueError(f"query {q} reads days after its end day {end}")
        available = nodes[:, 2] <= end
        h_t = incidence[available][:, : end + 1]
        coefficients = np.linalg.solve(h_t.T @ h_t, queries[q, : end + 1])
        decoder[q, available] = h_t @ coefficients
    return decoder

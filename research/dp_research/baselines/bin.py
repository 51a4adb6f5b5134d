"""BIN: binary-tree aggregation under a global cap (docs/baselines.md#bin)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dp_research.baselines import tree
from dp_research.baselines.contributions import Conversions, clip_global
from dp_research.baselines.plan import LinearPlan, gaussian_sigma
from dp_research.baselines.sensitivity import global_sensitivity
from dp_research.baselines.workloads import Workload

__all__ = ["BIN", "tree_decoder"]


def tree_decoder(workload: Workload, *, simple: bool) -> np.ndarray:
    """Decoder from the n-day tree's noisy nodes to the workload's answers.

    - ``simple``: sum of the noisy nodes of each query's minimal dyadic cover (for prefixes,
      one node per 1-bit of t; never the naive prefix difference for windows).
    - default: Honaker's efficient estimator for prefixes, which equals the streaming GLS;
      streaming GLS over the nodes released by the query's end day for windows.
    """
    n = workload.n
    if simple:
        return tree.cover_decoder(n, workload.starts, workload.ends)
    if workload.kind == "prefix":
        return tree.honaker_prefix_decoder(n)
    return tree.gls_decoder(n, workload.matrix, workload.ends)


def tree_plan(
    name: str, workload: Workload, bound: float, rho: float, *, simple: bool, full_tree: bool
) -> LinearPlan:
    """A tree over ``workload.n`` days for users bounded by ``bound`` in total, costing ρ.

    Δ = bound·√L: the worst user puts everything on day 1, which lies in L kept nodes. With
    ``full_tree`` σ is calibrated for ⌈log₂ n⌉ + 1 levels (the never-released nodes above day n
    still cost budget in that convention), so the charged Δ is bound·√L_full ≥ the kept tree's.
    """
    strategy = tree.node_incidence(workload.n)
    kept = global_sensitivity(strategy, bound)
    levels = tree.tree_levels(workload.n, full_tree=full_tree)
    sensitivity = bound * np.sqrt(levels) if full_tree else kept
    return LinearPlan(
        name=name,
        strategy=strategy,
        decoder=tree_decoder(workload, simple=simple),
        sigma=gaussian_sigma(sensitivity, rho),
        sensitivity=sensitivity,
        rho=rho,
        query_ends=workload.ends,
    )


@dataclass(frozen=True)
class BIN:
    """Binary mechanism (Dwork et al. 2010; Chan et al. 2011) with Honaker's estimator.

    - Privacy unit: the user. Adjacency: add/remove one user with all their conversions.
    - Contribution bound: a user's first ``gs`` conversions in time order (global cap).
    - Sensitivity: GS·√L with L = ⌊log₂ n⌋ + 1 kept levels (all of GS on day 1 lies in L nodes;
      the ⌈log₂ n⌉ + 1 full-tree convention is the ``full_tree`` flag).
    - Noise: N(0, σ²) on every kept node and publisher, σ² = GS²·L/(2ρ). Cost: exactly ρ-zCDP.
    - Answers: Honaker / streaming GLS (default) or the simple cover sum (``simple=True``).
    """

    gs: float
    rho: float
    simple: bool = False
    full_tree: bool = False

    def clip(self, conversions: Conversions, n_publishers: int, n_days: int) -> np.ndarray:
        """The (P × n) counts after the global cap."""
        return conversions.to_matrix(clip_global(conversions, self.gs), n_publishers, n_days)

    def plan(self, workload: Workload) -> LinearPlan:
        """Data-independent calibration of the tree for this workload."""
        label = "BIN simple" if self.simple else "BIN"
        return tree_plan(
            label, workload, self.gs, self.rho, simple=self.simple, full_tree=self.full_tree
        )

"""Stream: Dong–Luo–Yi (S&P 2023) continual counting with an SVT-tracked bound τ
(docs/baselines.md#stream).

The original's budget split, threshold and SVT query could not be verified, so this is the
concrete, provably private version of docs/baselines.md#stream with every knob a parameter:

- a ladder τ_j = min(τ_0·2^j, GS), j = 0..J, J = ⌈log₂(GS/τ_0)⌉; rung j's data keeps each
  user's first τ_j conversions in time order;
- one binary tree per rung (BIN's tree and estimators), each costing ρ_tree/(J + 1);
- one AboveThreshold instance per rung j < J, each ε' = ε_svt/J with ε_svt = √(2ρ_svt),
  asking q_t = #{u : C_u(t) > τ_j} (sensitivity 1); above the noisy threshold, move up a rung
  (possibly several times on one day); on day t release the current rung's tree estimate.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dp_platform.privacy.noise import NoiseSource, resolve
from dp_research.baselines.bin import tree_plan
from dp_research.baselines.contributions import Conversions, running_before
from dp_research.baselines.plan import LinearPlan
from dp_research.baselines.workloads import Workload

__all__ = ["Stream", "StreamPlan", "StreamRelease", "tau_ladder"]


def tau_ladder(gs: float, tau0: float) -> np.ndarray:
    """τ_j = min(τ_0·2^j, GS) for j = 0..J, the first rung with τ_0·2^J ≥ GS being the last."""
    if gs < 0 or not tau0 > 0:
        raise ValueError(f"need gs >= 0 and tau0 > 0, got {gs!r}, {tau0!r}")
    taus = [min(tau0, gs)]
    while taus[-1] < gs:
        taus.append(min(taus[-1] * 2.0, gs))
    return np.array(taus, dtype=np.float64)


@dataclass(frozen=True)
class StreamRelease:
    """Answers (P × m) and the rung in force on every day (diagnostic; derived from SVT)."""

    answers: np.ndarray
    rungs: np.ndarray


@dataclass(frozen=True, eq=False)
class StreamPlan:
    """Calibrated Stream for one workload: the per-rung trees and the SVT parameters."""

    taus: np.ndarray
    trees: tuple[LinearPlan, ...]
    epsilon_instance: float
    threshold: float
    rho: float

    @property
    def instances(self) -> int:
        """J: one AboveThreshold instance per rung below the top."""
        return len(self.taus) - 1

    @property
    def threshold_scale(self) -> float:
        """Laplace scale of each instance's noisy threshold: 2/ε' (AboveThreshold, Δ = 1)."""
        return 2.0 / self.epsilon_instance if self.instances else 0.0

    @property
    def query_scale(self) -> float:
        """Laplace scale of each noisy query: 4/ε'."""
        return 4.0 / self.epsilon_instance if self.instances else 0.0

    def svt_cost(self) -> float:
        """J instances of ε'-DP compose to pure (J·ε')-DP, i.e. (J·ε')²/2-zCDP."""
        return (self.instances * self.epsilon_instance) ** 2 / 2.0

    def zcdp_cost(self) -> float:
        """SVT plus every tree (all J + 1 trees are charged; concurrent composition)."""
        return self.svt_cost() + sum(plan.zcdp_cost() for plan in self.trees)

    def conditional_variances(self, rungs: np.ndarray) -> np.ndarray:
        """Variance of every answer given the rung path (bias must be simulated)."""
        ends = self.trees[0].query_ends
        per_rung = np.stack([plan.query_variances() for plan in self.trees])
        return per_rung[np.asarray(rungs)[ends], np.arange(len(ends))]

    def exceed_counts(
        self, conversions: Conversions, n_days: int, before: np.ndarray | None = None
    ) -> np.ndarray:
        """(J × n): #{u : C_u(t) > τ_j}, C_u(t) the user's unclipped weight through day t.

        ``before`` is :func:`running_before` of the conversions, if already computed.
        """
        if before is None:
            before = running_before(conversions)
        after = before + conversions.weights
        counts = np.zeros((self.instances, n_days))
        for j, tau in enumerate(self.taus[:-1]):
            crossing = (before <= tau) & (after > tau)  # the row where C_u first exceeds τ_j
            days = np.bincount(conversions.day[crossing], minlength=n_days)[:n_days]
            counts[j] = np.cumsum(days)
        return counts

    def rung_path(self, counts: np.ndarray, noise: NoiseSource) -> np.ndarray:
        """Run the SVT ladder over the days; returns the rung in force on each day.

        All Laplace draws are made up front in a data-independent order (one threshold per
        instance, one query per instance and day); an instance reads its day-t draw only if it
        is running on day t, which has the same distribution as drawing lazily.

        Each draw declares AboveThreshold's split of its instance's ε' (Lyu, Su & Li, Thm 2,
        one positive): the threshold noise is a Laplace mechanism of sensitivity 1 at ε'/2,
        the query noise one of sensitivity 2 at ε'/2. A vector holds one coordinate (or row)
        per instance, and the check is per instance; the J instances compose to J·ε'.
        """
        n_days = counts.shape[1]
        rungs = np.zeros(n_days, dtype=np.int64)
        if self.instances == 0:
            return rungs
        half = self.epsilon_instance / 2.0
        thresholds = noise.add_laplace(
            np.full(self.instances, self.threshold),
            self.threshold_scale,
            l1_sensitivity=1.0,
            epsilon=half,
        )
        queries = noise.add_laplace(
            counts.ravel(), self.query_scale, l1_sensitivity=2.0, epsilon=half
        ).reshape(counts.shape)
        rung = 0
        for day in range(n_days):
            while rung < self.instances and queries[rung, day] >= thresholds[rung]:
                rung += 1
            rungs[day] = rung
        return rungs

    def release(
        self, conversions: Conversions, n_publishers: int, noise: NoiseSource | None = None
    ) -> StreamRelease:
        """Answers for every publisher; reads the raw conversions (it clips per rung itself).

        The answer on day t uses the SVT decisions through day t and rung j(t)'s tree nodes
        released by day t; every tree's noise is drawn (fixed order), only the used values
        are released.
        """
        source = resolve(noise)
        n_days = self.trees[0].n
        before = running_before(conversions)
        rungs = self.rung_path(self.exceed_counts(conversions, n_days, before), source)
        ends = self.trees[0].query_ends
        answers = np.zeros((n_publishers, len(ends)))
        for j, (tau, plan) in enumerate(zip(self.taus, self.trees, strict=True)):
            kept = np.clip(tau - before, 0.0, conversions.weights)
            rung_answers = plan.release(conversions.to_matrix(kept, n_publishers, n_days), source)
            chosen = rungs[ends] == j
            answers[:, chosen] = rung_answers[:, chosen]
        return StreamRelease(answers=answers, rungs=rungs)


@dataclass(frozen=True)
class Stream:
    """Dong–Luo–Yi style continual counting with a privately doubled bound τ.

    - Privacy unit: the user. Adjacency: add/remove one user with all their conversions.
    - Contribution bound: per rung j, a user's first τ_j conversions (τ_j ≤ GS).
    - Sensitivity: tree j has ℓ2 sensitivity τ_j·√L (all τ_j on day 1); each SVT query
      #{u : C_u(t) > τ_j} has sensitivity 1.
    - Noise: tree j nodes N(0, σ_j²), σ_j² = τ_j²·L·(J+1)/(2ρ_tree); SVT thresholds Lap(2/ε'),
      queries Lap(4/ε'), ε' = √(2ρ_svt)/J.
    - Cost: ρ_svt + ρ_tree = ρ (J ε'-DP instances ⇒ ρ_svt; J + 1 trees at ρ_tree/(J+1)), by
      concurrent zCDP composition. With J = 0 (GS ≤ τ_0) there is no SVT and ρ_tree = ρ.
    - Threshold θ defaults to (4/ε')·ln(2n), which makes false positives over n days unlikely.
    """

    gs: float
    rho: float
    tau0: float = 1.0
    svt_fraction: float = 0.5
    threshold: float | None = None
    simple: bool = False
    full_tree: bool = False

    def plan(self, workload: Workload) -> StreamPlan:
        """Data-independent part: ladder, per-rung trees and SVT scales."""
        if not self.rho > 0 or not 0 < self.svt_fraction < 1:
            raise ValueError("need rho > 0 and 0 < svt_fraction < 1")
        taus = tau_ladder(self.gs, self.tau0)
        taus.setflags(write=False)
        instances = len(taus) - 1
        rho_svt = self.svt_fraction * self.rho if instances else 0.0
        rho_tree = self.rho - rho_svt
        trees = tuple(
            tree_plan(
                f"Stream rung {j}",
                workload,
                float(tau),
                rho_tree / len(taus),
                simple=self.simple,
                full_tree=self.full_tree,
            )
            for j, tau in enumerate(taus)
        )
        epsilon_instance = np.sqrt(2.0 * rho_svt) / instances if instances else 0.0
        threshold = self.threshold
        if threshold is None:
            threshold = 4.0 / epsilon_instance * np.log(2 * workload.n) if instances else 0.0
        return StreamPlan(
            taus=taus,
            trees=trees,
            epsilon_instance=float(epsilon_instance),
            threshold=float(threshold),
            rho=self.rho,
        )

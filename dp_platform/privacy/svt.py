"""UpdateBoundSVT: the daily bound after day l, by two sparse-vector tests
(docs/algorithm.md#bounds, docs/algorithm.md#svt-threshold).

Privacy unit: one user; adjacency add/remove or replace. Queries (counts over the users active
on the day, before clipping), with τ = mean of the last l bounds:

- up:   q↑ = NumAbove(τ), against T↑; "above" ⇒ many users would be cut ⇒ r = τ·s↑;
- down: q↓ = NumAbove(τ) − NumAbove(τ·s↓) = −#{users with count in (τ·s↓, τ]}, against −T↓;
  "above" ⇒ few users would be cut by lowering the bound ⇒ r = τ·s↓;
- both or neither: r = τ.

Each query has sensitivity 1 under both adjacencies (one user changes a count of users by at most
one). Each test is the improved SVT of Lyu, Su & Li 2017 (Alg. 7) with ε' = ε3/2: the noisy
threshold T + Lap(2/ε') is drawn **once** for the life of the test (docs/algorithm.md#svt-threshold
— the paper re-draws it after every positive, which costs about (k+1)ε'/2), every query gets
Lap(4k/ε'), and the test stops answering after k positive reports. Each test is ε'-DP, both together
ε3-DP, i.e. ε3·tanh(ε3/2)-zCDP (:func:`dp_platform.privacy.accounting.pure_dp_to_zcdp`).

The proof splits each test's ε' in two halves (Lyu, Su & Li, "Understanding the sparse vector
technique for differential privacy", Thm 2 with ε1 = ε2 = ε'/2): the threshold noise is a
Laplace mechanism of sensitivity Δ at ε1, and each query's noise is calibrated as a Laplace
mechanism of sensitivity 2kΔ at ε2 (a query and the threshold can move Δ apart each way, and
at most k positives are paid for). Those are the declarations each draw makes to the sampler,
which refuses it if OpenDP's Laplace map says more than ε'/2.

The state (noisy thresholds, positive counts) is secret: it serialises to JSON for the ledger's
secret store and must never be shown in a UI, log or release.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace
from typing import Literal

import numpy as np

from dp_platform.privacy.noise import NoiseSource, resolve

__all__ = ["BoundDecision", "SparseVectorTest", "SvtState", "num_above", "update_bound"]

QUERY_SENSITIVITY = 1.0


def num_above(histogram: np.ndarray, threshold: float) -> int:
    """Number of users whose count is strictly greater than ``threshold`` (h[c] users at c)."""
    counts = np.asarray(histogram, dtype=np.int64)
    first = max(0, math.floor(threshold) + 1)
    return int(counts[first:].sum())


@dataclass(frozen=True)
class SparseVectorTest:
    """One above-threshold test with a fixed noisy threshold; answers until k positives."""

    threshold: float
    epsilon: float
    max_reports: int
    noisy_threshold: float | None = None
    positives: int = 0

    @property
    def halted(self) -> bool:
        return self.positives >= self.max_reports

    def threshold_scale(self) -> float:
        return 2.0 * QUERY_SENSITIVITY / self.epsilon

    def query_scale(self) -> float:
        return 4.0 * self.max_reports * QUERY_SENSITIVITY / self.epsilon

    def start(self, noise: NoiseSource | None = None) -> SparseVectorTest:
        """Draw the noisy threshold — once; a started test is returned unchanged."""
        if self.noisy_threshold is not None:
            return self
        drawn = resolve(noise).add_laplace(
            np.array([self.threshold]),
            self.threshold_scale(),
            l1_sensitivity=QUERY_SENSITIVITY,
            epsilon=self.epsilon / 2.0,
        )
        return replace(self, noisy_threshold=float(drawn[0]))

    def ask(self, value: float, noise: NoiseSource | None = None) -> tuple[bool, SparseVectorTest]:
        """Is ``value`` + noise above the noisy threshold? Halted: no, and draws nothing."""
        if self.halted:
            return False, self
        test = self.start(noise)
        assert test.noisy_threshold is not None
        noisy = resolve(noise).add_laplace(
            np.array([value]),
            test.query_scale(),
            l1_sensitivity=2.0 * test.max_reports * QUERY_SENSITIVITY,
            epsilon=test.epsilon / 2.0,
        )
        noisy_value = float(noisy[0])
        if noisy_value >= test.noisy_threshold:
            return True, replace(test, positives=test.positives + 1)
        return False, test


BoundDecision = Literal["up", "down", "keep"]


@dataclass(frozen=True)
class SvtState:
    """Both tests of UpdateBoundSVT; JSON round-trips exactly (floats by repr)."""

    up: SparseVectorTest
    down: SparseVectorTest
    scale_up: float
    scale_down: float

    @classmethod
    def create(
        cls,
        *,
        epsilon: float,
        t_up: float,
        t_down: float,
        s_up: float,
        s_down: float,
        max_reports: int,
    ) -> SvtState:
        half = epsilon / 2.0
        return cls(
            up=SparseVectorTest(threshold=t_up, epsilon=half, max_reports=max_reports),
            down=SparseVectorTest(threshold=-t_down, epsilon=half, max_reports=max_reports),
            scale_up=s_up,
            scale_down=s_down,
        )

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> SvtState:
        return cls(
            up=SparseVectorTest(**data["up"]),
            down=SparseVectorTest(**data["down"]),
            scale_up=float(data["scale_up"]),
            scale_down=float(data["scale_down"]),
        )


def update_bound(
    state: SvtState,
    histogram: np.ndarray,
    previous_bounds: list[float],
    window: int,
    noise: NoiseSource | None = None,
) -> tuple[float, BoundDecision, SvtState]:
    """Day i's bound from τ = mean of the last ``window`` bounds and the two tests (module doc)."""
    if len(previous_bounds) < window:
        raise ValueError(f"need {window} previous bounds, got {len(previous_bounds)}")
    tau = float(np.mean(previous_bounds[-window:]))
    above_tau = num_above(histogram, tau)
    q_up = float(above_tau)
    q_down = float(above_tau - num_above(histogram, tau * state.scale_down))
    fired_up, up = state.up.ask(q_up, noise)
    fired_down, down = state.down.ask(q_down, noise)
    new_state = replace(state, up=up, down=down)
    if fired_up and not fired_down:
        return tau * state.scale_up, "up", new_state
    if fired_down and not fired_up:
        return tau * state.scale_down, "down", new_state
    return tau, "keep", new_state

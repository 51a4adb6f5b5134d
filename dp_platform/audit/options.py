"""What an audit is asked to do: how hard to look, and which samplers its runs draw from."""

from __future__ import annotations

from dataclasses import dataclass

from dp_platform.privacy.noise import IntegerNoiseSource, NoiseSource

__all__ = ["AuditOptions", "AuditSamplers"]


@dataclass(frozen=True)
class AuditOptions:
    """How hard to look (``dp-platform audit`` options; docs/privacy.md for the defaults)."""

    runs: int = 40
    canaries: int = 50
    per_day: int | None = None  # None: 2⌈largest bound⌉ + 1 (probes.above_bound)
    shadows: int | None = None  # None: as many as the canary's conversions a day
    users: int = 1_000
    data_seed: int = 7
    confidence: float = 0.95
    delta: float = 1e-6
    workers: int = 1  # processes running runs side by side (seeded samplers need 1)

    def __post_init__(self) -> None:
        if self.runs < 4:
            raise ValueError("runs: at least 4 (half train the distinguisher, half are scored)")
        if (
            self.canaries < 2
            or self.users < 1
            or (self.per_day or 1) < 1
            or (self.shadows or 0) < 0
        ):
            raise ValueError("canaries >= 2, users >= 1, per_day >= 1 and shadows >= 0")
        if not 0.0 < self.confidence < 1.0 or not 0.0 < self.delta < 1.0:
            raise ValueError("confidence and delta must be in (0, 1)")
        if self.workers < 1:
            raise ValueError("workers: at least 1")


@dataclass(frozen=True)
class AuditSamplers:
    """The noise a run draws: None is the production secure samplers (the CLI never sets them;
    tests pass seeded ones so their outcome is fixed)."""

    real: NoiseSource | None = None
    integer: IntegerNoiseSource | None = None

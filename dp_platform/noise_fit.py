"""Are a run's errors against the truth within its stated noise? (the demo's accuracy line)

A simulation knows the truth, so each released answer's error can be set against the std the
release states for it: z_i = error_i / σ_i. Comparing an RMSE with the *average* σ mixes days
of very different σ and, because prefix sums share noise across days, one run's RMSE/σ̄ ranged
0.46–1.85 over 12 runs: one noise draw read as bias. Here the days' z-scores are judged with
the correlation their noise has (given by the release's noise law): the whitened sum of squares
zᵀR⁻¹z is χ² with n degrees of freedom when the errors are noise alone, and the mean z has the
standard error √(1ᵀR1)/n. An excess is attributed to bias only when these say so; clipping can
only drop contributions, so it shows as a significantly negative mean z.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats

__all__ = ["NoiseFit", "noise_fit"]

SIGNIFICANCE = 0.01
"""Two-sided level of both tests (χ² of the whitened z, and the mean z)."""

_BEYOND_2 = 2.0 * stats.norm.sf(2.0)  # P(|Z| > 2) ≈ 0.0455


@dataclass(frozen=True)
class NoiseFit:
    """The z-scores of one run's answers, summarised."""

    days: int
    rms_z: float
    mean_z: float
    mean_z_se: float
    beyond_2: int
    expected_beyond_2: float
    chi2_p: float

    @property
    def mean_p(self) -> float:
        """Two-sided p-value of the mean z under noise alone."""
        return float(2.0 * stats.norm.sf(abs(self.mean_z) / self.mean_z_se))

    @property
    def within_noise(self) -> bool:
        return self.chi2_p >= SIGNIFICANCE and self.mean_p >= SIGNIFICANCE

    def sentence(self) -> str:
        """One line: the verdict first, then the figures it rests on."""
        plural = "s" if self.beyond_2 != 1 else ""
        figures = (
            f"RMS z {self.rms_z:.2f} over {self.days} days, {self.beyond_2} day{plural} "
            f"beyond ±2σ (expected ≈{self.expected_beyond_2:.1f}), "
            f"mean z {self.mean_z:+.2f} ± {self.mean_z_se:.2f}"
        )
        if self.within_noise:
            return f"within its noise: {figures}"
        if self.mean_p < SIGNIFICANCE and self.mean_z < 0:
            cause = "biased downwards, as clipping does"
        elif self.mean_p < SIGNIFICANCE:
            cause = "biased upwards"
        else:
            cause = "errors larger than the stated noise"
        return f"beyond its noise ({cause}; χ² p {self.chi2_p:.2g}): {figures}"


def noise_fit(
    errors: np.ndarray, stds: np.ndarray, correlation: np.ndarray | None = None
) -> NoiseFit:
    """Summarise ``errors`` (released − true) against each one's stated ``stds``;
    ``correlation``: the noise's correlation between the answers (None: independent)."""
    e = np.asarray(errors, dtype=np.float64)
    s = np.asarray(stds, dtype=np.float64)
    if e.shape != s.shape or e.ndim != 1 or e.size == 0:
        raise ValueError("errors and stds: one non-empty vector each, of equal length")
    if np.any(s <= 0):
        raise ValueError("every stated std must be > 0")
    n = e.size
    z = e / s
    r = np.eye(n) if correlation is None else np.asarray(correlation, dtype=np.float64)
    whitened = float(z @ np.linalg.lstsq(r, z, rcond=None)[0])
    rank = int(np.linalg.matrix_rank(r))
    return NoiseFit(
        days=n,
        rms_z=float(np.sqrt(np.mean(z * z))),
        mean_z=float(np.mean(z)),
        mean_z_se=float(np.sqrt(max(float(r.sum()), 1e-300)) / n),
        beyond_2=int(np.sum(np.abs(z) > 2.0)),
        expected_beyond_2=float(n * _BEYOND_2),
        chi2_p=float(stats.chi2.sf(whitened, rank)),
    )

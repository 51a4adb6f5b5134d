"""What a results run is (its scale) and what it produces (every table's numbers): the data
both the runner (report.py) and the renderer (markdown.py) work on."""

from __future__ import annotations

from dataclasses import dataclass, field

from dp_research.evaluation.ablations import AblationRow
from dp_research.evaluation.experiment import ExperimentConfig, ExperimentResult
from dp_research.evaluation.sweeps import DAYS_GRID, RHO_GRID


@dataclass(frozen=True)
class Scale:
    """How big a run is; the full scale is the paper's."""

    users: int = 1_000_000
    publishers: int = 1000
    repeats: int = 10
    seed: int = 0
    rho_grid: tuple[float, ...] = RHO_GRID
    days_grid: tuple[int, ...] = DAYS_GRID

    def base(self, dataset: str) -> ExperimentConfig:
        return ExperimentConfig(
            dataset,
            users=self.users,
            publishers=self.publishers,
            repeats=self.repeats,
            seed=self.seed,
        )


FULL_SCALE = Scale()
CI_SCALE = Scale(users=3000, publishers=20, repeats=2, rho_grid=(0.5, 2.0), days_grid=(7, 15))


@dataclass
class AllResults:
    """Every number of the results page, by table; timings per dataset."""

    scale: Scale
    main: dict[tuple[str, str], ExperimentResult] = field(default_factory=dict)
    sweeps: dict[str, dict[str, dict[str, list[ExperimentResult]]]] = field(default_factory=dict)
    ablations: dict[str, dict[str, list[AblationRow]]] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)

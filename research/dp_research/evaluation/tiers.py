"""The scales of issue 27's evaluation: users a day × publishers, and the draws each one gets.

An advertiser's campaign may reach a thousand converting users a day on five publishers or two
hundred thousand on two hundred; the default mechanism has to hold at both ends. A tier names
the users a day (the generator's total is set from it, :func:`~.datasets.generator_users`), the
publishers, and how many seeded noise repeats run on each of ``seeds`` independently generated
datasets: at 1 000 users a day the data itself varies from one draw to the next, so the small
tier runs several datasets; at the large tiers one dataset is representative and each repeat
costs more. Facebook has its fixed size and is not tiered.
"""

from __future__ import annotations

from dataclasses import dataclass

from dp_research.evaluation.adsbpc_runs import PlusSettingValues
from dp_research.evaluation.experiment import ExperimentConfig

__all__ = ["CI_TIERS", "TIERS", "Tier"]


@dataclass(frozen=True)
class Tier:
    users_per_day: int
    publishers: int
    repeats: int  # noise repeats per dataset
    seeds: int = 1  # independently generated datasets (data seeds 0, 1, …)

    def __post_init__(self) -> None:
        if min(self.users_per_day, self.publishers, self.repeats, self.seeds) < 1:
            raise ValueError("a tier's users a day, publishers, repeats and seeds must be >= 1")

    @property
    def label(self) -> str:
        return f"{self.users_per_day:,} × {self.publishers}"

    def configs(
        self,
        dataset: str,
        workload: str,
        methods: tuple[str, ...],
        *,
        rho: float = 1.0,
        days: int = 31,
        plus_settings: PlusSettingValues = (),
    ) -> list[ExperimentConfig]:
        """One experiment per data seed (noise seeds follow from it, as everywhere)."""
        return [
            ExperimentConfig(
                dataset,
                workload=workload,
                rho=rho,
                days=days,
                publishers=self.publishers,
                repeats=self.repeats,
                methods=methods,
                seed=seed,
                users_per_day=self.users_per_day,
                plus_settings=plus_settings,
            )
            for seed in range(self.seeds)
        ]


TIERS = (
    Tier(1_000, 5, repeats=20, seeds=4),
    Tier(20_000, 20, repeats=10),
    Tier(200_000, 200, repeats=5),
)
CI_TIERS = (  # the same shapes (publishers, several seeds at the small end) in seconds
    Tier(100, 5, repeats=2, seeds=2),
    Tier(200, 20, repeats=2),
    Tier(400, 200, repeats=2),
)

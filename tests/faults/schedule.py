"""A schedule: 2–8 processes against one home and one ledger, drawn from a seed alone.

Kinds (what operators run): ``run`` (``dp-platform run``, whole campaign or ``--through``, in a
forkserver child), ``run_cli`` (the same as a real cold-started CLI process), ``materialize``
(one asset, one partition, through Dagster), ``backfill`` (a campaign's day range as one
Dagster run), ``edit`` (``dp-platform run`` with a catalogue whose registered campaign was
edited: must be refused, nothing spent) and ``ingest`` (a late load of another advertiser's
events). Each process starts at once or after a delay; some carry a fail point
(dp_platform/faults.py), some are SIGKILLed from outside after a random delay.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import timedelta

from dp_platform.faults import FAULT_POINTS
from tests.faults.workers import Job
from tests.faults.world import CAMPAIGNS, DAYS, START, STREAM_ASSETS

KINDS = ("run", "run_cli", "materialize", "backfill", "edit", "ingest")
KIND_WEIGHTS = (30, 6, 26, 22, 8, 8)


@dataclass(frozen=True)
class Schedule:
    seed: int
    jobs: tuple[Job, ...]

    def describe(self) -> list[str]:
        return [f"  {n}: at {j.start_delay:.2f}s {j.describe()}" for n, j in enumerate(self.jobs)]


def _fault(rng: random.Random, kind: str) -> tuple[str | None, float | None]:
    """(fail point, outside kill delay): about 40% fail points, 25% timed kills, the rest none."""
    roll = rng.random()
    if roll < 0.40 and kind not in {"ingest", "edit"}:
        point = rng.choice(FAULT_POINTS)
        nth = rng.choice((1, 1, 1, 2, 3))
        return (point if nth == 1 else f"{point}@{nth}"), None
    if roll < 0.65:
        return None, round(rng.uniform(0.3, 12.0), 2)
    return None, None


def draw_schedule(seed: int) -> Schedule:
    """The schedule of ``seed`` (same seed, same schedule: a failure is replayed exactly)."""
    rng = random.Random(seed)
    jobs = []
    for _ in range(rng.randint(2, 8)):
        kind = rng.choices(KINDS, KIND_WEIGHTS)[0]
        delay = 0.0 if rng.random() < 0.5 else round(rng.uniform(0.0, 8.0), 2)
        fault, kill_after = _fault(rng, kind)
        campaign = rng.choice(CAMPAIGNS)
        first = START + timedelta(days=rng.randrange(DAYS))
        last = first + timedelta(days=rng.randrange(DAYS - (first - START).days))
        if kind in {"run", "run_cli"}:
            through = None if rng.random() < 0.6 else last
            job = Job(kind, last=through)
        elif kind == "materialize":
            job = Job(kind, campaign=campaign, asset=rng.choice(STREAM_ASSETS), first=first)
        elif kind == "backfill":
            job = Job(kind, campaign=campaign, first=first, last=last)
        else:
            job = Job(kind)
        jobs.append(
            Job(
                job.kind,
                job.campaign,
                job.asset,
                job.first,
                job.last,
                start_delay=delay,
                fault=fault,
                kill_after=kill_after,
            )
        )
    return Schedule(seed, tuple(jobs))

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
from dataclasses import dataclass, replace
from datetime import timedelta

from dp_platform.faults import FAULT_POINTS
from tests.faults.workers import Job
from tests.faults.world import CAMPAIGNS, DAYS, START, STREAM_ASSETS

KINDS = ("run", "run_cli", "materialize", "backfill", "edit", "ingest")
# Start delays and outside kills, scaled to how long each kind of process lives
# (docs/faults.md#measured). A `run` serves the code location and launches each campaign's runs
# through it (a code server, a cold `dagster job launch` and a run worker per run): about 40 s
# for both campaigns on 2 cores, a backfill about 15 s, while a single-asset materialisation,
# an edit or an ingest (in their own process) take 1-3 s. A timed kill drawn in the kind's
# window lands anywhere from start-up to the last step, often while a run worker holds the
# warehouse lock.
MAX_START_DELAY = 3.0
KILL_AFTER = {
    "run": (0.2, 40.0),
    "run_cli": (0.2, 40.0),
    "backfill": (0.2, 20.0),
    "materialize": (0.2, 5.0),
    "edit": (0.2, 5.0),
    "ingest": (0.2, 5.0),
}
KIND_WEIGHTS = (30, 6, 26, 22, 8, 8)


@dataclass(frozen=True)
class Schedule:
    seed: int
    jobs: tuple[Job, ...]

    def describe(self) -> list[str]:
        return [f"  {n}: at {j.start_delay:.2f}s {j.describe()}" for n, j in enumerate(self.jobs)]


# The fail points a process can pass: a single-asset materialisation passes only its asset's
# (a release also clips the day if that was not done yet); runs and backfills pass them all.
# campaign_release.drawn: the one reach release, only at the end of a whole `run`.
DAILY_POINTS = tuple(p for p in FAULT_POINTS if p != "campaign_release.drawn")
ASSET_POINTS = {
    "attributed_conversions": ("warehouse.partition_written",),
    "user_day_contributions": ("warehouse.partition_written",),
    "contribution_bound": ("bound.drawn",),
    "clipped_daily_vector": ("clip.written",),
    "noisy_daily_release": ("release.drawn", "clip.written"),
    "cumulative_query_answers": (),
}


def _reachable(job: Job) -> tuple[tuple[str, ...], int]:
    """(fail points ``job`` can pass, how many times at most: its days)."""
    if job.kind in {"run", "run_cli"}:
        return FAULT_POINTS, DAYS
    if job.kind == "backfill":
        assert job.first is not None and job.last is not None
        return DAILY_POINTS, (job.last - job.first).days + 1
    if job.kind == "materialize":
        assert job.asset is not None
        return ASSET_POINTS[job.asset], 1
    return (), 0  # ingest, edit: timed kills only


def _fault(rng: random.Random, job: Job) -> tuple[str | None, float | None]:
    """(fail point, outside kill delay): about 45% fail points (where the process can reach
    one), 25% timed kills, the rest none."""
    points, passes = _reachable(job)
    roll = rng.random()
    if roll < 0.45 and points:
        point = rng.choice(points)
        nth = 1 if point == "campaign_release.drawn" else rng.randint(1, passes)
        return (point if nth == 1 else f"{point}@{nth}"), None
    if roll < 0.70:
        return None, round(rng.uniform(*KILL_AFTER[job.kind]), 2)
    return None, None


# Constructed schedules (CI): seed −1 − k places the k-th fail point by construction, the last
# one an outside SIGKILL of a whole run's process group at the first moment after a few seconds
# that one of its processes (the run worker) holds the warehouse lock. Each runs next to a
# backfill of the other campaign and a one-asset materialisation, then the usual clean retries
# and the full invariant check.
TIMER_KILL_AFTER = 3.0
CONSTRUCTED = len(FAULT_POINTS) + 1


def constructed_schedule(seed: int) -> Schedule:
    """Schedule −1 … −:data:`CONSTRUCTED`: each fail point once, then a timed kill."""
    index = -seed - 1
    if not 0 <= index < CONSTRUCTED:
        raise ValueError(f"constructed schedules are seeds -1 .. -{CONSTRUCTED}")
    if index < len(FAULT_POINTS):
        main = Job("run", fault=FAULT_POINTS[index])
    else:
        main = Job("run", kill_after=TIMER_KILL_AFTER, kill_holding_lock=True)
    beside = (
        Job(
            "backfill",
            campaign="plus",
            first=START,
            last=START + timedelta(days=2),
            start_delay=1.0,
        ),
        Job("materialize", campaign="spring", asset="attributed_conversions", first=START),
    )
    return Schedule(seed, (main, *beside))


def draw_schedule(seed: int) -> Schedule:
    """The schedule of ``seed`` (same seed, same schedule: a failure is replayed exactly);
    a negative seed is a constructed one (:func:`constructed_schedule`)."""
    if seed < 0:
        return constructed_schedule(seed)
    rng = random.Random(seed)
    jobs = []
    for _ in range(rng.randint(2, 8)):
        kind = rng.choices(KINDS, KIND_WEIGHTS)[0]
        delay = 0.0 if rng.random() < 0.5 else round(rng.uniform(0.0, MAX_START_DELAY), 2)
        campaign = rng.choice(CAMPAIGNS)
        first = START + timedelta(days=rng.randrange(DAYS))
        last = first + timedelta(days=rng.randrange(DAYS - (first - START).days))
        if kind in {"run", "run_cli"}:
            job = Job(kind, last=None if rng.random() < 0.6 else last)
        elif kind == "materialize":
            job = Job(kind, campaign=campaign, asset=rng.choice(STREAM_ASSETS), first=first)
        elif kind == "backfill":
            job = Job(kind, campaign=campaign, first=first, last=last)
        else:
            job = Job(kind)
        fault, kill_after = _fault(rng, job)
        jobs.append(replace(job, start_delay=delay, fault=fault, kill_after=kill_after))
    return Schedule(seed, tuple(jobs))

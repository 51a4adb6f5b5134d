"""What Dagster recorded about a run, read the way the UI reads it (tests only)."""

from __future__ import annotations

import dagster as dg

from assets.launch import worker_pid  # the run worker's pid, as Dagster recorded it

__all__ = ["REPOSITORY_LABEL", "listed_on_job_page", "worker_pid"]

# The label Dagster gives runs created against the `assets.location` code location; the UI's
# job page lists a job's runs by job name *and* this tag, so a run without it is invisible there.
REPOSITORY_LABEL = "__repository__@assets.location"


def listed_on_job_page(instance: dg.DagsterInstance, job_name: str) -> list[dg.DagsterRun]:
    """The runs the job's Runs page shows (its GraphQL filter: job name + repository label)."""
    return list(
        instance.get_runs(
            filters=dg.RunsFilter(job_name=job_name, tags={".dagster/repository": REPOSITORY_LABEL})
        )
    )

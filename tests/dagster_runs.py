"""What Dagster recorded about a run, read the way the UI reads it (tests only)."""

from __future__ import annotations

import dagster as dg

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


def worker_pid(instance: dg.DagsterInstance, run_id: str) -> int | None:
    """The pid of the process that executed the run's steps ("Executing steps in process")."""
    for entry in instance.all_logs(run_id, of_type=dg.DagsterEventType.ENGINE_EVENT):
        data = entry.dagster_event.event_specific_data if entry.dagster_event else None
        pid = getattr(data, "metadata", {}).get("pid") if data else None
        if pid is not None:
            return int(pid.value)
    return None

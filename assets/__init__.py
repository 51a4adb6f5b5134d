"""The Dagster layer, thin: asset factories, resources, checks, schedules, and the commands that
orchestrate through Dagster. The code location itself is :mod:`assets.location`."""

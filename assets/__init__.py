"""The Dagster layer, thin: asset factories, resources, checks, schedules, and the commands that
orchestrate through Dagster. The code location itself is :mod:`assets.location`."""

import warnings

import dagster as dg

# backfill_policy and allow_nonexistent_upstream_partitions are marked beta in Dagster 1.13;
# we rely on them deliberately (docs/operators.md#4-what-the-ui-shows), so the warning is
# noise for operators.
warnings.filterwarnings("ignore", category=dg.BetaWarning)

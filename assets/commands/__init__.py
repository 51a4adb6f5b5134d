"""`dp-platform` sub-commands that orchestrate through Dagster (imported lazily when run)."""

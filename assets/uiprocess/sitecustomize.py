"""Run at start-up by every Python process `dp-platform ui` starts (its PYTHONPATH): applies the
Dagster correction the UI needs (assets/dagster_fixes.py)."""

from assets.dagster_fixes import apply

apply()

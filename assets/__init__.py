"""The Dagster code location (thin layer over ``dp_platform``); filled in by the platform issue."""

import dagster as dg

defs = dg.Definitions(assets=[])

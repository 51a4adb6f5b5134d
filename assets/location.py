"""The Dagster code location `workspace.yaml` and `dp-platform ui` load.

Built lazily (``@dg.definitions``): importing this module reads no catalogue and solves no plan;
Dagster calls :func:`defs` when it loads the location. The catalogue and the platform home come
from the environment, so `make ui` and `dp-platform run` see the same campaigns and stores:

    DP_PLATFORM_CONFIG   campaign catalogue (default: examples/campaigns.yaml)
    DP_PLATFORM_HOME     platform home (default: .dp_home)
"""

import os
from pathlib import Path

import dagster as dg

from assets.definitions import build_definitions

_REPO = Path(__file__).resolve().parents[1]


@dg.definitions
def defs() -> dg.Definitions:
    return build_definitions(
        os.environ.get("DP_PLATFORM_CONFIG", str(_REPO / "examples" / "campaigns.yaml")),
        os.environ.get("DP_PLATFORM_HOME", str(_REPO / ".dp_home")),
    )

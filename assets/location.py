"""The Dagster code location `workspace.yaml` loads: ``defs`` for one catalogue and home.

The catalogue and the platform home come from the environment, so `make ui` and
`dp-platform run` see the same campaigns and stores:

    DP_PLATFORM_CONFIG   campaign catalogue (default: examples/campaigns.yaml)
    DP_PLATFORM_HOME     platform home (default: .dp_home)
"""

from __future__ import annotations

import os
from pathlib import Path

from assets.definitions import build_definitions

_REPO = Path(__file__).resolve().parents[1]

defs = build_definitions(
    os.environ.get("DP_PLATFORM_CONFIG", str(_REPO / "examples" / "campaigns.yaml")),
    os.environ.get("DP_PLATFORM_HOME", str(_REPO / ".dp_home")),
)

"""A correction to Dagster 1.13's UI partition listing, applied only in the processes of
`dp-platform ui` (the webserver, the daemon and the code server).

``TimeWindowPartitionsDefinition.get_paginated_partition_keys`` lists the newest partitions first
from *now*, ignoring the definition's end date. A campaign's partitions end on its last day, so
for any campaign that is over, the asset page's Plots (Partitions) view asks for the latest 50
partition keys, gets 50 days after the campaign, finds no materialisation in them and shows
nothing. The correction lists from ``min(now, end)``; keys inside the definition are unchanged.

Why a patch: no setting or public hook changes how the UI pages through a time-window
definition's keys. ``dp-platform ui`` puts ``assets/uiprocess/`` on ``PYTHONPATH``, whose
``sitecustomize`` calls :func:`apply`. ``tests/test_ui_metadata.py`` checks both the bug (so this
is removed when Dagster fixes it) and the correction. It is the only module of the platform that
imports a private ``dagster._`` module (``tests/test_architecture.py`` keeps it so).
"""

from __future__ import annotations

__all__ = ["apply"]


def apply() -> None:
    """Patch the listing once (idempotent)."""
    from dagster._core.definitions.partitions.context import PartitionLoadingContext
    from dagster._core.definitions.partitions.definition.time_window import (
        TimeWindowPartitionsDefinition,
    )
    from dagster._core.definitions.temporal_context import TemporalContext

    listing = TimeWindowPartitionsDefinition.get_paginated_partition_keys
    if getattr(listing, "_dp_platform_fixed", False):
        return

    def get_paginated_partition_keys(self, context, limit, ascending, cursor=None):  # type: ignore[no-untyped-def]
        end = self.end
        temporal = context.temporal_context
        if end is not None and temporal.effective_dt > end:
            context = PartitionLoadingContext(
                temporal_context=TemporalContext(
                    effective_dt=end, last_event_id=temporal.last_event_id
                ),
                dynamic_partitions_store=context.dynamic_partitions_store,
            )
        return listing(self, context, limit, ascending, cursor)

    get_paginated_partition_keys._dp_platform_fixed = True  # type: ignore[attr-defined]
    TimeWindowPartitionsDefinition.get_paginated_partition_keys = get_paginated_partition_keys  # type: ignore[method-assign]

"""Does the warehouse hold a broken-down campaign's dimension data for the days it reads?

Events ingested without a dimension's column (``dp-platform ingest`` without ``--config``) are
in no cell of a campaign broken down by it: its cells would be noise around nothing. So such a
campaign is refused before anything is registered, drawn or charged, in one line naming the
dimension and how to load it.

The rule reads ingest metadata only — which loads (batches) were ingested with which dimension
columns (``load_dimensions``), and which loads hold the advertiser's events of the days read —
never a count of events, users or values: it is refused when some load holding the advertiser's
conversions of the days (impressions of the days and of the look-back window before them, for an
impressions dimension) was ingested without the dimension's column.
"""

from __future__ import annotations

from datetime import date, timedelta
from typing import TYPE_CHECKING

from dp_platform.config import CampaignConfig
from dp_platform.errors import ConfigError

if TYPE_CHECKING:
    from dp_platform.warehouse.base import WarehouseEngine

__all__ = ["MissingDimensionData", "require_dimension_data"]


class MissingDimensionData(ConfigError):
    """A campaign's breakdown reads a dimension some of its period's events were loaded without."""


def require_dimension_data(
    warehouse: WarehouseEngine, campaign: CampaignConfig, first: date, last: date
) -> None:
    """Refuse ``campaign`` for days ``first``..``last`` when a load its breakdown reads lacks one
    of its dimensions (see the module doc); the first such dimension is named."""
    for dimension in campaign.breakdown:
        start = first
        if dimension.source == "impressions":
            start = first - timedelta(days=campaign.attribution.lookback_days)
        loads = warehouse.loads_without(
            dimension.source, campaign.advertiser, start, last, dimension.name
        )
        if loads:
            shown = ", ".join(str(load) for load in loads)
            raise MissingDimensionData(
                f"campaign {campaign.name}: its breakdown needs dimension {dimension.name!r}, "
                f"but the {dimension.source} of {start}..{last} were loaded without that column "
                f"(load {shown}); load them with `dp-platform ingest --config CATALOGUE ...` "
                "(CATALOGUE declaring the dimension) into a new --home: a file once loaded is "
                "not loaded again"
            )

"""The DuckDB warehouse: ingest with quarantine, attribution, contributions, histograms and
clipping as SQL (``*.sql`` next to this package), driven by a small runner."""

from dp_platform.warehouse.ingest import IngestError, IngestReport, KindReport
from dp_platform.warehouse.store import Warehouse
from dp_platform.warehouse.store_core import WarehouseError

__all__ = ["IngestError", "IngestReport", "KindReport", "Warehouse", "WarehouseError"]

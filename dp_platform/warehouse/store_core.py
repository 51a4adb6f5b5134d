"""The DuckDB warehouse's ground floor: the file and its schema, the campaign's released vector
put in scope for a query, and the record of which (asset, campaign, day) partitions exist.

:class:`~dp_platform.warehouse.store.Warehouse` builds every step on it (attribution,
contributions, histograms, clipping, the AdsBPC+ filter, campaign-level sums).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import date, timedelta
from pathlib import Path
from types import TracebackType
from typing import Self

import duckdb
import numpy as np
import pandas as pd

from dp_platform.cell_strategy import MarginalWeights
from dp_platform.cells import CellLayout, dimension_keys, layout_of
from dp_platform.config import CampaignConfig
from dp_platform.errors import ConfigError
from dp_platform.warehouse.base import ReleaseInputs
from dp_platform.warehouse.runner import SqlRunner

__all__ = [
    "ATTRIBUTED",
    "CLIPPED",
    "CONTRIBUTIONS",
    "FRAME_TABLES",
    "SCHEMA_VERSION",
    "US_PER_DAY",
    "WAREHOUSE_FILE",
    "WarehouseCore",
    "WarehouseError",
    "check_filtered_alike",
    "days_between",
    "require_current",
]

SCHEMA_VERSION = "1"
WAREHOUSE_FILE = "warehouse.duckdb"
ATTRIBUTED = "attributed_conversions"
CONTRIBUTIONS = "user_day_contributions"
CLIPPED = "clipped_daily_vectors"
US_PER_DAY = 86_400_000_000
FRAME_TABLES = (
    "impressions",
    "conversions",
    "quarantine",
    "attributed",
    "contributions",
    "clipped",
)


class WarehouseError(ConfigError):
    """A step was asked for before its input exists (or after its input changed)."""


def check_filtered_alike(
    campaign: str,
    day: date,
    stored: tuple[float, float, float],
    asked: tuple[float, float, float],
    stored_cap: float | None,
    remainder_cap: float | None,
) -> None:
    """A filter day already committed is asked again with the (r, σ, cap) and remainder cap
    it was committed with (its spend is applied once: a re-run returns it, never re-filters)."""
    if tuple(stored) != tuple(asked):
        raise WarehouseError(
            f"campaign {campaign}, {day}: already filtered with (r, σ, cap) = "
            f"{tuple(stored)}; a day's spend is applied once"
        )
    if stored_cap != remainder_cap:
        raise WarehouseError(
            f"campaign {campaign}, {day}: already filtered with remainder cap "
            f"{stored_cap}; a day's spend is applied once"
        )


def days_between(first: date, last: date) -> list[date]:
    """Every day from ``first`` to ``last``, both included."""
    return [first + timedelta(days=i) for i in range((last - first).days + 1)]


class WarehouseCore:
    """One DuckDB file; the schema is created idempotently on open (unless read-only).

    ``threads`` and ``memory_limit`` are passed to DuckDB (e.g. ``2`` and ``"3GB"``); DuckDB
    spills to ``<file>.tmp`` beyond the limit. By default DuckDB uses every core and 80% of RAM.
    """

    def __init__(
        self,
        path: str | Path,
        *,
        read_only: bool = False,
        threads: int | None = None,
        memory_limit: str | None = None,
    ) -> None:
        self.path = Path(path)
        in_memory = str(path) == ":memory:"  # tests and throw-away experiments
        if read_only and not self.path.is_file():
            raise FileNotFoundError(f"warehouse {self.path}: not found")
        if not read_only and not in_memory:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        config: dict[str, str | int] = {}
        if threads is not None:
            config["threads"] = threads
        if memory_limit is not None:
            config["memory_limit"] = memory_limit
        self.con = duckdb.connect(str(self.path), read_only=read_only, config=config)
        self.con.execute("SET TimeZone = 'UTC'")
        self.sql = SqlRunner(self.con)
        if not read_only:
            self.sql.run("schema")
            self.sql.query("DELETE FROM meta WHERE key = 'schema_version'")
            self.sql.query("INSERT INTO meta VALUES ('schema_version', $v)", v=SCHEMA_VERSION)
            self.sql.query(  # created once; a copied or moved file keeps it
                "INSERT INTO meta SELECT 'warehouse_id', CAST(uuid() AS VARCHAR) "
                "WHERE NOT EXISTS (SELECT 1 FROM meta WHERE key = 'warehouse_id')"
            )
            self._record_load_dimensions()

    def _record_load_dimensions(self) -> None:
        """Once per warehouse: which dimensions the loads made before ``load_dimensions`` was
        kept were ingested with (load_dimensions_backfill.sql)."""
        if self.sql.query("SELECT 1 FROM meta WHERE key = 'load_dimensions_recorded'"):
            return
        with self.sql.transaction():
            self.sql.run("load_dimensions_backfill")
            self.sql.query("INSERT INTO meta VALUES ('load_dimensions_recorded', '1')")

    def loads_without(
        self, kind: str, advertiser: str, first: date, last: date, dimension: str
    ) -> list[int]:
        """The loads of ``kind`` holding the advertiser's events dated ``first``..``last`` that
        were ingested without ``dimension``'s column (loads_without_dimension.sql)."""
        rows = self.sql.run(
            "loads_without_dimension",
            kind=kind,
            advertiser=advertiser,
            first=first,
            last=last,
            dimension=dimension,
        )
        return [int(row[0]) for row in rows]

    @classmethod
    def at_home(cls, home: str | Path, **options: object) -> Self:
        """The platform's warehouse: ``<home>/warehouse.duckdb``."""
        return cls(Path(home) / WAREHOUSE_FILE, **options)  # type: ignore[arg-type]

    @property
    def identity(self) -> str:
        """This warehouse's identity (a random UUID stored in its ``meta`` table when it was
        first opened for writing): what the ledger binds a campaign with per-user state to."""
        row = self.con.execute("SELECT value FROM meta WHERE key = 'warehouse_id'").fetchone()
        if row is None:
            raise WarehouseError(
                f"warehouse {self.path}: has no identity yet; open it once for writing "
                "(`dp-platform ingest` or `run`)"
            )
        return str(row[0])

    def close(self) -> None:
        self.con.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()

    # -- campaign scope ------------------------------------------------------------------

    def advertiser_publishers(self, advertiser: str) -> list[str]:
        """Every publisher that has shown an impression of the advertiser, sorted by id.

        Read once, when a ``publishers: all`` campaign registers: the keys are then frozen in
        the ledger (dp_platform/registration.py). Assumes the advertiser's set of publishers is
        public (its media plan): the vector's length and order must not depend on users.
        """
        rows = self.sql.run("advertiser_publishers", advertiser=advertiser)
        return [row[0] for row in rows]

    def campaign_publishers(self, campaign: CampaignConfig) -> list[str]:
        """The release's publishers, in vector order.

        A registered campaign's config carries its frozen key list, used as given. ``all`` (a
        catalogue entry not yet registered — library use and tests) reads the advertiser's
        publishers now, which can grow as impressions are loaded; the platform never releases
        from it.
        """
        if isinstance(campaign.publishers, list):
            return list(campaign.publishers)
        return self.advertiser_publishers(campaign.advertiser)

    def _scope(self, campaign: CampaignConfig, publishers: list[str] | None = None) -> list[str]:
        """Put the vector's publishers in scope (temp table campaign_pubs); ``None``: the
        campaign's current list."""
        if publishers is None:
            publishers = self.campaign_publishers(campaign)
        publishers = list(publishers)
        self.sql.run("campaign_publishers", publisher_ids=publishers or [""])
        if not publishers:
            self.con.execute("DELETE FROM campaign_pubs")
        return publishers

    def _cell_scope(
        self,
        campaign: CampaignConfig,
        publishers: list[str] | None = None,
        marginals: MarginalWeights | None = None,
    ) -> CellLayout:
        """Put the campaign's released vector in scope: its publishers (campaign_pubs) and the
        table macro ``cell_rows`` (cell_rows_plain.sql for a count-only campaign without
        breakdown, cell_rows.sql with its layout tables otherwise). ``marginals``: the
        registered plan's (how the cells are measured: :meth:`_gram_scope` reads it)."""
        layout = layout_of(campaign, self._scope(campaign, publishers), marginals)
        if layout.plain:
            self.sql.run("cell_rows_plain")
            return layout
        keys = dimension_keys(campaign, layout, "conversions")
        self.sql.run(
            "cell_layout",
            dimensions=len({name for name, *_ in keys}),
            combinations=layout.combinations,
            measures=len(layout.measures),
            value_cap=float(layout.value_cap or 1.0),
            measure_index=list(range(len(layout.measures))),
            value_part=[m == "value" for m in layout.measures],
            scales=[layout.scale(m) for m in layout.measures],
            dim_names=[k[0] for k in keys] or [""],
            dim_values=[k[1] for k in keys] or [""],
            dim_idx=[k[2] for k in keys] or [0],
            dim_strides=[k[3] for k in keys] or [0],
        )
        self.sql.run("cell_rows", cells_per_publisher=layout.combinations * len(layout.measures))
        return layout

    def _touch_scope(self, campaign: CampaignConfig) -> None:
        """With impression dimensions in the breakdown, attribution records the credited
        impression's touch (attribution_touch.sql); without, touch_of stays the constant 0."""
        keys = dimension_keys(campaign, layout_of(campaign, []), "impressions")
        if not keys:
            return
        self.sql.run(
            "attribution_touch",
            touch_dimensions=len({name for name, *_ in keys}),
            dim_names=[k[0] for k in keys],
            dim_values=[k[1] for k in keys],
            dim_idx=[k[2] for k in keys],
            dim_strides=[k[3] for k in keys],
        )

    def _gram_scope(self, layout: CellLayout) -> dict[str, bool]:
        """Put the layout's norm in scope for the AdsBPC+ SQL: temp table gram_slots
        (position, slot, coef, weight — :meth:`dp_platform.cell_strategy.CellStrategy.gram`,
        public) and the parameter ``identity``; the identity Gram leaves the table empty (the
        SQL then sums x² itself, without the join)."""
        gram = layout.strategy.gram()
        self.con.register("gram_frame", gram.slot_rows())
        try:
            self.con.execute("CREATE OR REPLACE TEMP TABLE gram_slots AS SELECT * FROM gram_frame")
        finally:
            self.con.unregister("gram_frame")
        return {"identity": gram.identity}

    def publisher_sums(
        self,
        campaign: CampaignConfig,
        query: str,
        /,
        publishers: list[str] | None = None,
        cells_query: str | None = None,
        **params: object,
    ) -> tuple[list[str], np.ndarray]:
        """Run ``query`` (rows of (vector position, sum)) with the campaign's released vector in
        scope (``None``: the campaign's publishers); returns each entry's publisher and the
        vector — per publisher, or per cell (dp_platform/cells.py) — zeros where no row.
        ``cells_query``: the same sums written for a layout with cells, run instead of ``query``
        when the campaign has them. Call inside a transaction, with whatever the query reads."""
        layout = self._cell_scope(campaign, publishers)
        if cells_query is not None and not layout.plain:
            query = cells_query
        return layout.cell_publishers(), self._layout_sums(layout, query, **params)

    def _layout_sums(self, layout: CellLayout, query: str, **params: object) -> np.ndarray:
        """``query``'s (vector position, sum) rows as ``layout``'s vector, zeros where no row
        (the layout in scope: :meth:`_cell_scope`)."""
        vector = np.zeros(layout.size, dtype=np.float64)
        sums = self.sql.frame(query, **params)  # columnar: 10⁵ cells are no Python loop
        vector[sums.iloc[:, 0].to_numpy(dtype=np.int64)] = sums.iloc[:, 1].to_numpy(np.float64)
        return vector

    @staticmethod
    def _check_range(campaign: CampaignConfig, first: date, last: date) -> None:
        campaign.day_index(first)
        campaign.day_index(last)
        if last < first:
            raise ConfigError(f"day range {first}..{last} is empty")

    # -- partitions ----------------------------------------------------------------------

    def _record(
        self, asset: str, campaign: CampaignConfig, first: date, last: date, inputs: str | None
    ) -> None:
        """Mark days first..last of ``asset`` as materialised (also the empty ones), each with
        the loads it was built from (:func:`require_current`): the loads committed now when it
        reads them itself (``inputs`` None), else those its ``inputs`` partition was built from."""
        if asset not in (ATTRIBUTED, CONTRIBUTIONS, CLIPPED):
            raise ValueError(f"no partitions are recorded for {asset!r}")
        table = asset  # each recorded asset is the table of its name
        self.sql.query(
            "DELETE FROM partitions WHERE asset = $asset AND campaign = $campaign "
            "AND day BETWEEN $first AND $last",
            asset=asset,
            campaign=campaign.name,
            first=first,
            last=last,
        )
        # the loads it was built from: those committed now, or those of its input partition
        built_from = (
            "(SELECT coalesce(max(load_id), 0) FROM loads)"
            if inputs is None
            else "(SELECT p.input_version FROM partitions AS p WHERE p.asset = $inputs "
            "AND p.campaign = $campaign AND p.day = d.day)"
        )
        self.sql.query(
            "INSERT INTO partitions "
            f"SELECT $asset, $campaign, d.day, nextval('partition_versions'), {built_from}, "
            "coalesce(n.rows, 0), now()::TIMESTAMP "
            "FROM (SELECT CAST(unnest(generate_series(CAST($first AS DATE), CAST($last AS DATE), "
            "INTERVAL 1 DAY)) AS DATE) AS day) AS d "
            f"LEFT JOIN (SELECT day, count(*) AS rows FROM {table} WHERE campaign = $campaign "
            "AND day BETWEEN $first AND $last GROUP BY day) AS n ON n.day = d.day",
            asset=asset,
            campaign=campaign.name,
            first=first,
            last=last,
            **({} if inputs is None else {"inputs": inputs}),
        )

    def _recorded(self, asset: str, campaign: CampaignConfig, day: date) -> tuple | None:
        """The day's (version, input_version) in ``partitions``, or None if not recorded."""
        rows = self.sql.query(
            "SELECT version, input_version FROM partitions "
            "WHERE asset = $asset AND campaign = $campaign AND day = $day",
            asset=asset,
            campaign=campaign.name,
            day=day,
        )
        return rows[0] if rows else None

    def _version(self, asset: str, campaign: CampaignConfig, day: date) -> tuple[int, int | None]:
        found = self._recorded(asset, campaign, day)
        if found is None:
            raise WarehouseError(
                f"{asset} of campaign {campaign.name} for {day} is not materialised yet"
            )
        return int(found[0]), found[1]

    def release_inputs(self, campaign: CampaignConfig, day: date) -> ReleaseInputs | None:
        """The day's clip record (:meth:`~dp_platform.warehouse.base.WarehouseEngine.
        release_inputs`): its partition version and the load its attribution was built from;
        DuckDB keeps no table versions (``tables`` empty)."""
        found = self._recorded(CLIPPED, campaign, day)
        if found is None or found[1] is None:
            return None
        return ReleaseInputs(load=int(found[1]), clipped_version=int(found[0]), tables={})

    # -- the clipped-vector table: written by every clip, read back by a write-once re-run

    def _store_clipped(
        self,
        campaign: CampaignConfig,
        day: date,
        bound: float,
        publishers: list[str],
        vector: np.ndarray,
    ) -> None:
        """Replace the (campaign, day) partition of the clipped-vector table (schema checks,
        a write-once re-run) and record it, built from the day's attribution: what the release
        drawn from this vector read (:meth:`release_inputs`). Call inside a transaction."""
        self.sql.query(
            f"DELETE FROM {CLIPPED} WHERE campaign = $campaign AND day = $day",
            campaign=campaign.name,
            day=day,
        )
        if publishers:
            # each entry's publisher is the campaign_pubs row of position // entries per
            # publisher (in scope: the vector was just computed); the values go in as a frame
            # (binding 10⁵ list parameters is slower than the clipping itself)
            frame = pd.DataFrame({"position": np.arange(vector.size), "value": vector})
            self.con.register("clipped_entries", frame)
            try:
                self.con.execute(
                    f"INSERT INTO {CLIPPED} "
                    "SELECT $campaign, $day, $bound, v.position, cp.publisher_id, v.value "
                    "FROM clipped_entries AS v "
                    "JOIN campaign_pubs AS cp ON cp.position = v.position // $per",
                    {
                        "campaign": campaign.name,
                        "day": day,
                        "bound": float(bound),
                        "per": len(publishers) // len(set(publishers)),
                    },
                )
            finally:
                self.con.unregister("clipped_entries")
        self._record(CLIPPED, campaign, day, day, ATTRIBUTED)

    def _stored_vector(self, campaign: CampaignConfig, day: date) -> np.ndarray:
        rows = self.sql.query(
            f"SELECT position, value FROM {CLIPPED} WHERE campaign = $c AND day = $d "
            "ORDER BY position",
            c=campaign.name,
            d=day,
        )
        return np.array([value for _, value in rows], dtype=np.float64)


Versions = Callable[[str, CampaignConfig, date], tuple[int, int | None]]
"""(asset, campaign, day) → (its partition's version, the last load it was built from): each
engine's record of its partitions."""


def require_current(version: Versions, campaign: CampaignConfig, day: date) -> None:
    """Contributions of ``day`` exist and were built from the loads the current attribution
    read (a stale one is refused, on either engine). An attributed partition is a function of
    the registered campaign and the loads (private last touch re-uses its stored draws), so a
    re-run over the same loads leaves what was built on it current: two runs that overlap may
    both attribute a day without failing each other's next step; a new load makes it stale."""
    _, attributed_from = version(ATTRIBUTED, campaign, day)
    _, source = version(CONTRIBUTIONS, campaign, day)
    if source != attributed_from:
        raise WarehouseError(
            f"{CONTRIBUTIONS} of campaign {campaign.name} for {day} is stale "
            "(attribution was re-run after a load); materialise it again"
        )

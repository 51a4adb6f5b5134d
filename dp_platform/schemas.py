"""Pandera models of every table the platform reads or writes (docs/data.md).

They state the rules in one readable place and are used three ways: by the Dagster layer as
asset checks on each new partition (``SCHEMAS``, frames from ``Warehouse.day_frame``), by tests
to check the warehouse's SQL against the same rules, and by anyone validating an event file
before handing it to ``dp-platform ingest``. The ingest SQL enforces the event-file rules at
scale (``warehouse/ingest_check_*.sql``); tests keep the two in agreement.

Timestamps are UTC (naive ``datetime64`` in frames). Frames with user ids are private data:
validate them, report counts of failures, never print them.
"""

from __future__ import annotations

from typing import ClassVar

import pandas as pd
import pandera.pandas as pa
from pandera.typing import Series

from dp_platform.warehouse.ingest import REASONS

REASON_PATTERN = (
    "^("
    + "|".join(reason.replace("<dimension>", "[A-Za-z][A-Za-z0-9_]*") for reason in REASONS)
    + ")$"
)
"""A quarantine reason: one of REASONS, ``<dimension>`` standing for a dimension's name."""

__all__ = [
    "SCHEMAS",
    "AttributedConversions",
    "ClippedDailyVectors",
    "Conversions",
    "Impressions",
    "QuarantinedRows",
    "UserDayContributions",
]

_TEXT = {"min_value": 1}
_WEIGHT_SLACK = 1e-9  # float sums of a conversion's weights may exceed 1 by rounding only


class _Model(pa.DataFrameModel):
    class Config:
        strict = True  # exactly the documented columns
        coerce = True  # e.g. datetime64[us] from DuckDB → datetime64[ns]


class Impressions(_Model):
    """An impression: a view or a click of an ad of ``advertiser_id`` on ``publisher_id``.

    Both interactions count as touches for attribution. An event is its user and its id: the
    same id under two users is two events (docs/privacy.md, "Assumptions and limits")."""

    class Config:
        unique: ClassVar[list[str]] = ["user_id", "impression_id"]

    impression_id: Series[str] = pa.Field(str_length=_TEXT)
    user_id: Series[str] = pa.Field(str_length=_TEXT)
    publisher_id: Series[str] = pa.Field(str_length=_TEXT)
    advertiser_id: Series[str] = pa.Field(str_length=_TEXT)
    ts: Series[pa.DateTime]
    interaction: Series[str] = pa.Field(isin=["view", "click"])


class Conversions(_Model):
    """A conversion; its day is the UTC date of ``ts``. ``value`` is optional, >= 0 if given.
    Unique per (user, id), as impressions."""

    class Config:
        unique: ClassVar[list[str]] = ["user_id", "conversion_id"]

    conversion_id: Series[str] = pa.Field(str_length=_TEXT)
    user_id: Series[str] = pa.Field(str_length=_TEXT)
    advertiser_id: Series[str] = pa.Field(str_length=_TEXT)
    ts: Series[pa.DateTime]
    value: Series[float] = pa.Field(ge=0, nullable=True)


class QuarantinedRows(_Model):
    """A rejected event row: where it came from and why — never its values."""

    load_id: Series[int] = pa.Field(ge=1)
    kind: Series[str] = pa.Field(isin=["impressions", "conversions"])
    source_file: Series[str] = pa.Field(str_length=_TEXT)
    source_row: Series[int] = pa.Field(ge=1)
    reason: Series[str] = pa.Field(str_matches=REASON_PATTERN)


_CONVERSION = ["campaign", "user_key", "conversion_id"]
"""One attributed conversion of a campaign (ids are unique per user only)."""


class AttributedConversions(_Model):
    """One row per (attributed conversion, credited publisher, touch); ``user_rank`` is the
    conversion's 0-based place in its user's day in (ts, conversion_id) order; ``touch`` the
    credited impressions' combination over the campaign's impression dimensions (0 without
    any; missing when an impression has no listed value: in no cell). A conversion is its
    (user_key, conversion_id). An engine that does not record touches leaves the column out."""

    campaign: Series[str] = pa.Field(str_length=_TEXT)
    day: Series[pa.Date]
    conversion_id: Series[str] = pa.Field(str_length=_TEXT)
    user_key: Series[int] = pa.Field(ge=0)
    user_rank: Series[int] = pa.Field(ge=0)
    publisher_id: Series[str] = pa.Field(str_length=_TEXT)
    weight: Series[float] = pa.Field(gt=0, le=1 + _WEIGHT_SLACK)
    touch: Series[pd.Int64Dtype] | None = pa.Field(ge=0, nullable=True)

    @pa.dataframe_check
    def weights_sum_to_at_most_one(cls, frame: pd.DataFrame) -> pd.Series:
        totals = frame.groupby(_CONVERSION)["weight"].transform("sum")
        return totals <= 1 + _WEIGHT_SLACK

    @pa.dataframe_check
    def one_publisher_row_per_conversion(cls, frame: pd.DataFrame) -> pd.Series:
        """One row per publisher of a conversion — per (publisher, touch) with touches."""
        keys = [*_CONVERSION, "publisher_id"]
        return ~frame.duplicated(keys + (["touch"] if "touch" in frame else []), keep=False)

    @pa.dataframe_check
    def ranks_number_each_user_day(cls, frame: pd.DataFrame) -> bool:
        """The ranks of a user-day's conversions are exactly 0..c−1."""
        keys = ["campaign", "day", "user_key"]
        conv = frame.drop_duplicates(_CONVERSION)
        ranks = conv.groupby(keys)["user_rank"].agg(["nunique", "max", "size"])
        return bool(
            ((ranks["nunique"] == ranks["size"]) & (ranks["max"] == ranks["size"] - 1)).all()
        )


class UserDayContributions(_Model):
    """c_u,i: a user's number of attributed conversions on a day (users with none absent)."""

    campaign: Series[str] = pa.Field(str_length=_TEXT)
    day: Series[pa.Date]
    user_key: Series[int] = pa.Field(ge=0)
    conversions: Series[int] = pa.Field(ge=1)

    @pa.dataframe_check
    def one_row_per_user_day(cls, frame: pd.DataFrame) -> pd.Series:
        return ~frame.duplicated(["campaign", "day", "user_key"], keep=False)


class ClippedDailyVectors(_Model):
    """x[i]: per-publisher (or per-cell, docs/algorithm.md#cells: ``position`` is the cell,
    ``publisher_id`` its publisher) sums of a day after clipping at ``bound``
    (docs/algorithm.md#clipping)."""

    campaign: Series[str] = pa.Field(str_length=_TEXT)
    day: Series[pa.Date]
    bound: Series[float] = pa.Field(gt=0)
    position: Series[int] = pa.Field(ge=0)
    publisher_id: Series[str] = pa.Field(str_length=_TEXT)
    value: Series[float] = pa.Field(ge=0)

    @pa.dataframe_check
    def one_row_per_position(cls, frame: pd.DataFrame) -> pd.Series:
        return ~frame.duplicated(["campaign", "day", "position"], keep=False)


SCHEMAS: dict[str, type[pa.DataFrameModel]] = {
    "impressions": Impressions,
    "conversions": Conversions,
    "quarantine": QuarantinedRows,
    "attributed": AttributedConversions,
    "contributions": UserDayContributions,
    "clipped": ClippedDailyVectors,
}
"""Table name (as in ``Warehouse.day_frame``) → its model."""

"""Breakdown dimensions in the catalogue: a dimension's public value list and its catch-all,
and a campaign's breakdown dimension as registered (docs/operators.md, "Breakdowns").

Split from config.py (the catalogue's models) because a dimension's rules — its values, its
catch-all, the names it may take — are one job, read by ingest as well as by campaigns.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import (
    Field,
    SerializationInfo,
    SerializerFunctionWrapHandler,
    field_validator,
    model_serializer,
    model_validator,
)

from dp_platform.settings import Strict

__all__ = [
    "CATCH_ALL",
    "EVENT_COLUMNS",
    "MAX_DIMENSION_VALUES",
    "BreakdownDimension",
    "DimensionConfig",
    "check_dimension_name",
]

NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
"""A dimension's (and a catalogue name's) shape: a letter, then letters, digits and _."""
MAX_DIMENSION_VALUES = 1000
"""Largest public value list of one dimension, its catch-all included (stored as a small
integer per event)."""
CATCH_ALL = "other"
"""A catalogue dimension's catch-all unless it names another (or ``catch_all: null``)."""
EVENT_COLUMNS = frozenset(
    {"conversion_id", "impression_id", "user_id", "publisher_id", "advertiser_id", "ts"}
    | {"interaction", "value", "source_row", "load_id"}
    | {"publisher", "measure", "sigma", "ci_low", "ci_high"}
)
"""Names a dimension may not take: event-file columns and the keys of a published cell."""


class DimensionConfig(Strict):
    """A breakdown dimension (docs/operators.md, "Breakdowns"): an event column and its public
    list of values, fixed in the catalogue — a key never appears because the data has it."""

    source: Literal["conversions", "impressions"]
    """The event file whose column it is: a conversion's own value (``region``), or the value
    of the impression attribution credits (``creative``: docs/algorithm.md#cells)."""
    values: list[str] = Field(min_length=1, max_length=MAX_DIMENSION_VALUES)
    catch_all: str | None = CATCH_ALL
    """The public bucket an unlisted value is stored as at ingest, so the event still counts
    (in every campaign, and in this cell of a broken-down one); the last of
    :attr:`cell_values` unless ``values`` lists it. ``None``: an unlisted value is
    quarantined (``unknown_<dimension>_value``), as before catch-alls existed."""

    @field_validator("values")
    @classmethod
    def _distinct(cls, values: list[str]) -> list[str]:
        if any(not value.strip() or value != value.strip() for value in values):
            raise ValueError("values must be non-empty text without surrounding spaces")
        if len(set(values)) != len(values):
            raise ValueError("values must not repeat")
        return values

    @field_validator("catch_all")
    @classmethod
    def _catch_all_text(cls, catch_all: str | None) -> str | None:
        if catch_all is not None and (not catch_all.strip() or catch_all != catch_all.strip()):
            raise ValueError("catch_all must be non-empty text without surrounding spaces")
        return catch_all

    @model_validator(mode="after")
    def _room(self) -> DimensionConfig:
        if len(self.cell_values) > MAX_DIMENSION_VALUES:
            raise ValueError(
                f"values: at most {MAX_DIMENSION_VALUES} values, the catch-all "
                f"{self.catch_all!r} included"
            )
        return self

    @property
    def cell_values(self) -> tuple[str, ...]:
        """Every value a stored event can carry, in cell order: the listed values, then the
        catch-all (a catch-all the list already names keeps its place)."""
        if self.catch_all is None or self.catch_all in self.values:
            return tuple(self.values)
        return (*self.values, self.catch_all)


class BreakdownDimension(DimensionConfig):
    """A campaign's breakdown dimension as registered: its name with the catalogue's
    definition copied in, so the registered cells never change with the catalogue.

    ``catch_all`` defaults to none here: a registration written before catch-alls existed
    carries no such key and keeps its cells. A catalogue entry always gets one written in
    (:meth:`CampaignConfig._resolve_breakdown`), and none is written out when it is ``None``,
    so such a registration reads and compares as it was stored."""

    name: str
    catch_all: str | None = None

    @model_serializer(mode="wrap")
    def _without_absent_catch_all(
        self, handler: SerializerFunctionWrapHandler, info: SerializationInfo
    ) -> dict[str, object]:
        data = handler(self)
        if data.get("catch_all", CATCH_ALL) is None:
            del data["catch_all"]
        return data


def check_dimension_name(name: str) -> str:
    if not NAME.match(name):
        raise ValueError(
            f"dimension {name!r}: a name starts with a letter and uses letters, digits and _"
        )
    if name in EVENT_COLUMNS:
        raise ValueError(
            f"dimension {name!r}: the name of an event column or a published cell key, "
            "choose another"
        )
    return name

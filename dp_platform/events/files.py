"""Write an :class:`EventSet` as the event files of docs/data.md#1-event-files (Parquet or CSV).

Ids become strings here and only here, in chunks through Arrow's vectorised kernels, so writing
5·10⁷ impressions needs a few hundred MB, not tens of GB of Python strings. User, publisher and
advertiser ids are dictionary-encoded (one string per distinct id). Timestamps are UTC.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from dp_platform.events.model import EventSet, id_width

__all__ = ["CONVERSION_COLUMNS", "IMPRESSION_COLUMNS", "EventFiles", "write_events"]

IMPRESSION_COLUMNS = (
    "impression_id",
    "user_id",
    "publisher_id",
    "advertiser_id",
    "ts",
    "interaction",
)
CONVERSION_COLUMNS = ("conversion_id", "user_id", "advertiser_id", "ts", "value")
Format = Literal["parquet", "csv"]
_TS = pa.timestamp("us", tz="UTC")


@dataclass(frozen=True)
class EventFiles:
    impressions: Path
    conversions: Path


def _names(prefix: str, count: int, width: int, start: int = 0) -> pa.Array:
    """``prefix`` + zero-padded numbers start..start+count−1, as an Arrow string array."""
    numbers = pc.cast(pa.array(np.arange(start, start + count, dtype=np.int64)), pa.string())
    padded = pc.utf8_lpad(numbers, width=width, padding="0")
    return pc.binary_join_element_wise(pa.scalar(prefix), padded, pa.scalar(""))


def _dictionary(codes: np.ndarray, names: pa.Array) -> pa.DictionaryArray:
    return pa.DictionaryArray.from_arrays(pa.array(codes.astype(np.int32)), names)


class _Writer:
    """Appends record batches to one Parquet or CSV file."""

    def __init__(self, path: Path, schema: pa.Schema, fmt: Format) -> None:
        self.fmt = fmt
        if fmt == "parquet":
            self._writer = pq.ParquetWriter(path, schema, compression="zstd")
        else:
            plain = pa.schema([pa.field(f.name, _plain(f.type)) for f in schema])
            self._writer = pacsv.CSVWriter(path, plain)

    def write(self, batch: pa.RecordBatch) -> None:
        if self.fmt == "csv":
            columns = [
                c.dictionary_decode() if pa.types.is_dictionary(c.type) else c
                for c in batch.columns
            ]
            batch = pa.RecordBatch.from_arrays(columns, names=batch.schema.names)
        self._writer.write_batch(batch)

    def close(self) -> None:
        self._writer.close()


def _plain(kind: pa.DataType) -> pa.DataType:
    return kind.value_type if pa.types.is_dictionary(kind) else kind


def _write(path: Path, schema: pa.Schema, fmt: Format, rows: int, chunk: int, make) -> None:
    """Write ``rows`` rows in chunks; ``make(lo, hi)`` returns the columns of rows lo..hi−1."""
    writer = _Writer(path, schema, fmt)
    try:
        for lo in range(0, rows, chunk):
            hi = min(lo + chunk, rows)
            writer.write(pa.RecordBatch.from_arrays(make(lo, hi), schema=schema))
    finally:
        writer.close()


def write_events(
    events: EventSet,
    directory: str | Path,
    *,
    fmt: Format = "parquet",
    chunk: int = 2_000_000,
    stem: str = "",
) -> EventFiles:
    """Write ``<stem>impressions.<fmt>`` and ``<stem>conversions.<fmt>`` into ``directory``."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    users = _names("u", events.n_users, id_width(events.n_users))
    pubs = _names("pub_", events.n_publishers, id_width(events.n_publishers))
    advertisers = pa.array(list(events.advertisers), pa.string())
    interactions = pa.array(["view", "click"], pa.string())
    text = pa.dictionary(pa.int32(), pa.string())
    imp_width = id_width(events.n_impressions)
    conv_width = id_width(events.n_conversions)

    dimension_values = {
        name: pa.array(list(labels), pa.string())
        for name, (labels, _) in (*events.conv_dimensions.items(), *events.imp_dimensions.items())
    }

    def impressions(lo: int, hi: int) -> list[pa.Array]:
        return [
            _names("imp", hi - lo, imp_width, lo),
            _dictionary(events.imp_user[lo:hi], users),
            _dictionary(events.imp_publisher[lo:hi], pubs),
            _dictionary(events.imp_advertiser[lo:hi], advertisers),
            pa.array(events.imp_ts[lo:hi], _TS),
            _dictionary(events.imp_click[lo:hi].astype(np.int32), interactions),
            *(
                _dictionary(codes[lo:hi], dimension_values[name])
                for name, (_, codes) in events.imp_dimensions.items()
            ),
        ]

    def conversions(lo: int, hi: int) -> list[pa.Array]:
        return [
            _names("conv", hi - lo, conv_width, lo),
            _dictionary(events.conv_user[lo:hi], users),
            _dictionary(events.conv_advertiser[lo:hi], advertisers),
            pa.array(events.conv_ts[lo:hi], _TS),
            pa.array(events.conv_value[lo:hi], pa.float64()),
            *(
                _dictionary(codes[lo:hi], dimension_values[name])
                for name, (_, codes) in events.conv_dimensions.items()
            ),
        ]

    imp_schema = pa.schema(
        [
            ("impression_id", pa.string()),
            ("user_id", text),
            ("publisher_id", text),
            ("advertiser_id", text),
            ("ts", _TS),
            ("interaction", text),
            *((name, text) for name in events.imp_dimensions),  # optional breakdowns
        ]
    )
    conv_schema = pa.schema(
        [
            ("conversion_id", pa.string()),
            ("user_id", text),
            ("advertiser_id", text),
            ("ts", _TS),
            ("value", pa.float64()),
            *((name, text) for name in events.conv_dimensions),  # optional breakdowns
        ]
    )
    files = EventFiles(
        impressions=directory / f"{stem}impressions.{fmt}",
        conversions=directory / f"{stem}conversions.{fmt}",
    )
    _write(files.impressions, imp_schema, fmt, events.n_impressions, chunk, impressions)
    _write(files.conversions, conv_schema, fmt, events.n_conversions, chunk, conversions)
    return files

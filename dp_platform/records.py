"""Lossless records of frozen dataclasses: what the ledger stores and reads back.

The ledger keeps a campaign's registered plan and each day's bound choice and state as JSON. A
record must read back to an *equal* object — the plan is the single source of every σ, allotment
and charge after registration — so the codec is exact: fractions as "p/q" text, floats as JSON
numbers (Python writes the shortest text that reads back to the same double), arrays as nested
lists with their dtype kept by the annotation, pydantic models by their own dump/validate.

One generic codec driven by the type hints replaces a hand-written ``to_json``/``from_json``
pair per class, so a new field cannot be forgotten on one side.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from fractions import Fraction
from functools import cache

import numpy as np
from pydantic import BaseModel

__all__ = ["from_record", "to_record"]

T = typing.TypeVar("T")

JsonValue = None | bool | int | float | str | list["JsonValue"] | dict[str, "JsonValue"]


def to_record(value: object) -> JsonValue:
    """A JSON-able form of ``value`` (dataclass, model, fraction, array, containers, scalars)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            f.name: to_record(getattr(value, f.name)) for f in dataclasses.fields(value) if f.init
        }
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, Fraction):
        return str(value)
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, dict):
        return {str(k): to_record(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_record(v) for v in value]
    if value is None or isinstance(value, bool | int | float | str):
        return value
    raise TypeError(f"cannot record a {type(value).__name__}")


@cache
def _hints(cls: type) -> dict[str, object]:
    return typing.get_type_hints(cls)


def from_record(kind: type[T], data: JsonValue) -> T:
    """Read back what :func:`to_record` wrote, as an object of type ``kind``."""
    return typing.cast(T, _read(kind, data))


def _read(hint: object, data: JsonValue) -> object:
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin is typing.Union or origin is types.UnionType:
        if data is None and type(None) in args:
            return None
        options = [a for a in args if a is not type(None)]
        if len(options) != 1:
            raise TypeError(f"cannot read an ambiguous union {hint}")
        return _read(options[0], data)
    if origin is typing.Literal:
        return data
    if origin is tuple:
        assert isinstance(data, list)
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_read(args[0], v) for v in data)
        return tuple(_read(a, v) for a, v in zip(args, data, strict=True))
    if origin is list:
        assert isinstance(data, list)
        return [_read(args[0], v) for v in data]
    if origin is dict:
        assert isinstance(data, dict)
        return {_read(args[0], k): _read(args[1], v) for k, v in data.items()}
    if hint is typing.Any or hint is object:
        return data
    if not isinstance(hint, type):
        raise TypeError(f"cannot read a {hint}")
    if dataclasses.is_dataclass(hint):
        assert isinstance(data, dict)
        hints = _hints(hint)
        values = {
            f.name: _read(hints[f.name], data[f.name])
            for f in dataclasses.fields(hint)
            if f.init and f.name in data
        }
        return hint(**values)
    if issubclass(hint, BaseModel):
        return hint.model_validate(data)
    if hint is Fraction:
        return Fraction(typing.cast(str, data))
    if hint is np.ndarray:
        return np.asarray(data, dtype=np.float64)
    if hint is float:
        return float(typing.cast(float, data))
    if hint is int:
        return int(typing.cast(int, data))
    if hint in (str, bool):
        return data
    reader = getattr(hint, "from_json", None)  # value types with their own text form (Rho)
    if reader is not None:
        return reader(data)
    raise TypeError(f"cannot read a {hint.__name__}")

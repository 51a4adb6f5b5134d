"""The four datasets of the paper's Tables IX–X and the parameters each one fixes.

A dataset fixes two numbers the mechanisms need before they see any data
(docs/baselines.md#synthetic-data and the paper's §6.3): the global cap GS of IPA, BIN, Stream
and UMM, and the output range Λ of AdsBPC's PrivateQuantile. Generation itself belongs to the
data layer
(:mod:`dp_platform.events.paper` and :mod:`dp_platform.events.facebook`); this module only picks
the generator and adapts its :class:`~dp_platform.events.model.ConversionSet` to the baselines'
:class:`~dp_research.baselines.Conversions` where a test wants to cross-check clipping.
"""

from __future__ import annotations

from dataclasses import dataclass

from dp_platform.events.facebook import facebook_dataset
from dp_platform.events.model import ConversionSet
from dp_platform.events.paper import paper_dataset
from dp_research.baselines import Conversions

__all__ = ["DATASETS", "DatasetSpec", "dataset_spec", "load_dataset", "to_conversions"]


@dataclass(frozen=True)
class DatasetSpec:
    """Public, data-independent parameters of one evaluation dataset."""

    name: str
    global_bound: int  # GS: IPA, BIN, UMM keep a user's first GS conversions; Stream's top rung
    cap: int  # Λ: PrivateQuantile's range [0, Λ], 10 or 20 (docs/baselines.md#synthetic-data)
    synthetic: bool  # generated (users/publishers are parameters) or the fixed real data

    def describe(self) -> str:
        return f"{self.name} (GS = {self.global_bound}, Λ = {self.cap})"


DATASETS: dict[str, DatasetSpec] = {
    "zipf": DatasetSpec("zipf", 50, 10, True),
    "normal": DatasetSpec("normal", 150, 20, True),
    "uniform": DatasetSpec("uniform", 256, 20, True),
    "facebook": DatasetSpec("facebook", 60, 10, False),
}


def dataset_spec(name: str) -> DatasetSpec:
    try:
        return DATASETS[name]
    except KeyError:
        raise ValueError(f"unknown dataset {name!r}; expected one of {tuple(DATASETS)}") from None


def load_dataset(name: str, *, users: int, publishers: int, days: int, seed: int) -> ConversionSet:
    """Conversions of ``name`` spread over ``days`` days (seeded).

    ``users`` and ``publishers`` apply to the synthetic sets only: Facebook is always its 1143 ad
    groups and one publisher.
    """
    spec = dataset_spec(name)
    if not spec.synthetic:
        return facebook_dataset(days=days, seed=seed)
    return paper_dataset(name, users=users, publishers=publishers, days=days, seed=seed)  # type: ignore[arg-type]


def to_conversions(conversions: ConversionSet) -> Conversions:
    """The same rows in the baselines' shape (time = milliseconds into the day)."""
    return Conversions(
        user=conversions.user,
        day=conversions.day,
        publisher=conversions.publisher,
        time=conversions.time_ms,
    )

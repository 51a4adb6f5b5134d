"""The datasets of the evaluation (the paper's four and ``events``) and the parameters each fixes.

A dataset fixes two numbers the mechanisms need before they see any data
(docs/baselines.md#synthetic-data and the paper's §6.3): the global cap GS of IPA, BIN, Stream
and UMM, and the output range Λ of AdsBPC's PrivateQuantile. Generation itself belongs to the
data layer
(:mod:`dp_platform.events.paper` and :mod:`dp_platform.events.facebook`); this module only picks
the generator and adapts its :class:`~dp_platform.events.model.ConversionSet` to the baselines'
:class:`~dp_research.baselines.Conversions` where a test wants to cross-check clipping.
``events`` is the platform's event-level generator, last-touch attributed (:mod:`.events_data`).

Users a day: a synthetic set is generated for a number of users in total, of whom only a share
converts on any one day, so a target of users *a day* fixes the total as target ÷ share
(:func:`generator_users`). :func:`active_share` is the expected share of users with a
conversion on a day. For the paper's sets it is exact: each of a user's m conversions lands on
a day uniformly, so the user is active on a given day with probability 1 − (1 − 1/n)^m,
averaged over the set's law of m (at n = 31: Zipf 0.310 — every user has m ≥ 11 —, Normal
0.717, Uniform 0.883; 10⁵-user samples agree to 0.001). For ``events`` it is measured on a
seeded sample (0.057).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import ndtr, zeta

from dp_platform.events.facebook import facebook_dataset
from dp_platform.events.model import ConversionSet
from dp_platform.events.paper import paper_dataset
from dp_research.baselines import Conversions
from dp_research.evaluation import events_data

__all__ = [
    "DATASETS",
    "PAPER_SETS",
    "DatasetSpec",
    "active_share",
    "dataset_spec",
    "generator_users",
    "load_dataset",
    "to_conversions",
]


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
    "events": DatasetSpec("events", 50, 10, True),  # Λ and GS: events_data's module doc
}
PAPER_SETS = ("zipf", "normal", "uniform", "facebook")  # the paper's tables (report.py)


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
    if name == "events":
        return events_data.events_dataset(users=users, publishers=publishers, days=days, seed=seed)
    return paper_dataset(name, users=users, publishers=publishers, days=days, seed=seed)  # type: ignore[arg-type]


def _paper_counts(name: str) -> tuple[np.ndarray, np.ndarray]:
    """(m, P(m)) of a paper set's conversions per user, to where the rest is below 10⁻¹⁶."""
    if name == "zipf":  # m = 10 + k, P(k) = k⁻³/ζ(3): the tail past 10⁶ weighs < 10⁻¹²
        k = np.arange(1, 1_000_001, dtype=np.float64)
        return 10 + k, k**-3 / zeta(3)
    if name == "normal":  # m = max(1, round(N(50, 30²)))
        m = np.arange(1, 500, dtype=np.float64)
        upper = ndtr((m + 0.5 - 50) / 30)
        return m, np.diff(np.concatenate([[0.0], upper]))
    if name == "uniform":
        m = np.arange(1, 257, dtype=np.float64)
        return m, np.full(256, 1 / 256)
    raise ValueError(f"no exact users-a-day share for {name!r}")


def active_share(name: str, days: int) -> float:
    """Expected share of a synthetic set's users with a conversion on a given day (module doc)."""
    if not dataset_spec(name).synthetic:
        raise ValueError(f"{name} has a fixed size: no users a day to aim for")
    if name == "events":
        return events_data.active_share(days)
    m, probability = _paper_counts(name)
    return float(1.0 - probability @ (1.0 - 1.0 / days) ** m)


def generator_users(name: str, users_per_day: int, days: int) -> int:
    """Users to generate so that ``users_per_day`` of them are expected to convert a day."""
    return max(1, round(users_per_day / active_share(name, days)))


def to_conversions(conversions: ConversionSet) -> Conversions:
    """The same rows in the baselines' shape (time = milliseconds into the day)."""
    return Conversions(
        user=conversions.user,
        day=conversions.day,
        publisher=conversions.publisher,
        time=conversions.time_ms,
    )

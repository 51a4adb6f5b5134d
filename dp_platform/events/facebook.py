"""The real Facebook ad data of the paper's §6 ("Sales Conversion Optimization", Kaggle).

The file has one row per ad (1143 ads) and no users or times; like the paper we treat each ad
group as one user, take ``Total_Conversion`` as its conversions (sum 3264, max 60 — the paper's
T and GS) and spread each group's conversions uniformly at random over the n days (seeded; the
paper does not say how it spread them). There is a single publisher, so every attribution rule
gives the same data vector. :func:`facebook_ad_groups` reads the same rows with their audience
(age band, gender, interest) and ``Spent``/``Approved_Conversion`` for the breakdown demo of
the research package (research/, docs/slices.md). Provenance and licence: ``PROVENANCE.md`` next
to the data.

The file is third-party and carries no licence, so it is not in the repository: put a copy at
``data/kaggle-fb-ad-conversion/KAG_conversion_data.csv`` in the checkout (ignored by git), set
``DP_PLATFORM_FACEBOOK_CSV``, or pass ``path``
(docs/data.md#7-generators-and-real-data-dp_platformevents).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv

from dp_platform.events.model import MS_PER_DAY, ConversionSet

__all__ = [
    "FACEBOOK_ENV",
    "AdGroups",
    "default_facebook_path",
    "facebook_ad_groups",
    "facebook_dataset",
]

FACEBOOK_ENV = "DP_PLATFORM_FACEBOOK_CSV"
_RELATIVE = Path("data/kaggle-fb-ad-conversion/KAG_conversion_data.csv")
_COLUMNS = ("ad_id", "Total_Conversion")
_GROUP_COLUMNS = ("ad_id", "age", "gender", "interest", "Spent", "Approved_Conversion")


def default_facebook_path() -> Path:
    """The environment override, else ``<checkout>/data/kaggle-fb-ad-conversion/...``."""
    override = os.environ.get(FACEBOOK_ENV)
    if override:
        return Path(override)
    checkout = Path(__file__).resolve().parents[2]
    return checkout / _RELATIVE


def facebook_dataset(path: str | Path | None = None, *, days: int = 31, seed: int) -> ConversionSet:
    """Ad groups as users, one publisher, conversions spread uniformly over ``days`` days."""
    if days < 1:
        raise ValueError("days must be >= 1")
    source = Path(path) if path is not None else default_facebook_path()
    if not source.is_file():
        raise FileNotFoundError(f"{source}: Facebook data not found (set {FACEBOOK_ENV})")
    table = pacsv.read_csv(source)
    missing = [c for c in _COLUMNS if c not in table.column_names]
    if missing:
        raise ValueError(f"{source}: missing column(s) {', '.join(missing)}")
    totals = table.column("Total_Conversion").to_numpy().astype(np.int64)
    if (totals < 0).any():
        raise ValueError(f"{source}: Total_Conversion must be >= 0")
    rng = np.random.default_rng(seed)
    n_users = len(totals)
    user = np.repeat(np.arange(n_users, dtype=np.int32), totals)
    size = len(user)
    return ConversionSet(
        user=user,
        day=rng.integers(0, days, size=size, dtype=np.int16),
        publisher=np.zeros(size, dtype=np.int32),
        time_ms=rng.integers(0, MS_PER_DAY, size=size, dtype=np.int32),
        n_users=n_users,
        n_days=days,
        n_publishers=1,
        name="facebook",
    )


@dataclass(frozen=True)
class AdGroups:
    """One row per ad group: its audience (age band, gender, interest) and totals.

    ``age`` and ``gender`` are codes into ``age_values`` / ``gender_values`` (sorted labels).
    """

    age: np.ndarray
    gender: np.ndarray
    interest: np.ndarray
    spent: np.ndarray
    approved: np.ndarray
    age_values: tuple[str, ...]
    gender_values: tuple[str, ...]

    @property
    def n_groups(self) -> int:
        return len(self.age)


def _codes(source: Path, table: pa.Table, name: str) -> tuple[np.ndarray, tuple[str, ...]]:
    column = table.column(name).cast(pa.string())
    if column.null_count:
        raise ValueError(f"{source}: {name} is empty in {column.null_count} row(s)")
    labels = tuple(sorted(set(column.to_pylist())))
    lookup = {label: code for code, label in enumerate(labels)}
    return np.array([lookup[v] for v in column.to_pylist()], dtype=np.int16), labels


def facebook_ad_groups(path: str | Path | None = None) -> AdGroups:
    """The file's ad groups with age, gender, interest, ``Spent`` and ``Approved_Conversion``.

    Every row is kept: a negative or non-finite ``Spent``/``Approved_Conversion`` or an empty
    age/gender is refused with the row and the rule (the file has no quarantine to go to).
    """
    source = Path(path) if path is not None else default_facebook_path()
    if not source.is_file():
        raise FileNotFoundError(f"{source}: Facebook data not found (set {FACEBOOK_ENV})")
    table = pacsv.read_csv(source)
    missing = [c for c in _GROUP_COLUMNS if c not in table.column_names]
    if missing:
        raise ValueError(f"{source}: missing column(s) {', '.join(missing)}")
    spent = table.column("Spent").cast(pa.float64()).to_numpy(zero_copy_only=False)
    approved = table.column("Approved_Conversion").cast(pa.float64()).to_numpy(zero_copy_only=False)
    for name, column in (("Spent", spent), ("Approved_Conversion", approved)):
        bad = np.flatnonzero(~(np.isfinite(column) & (column >= 0)))
        if bad.size:
            raise ValueError(f"{source}: row {int(bad[0]) + 1}: {name} must be a number >= 0")
    age, age_values = _codes(source, table, "age")
    gender, gender_values = _codes(source, table, "gender")
    return AdGroups(
        age=age,
        gender=gender,
        interest=table.column("interest").to_numpy(zero_copy_only=False),
        spent=spent,
        approved=approved.astype(np.int64),
        age_values=age_values,
        gender_values=gender_values,
    )

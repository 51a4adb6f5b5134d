"""The real Facebook ad data of the paper's §6 ("Sales Conversion Optimization", Kaggle).

The file has one row per ad (1143 ads) and no users or times; like the paper we treat each ad
group as one user, take ``Total_Conversion`` as its conversions (sum 3264, max 60 — the paper's
T and GS) and spread each group's conversions uniformly at random over the n days (seeded; the
paper does not say how it spread them). There is a single publisher, so every attribution rule
gives the same data vector. Provenance and licence: ``PROVENANCE.md`` next to the data.

The file is third-party and carries no licence, so it is not in the repository: put a copy at
``data/kaggle-fb-ad-conversion/KAG_conversion_data.csv`` in the checkout (ignored by git), set
``DP_PLATFORM_FACEBOOK_CSV``, or pass ``path``
(docs/data.md#7-generators-and-real-data-dp_platformevents).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pyarrow.csv as pacsv

from dp_platform.events.model import MS_PER_DAY, ConversionSet

__all__ = ["FACEBOOK_ENV", "default_facebook_path", "facebook_dataset"]

FACEBOOK_ENV = "DP_PLATFORM_FACEBOOK_CSV"
_RELATIVE = Path("data/kaggle-fb-ad-conversion/KAG_conversion_data.csv")
_COLUMNS = ("ad_id", "Total_Conversion")


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

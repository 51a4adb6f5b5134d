"""The research package's tests (run by `make test` through the root pyproject's testpaths).

This directory is not a package, so its modules import as top-level names and cannot clash with
the platform's ``tests`` package. Markers and the time budget are the repository's (conftest.py
at the root).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

_FACEBOOK_HEADER = (
    "ad_id,xyz_campaign_id,fb_campaign_id,age,gender,interest,Impressions,Clicks,Spent,"
    "Total_Conversion,Approved_Conversion"
)


@pytest.fixture
def facebook_csv(tmp_path: Path) -> Callable[..., Path]:
    """A writer of small files of the Kaggle Facebook file's shape (same columns, same value
    kinds), so the slices demo and its command run without the third-party file; ``spent``
    replaces row 7's Spent (to plant a bad value)."""

    def write(rows: int = 60, seed: int = 4, spent: str | None = None) -> Path:
        rng = np.random.default_rng(seed)
        ages = ("30-34", "35-39", "40-44", "45-49")
        lines = [_FACEBOOK_HEADER]
        for i in range(rows):
            approved = int(rng.poisson(1.5))
            money = f"{rng.lognormal(3.0, 1.2):.6f}" if spent is None or i != 7 else spent
            lines.append(
                f"{700000 + i},916,{103916 + i},{ages[i % 4]},{'MF'[i % 3 == 0]},{10 + i % 9},"
                f"{rng.integers(100, 9000)},{rng.integers(0, 5)},{money},{approved + 1},{approved}"
            )
        path = tmp_path / "conversions.csv"
        path.write_text("\n".join(lines) + "\n")
        return path

    return write

"""Order values and breakdown dimensions of the event-level generator (dp_platform/events)."""

from __future__ import annotations

import hashlib

import numpy as np
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest

from dp_platform.events import generate_campaign, write_events
from dp_platform.events.campaign import DEVICES, REGIONS
from dp_platform.events.model import EventSet

_SMALL = dict(users=500, publishers=7, impressions=5000, conversions=800, days=10)
_ARRAYS = (
    "imp_user",
    "imp_publisher",
    "imp_advertiser",
    "imp_ts",
    "imp_click",
    "conv_user",
    "conv_advertiser",
    "conv_ts",
    "conv_value",
)


def _digest(events: EventSet) -> str:
    digest = hashlib.sha256()
    for name in _ARRAYS:
        digest.update(name.encode())
        digest.update(np.ascontiguousarray(getattr(events, name)).tobytes())
    return digest.hexdigest()


def test_existing_seeds_give_the_same_events_as_before_values_and_dimensions() -> None:
    """The digest of seed 3's arrays as generated before order-value parameters and dimensions
    were added (recorded from that code): a changed default would break every stored result."""
    expected = "393e83021f1e04b7efb1d2835494a6d644493fc4c1417fd2c153636443da9536"
    assert _digest(generate_campaign(seed=3, **_SMALL)) == expected


def test_asking_for_dimensions_changes_no_other_output() -> None:
    plain = generate_campaign(seed=5, **_SMALL)
    with_dims = generate_campaign(seed=5, dimensions=True, **_SMALL)
    assert _digest(plain) == _digest(with_dims)
    assert plain.conv_dimensions == {}
    assert set(with_dims.conv_dimensions) == {"region", "device"}


def test_dimensions_belong_to_the_user_and_follow_the_public_shares() -> None:
    events = generate_campaign(
        seed=8,
        users=20_000,
        publishers=5,
        impressions=100_000,
        conversions=20_000,
        days=5,
        dimensions=True,
    )
    for name, shares in (("region", REGIONS), ("device", DEVICES)):
        labels, codes = events.conv_dimensions[name]
        assert labels == tuple(shares)
        first = {}
        for user, code in zip(events.conv_user.tolist(), codes.tolist(), strict=True):
            assert first.setdefault(user, code) == code, f"user {user} has two {name}s"
        per_user = np.bincount(list(first.values()), minlength=len(labels)) / len(first)
        # ≥ 5000 distinct users: each share's sd ≤ 0.7 %; 4 % is > 5 sd
        np.testing.assert_allclose(per_user, list(shares.values()), atol=0.04)


def test_order_values_are_log_normal_with_the_stated_median_and_spread() -> None:
    events = generate_campaign(
        seed=2,
        users=5000,
        publishers=5,
        impressions=50_000,
        conversions=40_000,
        days=5,
        value_median=40.0,
        value_sigma_log=1.0,
    )
    logs = np.log(events.conv_value[events.conv_value > 0])
    # 40 000 draws: sd of the log-median ≈ 1.25/√40000 ≈ 0.006; of the log-sd ≈ 0.0035
    assert abs(np.median(logs) - np.log(40.0)) < 0.05
    assert abs(np.std(logs) - 1.0) < 0.03
    assert np.all(events.conv_value == np.round(events.conv_value, 2))  # cents


def test_bad_value_parameters_are_refused() -> None:
    with pytest.raises(ValueError, match="value_median"):
        generate_campaign(seed=1, value_median=0.0, **_SMALL)


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_dimensions_are_written_as_named_columns(tmp_path, fmt: str) -> None:
    events = generate_campaign(seed=1, dimensions=True, **_SMALL)
    files = write_events(events, tmp_path, fmt=fmt, chunk=300)
    table = (pq.read_table if fmt == "parquet" else pacsv.read_csv)(files.conversions)
    assert table.column_names[-2:] == ["region", "device"]
    for name in ("region", "device"):
        labels, codes = events.conv_dimensions[name]
        column = table.column(name)
        if hasattr(column.type, "value_type"):
            column = column.cast(column.type.value_type)
        assert column.to_pylist() == [labels[c] for c in codes]


def test_asking_for_named_dimensions_changes_no_other_output_and_writes_their_columns(
    tmp_path,
) -> None:
    """Impression dimensions (a value per impression) and further conversion dimensions (a
    value per user) come from streams of their own: every other array is unchanged, and the
    files carry one column each, with values from the public lists only."""
    from dp_platform.events.campaign import CREATIVES

    plain = generate_campaign(seed=5, dimensions=True, **_SMALL)
    named = generate_campaign(
        seed=5,
        dimensions=True,
        conversion_dimensions={"tier": ["gold", "silver"]},
        impression_dimensions={"creative": CREATIVES},
        **_SMALL,
    )
    assert _digest(plain) == _digest(named)
    assert (
        plain.conv_dimensions["region"][1].tolist() == named.conv_dimensions["region"][1].tolist()
    )
    labels, codes = named.imp_dimensions["creative"]
    assert labels == tuple(CREATIVES) and len(codes) == named.n_impressions
    shares = np.bincount(codes, minlength=len(labels)) / len(codes)
    np.testing.assert_allclose(shares, list(CREATIVES.values()), atol=0.03)  # 5000 draws
    tier_labels, tier = named.conv_dimensions["tier"]
    first: dict[int, int] = {}
    for user, code in zip(named.conv_user.tolist(), tier.tolist(), strict=True):
        assert first.setdefault(user, code) == code  # a conversion dimension is the user's
    files = write_events(named, tmp_path, fmt="csv")
    impressions = pacsv.read_csv(files.impressions)
    conversions = pacsv.read_csv(files.conversions)
    assert impressions.column_names[-1] == "creative"
    assert set(impressions.column("creative").to_pylist()) <= set(CREATIVES)
    assert set(conversions.column("tier").to_pylist()) <= set(tier_labels)
    with pytest.raises(ValueError, match="asked for twice"):
        generate_campaign(
            seed=5, dimensions=True, conversion_dimensions={"region": ["x"]}, **_SMALL
        )

"""Generators and loaders: seeded, the paper's distributions, the Facebook statistics, and event
files that the warehouse turns back into the same per-day statistics."""

from __future__ import annotations

from datetime import date, timedelta

import numpy as np
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest
from scipy import stats

from dp_platform.events import (
    ConversionSet,
    facebook_dataset,
    generate_campaign,
    paper_dataset,
    write_events,
)
from dp_platform.events.facebook import default_facebook_path
from dp_platform.events.files import CONVERSION_COLUMNS, IMPRESSION_COLUMNS
from dp_platform.events.model import epoch_us
from dp_platform.warehouse import Warehouse
from tests.conftest_data import FAR_FUTURE, campaign

needs_facebook = pytest.mark.skipif(
    not default_facebook_path().is_file(), reason="Facebook data not present"
)


@pytest.mark.parametrize("kind", ["zipf", "normal", "uniform"])
def test_paper_datasets_are_seeded(kind):
    a = paper_dataset(kind, users=2000, publishers=7, days=5, seed=3)
    b = paper_dataset(kind, users=2000, publishers=7, days=5, seed=3)
    c = paper_dataset(kind, users=2000, publishers=7, days=5, seed=4)
    for name in ("user", "day", "publisher", "time_ms"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
    assert not np.array_equal(a.totals(), c.totals())


def test_paper_totals_follow_the_papers_distributions():
    users = 200_000
    zipf = paper_dataset("zipf", users=users, publishers=10, days=31, seed=1).totals()
    assert zipf.min() >= 11
    # mean of 10 + Zipf(3) is 10 + ζ(2)/ζ(3) ≈ 11.368; its variance is infinite, so be lenient
    assert 11.30 < zipf.mean() < 11.45

    normal = paper_dataset("normal", users=users, publishers=10, days=31, seed=1).totals()
    assert normal.min() >= 1
    assert 49.5 < np.median(normal) < 50.5
    # max(1, round(N(50, 30²))): everything below 1.5 lands on 1
    assert abs((normal == 1).mean() - stats.norm.cdf((1.5 - 50) / 30)) < 0.003

    uniform = paper_dataset("uniform", users=users, publishers=10, days=31, seed=1).totals()
    assert uniform.min() == 1 and uniform.max() == 256
    assert abs(uniform.mean() - 128.5) < 0.5


def test_paper_spread_is_uniform_over_days_and_publishers():
    data = paper_dataset("uniform", users=20_000, publishers=8, days=10, seed=2)
    n = data.n_conversions
    for counts, bins in ((np.bincount(data.day), 10), (np.bincount(data.publisher), 8)):
        assert len(counts) == bins
        expected = n / bins
        assert np.all(np.abs(counts - expected) < 6 * np.sqrt(expected))  # ~6σ
    assert data.time_ms.min() >= 0 and data.time_ms.max() < 86_400_000


@needs_facebook
def test_facebook_reproduces_the_papers_statistics():
    data = facebook_dataset(days=31, seed=0)
    assert data.n_users == 1143
    assert data.n_conversions == 3264
    assert data.totals().max() == 60
    assert data.n_publishers == 1 and np.all(data.publisher == 0)
    assert data.day.min() >= 0 and data.day.max() <= 30
    again = facebook_dataset(days=31, seed=0)
    np.testing.assert_array_equal(data.day, again.day)
    other = facebook_dataset(days=31, seed=1)
    assert not np.array_equal(data.day, other.day)
    np.testing.assert_array_equal(data.totals(), other.totals())  # spreading keeps totals


def test_facebook_missing_file_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="Facebook data not found"):
        facebook_dataset(tmp_path / "nope.csv", seed=0)


def test_conversion_set_statistics_by_hand():
    data = ConversionSet(
        user=np.array([0, 0, 0, 1, 1, 2]),
        day=np.array([0, 0, 0, 0, 1, 0]),
        publisher=np.array([0, 1, 1, 0, 0, 1]),
        time_ms=np.array([30, 10, 20, 5, 5, 7]),
        n_users=3,
        n_days=2,
        n_publishers=2,
    )
    assert data.day_histogram(0).tolist() == [0, 2, 0, 1]
    # user 0 in time order: pub 1 (t10), pub 1 (t20), pub 0 (t30); r = 1.5 keeps 1 + half
    np.testing.assert_allclose(data.clipped_vector(0, 1.5), [1.0, 2.5])
    np.testing.assert_allclose(data.true_vector(0), [2.0, 3.0])


def test_paper_set_through_the_warehouse_equals_in_memory(tmp_path):
    """Event files from a ConversionSet give back its histograms and clipped vectors under LTA."""
    data = paper_dataset("zipf", users=150, publishers=4, days=3, seed=5)
    # force same-millisecond conversions of one user to exercise the tie-breaking
    time_ms = data.time_ms.copy()
    time_ms[1] = time_ms[0]
    data = ConversionSet(
        data.user, data.day, data.publisher, time_ms, data.n_users, data.n_days, 4, "zipf"
    )
    start = date(2026, 3, 1)
    files = write_events(data.to_events(start), tmp_path, fmt="parquet")
    camp = campaign(rule="lta", lookback_days=1, start=start, days=3)
    with Warehouse(":memory:") as wh:
        report = wh.ingest(files.impressions, files.conversions, now=FAR_FUTURE)
        assert report.conversions.accepted == data.n_conversions
        wh.attribute_days(camp, start, start + timedelta(days=2))
        wh.contributions_days(camp, start, start + timedelta(days=2))
        assert wh.campaign_publishers(camp) == ["pub_0", "pub_1", "pub_2", "pub_3"]
        for day in range(3):
            when = start + timedelta(days=day)
            np.testing.assert_array_equal(wh.day_histogram(camp, when), data.day_histogram(day))
            for bound in (1.0, 2.5, 11.3):
                np.testing.assert_allclose(
                    wh.clipped_vector(camp, when, bound), data.clipped_vector(day, bound)
                )


def test_event_campaign_is_seeded_and_realistic():
    kwargs = dict(users=3000, publishers=12, impressions=60_000, conversions=6000, days=10)
    events = generate_campaign(seed=9, **kwargs)
    again = generate_campaign(seed=9, **kwargs)
    np.testing.assert_array_equal(events.imp_ts, again.imp_ts)
    np.testing.assert_array_equal(events.conv_user, again.conv_user)

    start = epoch_us(date(2026, 3, 1))
    assert np.all(np.diff(events.imp_ts) >= 0) and np.all(np.diff(events.conv_ts) >= 0)
    assert events.imp_ts.min() >= start - 30 * 86_400_000_000  # look-back window before start
    assert events.conv_ts.min() >= start
    assert events.conv_ts.max() < start + 10 * 86_400_000_000
    assert 0.04 < events.imp_click.mean() < 0.06
    per_user = np.bincount(events.imp_user, minlength=3000)
    assert per_user.max() > 8 * per_user.mean()  # heavy-tailed activity
    assert events.n_conversions == 6000 and np.all(events.conv_value >= 0)


def test_event_campaign_has_unattributable_conversions(tmp_path):
    events = generate_campaign(
        seed=4, users=500, publishers=5, impressions=8000, conversions=1000, days=5
    )
    files = write_events(events, tmp_path, fmt="csv")
    camp = campaign(start=date(2026, 3, 1), days=5)
    with Warehouse(":memory:") as wh:
        wh.ingest(files.impressions, files.conversions, now=FAR_FUTURE)
        stats = wh.attribute_days(camp, date(2026, 3, 1), date(2026, 3, 5))
    assert stats["conversions"] == 1000
    assert 0 < stats["unattributed"] < 250  # organic 10% (some still find an impression)


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_event_files_have_the_design_columns(tmp_path, fmt):
    events = generate_campaign(seed=1, users=20, publishers=3, impressions=50, conversions=10)
    files = write_events(events, tmp_path, fmt=fmt, chunk=16)
    read = pq.read_table if fmt == "parquet" else pacsv.read_csv
    imps, convs = read(files.impressions), read(files.conversions)
    assert tuple(imps.column_names) == IMPRESSION_COLUMNS
    assert tuple(convs.column_names) == CONVERSION_COLUMNS
    assert imps.num_rows == 50 and convs.num_rows == 10
    ids = imps.column("impression_id").to_pylist()
    assert ids == sorted(ids) and len(set(ids)) == 50  # zero-padded: string order = time order

"""Spark and DuckDB give the same warehouse results on the same events.

One generated campaign (two advertisers, nine publishers) plus hand-made rows: every class of
quarantinable row, impressions tied at one microsecond (within a file and across two loads),
touches exactly at the look-back window's edges and at the conversion's own instant. Both
engines ingest the same files; then, for every attribution rule (private last touch with the
same seeded Exp(1) draws), the attributed rows, histograms, capped histograms, clipped vectors,
one-shot sums and reach histograms are compared, and AdsBPC+'s filter clip, spends and profile
histogram. Rows and counts must be identical; floating values within 1e-9 (summation order).
"""

from __future__ import annotations

import csv
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dp_platform.events import generate_campaign, write_events
from dp_platform.mechanisms.adsbpc_plus_plan import PROFILE_GRID
from dp_platform.mechanisms.oneshot import plan_from_config
from dp_platform.privacy.discrete import SeededIntegerNoise
from dp_platform.privacy.strategy import sqrt_matrix
from dp_platform.warehouse import Warehouse
from dp_platform.warehouse.base import StrategyRow
from tests.conftest_data import campaign

START = date(2026, 3, 1)
DAYS = 2  # the hand-made rows are on day 2, their look-back reaches before day 1
LAST = START + timedelta(days=DAYS - 1)
NOW = datetime(2026, 4, 1, tzinfo=UTC)
LOOKBACK = 2
RULES = ["lta", "fta", "uni", "time_decay", "u_shaped", "private_last_touch"]


def _iso(ts: datetime) -> str:
    return ts.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _append(path: Path, rows: list[list[str]]) -> None:
    """Rewrite ``path`` with ``rows`` appended, all in the csv module's minimal quoting."""
    with path.open(newline="") as handle:
        existing = list(csv.reader(handle))
    with path.open("w", newline="") as handle:
        csv.writer(handle).writerows(existing + rows)


def _hostile_rows(imps: Path) -> tuple[list[list[str]], list[list[str]], list[list[str]]]:
    """Extra impressions, conversions and a second load's impressions (see module doc)."""
    with imps.open() as handle:
        first = next(r for r in csv.DictReader(handle) if r["advertiser_id"] == "acme")
    user, pub = first["user_id"], first["publisher_id"]
    t0 = datetime(2026, 3, 2, 12, 0, 0, tzinfo=UTC)
    edge = t0 - timedelta(days=LOOKBACK)
    impressions = [
        # three impressions of one user at one microsecond: ranked by impression_id
        ["zz_tie_b", user, "pub_1", "acme", _iso(t0 - timedelta(hours=1)), "view"],
        ["zz_tie_a", user, "pub_2", "acme", _iso(t0 - timedelta(hours=1)), "click"],
        ["zz_tie_c", user, pub, "acme", _iso(t0 - timedelta(hours=1)), "view"],
        # exactly at the window's start (inside) and one microsecond before it (outside)
        ["zz_edge_in", "edge_user", "pub_3", "acme", _iso(edge), "view"],
        [
            "zz_edge_out",
            "edge_user",
            "pub_4",
            "acme",
            _iso(edge - timedelta(microseconds=1)),
            "view",
        ],
        # at the conversion's own instant: not a touch of it
        ["zz_same", "edge_user", "pub_5", "acme", _iso(t0), "click"],
        # quarantinable rows
        ["", user, pub, "acme", _iso(t0), "view"],
        ["zz_q2", user, pub, "acme", "not a time", "view"],
        ["zz_q3", user, pub, "acme", _iso(t0), "hover"],
        ["zz_q4", user, pub, "acme", "2099-01-01T00:00:00Z", "view"],
        ["zz_tie_a", user, pub, "acme", _iso(t0), "view"],  # duplicate id in the file
        ["zz_q6", user, pub, "acme", _iso(t0), "view", "extra"],  # malformed record
        ["zz_q7", user, "", "acme", _iso(t0), "view"],
    ]
    conversions = [
        ["zz_c1", user, "acme", _iso(t0), "3.5"],
        ["zz_c2", "edge_user", "acme", _iso(t0), ""],
        ["zz_c3", "edge_user", "acme", _iso(t0), "7"],  # same instant as zz_c2: id order
        ["zz_c4", user, "other", _iso(t0 + timedelta(hours=2)), "1"],
        ["zz_cq1", user, "acme", _iso(t0), "-2"],
        ["zz_cq2", user, "acme", _iso(t0), "nan"],
        ["", user, "acme", _iso(t0), "1"],
        ["zz_cq4", user, "acme", "2026-02-30T10:00:00Z", "1"],
        ["zz_c1", user, "acme", _iso(t0), "1"],
    ]
    second_load = [
        # ties with the first load's three: re-ranks them (zz_tie_0 sorts first)
        ["zz_tie_0", user, "pub_6", "acme", _iso(t0 - timedelta(hours=1)), "view"],
        ["zz_tie_b", user, "pub_1", "acme", _iso(t0), "view"],  # loaded before: duplicate
        ["zz_late", "edge_user", "pub_7", "acme", _iso(t0 - timedelta(minutes=1)), "view"],
    ]
    return impressions, conversions, second_load


@pytest.fixture(scope="module")
def engines(spark, tmp_path_factory):
    """Both warehouses after the same two ingests, and the two ingest reports of each."""
    from dp_platform.warehouse.spark.store import SparkWarehouse

    root = tmp_path_factory.mktemp("parity")
    events = generate_campaign(
        seed=23,
        users=250,
        publishers=9,
        impressions=6000,
        conversions=1200,
        days=DAYS,
        start=START,
        lookback_days=LOOKBACK,
        advertisers=("acme", "other"),
    )
    files = write_events(events, root / "events", fmt="csv")
    impressions, conversions, second = _hostile_rows(files.impressions)
    _append(files.impressions, impressions)
    _append(files.conversions, conversions)
    second_imps = root / "second_impressions.csv"
    second_convs = root / "second_conversions.csv"
    header_imps = files.impressions.read_text().splitlines()[0]
    header_convs = files.conversions.read_text().splitlines()[0]
    second_imps.write_text(header_imps + "\n")
    second_convs.write_text(header_convs + "\n")
    _append(second_imps, second)
    duck = Warehouse(root / "duck.duckdb")
    sparkw = SparkWarehouse(spark, root / "spark" / "tables")
    reports = {}
    for name, warehouse in (("duckdb", duck), ("spark", sparkw)):
        reports[name] = [
            warehouse.ingest(files.impressions, files.conversions, now=NOW).to_json(),
            warehouse.ingest(second_imps, second_convs, now=NOW).to_json(),
        ]
    yield duck, sparkw, reports
    duck.close()
    sparkw.close()


def _sorted(frame: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    return frame.sort_values(keys).reset_index(drop=True)


def test_ingest_reports_and_quarantine_are_identical(engines):
    duck, sparkw, reports = engines
    assert reports["duckdb"] == reports["spark"]
    first = reports["duckdb"][0]
    assert first["impressions"]["quarantined"] >= 7 and first["conversions"]["quarantined"] >= 5
    assert reports["duckdb"][1]["impressions"]["reasons"] == {"duplicate_loaded": 1}
    keys = ["load_id", "source_row"]
    for table in ("impressions", "conversions", "quarantine"):
        assert duck.table_rows(table) == sparkw.table_rows(table), table
    camp = campaign(start=START, days=DAYS)
    quarantine = [_sorted(w.day_frame("quarantine", camp, []), keys) for w in (duck, sparkw)]
    pd.testing.assert_frame_equal(*quarantine, check_dtype=False)
    for table in ("impressions", "conversions"):
        pair = [
            _sorted(w.day_frame(table, camp, [START, LAST]), [f"{table[:-1]}_id"])
            for w in (duck, sparkw)
        ]
        pd.testing.assert_frame_equal(*pair, check_dtype=False)


def test_integer_keys_and_tie_order_are_identical(engines):
    duck, sparkw, _ = engines
    query = (
        "SELECT i.impression_id, i.user_key, i.publisher_key, i.advertiser_key, i.ord_key "
        "FROM impressions AS i"
    )
    left = duck.con.execute(query).df()
    sparkw._use()
    right = sparkw.spark.sql(query).toPandas()
    pair = [_sorted(f, ["impression_id"]) for f in (left, right)]
    pd.testing.assert_frame_equal(*pair, check_dtype=False)
    ties = pair[0][pair[0].impression_id.str.startswith("zz_tie")]
    # sorted by id: zz_tie_0 (second load) ranks first, a, b, c (first load) re-ranked after it
    assert (ties.ord_key % 1024).tolist() == [0, 1, 2, 3]


@pytest.mark.parametrize("rule", RULES)
def test_every_rule_gives_the_same_rows_histograms_and_vectors(engines, rule):
    duck, sparkw, _ = engines
    camp = campaign(
        rule=rule, lookback_days=LOOKBACK, half_life_days=0.5, start=START, days=DAYS, name=rule
    )
    days = [START + timedelta(days=i) for i in range(DAYS)]
    stats = [
        w.attribute_days(camp, START, LAST, noise=SeededIntegerNoise(31)) for w in (duck, sparkw)
    ]
    assert stats[0] == stats[1]
    assert stats[0]["attributed"] > 100
    contributions = [w.contributions_days(camp, START, LAST) for w in (duck, sparkw)]
    assert contributions[0] == contributions[1]
    keys = ["day", "conversion_id", "publisher_id"]
    rows = [_sorted(w.day_frame("attributed", camp, days), keys) for w in (duck, sparkw)]
    exact = [c for c in rows[0].columns if c != "weight"]
    pd.testing.assert_frame_equal(rows[0][exact], rows[1][exact], check_dtype=False)
    np.testing.assert_allclose(rows[0].weight, rows[1].weight, rtol=0, atol=1e-12)
    for day in days:
        np.testing.assert_array_equal(
            duck.day_histogram(camp, day), sparkw.day_histogram(camp, day)
        )
        np.testing.assert_allclose(
            duck.clipped_vector(camp, day, 2.6),
            sparkw.clipped_vector(camp, day, 2.6),
            rtol=0,
            atol=1e-9,
        )
    np.testing.assert_array_equal(
        duck.capped_histogram(camp, LAST, 3), sparkw.capped_histogram(camp, LAST, 3)
    )
    publishers = ["pub_3", "pub_0", "nobody"]  # a frozen list, in its own order
    np.testing.assert_allclose(
        duck.clipped_vector(camp, LAST, 1.5, publishers=publishers),
        sparkw.clipped_vector(camp, LAST, 1.5, publishers=publishers),
        rtol=0,
        atol=1e-9,
    )


def _one_shot_campaign(one_shot: dict, **fields: object):
    from dp_platform.config_loader import parse_campaign

    return parse_campaign(
        {
            "name": "once",  # one attribution, read by both plans
            "advertiser": "acme",
            "account": "acct",
            "start": START.isoformat(),
            "days": DAYS,
            "mechanism": {"kind": "one_shot", **one_shot},
            "attribution": {"rule": "uni", "lookback_days": LOOKBACK},
            **fields,
        }
    )


def test_one_shot_sums_and_reach_histograms_are_identical(engines):
    duck, sparkw, _ = engines
    post = _one_shot_campaign({"enforcement": "post", "bound": 2.5})
    pre = _one_shot_campaign(
        {"enforcement": "pre", "bound": 2.0, "measure": "value", "value_cap": 5.0}
    )
    for warehouse in (duck, sparkw):
        warehouse.attribute_days(post, START, LAST)
    for camp in (post, pre):
        plan = plan_from_config(camp)
        sums = [w.one_shot_sums(camp, plan.period_bound) for w in (duck, sparkw)]
        assert sums[0].sum() > 0
        np.testing.assert_allclose(sums[0], sums[1], rtol=0, atol=1e-9)
    for cap in (1, 4, 50):
        histograms = [w.reach_histogram(post, cap) for w in (duck, sparkw)]
        assert histograms[0].sum() > 0
        np.testing.assert_array_equal(*histograms)


def test_one_shot_cell_sums_are_identical(engines):
    """A one-shot release of cells (count and value per publisher, ℓ1-scaled by 1/2:
    oneshot_sums_cells.sql), pre and post enforcement, over the same attribution."""
    duck, sparkw, _ = engines
    for enforcement, bound in (("post", 2.5), ("pre", 2.0)):
        camp = _one_shot_campaign(
            {"enforcement": enforcement, "bound": bound},
            measures=["count", "value"],
            value_cap=5.0,
        )
        for warehouse in (duck, sparkw):
            warehouse.attribute_days(camp, START, LAST)
        plan = plan_from_config(camp)
        sums = [w.one_shot_sums(camp, plan.period_bound) for w in (duck, sparkw)]
        publishers = duck.campaign_publishers(camp)
        assert sums[1].shape == (2 * len(publishers),)
        assert sums[1][0::2].sum() > 0 and sums[1][1::2].sum() > 0  # counts and values
        np.testing.assert_allclose(sums[0], sums[1], rtol=0, atol=1e-9)


def test_adsbpc_plus_filter_spends_and_profile_are_identical(engines):
    duck, sparkw, _ = engines
    camp = campaign(rule="uni", lookback_days=LOOKBACK, start=START, days=DAYS, name="plus")
    days = [START + timedelta(days=i) for i in range(DAYS)]
    for warehouse in (duck, sparkw):
        warehouse.attribute_days(camp, START, LAST)
    # a small cap so the filter really cuts users on the later days
    for day, bound in zip(days, (2.5, 1.0, 3.0)[:DAYS], strict=True):
        vectors = [w.plus_clipped_vector(camp, day, bound, 0.8, 3.0) for w in (duck, sparkw)]
        np.testing.assert_allclose(vectors[0], vectors[1], rtol=0, atol=1e-9)
        again = sparkw.plus_clipped_vector(camp, day, bound, 0.8, 3.0)  # write-once
        np.testing.assert_array_equal(again, vectors[1])
    summaries = [w.plus_spend_summary(camp) for w in (duck, sparkw)]
    assert summaries[0]["days"] == summaries[1]["days"] == DAYS
    assert summaries[0]["users"] == summaries[1]["users"] > 0
    assert summaries[0]["max_spend"] == pytest.approx(summaries[1]["max_spend"], abs=1e-12)
    profiles = [
        w.plus_profile_histogram(camp, days[:2], [2.5, 1.0], [1.0, 0.5], 4, grid=PROFILE_GRID)
        for w in (duck, sparkw)
    ]
    assert profiles[0].sum() > 0
    np.testing.assert_array_equal(*profiles)


def test_adsbpc_plus_correlated_rows_and_cross_profile_are_identical(engines):
    """The square-root strategy's rows (plus_filter.sql): earlier days carried through C, users
    whose past alone passes the day's cap scaled — under a paced cap that grows by day
    (PlusPlan.day_cap), kept on the next — the same vectors, spends and remainders
    (plus_remainder.sql) on both."""
    duck, sparkw, _ = engines
    camp = campaign(rule="uni", lookback_days=LOOKBACK, start=START, days=DAYS, name="rows")
    days = [START + timedelta(days=i) for i in range(DAYS)]
    matrix = sqrt_matrix(DAYS)
    for warehouse in (duck, sparkw):
        warehouse.attribute_days(camp, START, LAST)
    caps = (0.6, 1.5)  # the cap a paced plan gives each of the DAYS days
    for index, (day, bound) in enumerate(zip(days, (2.5, 1.0, 3.0)[:DAYS], strict=True)):
        row = StrategyRow(float(matrix[index, index]), tuple(matrix[index, :index]))
        vectors = [
            w.plus_clipped_vector(camp, day, bound, 0.8, caps[index], row=row, remainder_cap=2.0)
            for w in (duck, sparkw)
        ]
        np.testing.assert_allclose(vectors[0], vectors[1], rtol=0, atol=1e-9)
        remainders = [w.plus_remainder(camp, day) for w in (duck, sparkw)]
        assert remainders[0] > 0
        assert remainders[1] == pytest.approx(remainders[0], rel=1e-12)
    summaries = [w.plus_spend_summary(camp) for w in (duck, sparkw)]
    assert summaries[0]["users"] == summaries[1]["users"] > 0
    assert summaries[0]["max_spend"] == pytest.approx(summaries[1]["max_spend"], abs=1e-12)
    assert summaries[0]["max_spend"] == pytest.approx(caps[-1], rel=1e-9)  # the cap binds
    profiles = [
        w.plus_profile_histogram(
            camp, days[:2], [2.5, 1.0], [1.0, 0.5], 4, grid=PROFILE_GRID, cross=0.7
        )
        for w in (duck, sparkw)
    ]
    assert profiles[0].sum() > 0
    np.testing.assert_array_equal(*profiles)


class CountingDraws(SeededIntegerNoise):
    """Seeded Exp(1) draws that count how many were drawn (tests only)."""

    def __init__(self, seed: int) -> None:
        super().__init__(seed)
        self.drawn = 0

    def _exponentials(self, size: int) -> np.ndarray:
        self.drawn += size
        return super()._exponentials(size)


def test_private_touch_is_drawn_once_per_conversion_on_both_engines(engines):
    """Drawing day by day draws exactly what one pass over the range draws (each conversion
    once) and a re-run draws nothing and returns the same rows (that the same seeded draws
    give the same rows on both engines is the rule test's private_last_touch case)."""
    duck, sparkw, _ = engines
    camp = campaign(
        rule="private_last_touch", lookback_days=LOOKBACK, start=START, days=DAYS, name="once"
    )
    whole = CountingDraws(5)
    duck.attribute_days(camp, START, LAST, noise=whole)
    first, rest = CountingDraws(5), CountingDraws(6)
    sparkw.attribute_days(camp, START, START, noise=first)
    first_rows = sparkw.day_frame("attributed", camp, [START])
    sparkw.attribute_days(camp, START, LAST, noise=rest)
    assert first.drawn > 0 and rest.drawn > 0
    assert first.drawn + rest.drawn == whole.drawn
    keys = ["day", "conversion_id", "publisher_id"]
    again = CountingDraws(7)
    sparkw.attribute_days(camp, START, LAST, noise=again)
    assert again.drawn == 0
    pd.testing.assert_frame_equal(
        _sorted(sparkw.day_frame("attributed", camp, [START]), keys), _sorted(first_rows, keys)
    )

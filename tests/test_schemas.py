"""The Pandera models state the same rules as the warehouse: what ingest accepts and what the
SQL materialises validates; each class of bad event row breaks the model."""

from __future__ import annotations

from datetime import date, datetime

import pandas as pd
import pandera.errors
import pytest

from dp_platform.events import generate_campaign, write_events
from dp_platform.schemas import SCHEMAS, Conversions, Impressions
from dp_platform.warehouse import Warehouse
from tests.conftest_data import FAR_FUTURE, campaign


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory):
    events = generate_campaign(
        seed=2, users=300, publishers=4, impressions=6000, conversions=900, days=4
    )
    files = write_events(events, tmp_path_factory.mktemp("ev"), fmt="parquet")
    camp = campaign(rule="uni", start=date(2026, 3, 1), days=4)
    wh = Warehouse(":memory:")
    wh.ingest(files.impressions, files.conversions, now=FAR_FUTURE)
    wh.attribute_days(camp, date(2026, 3, 1), date(2026, 3, 4))
    wh.contributions_days(camp, date(2026, 3, 1), date(2026, 3, 4))
    for day in (date(2026, 3, 2), date(2026, 3, 3)):
        wh.clipped_vector(camp, day, 1.5)
    yield wh, camp
    wh.close()


@pytest.mark.parametrize("table", sorted(SCHEMAS))
def test_warehouse_frames_validate(warehouse, table):
    wh, camp = warehouse
    frame = wh.day_frame(table, camp, [date(2026, 3, 2), date(2026, 3, 3)])
    if table != "quarantine":
        assert len(frame) > 0
    SCHEMAS[table].validate(frame, lazy=True)


def test_broken_attribution_breaks_the_model(warehouse):
    wh, camp = warehouse
    frame = wh.day_frame("attributed", camp, [date(2026, 3, 2)])
    doubled = frame.assign(weight=frame.weight * 2)  # weights of a conversion sum to 2
    with pytest.raises(pandera.errors.SchemaErrors):
        SCHEMAS["attributed"].validate(doubled, lazy=True)
    shifted = frame.assign(user_rank=frame.user_rank + 1)  # ranks no longer start at 0
    with pytest.raises(pandera.errors.SchemaError):
        SCHEMAS["attributed"].validate(shifted)


INVALID = (pandera.errors.SchemaError, pandera.errors.SchemaErrors)

GOOD_IMP = {
    "impression_id": "i1",
    "user_id": "u1",
    "publisher_id": "p1",
    "advertiser_id": "acme",
    "ts": datetime(2026, 3, 1, 10),
    "interaction": "view",
}
GOOD_CONV = {
    "conversion_id": "c1",
    "user_id": "u1",
    "advertiser_id": "acme",
    "ts": datetime(2026, 3, 1, 11),
    "value": 1.5,
}


def test_good_event_rows_validate():
    Impressions.validate(pd.DataFrame([GOOD_IMP]))
    Conversions.validate(pd.DataFrame([GOOD_CONV, {**GOOD_CONV, "conversion_id": "c2"}]))


def test_an_id_reused_by_another_user_is_another_event():
    """Ids are unique per user only (ingest keeps both): the models accept them."""
    Impressions.validate(pd.DataFrame([GOOD_IMP, {**GOOD_IMP, "user_id": "u2"}]))
    Conversions.validate(pd.DataFrame([GOOD_CONV, {**GOOD_CONV, "user_id": "u2"}]))
    with pytest.raises(INVALID):
        Impressions.validate(pd.DataFrame([GOOD_IMP, {**GOOD_IMP, "publisher_id": "p2"}]))


def test_attributed_conversions_of_two_users_sharing_an_id_validate(warehouse):
    """Two users' conversions with one id are two conversions: each one's weights sum to at
    most 1 and each user-day's ranks are 0..c-1 on their own."""
    wh, camp = warehouse
    frame = wh.day_frame("attributed", camp, [date(2026, 3, 2)])
    firsts = frame[frame.user_rank == 0].drop_duplicates("user_key")
    first, second = firsts.iloc[0], firsts.iloc[1]
    renamed = frame.assign(
        conversion_id=frame.conversion_id.mask(
            frame.conversion_id == second.conversion_id, first.conversion_id
        )
    )
    assert (renamed.conversion_id == first.conversion_id).sum() >= 2
    SCHEMAS["attributed"].validate(renamed, lazy=True)


@pytest.mark.parametrize(
    "change",
    [
        {"impression_id": None},  # missing_impression_id
        {"user_id": ""},  # missing_user_id
        {"publisher_id": None},  # missing_publisher_id
        {"ts": "yesterday-ish"},  # unparsable_ts
        {"interaction": "hover"},  # unknown_interaction
    ],
)
def test_bad_impression_rows_break_the_model(change):
    with pytest.raises(INVALID):
        Impressions.validate(pd.DataFrame([{**GOOD_IMP, **change}]))


@pytest.mark.parametrize(
    "rows",
    [
        [{**GOOD_CONV, "value": -1.0}],  # negative_value
        [{**GOOD_CONV, "value": "lots"}],  # unparsable_value
        [{**GOOD_CONV, "advertiser_id": None}],  # missing_advertiser_id
        [GOOD_CONV, {**GOOD_CONV, "value": 3.0}],  # duplicate: same user, same id
    ],
)
def test_bad_conversion_rows_break_the_model(rows):
    with pytest.raises(INVALID):
        Conversions.validate(pd.DataFrame(rows))

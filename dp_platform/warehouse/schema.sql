-- The warehouse schema (docs/data.md#3-warehouse-tables). Idempotent: run on every open.
--
-- Raw events keep their string ids but join on integer surrogate keys (users, publishers,
-- advertisers): joins on integers are several times faster than on strings at 10^7-10^8 rows.
-- Derived tables are partitioned by (campaign, day); the partitions table records which
-- partitions exist, so a consumer can tell "not materialised" from "materialised and empty".

CREATE SEQUENCE IF NOT EXISTS load_ids START 1;

CREATE SEQUENCE IF NOT EXISTS partition_versions START 1;

CREATE TABLE IF NOT EXISTS meta (
    key VARCHAR NOT NULL,
    value VARCHAR NOT NULL
);

CREATE TABLE IF NOT EXISTS loads (
    load_id BIGINT NOT NULL,
    kind VARCHAR NOT NULL,           -- impressions | conversions
    source_file VARCHAR NOT NULL,
    sha256 VARCHAR NOT NULL,         -- a file with the same content is never loaded twice
    rows_in BIGINT NOT NULL,
    accepted BIGINT NOT NULL,
    quarantined BIGINT NOT NULL,
    loaded_at TIMESTAMP NOT NULL
);

CREATE TABLE IF NOT EXISTS users (
    user_key INTEGER NOT NULL,
    user_id VARCHAR NOT NULL
);

CREATE TABLE IF NOT EXISTS publishers (
    publisher_key INTEGER NOT NULL,
    publisher_id VARCHAR NOT NULL
);

CREATE TABLE IF NOT EXISTS advertisers (
    advertiser_key INTEGER NOT NULL,
    advertiser_id VARCHAR NOT NULL
);

-- Which publishers have shown each advertiser's ads (kept by ingest): a campaign with
-- `publishers: all` releases one value per publisher listed here, without scanning impressions.
CREATE TABLE IF NOT EXISTS advertiser_publishers (
    advertiser_key INTEGER NOT NULL,
    publisher_key INTEGER NOT NULL
);

-- ord_key = epoch_us(ts) * 1024 + tie, tie = rank of impression_id among the impressions of the
-- same user and advertiser at the same microsecond (0 almost always). Ordering by ord_key is
-- ordering by (ts, impression_id) within a user and advertiser, as one integer, which lets
-- LTA/FTA run as a single ASOF join.
CREATE TABLE IF NOT EXISTS impressions (
    impression_id VARCHAR NOT NULL,
    user_key INTEGER NOT NULL,
    publisher_key INTEGER NOT NULL,
    advertiser_key INTEGER NOT NULL,
    ts TIMESTAMP NOT NULL,           -- UTC
    interaction VARCHAR NOT NULL,    -- view | click: both are touches for attribution
    ord_key BIGINT NOT NULL,
    load_id BIGINT NOT NULL,
    source_row BIGINT NOT NULL
);

CREATE TABLE IF NOT EXISTS conversions (
    conversion_key BIGINT NOT NULL,
    conversion_id VARCHAR NOT NULL,
    user_key INTEGER NOT NULL,
    advertiser_key INTEGER NOT NULL,
    ts TIMESTAMP NOT NULL,           -- UTC; its date is the conversion's day
    value DOUBLE,
    load_id BIGINT NOT NULL,
    source_row BIGINT NOT NULL
);

-- Breakdown dimensions (docs/operators.md, "Breakdowns"): each public value of a catalogue's
-- dimension gets a small integer key once (ingest_dimension_values.sql); each accepted
-- conversion of a load made with dimensions has one row per dimension.
CREATE TABLE IF NOT EXISTS dimension_values (
    dimension VARCHAR NOT NULL,
    value_key SMALLINT NOT NULL,
    value VARCHAR NOT NULL
);

CREATE TABLE IF NOT EXISTS conversion_dimensions (
    conversion_key BIGINT NOT NULL,
    dimension VARCHAR NOT NULL,
    value_key SMALLINT NOT NULL
);

-- Impressions have no surrogate key (ord_key can be re-ranked by a later load's ties): an
-- impression is its (load_id, source_row), which never changes.
CREATE TABLE IF NOT EXISTS impression_dimensions (
    load_id BIGINT NOT NULL,
    source_row BIGINT NOT NULL,
    dimension VARCHAR NOT NULL,
    value_key SMALLINT NOT NULL
);

-- Which dimension columns each load was ingested with (its catalogue's dimensions of that file):
-- ingest metadata, never counts. A campaign broken down by a dimension is refused when a load
-- holding events of its period lacks it (dp_platform/dimension_coverage.py).
CREATE TABLE IF NOT EXISTS load_dimensions (
    load_id BIGINT NOT NULL,
    dimension VARCHAR NOT NULL
);

-- Rejected rows: where they came from and why, never their values.
CREATE TABLE IF NOT EXISTS quarantine (
    load_id BIGINT NOT NULL,
    kind VARCHAR NOT NULL,
    source_file VARCHAR NOT NULL,
    source_row BIGINT NOT NULL,      -- 1-based data row (header not counted)
    reason VARCHAR NOT NULL
);

-- One row per (attributed conversion, credited publisher, touch). user_rank is the
-- conversion's 0-based position among the user's attributed conversions of the day in
-- (ts, conversion_id) order: the clipping order of docs/algorithm.md#clipping, fixed before any
-- bound is known. touch: the credited impressions' combination number over the campaign's
-- impression dimensions (attribution_touch.sql; 0 without any, NULL when the impression has no
-- listed value for one of them: that credit is in no cell).
CREATE TABLE IF NOT EXISTS attributed_conversions (
    campaign VARCHAR NOT NULL,
    day DATE NOT NULL,
    conversion_key BIGINT NOT NULL,
    user_key INTEGER NOT NULL,
    user_rank INTEGER NOT NULL,
    publisher_key INTEGER NOT NULL,
    weight DOUBLE NOT NULL,
    touch INTEGER
);

-- private_last_touch: each conversion's drawn touch (its publisher and touch combination),
-- written once and never deleted, so re-attributing a day returns the same table and each
-- conversion's ε is spent once.
CREATE TABLE IF NOT EXISTS private_touch_choices (
    campaign VARCHAR NOT NULL,
    conversion_key BIGINT NOT NULL,
    publisher_key INTEGER NOT NULL,
    touch INTEGER,
    PRIMARY KEY (campaign, conversion_key)
);

-- Warehouses made before impression dimensions: the column is added (its rows had none: 0).
ALTER TABLE attributed_conversions ADD COLUMN IF NOT EXISTS touch INTEGER DEFAULT 0;

ALTER TABLE private_touch_choices ADD COLUMN IF NOT EXISTS touch INTEGER DEFAULT 0;

CREATE TABLE IF NOT EXISTS user_day_contributions (
    campaign VARCHAR NOT NULL,
    day DATE NOT NULL,
    user_key INTEGER NOT NULL,
    conversions INTEGER NOT NULL     -- attributed conversions of the user that day (>= 1)
);

CREATE TABLE IF NOT EXISTS clipped_daily_vectors (
    campaign VARCHAR NOT NULL,
    day DATE NOT NULL,
    bound DOUBLE NOT NULL,
    position INTEGER NOT NULL,       -- index in the campaign's publisher list
    publisher_id VARCHAR NOT NULL,
    value DOUBLE NOT NULL
);

CREATE TABLE IF NOT EXISTS partitions (
    -- attributed_conversions | user_day_contributions | clipped_daily_vectors (what a release read)
    asset VARCHAR NOT NULL,
    campaign VARCHAR NOT NULL,
    day DATE NOT NULL,
    version BIGINT NOT NULL,         -- from partition_versions: increases on every rewrite
    input_version BIGINT,            -- the last load it was built from (store_core.require_current)
    rows BIGINT NOT NULL,
    materialized_at TIMESTAMP NOT NULL
);

-- The Spark warehouse's tables (the DuckDB schema.sql, as Delta Lake tables). Idempotent: run on
-- every open. {{root}} is the tables' root directory (any Hadoop file system URI).
--
-- Every write is a Delta commit: atomic per table, readable at any earlier version (time
-- travel), safe on object stores. Events are partitioned by day (UTC date of ts). Tables an
-- ingest appends to carry its load_id; an ingest is visible once its rows in `loads` commit,
-- the last of its writes. A table of loaded rows is stored as `<name>_rows` and read through the
-- view `<name>` of the committed loads' rows (visibility.py), so the rows of an ingest that never
-- committed are never read and nothing is undone; the key tables (users, publishers,
-- advertisers, dimension_values) are read whole. Impressions are partitioned by day only: a
-- load rewrites the days it touches (their tie order, ord_key, may change) in one commit. Derived tables are partitioned by (campaign, day); `partitions` says which partitions
-- exist and which table version wrote them.

CREATE TABLE IF NOT EXISTS users (
    user_key INT, user_id STRING, load_id BIGINT
) USING delta PARTITIONED BY (load_id) LOCATION '{{root}}/users';

CREATE TABLE IF NOT EXISTS publishers (
    publisher_key INT, publisher_id STRING, load_id BIGINT
) USING delta PARTITIONED BY (load_id) LOCATION '{{root}}/publishers';

CREATE TABLE IF NOT EXISTS advertisers (
    advertiser_key INT, advertiser_id STRING, load_id BIGINT
) USING delta PARTITIONED BY (load_id) LOCATION '{{root}}/advertisers';

CREATE TABLE IF NOT EXISTS advertiser_publishers_rows (
    advertiser_key INT, publisher_key INT, load_id BIGINT
) USING delta PARTITIONED BY (load_id) LOCATION '{{root}}/advertiser_publishers';

-- ord_key = epoch_us(ts) * 1024 + tie, as in DuckDB's schema.sql.
CREATE TABLE IF NOT EXISTS impressions_rows (
    impression_id STRING, user_key INT, publisher_key INT, advertiser_key INT, ts TIMESTAMP,
    interaction STRING, ord_key BIGINT, load_id BIGINT, source_row BIGINT, day DATE
) USING delta PARTITIONED BY (day) LOCATION '{{root}}/impressions';

CREATE TABLE IF NOT EXISTS conversions_rows (
    conversion_key BIGINT, conversion_id STRING, user_key INT, advertiser_key INT,
    ts TIMESTAMP, value DOUBLE, source_row BIGINT, day DATE, load_id BIGINT
) USING delta PARTITIONED BY (day, load_id) LOCATION '{{root}}/conversions';

-- Breakdown dimensions (DuckDB's schema.sql): each public value of a catalogue's dimension gets
-- a small integer key once; each accepted conversion of a load made with dimensions has one row
-- per dimension. Tagged with their load like the events (a value's key, once given, is its key;
-- a dimension row of a load that never commits is not read); conversion_dimensions is partitioned by day too, as conversions are, so a day's
-- cells read one day of it.
CREATE TABLE IF NOT EXISTS dimension_values (
    dimension STRING, value_key SMALLINT, value STRING, load_id BIGINT
) USING delta PARTITIONED BY (load_id) LOCATION '{{root}}/dimension_values';

CREATE TABLE IF NOT EXISTS conversion_dimensions_rows (
    conversion_key BIGINT, dimension STRING, value_key SMALLINT, day DATE, load_id BIGINT
) USING delta PARTITIONED BY (day, load_id) LOCATION '{{root}}/conversion_dimensions';

-- An impression is its (load_id, source_row), which never changes (ord_key can be re-ranked by
-- a later load's ties): each accepted impression of a load made with impression dimensions has
-- one row per dimension, under the impression's day and its load (the partition's load_id).
CREATE TABLE IF NOT EXISTS impression_dimensions_rows (
    source_row BIGINT, dimension STRING, value_key SMALLINT, day DATE, load_id BIGINT
) USING delta PARTITIONED BY (day, load_id) LOCATION '{{root}}/impression_dimensions';

CREATE TABLE IF NOT EXISTS quarantine_rows (
    kind STRING, source_file STRING, source_row BIGINT, reason STRING, load_id BIGINT
) USING delta PARTITIONED BY (load_id) LOCATION '{{root}}/quarantine';

-- One row per (attributed conversion, credited publisher, touch); touch: the credited
-- impressions' combination number over the campaign's impression dimensions (0 without any,
-- NULL when the impression has no listed value for one: that credit is in no cell). Files
-- written before touches existed have no such column and read NULL: their campaigns had no
-- impression dimension, and cell_rows.sql reads touch only for a campaign that has one.
CREATE TABLE IF NOT EXISTS attributed_conversions (
    conversion_key BIGINT, user_key INT, user_rank INT, publisher_key INT, weight DOUBLE,
    touch INT, campaign STRING, day DATE
) USING delta PARTITIONED BY (campaign, day) LOCATION '{{root}}/attributed_conversions';

-- private_last_touch: each conversion's drawn touch (its publisher and touch combination),
-- written once per conversion in a batch of the run that drew it (one commit: a batch is there
-- whole or not at all) and never deleted: re-attributing a day returns the same rows and each
-- conversion's epsilon is spent once.
CREATE TABLE IF NOT EXISTS private_touch_choices (
    conversion_key BIGINT, publisher_key INT, touch INT, campaign STRING, batch BIGINT
) USING delta PARTITIONED BY (campaign, batch) LOCATION '{{root}}/private_touch_choices';

CREATE TABLE IF NOT EXISTS user_day_contributions (
    user_key INT, conversions INT, campaign STRING, day DATE
) USING delta PARTITIONED BY (campaign, day) LOCATION '{{root}}/user_day_contributions';

CREATE TABLE IF NOT EXISTS clipped_daily_vectors (
    bound DOUBLE, position INT, publisher_id STRING, value DOUBLE, campaign STRING, day DATE
) USING delta PARTITIONED BY (campaign, day) LOCATION '{{root}}/clipped_daily_vectors';

-- AdsBPC+ per-user spend (secret): cost of the day and running spend after it, per user with
-- a positive cost (plus_schema.sql of DuckDB). Every run of a day appends its rows tagged with
-- `run`; the rows that count are those of the run plus_spend_days records for the day (the
-- AdsBPC+ tables below alike).
CREATE TABLE IF NOT EXISTS plus_user_spend (
    user_key INT, cost DOUBLE, spend DOUBLE, campaign STRING, day DATE, run STRING
) USING delta PARTITIONED BY (campaign, day) LOCATION '{{root}}/plus_user_spend';

-- AdsBPC+ per-user kept values of a correlated strategy (secret; DuckDB: ../plus_schema.sql's
-- plus_user_values): per (campaign, day, user, vector position) what the filter kept of the
-- user's day, > 0 only. Which days count is plus_spend_days' record of filtered days.
CREATE TABLE IF NOT EXISTS plus_user_values (
    user_key INT, position BIGINT, value DOUBLE, campaign STRING, day DATE, run STRING
) USING delta PARTITIONED BY (campaign, day) LOCATION '{{root}}/plus_user_values';

-- AdsBPC+ remainder of a day (secret): X_t = Σ_u min(c_ut − k_ut, E) at the cap E it was
-- computed with (plus_remainder.sql; DuckDB: plus_schema.sql's plus_remainders). Counts once
-- plus_spend_days records the day's filter, like the spends.
CREATE TABLE IF NOT EXISTS plus_remainders (
    cap DOUBLE, value DOUBLE, campaign STRING, day DATE, run STRING
) USING delta PARTITIONED BY (campaign, day) LOCATION '{{root}}/plus_remainders';

-- AdsBPC+ day's clipped vector as the run that filtered it computed it (secret, as
-- clipped_daily_vectors), with the load the attribution it read was built from: what a second
-- run of a committed day returns, and what the day's clipped_daily_vectors partition is
-- written (and recorded) from once the day is committed.
CREATE TABLE IF NOT EXISTS plus_day_vectors (
    position INT, value DOUBLE, read_load BIGINT, campaign STRING, day DATE, run STRING
) USING delta PARTITIONED BY (campaign, day) LOCATION '{{root}}/plus_day_vectors';

-- The commit record (catalog.py's SQLite file before): public ids, counts and parameters only.
-- A load is committed once its row is here (the ingest's last commit, which also checks no other
-- ingest committed since this one began: records.commit_loads); `versions` holds each event
-- table's Delta version after the ingest: what the partitions built from this load read.
CREATE TABLE IF NOT EXISTS loads (
    load_id BIGINT, kind STRING, source_file STRING, sha256 STRING, rows_in BIGINT,
    accepted BIGINT, quarantined BIGINT, loaded_at STRING, dimensions ARRAY<STRING>,
    versions MAP<STRING, BIGINT>
) USING delta LOCATION '{{root}}/loads';

-- Which derived (asset, campaign, day) partitions exist: `version` is the Delta version of the
-- asset's table that wrote it, `input_version` the last load it was built from. A rewrite
-- deletes the days' rows here first, so a crash leaves them "not materialised"; a record is a
-- MERGE on the campaign's rows (partitioned by campaign: runs of different campaigns never
-- conflict; a root an earlier release made keeps its unpartitioned table, migrate.py).
CREATE TABLE IF NOT EXISTS partitions (
    asset STRING, campaign STRING, day DATE, version BIGINT, input_version BIGINT, rows BIGINT,
    materialized_at STRING
) USING delta PARTITIONED BY (campaign) LOCATION '{{root}}/partitions';

-- AdsBPC+ filter days applied, with their public (r, σ, cap): a day's spends, values,
-- remainder and vector count once its row is here, those of the row's `run` only (one row a
-- day: records.commit_spend_day inserts it only where none is; partitioned as `partitions`).
CREATE TABLE IF NOT EXISTS plus_spend_days (
    campaign STRING, day DATE, bound DOUBLE, sigma DOUBLE, cap DOUBLE, created_at STRING,
    run STRING
) USING delta PARTITIONED BY (campaign) LOCATION '{{root}}/plus_spend_days';

-- The warehouse's identity (a random UUID), to which the ledger binds a campaign whose
-- per-user state (the AdsBPC+ spends) lives here.
CREATE TABLE IF NOT EXISTS meta (key STRING, value STRING) USING delta LOCATION '{{root}}/meta';

-- Every load id an ingest reserved, before its first event-table commit (`ingest`: a random
-- token of the ingest, to read its ids back): the statement that reserves them reads this table,
-- so two ingests that reserve at once conflict and no id is given twice (records.reserve_loads).
CREATE TABLE IF NOT EXISTS load_ids (
    load_id BIGINT, ingest STRING, reserved_at STRING
) USING delta LOCATION '{{root}}/load_ids';

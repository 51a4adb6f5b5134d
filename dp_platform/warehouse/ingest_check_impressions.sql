-- Row-level checks of a staged impressions file (view `source`, built by ingest.py with
-- columns source_row, impression_id, user_id, publisher_id, advertiser_id, ts, interaction,
-- dimension_reason; text fields already trimmed, empty text is NULL). The first failing rule
-- names the reason. dimension_reason: the first catalogue dimension of this file that is empty
-- or has an unlisted value (built by ingest.py from the public lists; NULL without any).
-- Only the failing rows are materialised (`rejected`: source_row, reason); the rows that pass
-- are read again from `source` by the insert, so no copy of a large file is ever made.
-- Duplicates and ties are checked after the insert (ingest_duplicates.sql, ingest_ties.sql).
-- Times are compared as TIMESTAMPTZ and converted through epoch_us (no time-zone library call
-- per row); the window [$ts_min, $ts_max) keeps every accepted time inside the ordering key.
CREATE OR REPLACE TEMP VIEW typed AS
SELECT
    source_row,
    impression_id AS id,
    user_id,
    publisher_id,
    advertiser_id,
    ts AS ts_given,
    TRY_CAST(ts AS TIMESTAMPTZ) AS ts,
    interaction AS interaction_given,
    lower(interaction) AS interaction,
    dimension_reason
FROM source;

-- One scan judges every row and, for the rows that pass, collects the distinct user,
-- publisher and advertiser ids (their new surrogate keys: ingest_keys.sql). A failing row is a
-- group of its own (row number, reason); the passing rows fold into the id groups.
CREATE OR REPLACE TEMP TABLE scanned AS
SELECT
    user_id,
    publisher_id,
    advertiser_id,
    source_row,
    reason,
    grouping(user_id) AS no_user,
    grouping(publisher_id) AS no_publisher,
    grouping(advertiser_id) AS no_advertiser
FROM (
    SELECT
        CASE WHEN reason IS NULL THEN user_id END AS user_id,
        CASE WHEN reason IS NULL THEN publisher_id END AS publisher_id,
        CASE WHEN reason IS NULL THEN advertiser_id END AS advertiser_id,
        CASE WHEN reason IS NOT NULL THEN source_row END AS source_row,
        reason
    FROM (
        SELECT
            source_row,
            user_id,
            publisher_id,
            advertiser_id,
            CASE
                WHEN id IS NULL THEN 'missing_impression_id'
                WHEN user_id IS NULL THEN 'missing_user_id'
                WHEN publisher_id IS NULL THEN 'missing_publisher_id'
                WHEN advertiser_id IS NULL THEN 'missing_advertiser_id'
                WHEN ts_given IS NULL THEN 'missing_ts'
                WHEN interaction_given IS NULL THEN 'missing_interaction'
                WHEN ts IS NULL THEN 'unparsable_ts'
                WHEN NOT (ts >= $ts_min AND ts < $ts_max) THEN 'ts_out_of_range'
                WHEN interaction NOT IN ('view', 'click') THEN 'unknown_interaction'
                WHEN dimension_reason IS NOT NULL THEN dimension_reason
                WHEN ts > $now THEN 'future_ts'
            END AS reason
        FROM typed
    )
)
GROUP BY GROUPING SETS ((user_id), (publisher_id), (advertiser_id), (source_row, reason));

CREATE OR REPLACE TEMP TABLE rejected AS
SELECT source_row, reason FROM scanned WHERE source_row IS NOT NULL;

-- what is already in the warehouse, for the duplicate check (an event is its user and id)
CREATE OR REPLACE TEMP VIEW events AS
SELECT user_key, impression_id AS id, load_id, source_row FROM impressions;

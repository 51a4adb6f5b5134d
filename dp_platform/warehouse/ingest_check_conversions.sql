-- Row-level checks of a staged conversions file (view `source`: source_row, conversion_id,
-- user_id, advertiser_id, ts, value; value is NULL when the optional column is absent).
-- A value is optional per row too; when present it must be a finite number >= 0.
-- dimension_reason: the first catalogue dimension that is empty or has an unlisted value
-- (built by ingest.py from the catalogue's public lists; NULL without dimensions).
-- As for impressions (ingest_check_impressions.sql): only failing rows are materialised.
CREATE OR REPLACE TEMP VIEW typed AS
SELECT
    source_row,
    conversion_id AS id,
    user_id,
    CAST(NULL AS VARCHAR) AS publisher_id,
    advertiser_id,
    ts AS ts_given,
    TRY_CAST(ts AS TIMESTAMPTZ) AS ts,
    value AS value_given,
    TRY_CAST(value AS DOUBLE) AS value,
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
                WHEN id IS NULL THEN 'missing_conversion_id'
                WHEN user_id IS NULL THEN 'missing_user_id'
                WHEN advertiser_id IS NULL THEN 'missing_advertiser_id'
                WHEN ts_given IS NULL THEN 'missing_ts'
                WHEN ts IS NULL THEN 'unparsable_ts'
                WHEN NOT (ts >= $ts_min AND ts < $ts_max) THEN 'ts_out_of_range'
                WHEN value_given IS NOT NULL AND NOT coalesce(isfinite(value), false)
                    THEN 'unparsable_value'
                WHEN value < 0 THEN 'negative_value'
                WHEN dimension_reason IS NOT NULL THEN dimension_reason
                WHEN ts > $now THEN 'future_ts'
            END AS reason
        FROM typed
    )
)
GROUP BY GROUPING SETS ((user_id), (publisher_id), (advertiser_id), (source_row, reason));

CREATE OR REPLACE TEMP TABLE rejected AS
SELECT source_row, reason FROM scanned WHERE source_row IS NOT NULL;

CREATE OR REPLACE TEMP VIEW events AS
SELECT user_key, conversion_id AS id, load_id, source_row FROM conversions;

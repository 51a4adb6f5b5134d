-- Row-level checks of a staged conversions file (view `source`: source_row, conversion_id,
-- user_id, advertiser_id, ts, value; value is NULL when the optional column is absent).
-- A value is optional per row too; when present it must be a finite number >= 0.
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
    TRY_CAST(value AS DOUBLE) AS value
FROM source;

CREATE OR REPLACE TEMP TABLE rejected AS
SELECT source_row, reason
FROM (
    SELECT
        source_row,
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
            WHEN ts > $now THEN 'future_ts'
        END AS reason
    FROM typed
)
WHERE reason IS NOT NULL;

CREATE OR REPLACE TEMP VIEW events AS
SELECT conversion_id AS id, load_id, source_row FROM conversions;

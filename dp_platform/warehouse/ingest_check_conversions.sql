-- Row-level checks of a staged conversions file (view `source`: source_row, conversion_id,
-- user_id, advertiser_id, ts, value; value is NULL when the optional column is absent).
-- A value is optional per row too; when present it must be a finite number >= 0.
CREATE OR REPLACE TEMP TABLE checked AS
SELECT
    source_row,
    conversion_id AS id,
    user_id,
    CAST(NULL AS VARCHAR) AS publisher_id,
    advertiser_id,
    timezone('UTC', TRY_CAST(ts AS TIMESTAMPTZ)) AS ts,
    TRY_CAST(value AS DOUBLE) AS value,
    CASE
        WHEN conversion_id IS NULL THEN 'missing_conversion_id'
        WHEN user_id IS NULL THEN 'missing_user_id'
        WHEN advertiser_id IS NULL THEN 'missing_advertiser_id'
        WHEN ts IS NULL THEN 'missing_ts'
        WHEN TRY_CAST(ts AS TIMESTAMPTZ) IS NULL THEN 'unparsable_ts'
        WHEN value IS NOT NULL AND NOT coalesce(isfinite(TRY_CAST(value AS DOUBLE)), false)
            THEN 'unparsable_value'
        WHEN TRY_CAST(value AS DOUBLE) < 0 THEN 'negative_value'
        WHEN TRY_CAST(ts AS TIMESTAMPTZ) > $now THEN 'future_ts'
    END AS reason
FROM source;

CREATE OR REPLACE TEMP VIEW loaded_ids AS
SELECT conversion_id AS id FROM conversions;

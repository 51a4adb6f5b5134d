-- Row-level checks of one conversions file (view `typed`: ingest_typed.sql), the rules and
-- their order of ../ingest_check_conversions.sql (a value is optional; when given it must be a
-- finite number >= 0). Checkpointed as `checked_conversions`, as for impressions
-- (ingest_check_impressions.sql).
CACHE TABLE checked_conversions AS
SELECT
    source_row,
    malformed,
    reason,
    digest_a,
    digest_b,
    CASE WHEN reason IS NULL THEN id END AS id,
    CASE WHEN reason IS NULL THEN user_id END AS user_id,
    CAST(NULL AS STRING) AS publisher_id,
    CASE WHEN reason IS NULL THEN advertiser_id END AS advertiser_id,
    CASE WHEN reason IS NULL THEN ts_us END AS ts_us,
    CAST(NULL AS STRING) AS interaction,
    CASE WHEN reason IS NULL THEN value END AS value,
    CASE WHEN reason IS NULL THEN dimension_values END AS dimension_values
FROM (
    SELECT
        *,
        CASE
            WHEN malformed THEN NULL
            WHEN id IS NULL THEN 'missing_conversion_id'
            WHEN user_id IS NULL THEN 'missing_user_id'
            WHEN advertiser_id IS NULL THEN 'missing_advertiser_id'
            WHEN NOT ts_given THEN 'missing_ts'
            WHEN ts_us IS NULL AND NOT ts_far THEN 'unparsable_ts'
            WHEN ts_far OR NOT (ts_us >= :ts_min_us AND ts_us < :ts_max_us) THEN 'ts_out_of_range'
            WHEN value_given AND NOT coalesce(NOT isnan(value) AND abs(value) < double('Infinity'), false)
                THEN 'unparsable_value'
            WHEN value < 0 THEN 'negative_value'
            WHEN dimension_reason IS NOT NULL THEN dimension_reason
            WHEN ts_us > :now_us THEN 'future_ts'
        END AS reason
    FROM typed
);

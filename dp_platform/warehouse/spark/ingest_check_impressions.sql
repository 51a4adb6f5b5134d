-- Row-level checks of one impressions file (view `typed`: ingest_typed.sql), the rules and
-- their order of ../ingest_check_impressions.sql: the first failing rule names the reason
-- (NULL: passed). Evaluated once and checkpointed (`checked_impressions`): the ingest reads it
-- for duplicates, keys, inserts, dimension rows and quarantine. Ids, times and values are kept
-- only for rows that passed; malformed records keep their row number only.
CACHE TABLE checked_impressions AS
SELECT
    source_row,
    malformed,
    reason,
    digest_a,
    digest_b,
    CASE WHEN reason IS NULL THEN id END AS id,
    CASE WHEN reason IS NULL THEN user_id END AS user_id,
    CASE WHEN reason IS NULL THEN publisher_id END AS publisher_id,
    CASE WHEN reason IS NULL THEN advertiser_id END AS advertiser_id,
    CASE WHEN reason IS NULL THEN ts_us END AS ts_us,
    CASE WHEN reason IS NULL THEN interaction END AS interaction,
    CAST(NULL AS DOUBLE) AS value,
    CASE WHEN reason IS NULL THEN dimension_values END AS dimension_values
FROM (
    SELECT
        *,
        CASE
            WHEN malformed THEN NULL
            WHEN id IS NULL THEN 'missing_impression_id'
            WHEN user_id IS NULL THEN 'missing_user_id'
            WHEN publisher_id IS NULL THEN 'missing_publisher_id'
            WHEN advertiser_id IS NULL THEN 'missing_advertiser_id'
            WHEN NOT ts_given THEN 'missing_ts'
            WHEN interaction_given IS NULL THEN 'missing_interaction'
            WHEN ts_us IS NULL AND NOT ts_far THEN 'unparsable_ts'
            WHEN ts_far OR NOT (ts_us >= :ts_min_us AND ts_us < :ts_max_us) THEN 'ts_out_of_range'
            WHEN interaction NOT IN ('view', 'click') THEN 'unknown_interaction'
            WHEN dimension_reason IS NOT NULL THEN dimension_reason
            WHEN ts_us > :now_us THEN 'future_ts'
        END AS reason
    FROM typed
);

-- Row-level checks of a staged impressions file (view `source`, built by ingest.py with
-- columns source_row, impression_id, user_id, publisher_id, advertiser_id, ts, interaction;
-- text fields already trimmed, empty text is NULL). The first failing rule names the reason.
-- Duplicates are checked next (ingest_duplicates.sql), on the rows that pass these rules.
CREATE OR REPLACE TEMP TABLE checked AS
SELECT
    source_row,
    impression_id AS id,
    user_id,
    publisher_id,
    advertiser_id,
    timezone('UTC', TRY_CAST(ts AS TIMESTAMPTZ)) AS ts,
    lower(interaction) AS interaction,
    CASE
        WHEN impression_id IS NULL THEN 'missing_impression_id'
        WHEN user_id IS NULL THEN 'missing_user_id'
        WHEN publisher_id IS NULL THEN 'missing_publisher_id'
        WHEN advertiser_id IS NULL THEN 'missing_advertiser_id'
        WHEN ts IS NULL THEN 'missing_ts'
        WHEN interaction IS NULL THEN 'missing_interaction'
        WHEN TRY_CAST(ts AS TIMESTAMPTZ) IS NULL THEN 'unparsable_ts'
        WHEN lower(interaction) NOT IN ('view', 'click') THEN 'unknown_interaction'
        WHEN TRY_CAST(ts AS TIMESTAMPTZ) > $now THEN 'future_ts'
    END AS reason
FROM source;

CREATE OR REPLACE TEMP VIEW loaded_ids AS
SELECT impression_id AS id FROM impressions;

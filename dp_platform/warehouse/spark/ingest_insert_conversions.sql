-- Rows of `checked` that passed every check (DuckDB twin: ../ingest_insert_conversions.sql):
-- conversion_key = the largest key so far + the row number. No tie order for conversions. "So
-- far": among the conversions read (committed loads', visibility.py), so an ingest run again
-- after one that never committed gives the keys it would have given; of two ingests that take
-- the same keys, only one commits its loads.
CACHE TABLE overflow AS
SELECT CAST(NULL AS BIGINT) AS source_row, CAST(NULL AS STRING) AS reason
WHERE false;

INSERT INTO conversions_rows
SELECT
    (SELECT coalesce(max(conversion_key), 0) FROM conversions) + v.source_row,
    v.id, u.user_key, a.advertiser_key, timestamp_micros(v.ts_us), v.value, v.source_row,
    CAST(timestamp_micros(v.ts_us) AS DATE), :load_id
FROM checked AS v
JOIN users AS u ON u.user_id = v.user_id
JOIN advertisers AS a ON a.advertiser_id = v.advertiser_id
WHERE v.reason IS NULL;

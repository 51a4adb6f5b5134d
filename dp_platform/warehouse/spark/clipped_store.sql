-- The day's clipped vector as rows of clipped_daily_vectors (schema checks); the partition was
-- emptied first by the store. The vector arrives as the view `clipped_new` (position, value),
-- registered from Python; names come from `campaign_pubs`. DuckDB writes the same rows from
-- Python (../store.py).
INSERT INTO clipped_daily_vectors
SELECT :bound, CAST(v.position AS INT), cp.publisher_id, v.value, :campaign, :day
FROM clipped_new AS v
JOIN campaign_pubs AS cp ON cp.position = v.position;

-- The day's clipped vector as rows of clipped_daily_vectors (schema checks), replacing the
-- day's rows in one Delta commit. The vector arrives as the view `clipped_new` (position, value),
-- registered from Python; each entry's publisher is the `campaign_pubs` row of position DIV
-- :per (:per entries per publisher: 1, or its cells). DuckDB writes the same rows from Python
-- (../store.py).
INSERT INTO clipped_daily_vectors
REPLACE WHERE campaign = :campaign AND day = :day
SELECT :bound, CAST(v.position AS INT), cp.publisher_id, v.value, :campaign, :day
FROM clipped_new AS v
JOIN campaign_pubs AS cp ON cp.position = v.position DIV :per;

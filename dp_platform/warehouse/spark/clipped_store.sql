-- The day's clipped vector as rows of clipped_daily_vectors (schema checks); the partition was
-- emptied first by the store. DuckDB writes the same rows from Python (store.py).
INSERT INTO clipped_daily_vectors
SELECT :bound, CAST(position AS INT), element_at(:publishers, position + 1), value, :campaign, :day
FROM (SELECT posexplode(:vector) AS (position, value));

-- Clipping (docs/algorithm.md#clipping) at bound r = $whole + $fraction (0 <= fraction < 1): each user keeps
-- the first floor(r) of their attributed conversions of the day in (ts, conversion_id) order
-- (user_rank < whole), then the fraction r - floor(r) of the next one's weights
-- (user_rank = whole), and drops the rest. Clipping is per user across all cells.
--
-- The rows are the day's released-vector entries (cell_rows: publishers, or cells —
-- docs/algorithm.md#cells); first the clipped rows per (user, cell key) (temp table
-- clipped_user_rows: each user's row has L2 norm <= r), then their sums by vector position.
CREATE OR REPLACE TEMP TABLE clipped_user_rows AS
SELECT
    r.user_key,
    r.cell_key,
    sum(r.weight * CASE WHEN r.user_rank < $whole THEN 1.0 ELSE $fraction END) AS value
FROM cell_rows($campaign, $day, $day) AS r
WHERE r.user_rank <= $whole
GROUP BY r.user_key, r.cell_key;

SELECT cp.position, sum(r.value) AS value
FROM clipped_user_rows AS r
JOIN cell_positions AS cp ON cp.cell_key = r.cell_key
GROUP BY cp.position;

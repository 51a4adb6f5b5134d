-- Clipping (DuckDB twin: ../clip.sql) at bound r = :whole + :fraction: each user keeps the first
-- floor(r) of their attributed conversions of the day in (ts, conversion_id) order, then the
-- fraction r - floor(r) of the next one's weights, and drops the rest. The rows are the day's
-- entries of the released vector (view cell_rows of a count-only campaign: its publishers);
-- sums of the clipped (user, cell key) rows by vector position (view cell_positions).
WITH clipped_user_rows AS (
    SELECT
        r.user_key,
        r.cell_key,
        sum(r.weight * CASE WHEN r.user_rank < :whole THEN 1.0D ELSE :fraction END) AS value
    FROM cell_rows AS r
    WHERE r.user_rank <= :whole
    GROUP BY r.user_key, r.cell_key
)
SELECT cp.position, sum(r.value) AS value
FROM clipped_user_rows AS r
JOIN cell_positions AS cp ON cp.cell_key = r.cell_key
GROUP BY cp.position
ORDER BY cp.position;

-- Clipping of a campaign with cells (DuckDB twin: ../clip_cells.sql) at bound
-- r = :whole + :fraction: the rule of clip.sql — each user keeps their first floor(r)
-- attributed conversions of the day in (ts, conversion_id) order, the fraction r - floor(r) of
-- the next one's entries, drops the rest; clipping is per user across all cells. A cell's key
-- is its position (cell_rows.sql), so the kept entries are summed straight into positions.
SELECT
    r.cell_key AS position,
    sum(r.weight * CASE WHEN r.user_rank < :whole THEN 1.0D ELSE :fraction END) AS value
FROM cell_rows AS r
WHERE r.user_rank <= :whole
GROUP BY r.cell_key;

-- Clipping (docs/algorithm.md#clipping) of a campaign with cells (docs/algorithm.md#cells) at
-- bound r = $whole + $fraction: the same rule as clip.sql — each user keeps their first
-- floor(r) attributed conversions of the day in (ts, conversion_id) order (user_rank < whole),
-- the fraction r - floor(r) of the next one's entries (user_rank = whole), drops the rest;
-- clipping is per user across all cells.
--
-- Summed straight into positions (a cell's key is its position, cell_rows.sql): the sum of the
-- users' clipped rows per cell is the sum of the kept entries per cell, so the per-(user, cell)
-- table clip.sql keeps is not built — at 50 cells per publisher it cost more than the sums.
SELECT
    r.cell_key AS position,
    sum(r.weight * CASE WHEN r.user_rank < $whole THEN 1.0 ELSE $fraction END) AS value
FROM cell_rows($campaign, $day, $day) AS r
WHERE r.user_rank <= $whole
GROUP BY r.cell_key;

-- Clipping (DuckDB twin: ../clip.sql) at bound r = :whole + :fraction: each user keeps the first
-- floor(r) of their attributed conversions of the day in (ts, conversion_id) order, then the
-- fraction r - floor(r) of the next one's weights, and drops the rest; per-publisher sums of
-- the clipped (user, publisher) rows by vector position.
WITH clipped_user_rows AS (
    SELECT
        a.user_key,
        a.publisher_key,
        sum(a.weight * CASE WHEN a.user_rank < :whole THEN 1.0D ELSE :fraction END) AS value
    FROM attributed_conversions AS a
    WHERE a.campaign = :campaign
      AND a.day = :day
      AND a.user_rank <= :whole
    GROUP BY a.user_key, a.publisher_key
)
SELECT cp.position, sum(r.value) AS value
FROM clipped_user_rows AS r
JOIN campaign_pubs AS cp ON cp.publisher_key = r.publisher_key
GROUP BY cp.position
ORDER BY cp.position;

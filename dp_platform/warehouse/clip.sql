-- Clipping (docs/algorithm.md#clipping) at bound r = $whole + $fraction (0 <= fraction < 1): each user keeps
-- the first floor(r) of their attributed conversions of the day in (ts, conversion_id) order
-- (user_rank < whole), then the fraction r - floor(r) of the next one's weights
-- (user_rank = whole), and drops the rest. Clipping is per user across all publishers.
--
-- First the clipped rows per (user, publisher) (temp table clipped_user_rows: each user's
-- row has L1 norm <= r), then their per-publisher sums by vector position.
CREATE OR REPLACE TEMP TABLE clipped_user_rows AS
SELECT
    a.user_key,
    a.publisher_key,
    sum(a.weight * CASE WHEN a.user_rank < $whole THEN 1.0 ELSE $fraction END) AS value
FROM attributed_conversions AS a
WHERE a.campaign = $campaign
  AND a.day = $day
  AND a.user_rank <= $whole
GROUP BY a.user_key, a.publisher_key;

SELECT cp.position, sum(r.value) AS value
FROM clipped_user_rows AS r
JOIN campaign_pubs AS cp ON cp.publisher_key = r.publisher_key
GROUP BY cp.position
ORDER BY cp.position;

-- One-shot release (Delaney et al., docs/validity.md): per-publisher sums over the campaign's whole
-- period after bounding each *user* to r = $whole + $fraction attributed conversions.
-- Reads attributed_conversions of days $first..$last (materialised by attribute_days) and the
-- conversions table; `campaign_pubs` must be set (campaign_publishers.sql).
--   post ($enforcement = 'post'): after attribution, each user keeps their attributed
--        conversions of the period in (ts, conversion_id) order: the first $whole fully, a
--        fraction $fraction of the next one's weights, none after;
--   pre  ($enforcement = 'pre'): before attribution, each user keeps only their first $whole
--        conversions of the advertiser in the period (attributed or not); those that were
--        attributed count with their weights ($fraction is 0 here: pre bounds are integers).
-- Each kept weight is multiplied by the conversion's value clamped to [0, $value_cap] when
-- $use_value, else by 1 (counts).
WITH
advertiser AS (
    SELECT advertiser_key FROM advertisers WHERE advertiser_id = $advertiser
),
period AS (
    SELECT
        c.conversion_key, c.user_key, c.ts, c.conversion_id,
        least(greatest(coalesce(c.value, 0.0), 0.0), $value_cap) AS value,
        row_number() OVER (PARTITION BY c.user_key ORDER BY c.ts, c.conversion_id) - 1 AS any_rank
    FROM conversions AS c
    WHERE c.advertiser_key = (SELECT advertiser_key FROM advertiser)
      AND c.ts >= CAST($first AS TIMESTAMP)
      AND c.ts < CAST($last AS TIMESTAMP) + INTERVAL 1 DAY
),
credited AS (
    SELECT a.conversion_key, a.publisher_key, a.weight, p.user_key, p.ts, p.conversion_id,
           p.value, p.any_rank
    FROM attributed_conversions AS a
    JOIN period AS p ON p.conversion_key = a.conversion_key
    WHERE a.campaign = $campaign AND a.day BETWEEN $first AND $last
),
ranked AS (
    SELECT
        credited.*,
        dense_rank() OVER (PARTITION BY user_key ORDER BY ts, conversion_id) - 1 AS attributed_rank
    FROM credited
),
kept AS (
    SELECT
        publisher_key,
        weight * CASE
            WHEN $enforcement = 'pre' THEN CASE WHEN any_rank < $whole THEN 1.0 ELSE 0.0 END
            WHEN attributed_rank < $whole THEN 1.0
            WHEN attributed_rank = $whole THEN $fraction
            ELSE 0.0
        END * CASE WHEN $use_value THEN value ELSE 1.0 END AS amount
    FROM ranked
)
SELECT cp.position, sum(k.amount) AS value
FROM kept AS k
JOIN campaign_pubs AS cp ON cp.publisher_key = k.publisher_key
GROUP BY cp.position
ORDER BY cp.position;

-- One-shot release (DuckDB twin: ../oneshot_sums.sql, where post and pre enforcement are
-- explained): per-publisher sums over the campaign's whole period after bounding each user to
-- r = :whole + :fraction attributed conversions, each weight times the value clamped to
-- [0, :value_cap] when :use_value, else 1. `campaign_pubs` must be set.
WITH
period AS (
    SELECT
        c.conversion_key, c.user_key, c.ts, c.conversion_id,
        least(greatest(coalesce(c.value, 0.0D), 0.0D), :value_cap) AS value,
        row_number() OVER (PARTITION BY c.user_key ORDER BY c.ts, c.conversion_id) - 1 AS any_rank
    FROM conversions AS c
    WHERE c.advertiser_key = (SELECT advertiser_key FROM advertisers WHERE advertiser_id = :advertiser)
      AND c.day BETWEEN :first AND :last
),
credited AS (
    SELECT a.conversion_key, a.publisher_key, a.weight, p.user_key, p.ts, p.conversion_id,
           p.value, p.any_rank
    FROM attributed_conversions AS a
    JOIN period AS p ON p.conversion_key = a.conversion_key
    WHERE a.campaign = :campaign AND a.day BETWEEN :first AND :last
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
            WHEN :enforcement = 'pre' THEN CASE WHEN any_rank < :whole THEN 1.0D ELSE 0.0D END
            WHEN attributed_rank < :whole THEN 1.0D
            WHEN attributed_rank = :whole THEN :fraction
            ELSE 0.0D
        END * CASE WHEN :use_value THEN value ELSE 1.0D END AS amount
    FROM ranked
)
SELECT cp.position, sum(k.amount) AS value
FROM kept AS k
JOIN campaign_pubs AS cp ON cp.publisher_key = k.publisher_key
GROUP BY cp.position
ORDER BY cp.position;

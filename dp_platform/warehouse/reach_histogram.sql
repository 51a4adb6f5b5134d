-- Reach and frequency (Ghazi & Manurangsi): how many users saw the campaign's ads exactly k times over
-- days $first..$last, k = 1..$cap - 1, and how many $cap times or more (k = $cap). Impressions
-- of the advertiser on the campaign's publishers (`campaign_pubs` must be set), views and
-- clicks alike. Users without an impression are not counted (they are in no bin).
WITH
advertiser AS (
    SELECT advertiser_key FROM advertisers WHERE advertiser_id = $advertiser
),
per_user AS (
    SELECT i.user_key, count(*) AS seen
    FROM impressions AS i
    WHERE i.advertiser_key = (SELECT advertiser_key FROM advertiser)
      AND i.publisher_key IN (SELECT publisher_key FROM campaign_pubs)
      AND i.ts >= CAST($first AS TIMESTAMP)
      AND i.ts < CAST($last AS TIMESTAMP) + INTERVAL 1 DAY
    GROUP BY i.user_key
)
SELECT least(seen, $cap) AS k, count(*) AS users
FROM per_user
GROUP BY k
ORDER BY k;

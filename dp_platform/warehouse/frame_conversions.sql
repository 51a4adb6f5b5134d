-- The campaign advertiser's conversions on the days $days ($first..$last bound them), with the
-- columns of the event files: for schema checks only (private rows).
SELECT c.conversion_id, u.user_id, a.advertiser_id, c.ts, c.value
FROM conversions AS c
JOIN users AS u ON u.user_key = c.user_key
JOIN advertisers AS a ON a.advertiser_key = c.advertiser_key
WHERE a.advertiser_id = $advertiser
  AND c.ts >= CAST($first AS TIMESTAMP)
  AND c.ts < CAST($last AS TIMESTAMP) + INTERVAL 1 DAY
  AND list_contains($days, CAST(c.ts AS DATE));

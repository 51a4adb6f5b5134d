-- The loads of one event kind ($kind: conversions or impressions) holding the advertiser's
-- events dated $first..$last (UTC) that were ingested without the column of $dimension
-- (load_dimensions). Load ids only: which batches, never how many events or users.
SELECT DISTINCT e.load_id
FROM (
    SELECT 'conversions' AS kind, load_id, advertiser_key, ts FROM conversions
    UNION ALL
    SELECT 'impressions' AS kind, load_id, advertiser_key, ts FROM impressions
) AS e
WHERE e.kind = $kind
  AND e.advertiser_key = (SELECT advertiser_key FROM advertisers WHERE advertiser_id = $advertiser)
  AND e.ts >= CAST($first AS TIMESTAMP)
  AND e.ts < CAST($last AS TIMESTAMP) + INTERVAL 1 DAY
  AND e.load_id NOT IN (SELECT load_id FROM load_dimensions WHERE dimension = $dimension)
ORDER BY e.load_id;

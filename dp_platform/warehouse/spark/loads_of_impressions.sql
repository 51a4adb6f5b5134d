-- The loads holding the advertiser's impressions dated :first..:last (partition pruning on day):
-- load ids only, never how many events (store_core.loads_without, DuckDB's
-- loads_without_dimension.sql).
SELECT DISTINCT e.load_id
FROM impressions AS e
WHERE e.day BETWEEN :first AND :last
  AND e.advertiser_key = (SELECT advertiser_key FROM advertisers WHERE advertiser_id = :advertiser);

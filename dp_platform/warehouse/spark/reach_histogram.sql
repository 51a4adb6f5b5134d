-- Reach and frequency (DuckDB twin: ../reach_histogram.sql): how many users saw the campaign's
-- ads exactly k times over days :first..:last, k = 1..:cap - 1, and :cap times or more
-- (k = :cap); impressions of the advertiser on the campaign's publishers (`campaign_pubs`).
WITH per_user AS (
    SELECT i.user_key, count(*) AS seen
    FROM impressions AS i
    WHERE i.advertiser_key = (SELECT advertiser_key FROM advertisers WHERE advertiser_id = :advertiser)
      AND i.publisher_key IN (SELECT publisher_key FROM campaign_pubs)
      AND i.day BETWEEN :first AND :last
    GROUP BY i.user_key
)
SELECT least(seen, :cap) AS k, count(*) AS users
FROM per_user
GROUP BY 1
ORDER BY 1;

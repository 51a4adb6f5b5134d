-- Every publisher that has shown an impression of the advertiser, sorted by id (DuckDB twin:
-- ../advertiser_publishers.sql).
SELECT p.publisher_id
FROM advertiser_publishers AS x
JOIN advertisers AS a ON a.advertiser_key = x.advertiser_key
JOIN publishers AS p ON p.publisher_key = x.publisher_key
WHERE a.advertiser_id = :advertiser
GROUP BY p.publisher_id
ORDER BY p.publisher_id;
